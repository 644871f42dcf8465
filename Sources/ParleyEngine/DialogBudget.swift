import ConversationKit
import Foundation
import GroupActivities
import SIPMessages
import SIPSignaling

/// What one established call may send us in its dialog (issue 48): MESSAGE and INFO requests and their bytes in each
/// second (group messages aside: the group messenger bounds those per sender). A call's peer is inside our limits on new requests (SourceRateGuard lets in-dialog requests through), so
/// without this one dialog could flood the SIP thread and every frontend with events.
///
///   request of B bytes ──► second over? ──yes──► a new second: counts from zero
///                               ▼
///   requests + 1 ≤ requestsPerSecond and bytes + B ≤ bytesPerSecond ──yes──► admit
///                               └──no──► refuse (503, Retry-After: 1), not counted
///
/// A pure value: the caller passes the time (the environment's monotonic uptime).
struct DialogBudget: Sendable, Hashable {
    /// MESSAGE and INFO requests (other than group messages) one dialog may send a second: chat and keypad tones
    /// come a few a second; a flood (5,000–10,000 a second were all taken before) is cut to this.
    static let requestsPerSecond = 250
    /// Their bytes a second (bodies): several large group messages, not a disk's worth.
    static let bytesPerSecond = 256 * 1_024
    /// The largest MESSAGE or INFO body taken (a chat line, a group message, a DTMF relay); 413 beyond.
    static let maxBodyBytes = 16 * 1_024

    private var windowStart: Duration?
    private var requests = 0
    private var bytes = 0

    /// Whether a request of `bodyBytes` at `now` fits this second's budget (and spends it when it does).
    mutating func admits(bodyBytes: Int, at now: Duration) -> Bool {
        if windowStart.map({ now - $0 >= .seconds(1) }) ?? true {
            windowStart = now
            requests = 0
            bytes = 0
        }
        guard requests + 1 <= Self.requestsPerSecond, bytes + bodyBytes <= Self.bytesPerSecond else { return false }
        requests += 1
        bytes += bodyBytes
        return true
    }
}

extension SIPUserAgent {
    /// Whether a MESSAGE or INFO in a dialog may go on: a body over ``DialogBudget/maxBodyBytes`` gets 413, a dialog
    /// over its budget gets 503 with Retry-After (refusals counted; the log says so once per call). Group messages
    /// are the group messenger's to bound.
    func admitsInDialog(_ request: SIPRequest, key: TransactionKey) -> Bool {
        guard request.method == .message || request.method == .info, request.headers.toTag != nil else { return true }
        // Group messages are bounded by the group messenger's own size caps (up to 60 KiB over TCP), per-sender rate
        // and per-leg bytes, and a group's backlog drains faster than any fixed rate on a fast link.
        let groupMessage = request.method == .message
            && request.headers.contentType?.headerValue.lowercased().hasPrefix(GroupWire.contentType) == true
        guard !groupMessage else { return true }
        guard request.body.count <= DialogBudget.maxBodyBytes else {
            counters.inDialogRefused += 1
            respond(to: request, key: key, status: 413, reason: "Message Body Too Large")
            return false
        }
        guard let uuid = leg(forInDialog: request) else { return true }
        return spendsBudget(of: uuid, on: request, key: key)
    }

    /// Whether the call's budget takes `request` (spent when it does); 503 with Retry-After when it does not.
    func spendsBudget(of uuid: UUID, on request: SIPRequest, key: TransactionKey) -> Bool {
        let leg = UUIDKey(uuid)
        var budget = dialogBudgets[leg] ?? DialogBudget()
        let admitted = budget.admits(bodyBytes: request.body.count, at: environment.uptime)
        dialogBudgets[leg] = budget
        guard !admitted else { return true }
        counters.inDialogRefused += 1
        if floodingDialogs.insert(leg).inserted {
            log.warning("\(uuid): the peer sends more than \(DialogBudget.requestsPerSecond) MESSAGE/INFO requests or "
                + "\(DialogBudget.bytesPerSecond / 1_024) KiB a second in the call: refusing the excess with 503")
        }
        respond(to: request, key: key, status: 503, extra: ["Retry-After": "1"], reason: "Too Many Requests In This Call")
        return false
    }
}
