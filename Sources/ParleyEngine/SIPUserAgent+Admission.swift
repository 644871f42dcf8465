import Foundation
import SIPMessages
import SIPSignaling
import ConversationKit
import ParleyIO
import SIPTransport

/// Admission of new requests, before any transaction exists: the per-source density check, then for a new INVITE
/// the live-call limit and the per-source ringing limit. What is refused here leaves no state behind: it is answered
/// statelessly with one 503 (no 100 Trying, no retransmissions: a spoofed flood draws one datagram per datagram),
/// or, from a banned source, not answered at all.
///
///   new request ──► density (SourceRateGuard) ──drop──► nothing sent
///                        │ admit         └──refuse──► 503 Retry-After: ban
///                        ▼
///                   new INVITE? ──no──► open its transaction
///                        │ yes (and not announced by a push)
///                        ▼
///                   live calls < maxCalls ──no──► 503 Retry-After: 5
///                        ▼
///                   ringing from source < maxRingingPerSource ──no──► 503 Retry-After: 5
///                        ▼
///                   open its transaction
extension SIPUserAgent {
    /// Whether a new request may open a transaction; when not, it has been refused or dropped already.
    func admits(_ request: SIPRequest, from source: SIPDestination) -> Bool {
        let sourceKey = SourceKey(host: source.address.host)
        let exempt = exemptSources.contains(sourceKey)
        if !exempt {
            switch requestGuard.check(sourceKey, at: environment.uptime) {
            case .admit:
                break
            case .refuse:
                counters.requestsRefusedPerSource += 1
                // Once per ban begun, for the first and then every thousandth ban: a spoofed flood of many
                // sources must not flood the log.
                if counters.requestsRefusedPerSource % 1000 == 1 {
                    log.info("\(sourceKey) sent more than \(configuration.maxRequestsPerSource) new requests in a second: "
                        + "refused with 503, then dropped for \(Self.seconds(configuration.sourceBan)) s "
                        + "(\(counters.requestsRefusedPerSource) bans so far)")
                }
                refuseStatelessly(request, from: source, reason: "Too Many Requests From Your Address",
                    retryAfter: Self.seconds(configuration.sourceBan))
                return false
            case .drop:
                counters.requestsDropped += 1
                return false
            }
        }
        guard request.method == .invite, request.headers.to?.tag == nil, let callID = request.headers.callID,
            !pushedCalls.isPending(callID: callID)
        else { return true }
        guard admitsNewCall(callID) else {
            refuseStatelessly(request, from: source, reason: "Too Many Calls")
            return false
        }
        guard exempt || admitsRinging(from: sourceKey, callID) else {
            refuseStatelessly(request, from: source, reason: "Too Many Calls From Your Address")
            return false
        }
        return true
    }

    /// 503 with Retry-After, outside any transaction: a limit of ours, not the caller's fault; try later.
    private func refuseStatelessly(
        _ request: SIPRequest, from source: SIPDestination, reason: String,
        retryAfter: Int = EngineConfiguration.overLimitRetryAfter
    ) {
        let response = request.makeResponse(
            statusCode: 503, reasonPhrase: reason, toTag: SecureRandom.token(10), copyingRecordRoute: false,
            headers: ["Retry-After": String(max(1, retryAfter)), "Server": configuration.product],
            contentType: nil, body: Data())
        transactions.sendStateless(.response(response), to: source)
    }

    private static func seconds(_ duration: Duration) -> Int { Int(duration.components.seconds) }

    /// Drops a leg from the per-source ringing bookkeeping (it left, or never became a call).
    func forgetSource(of key: UUIDKey) {
        guard let source = sourceOfLeg.removeValue(forKey: key) else { return }
        ringingFrom[source]?.removeAll { $0 == key }
        if ringingFrom[source]?.isEmpty == true { ringingFrom[source] = nil }
    }

    /// Whether `source` has fewer than `maxRingingPerSource` incoming calls ringing (those answered or gone are
    /// pruned first: at most that many to look at). Refusals are counted and logged for the first and every
    /// thousandth.
    private func admitsRinging(from source: SourceKey, _ callID: String) -> Bool {
        guard var keys = ringingFrom[source] else { return true }
        keys.removeAll { legs[$0]?.stateName != .ringing }
        ringingFrom[source] = keys.isEmpty ? nil : keys
        guard keys.count >= configuration.maxRingingPerSource else { return true }
        counters.refusedPerSource += 1
        if counters.refusedPerSource % 1000 == 1 {
            log.info("\(source) has \(keys.count) calls ringing, the most one source may: refusing \(callID) with 503 "
                + "(\(counters.refusedPerSource) so far)")
        }
        return false
    }

    /// Whether a new incoming call fits under `maxCalls`. Refusals are counted, and logged once when they begin and
    /// once when calls are let in again.
    private func admitsNewCall(_ callID: String) -> Bool {
        guard legs.count >= configuration.maxCalls else {
            if counters.atCallLimit {
                counters.atCallLimit = false
                log.info("live calls below the limit again: taking new calls (\(counters.refusedOverLimit) refused so far)")
            }
            return true
        }
        counters.refusedOverLimit += 1
        if !counters.atCallLimit {
            counters.atCallLimit = true
            log.info("\(legs.count) live calls, the limit (--max-calls): refusing new calls with 503 (first: \(callID))")
        }
        return false
    }
}
