import Foundation
import SIPMessages
import SIPSignaling
import ConversationKit
import ParleyIO
import SIPTransport

/// Admission of new requests, before any transaction exists (overload control sheds before parsing, in
/// SIPUserAgent+Overload): the per-source density check, then for a new INVITE
/// the caller policy, the live-call limit and the per-source ringing limit. What is refused here leaves no state
/// behind: it is answered statelessly with one 403 or 503 (no 100 Trying, no retransmissions: a spoofed flood draws
/// one datagram per datagram), or, from a banned source, not answered at all.
///
///   new request ──► in a live dialog (not INVITE; bounded per call by DialogBudget)? ──yes──► open its transaction
///        │ no
///        ▼
///   density (SourceRateGuard) ──drop──► nothing sent
///                        │ admit         └──refuse──► 503 Retry-After: ban
///                        ▼
///                   new INVITE? ──no──► open its transaction
///                        │ yes (and not announced by a push)
///                        ▼
///                   caller accepted (--accept-from) ──no──► 403 (and a blocked record, when asked)
///                        ▼
///                   Replaces naming an answered call of ours ──yes──► open its transaction (it takes that call's place)
///                        ▼
///                   forwarding every call ──yes──► 302 to its target (and a forwarded record)
///                        ▼
///                   do-not-disturb off ──no──► 302 when forwarding on busy, else 486 Busy Here (and a record)
///                        ▼
///                   live calls < maxCalls ──no──► 302 when forwarding on busy, else 503 Retry-After: 5
///                        ▼
///                   the media threads keep up, calls with audio < the media layer's capacity ──no──► 503 Retry-After: 5
///                        ▼
///                   ringing from source < maxRingingPerSource ──no──► 503 Retry-After: 5
///                        ▼
///                   open its transaction
extension SIPUserAgent {
    /// Whether a new request may open a transaction; when not, it has been refused or dropped already.
    func admits(_ request: SIPRequest, from source: SIPDestination) -> Bool {
        let sourceKey = SourceKey(host: source.address.host)
        let exempt = exemptSources.contains(sourceKey)
        // A request in one of our live dialogs is not counted here: it is bounded per call (DialogBudget: MESSAGE,
        // INFO and OPTIONS; group messages by the group messenger), not per source — a proxy carries every call's,
        // and one call's flood must not ban the others' (or their BYEs), nor must group members sharing an address.
        let inLiveDialog = request.method != .invite && request.headers.toTag != nil && leg(forInDialog: request) != nil
        if !exempt && !inLiveDialog {
            switch sourceVerdict(sourceKey) {
            case .admit:
                break
            case .refuse:
                refuseStatelessly(request, from: source, reason: "Too Many Requests From Your Address",
                    retryAfter: Self.seconds(configuration.sourceBan))
                return false
            case .drop:
                return false
            }
        }
        guard request.method == .invite, request.headers.toTag == nil, let callID = request.headers.callID,
            !pushedCalls.isPending(callID: callID)
        else { return true }
        if case .anyone = configuration.callers {
        } else if let from = request.headers.from {
            let caller = HandleMapping.caller(from: from, contact: request.headers.contacts.first)
            guard configuration.callers.admits(caller) else {
                counters.callersRefused += 1
                // One line for the first and then every thousandth: a flood of strangers must not flood the log.
                if counters.callersRefused % 1000 == 1 {
                    log.info("refused a call from \(caller.value), not an accepted caller (--accept-from; "
                        + "\(counters.callersRefused) so far)")
                }
                refuseStatelessly(request, from: source, status: 403, reason: "Not An Accepted Caller", retryAfter: nil)
                blocked(caller, callID: callID, account: account(called: request, from: source))
                return false
            }
        }
        // A call that replaces one of ours (an attended transfer, RFC 3891) takes that call's place: it is not
        // forwarded, refused as busy or counted against the line limit (it frees the line it takes).
        if let replaces = request.headers["Replaces"], case .success = callReplaced(by: replaces) { return true }
        let forwarding = forwarding(forAccount: account(called: request, from: source))
        if let target = forwarding.always {
            forward(request, from: source, to: target, because: "forwarding every call")
            return false
        }
        if doNotDisturb, let target = forwarding.busy {
            forward(request, from: source, to: target, because: "do-not-disturb, forwarding on busy")
            return false
        }
        if doNotDisturb {
            counters.refusedByDoNotDisturb += 1
            refuseStatelessly(request, from: source, status: 486, reason: "Busy Here", retryAfter: nil)
            if tellsRefusedByDoNotDisturb, let from = request.headers.from {
                let caller = HandleMapping.caller(from: from, contact: request.headers.contacts.first)
                blocked(caller, callID: callID, account: account(called: request, from: source), byDoNotDisturb: true)
            }
            return false
        }
        guard admitsNewCall(callID) else {
            if let target = forwarding.busy {
                forward(request, from: source, to: target, because: "every line busy, forwarding on busy")
            } else {
                refuseStatelessly(request, from: source, reason: "Too Many Calls")
            }
            return false
        }
        guard admitsMediaCall(callID) else {
            refuseStatelessly(request, from: source, reason: "Too Many Calls With Audio")
            return false
        }
        guard exempt || admitsRinging(from: sourceKey, callID) else {
            refuseStatelessly(request, from: source, reason: "Too Many Calls From Your Address")
            return false
        }
        return true
    }

