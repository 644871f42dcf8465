import Foundation
import SIPMessages
import Synchronization

/// A final SIP response as a frontend shows it: `486 Busy Here`.
public struct SIPFinalStatus: Sendable, Hashable {
    /// The status code.
    public let code: Int
    /// The reason phrase as the peer wrote it.
    public let reason: String
    /// Seconds after which trying again may work, from the response's Retry-After (RFC 3261 §20.33), if any.
    public let retryAfter: Int?

    /// A status.
    public init(code: Int, reason: String, retryAfter: Int? = nil) {
        self.code = code
        self.reason = reason
        self.retryAfter = retryAfter
    }

    /// The status of a final response, with its Retry-After.
    init(_ response: SIPResponse) {
        self.init(
            code: response.statusCode, reason: response.reasonPhrase, retryAfter: SIPUserAgent.retryAfterSeconds(of: response))
    }
}

/// The peer's final refusal behind each action the engine failed because of one (a tone's INFO answered 415, a hold's
/// re-INVITE 488), by action uuid: written on the engine's thread before the action fails, read by whoever reports
/// the settlement (any thread, any number of times). The last `limit` are kept: a settlement is reported at once, so
/// older ones are of no use.
final class ActionFailureStatuses: Sendable {
    private struct Kept {
        var statuses: [UUID: SIPFinalStatus] = [:]
        /// The uuids kept, as a ring: the oldest at `next` once it is full.
        var order: [UUID] = []
        var next = 0
    }

    static let limit = 256
    private let kept = Mutex(Kept())

    /// Keeps the status `action` failed with.
    func keep(_ status: SIPFinalStatus, for action: UUID) {
        kept.withLock { kept in
            guard kept.statuses.updateValue(status, forKey: action) == nil else { return }
            guard kept.order.count == Self.limit else { return kept.order.append(action) }
            kept.statuses[kept.order[kept.next]] = nil
            kept.order[kept.next] = action
            kept.next = (kept.next + 1) % Self.limit
        }
    }

    /// Forgets the status of an action that had settled otherwise already (its slot in the ring is reused in turn).
    func forget(_ action: UUID) {
        _ = kept.withLock { $0.statuses.removeValue(forKey: action) }
    }

    /// The status `action` failed with, if it failed for a peer's final response and is among the last kept.
    func status(of action: UUID) -> SIPFinalStatus? {
        kept.withLock { $0.statuses[action] }
    }
}

extension ParleyEngine {
    /// The peer's final response an action failed for, when the engine failed it because a request of the call was
    /// refused (a tone's INFO answered 415 Unsupported Media Type, a hold's re-INVITE 488 Not Acceptable Here); nil
    /// for any other failure. Kept for the last 256 such actions, readable as soon as the action has settled.
    public func failureStatus(ofAction actionUUID: UUID) -> SIPFinalStatus? {
        actionFailures.status(of: actionUUID)
    }
}
