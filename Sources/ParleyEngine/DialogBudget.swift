import ConversationKit
import Foundation
import GroupActivities
import SIPMessages
import SIPSignaling
import SIPTransport

/// What one established call may send us in its dialog (issue 48): MESSAGE, INFO, OPTIONS, REFER and NOTIFY requests and their bytes
/// in each second (group messages aside: the group messenger bounds those per sender). Text from outside the dialog
/// claiming the call's peer has a budget of its own, so a stranger cannot spend the call's. A call's peer could otherwise flood
/// the SIP thread and every frontend with events from inside its dialog.
///
///   request of B bytes ──► second over? ──yes──► a new second: counts from zero
///                               ▼
///   requests + 1 ≤ requestsPerSecond and bytes + B ≤ bytesPerSecond ──yes──► admit (a body over 16 KiB: 413)
///                               └──no──► refuse (503, Retry-After: 1), not counted; spent for the rest of the second:
///                                        the call's MESSAGE, INFO and OPTIONS are refused unread until it ends
///
/// A pure value: the caller passes the time (the environment's monotonic uptime).
struct DialogBudget: Sendable, Hashable {
    /// MESSAGE, INFO and OPTIONS requests (other than group messages) one dialog may send a second: chat, keypad
    /// tones and keep-alives come a few a second; a flood (5,000–10,000 a second were all taken before) is cut to this.
    static let requestsPerSecond = 250
    /// Their bytes a second (bodies, those refused as too large included): several large group messages, not a
    /// disk's worth.
    static let bytesPerSecond = 256 * 1_024
    /// The largest MESSAGE or INFO body taken (a chat line, a group message, a DTMF relay); 413 beyond.
    static let maxBodyBytes = 16 * 1_024

    private var windowStart: Duration?
    private var requests = 0
    private var bytes = 0
    private var refused = false

    /// Whether a request of `bodyBytes` at `now` fits this second's budget (and spends it when it does).
    mutating func admits(bodyBytes: Int, at now: Duration) -> Bool {
        if windowStart.map({ now - $0 >= .seconds(1) }) ?? true {
            windowStart = now
            requests = 0
            bytes = 0
            refused = false
        }
        guard requests + 1 <= Self.requestsPerSecond, bytes + bodyBytes <= Self.bytesPerSecond else {
            refused = true
            return false
        }
        requests += 1
        bytes += bodyBytes
        return true
    }

    /// Whether it refused a request in the second still running at `now`.
    func isSpent(at now: Duration) -> Bool {
        refused && windowStart.map { now - $0 < .seconds(1) } ?? false
    }
}

extension SIPUserAgent {
    /// Whether a MESSAGE or INFO in a dialog may go on: a dialog over its budget gets 503 with Retry-After, a body
    /// over ``DialogBudget/maxBodyBytes`` 413 (its bytes spent all the same); refusals counted, the log says so once
    /// per call. Group messages are the group messenger's to bound.
    func admitsInDialog(_ request: SIPRequest, key: TransactionKey) -> Bool {
        guard [.message, .info, .options, .refer, .notify].contains(request.method), request.headers.toTag != nil else { return true }
        // Group messages are bounded by the group messenger's own size caps (up to 60 KiB over TCP), per-sender rate
        // and per-leg bytes, and a group's backlog drains faster than any fixed rate on a fast link.
        guard !Self.isGroupMessage(request) else { return true }
        if let uuid = leg(forInDialog: request), !spendsBudget(of: uuid, on: request, key: key) { return false }
        guard request.body.count <= DialogBudget.maxBodyBytes else {
            counters.inDialogRefused += 1
            respond(to: request, key: key, status: 413, reason: "Message Body Too Large")
            return false
        }
        return true
    }

    /// Whether the call's budget takes `request` (spent when it does); 503 with Retry-After when it does not. Text from
    /// outside the dialog (`unverified`) spends a budget of its own.
    func spendsBudget(of uuid: UUID, on request: SIPRequest, key: TransactionKey, unverified: Bool = false) -> Bool {
        let leg = UUIDKey(uuid)
        var budget = (unverified ? unverifiedBudgets[leg] : dialogBudgets[leg]) ?? DialogBudget()
        let admitted = budget.admits(bodyBytes: request.body.count, at: environment.uptime)
        if unverified { unverifiedBudgets[leg] = budget } else { dialogBudgets[leg] = budget }
        guard !admitted else { return true }
        counters.inDialogRefused += 1
        warnOfFlood(uuid)
        respond(to: request, key: key, status: 503, extra: ["Retry-After": "1"], reason: Self.floodReason)
        return false
    }

    /// Before parsing: a MESSAGE, INFO or OPTIONS in one of our calls is refused unread (503 written from its bytes,
    /// Retry-After 1) while its call's budget is spent for this second, and while overload control sheds (the calls'
    /// chat goes first, before any new request is shed). A flooding dialog then costs a read and a short write, not a
    /// parse. Group messages are let through (the group messenger bounds them, and a Parley peer that is refused for
    /// long leaves the session).
    func refusesInDialogUnread(_ inbound: InboundSIPMessage, from source: SIPDestination) -> Bool {
        let bytes = inbound.bytes
        // The cheap questions first: most messages are no MESSAGE, INFO or OPTIONS, and most calls' budgets are not
        // spent; only then are the headers scanned for a group body.
        guard Self.budgetedPrefixes.contains(where: { bytes.starts(with: $0) }),
            let callID = StatelessRefusal.callID(of: bytes), let uuid = legIDs[callID]
        else { return false }
        let overloaded = shedder?.isShedding == true
        guard overloaded || dialogBudgets[UUIDKey(uuid)]?.isSpent(at: environment.uptime) == true,
            !RequestPeek.headers(of: bytes, contain: Self.groupContentType),
            let refusal = StatelessRefusal.response(
                to: bytes, status: 503, reason: overloaded ? "Overloaded" : Self.floodReason, tagSuffix: nil,
                extra: [("Server", configuration.product), ("Retry-After", "1")])
        else { return false }
        counters.inDialogRefused += 1
        if !overloaded { warnOfFlood(uuid) }
        environment.send(refusal, to: source)
        return true
    }

    /// Whether `request` is a MESSAGE carrying a group body (`application/vnd.parley.group+json`).
    static func isGroupMessage(_ request: SIPRequest) -> Bool {
        request.method == .message
            && request.headers.contentType?.headerValue.lowercased().hasPrefix(GroupWire.contentType) == true
    }

    private func warnOfFlood(_ uuid: UUID) {
        guard floodingDialogs.insert(UUIDKey(uuid)).inserted else { return }
        log.warning("\(uuid): the peer sends more than \(DialogBudget.requestsPerSecond) MESSAGE/INFO requests or "
            + "\(DialogBudget.bytesPerSecond / 1_024) KiB a second in the call: refusing the excess with 503")
    }

    private static let floodReason = "Too Many Requests In This Call"
    private static let budgetedPrefixes = ["MESSAGE ", "INFO ", "OPTIONS "].map { Array($0.utf8) }
    private static let groupContentType = Array(GroupWire.contentType.utf8)
}