    /// The per-source density check of one more request from `sourceKey` (counted; a ban begun is logged, for the
    /// first and then every thousandth: a spoofed flood of many sources must not flood the log).
    func sourceVerdict(_ sourceKey: SourceKey) -> SourceRateGuard.Verdict {
        let verdict = requestGuard.check(sourceKey, at: environment.uptime)
        switch verdict {
        case .admit:
            break
        case .refuse:
            counters.requestsRefusedPerSource += 1
            if counters.requestsRefusedPerSource % 1000 == 1 {
                log.warning("\(sourceKey) sent more than \(configuration.maxRequestsPerSource) new requests in a second: "
                    + "refused with 503, then dropped for \(Self.seconds(configuration.sourceBan)) s "
                    + "(\(counters.requestsRefusedPerSource) bans so far)")
            }
        case .drop:
            counters.requestsDropped += 1
        }
        return verdict
    }

    /// Takes the configuration's forwarding rules: the engine's, and the accounts' own.
    func setForwarding(from configuration: EngineConfiguration) {
        forwarding = configuration.forwarding
        for (index, account) in configuration.accounts.enumerated() { accountForwarding[index] = account.forwarding }
    }

    /// The forwarding rules of calls made to the account `index` (its own, else the engine's).
    func forwarding(forAccount index: Int?) -> CallForwarding {
        index.flatMap { accountForwarding[$0] } ?? forwarding
    }

    /// Forwards a new call before it rings: 302 Moved Temporarily with `target` as Contact, outside any transaction
    /// (as the refusals here), logged and recorded (`forwarded`, as limited as blocked records).
    private func forward(_ request: SIPRequest, from source: SIPDestination, to target: SIPURI, because why: String) {
        counters.forwardedCalls += 1
        let contact = SIPAddress(uri: target)
        refuseStatelessly(
            request, from: source, status: 302, reason: "Moved Temporarily", retryAfter: nil,
            extra: ["Contact": contact.headerValue])
        guard let from = request.headers.from, let callID = request.headers.callID else { return }
        let caller = HandleMapping.caller(from: from, contact: request.headers.contacts.first)
        log.info("forwarded the call from \(caller.value) to \(target) (\(why))")
        if tellsRefusedByDoNotDisturb {
            recordRefusal(.forwarded(caller, callID: callID, account: addressOfRecord(account(called: request, from: source))))
        }
    }

    /// A refusal outside any transaction: by default 503 with Retry-After (a limit of ours, not the caller's fault;
    /// try later).
    private func refuseStatelessly(
        _ request: SIPRequest, from source: SIPDestination, status: Int = 503, reason: String,
        retryAfter: Int? = EngineConfiguration.overLimitRetryAfter, extra: SIPHeaders = [:]
    ) {
        var headers: SIPHeaders = ["Server": configuration.product]
        for field in extra { headers.append(field.name, field.value) }
        if let retryAfter { headers.append("Retry-After", String(max(1, retryAfter))) }
        let response = request.makeResponse(
            statusCode: status, reasonPhrase: reason, toTag: SecureRandom.token(10), copyingRecordRoute: false,
            headers: headers, contentType: nil, body: Data())
        transactions.sendStateless(.response(response), to: source)
    }

    /// Tells whoever records blocked calls, at most `blockedRecordsPerMinute` a minute: a caller's From is whatever
    /// the caller writes, and spoofed sources are many, so the history must not fill with them.
    private func blocked(_ caller: Handle, callID: String, account: Int?, byDoNotDisturb: Bool = false) {
        guard tellsBlockedCallers || byDoNotDisturb else { return }
        let address = addressOfRecord(account)
        recordRefusal(byDoNotDisturb
            ? .refusedByDoNotDisturb(caller, callID: callID, account: address) : .callerBlocked(caller, callID: callID, account: address))
    }

    /// Hands on a refusal's record, at most `blockedRecordsPerMinute` a minute.
    private func recordRefusal(_ event: AgentEvent) {
        let now = environment.uptime
        if now - blockedWindow.start >= .seconds(60) { blockedWindow = (now, 0) }
        guard blockedWindow.count < EngineConfiguration.blockedRecordsPerMinute else { return }
        blockedWindow.count += 1
        onEvent?(event)
    }

    private func addressOfRecord(_ account: Int?) -> String? {
        account.map { accounts[$0].account.addressOfRecord.description }
    }

    private static func seconds(_ duration: Duration) -> Int { Int(duration.components.seconds) }

    private static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }

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
            log.warning("\(source) has \(keys.count) calls ringing, the most one source may: refusing \(callID) with 503 "
                + "(\(counters.refusedPerSource) so far)")
        }
        return false
    }

    /// Whether a new incoming call fits under `maxCalls` (refusals counted, said when they begin and end).
    private func admitsNewCall(_ callID: String) -> Bool {
        let (admit, change) = counters.callLimit.check(legs.count, limit: configuration.maxCalls)
        switch change {
        case .began: log.warning("\(legs.count) live calls, the limit (--max-calls): refusing new calls with 503 (first: \(callID))")
        case .ended: log.warning("live calls below the limit again: taking new calls (\(counters.callLimit.refused) refused so far)")
        case nil: break
        }
        return admit
    }

    /// Whether the media layer can carry one more call's audio (`--max-media-calls`): beyond, a new call is refused
    /// rather than degrading every call's audio.
    private func admitsMediaCall(_ callID: String) -> Bool {
        if let health = media?.mediaHealth {
            if !health.keepsUp {
                counters.mediaLagRefused += 1
                if !counters.mediaLagging {
                    counters.mediaLagging = true
                    log.warning("the media threads lag \(Self.milliseconds(health.lag)) ms behind the calls' audio: refusing new "
                        + "calls with 503 until they keep up (first: \(callID))")
                }
                return false
            }
            if counters.mediaLagging {
                counters.mediaLagging = false
                log.warning("the media threads keep up again: taking new calls (\(counters.mediaLagRefused) refused for their lag so far)")
            }
        }
        guard let (calls, capacity) = media?.mediaLoad, let capacity else { return true }
        let (admit, change) = counters.mediaLimit.check(calls, limit: capacity)
        switch change {
        case .began:
            log.warning("\(calls) call\(calls == 1 ? "" : "s") with audio, the most this node carries (--max-media-calls): refusing new calls with 503 "
                + "(first: \(callID))")
        case .ended: log.warning("calls with audio below the limit again: taking new calls (\(counters.mediaLimit.refused) refused so far)")
        case nil: break
        }
        return admit
    }
}

/// One limit's refusals: counted, and an episode said once when it begins and once when the count has fallen a
/// tenth under the limit (at the limit calls end and come one by one: a line each time calls were let in again
/// flapped tens of times a second at twice the capacity).
///
///   count < limit ──► admit (and, in an episode with count < limit − limit/10: it ended)
///   count ≥ limit ──► refuse, counted (and, outside an episode: one began)
struct LimitEpisodes: Sendable {
    /// What the log says.
    enum Change { case began, ended }

    /// Refusals so far.
    private(set) var refused = 0
    private var inEpisode = false

    /// Whether one more fits when `count` are in use under `limit`, and whether an episode began or ended.
    mutating func check(_ count: Int, limit: Int) -> (admit: Bool, change: Change?) {
        guard count >= limit else {
            guard inEpisode, count < limit - limit / 10 else { return (true, nil) }
            inEpisode = false
            return (true, .ended)
        }
        refused += 1
        defer { inEpisode = true }
        return (false, inEpisode ? nil : .began)
    }
}
