import Foundation

/// An action the coordinator hands to its handler (Apple's `SWStartCollaborationAction` and
/// `SWUpdateCollaborationParticipantsAction`). Like a conversation action, it completes exactly once: fulfilled,
/// failed, or timed out at ``deadline``.
public struct CollaborationAction: Sendable, Hashable, Identifiable {
    /// What the handler is asked to do.
    public enum Kind: Sendable, Hashable {
        /// Create the collaboration: fulfilled with its URL and device-independent identifier; failing cancels the share.
        case start(CollaborationMetadata, session: String)
        /// Store the added people's roots against the collaboration and revoke the removed ones.
        case updateParticipants(collaboration: String, added: [PersonIdentity], removed: [PersonIdentity])
    }

    /// Unique on this node.
    public let id: String
    public let kind: Kind
    /// When it times out if nobody completed it.
    public let deadline: Date
    /// Whether a frontend must confirm it (otherwise the node's own handler fulfils it at once).
    public let requiresConfirmation: Bool
}

/// How an action ended.
public enum CollaborationActionOutcome: Sendable, Hashable {
    /// Start: with the handler's URL and identifier. Update: with nothing.
    case fulfilled(url: String?, identifier: String?)
    /// The handler refused.
    case failed
    /// Nobody answered in time.
    case timedOut
}

/// The actions in flight, with their deadlines: each leaves exactly once (``complete(_:with:)`` or ``expire(now:)``).
///
///     submit ──▶ pending ──fulfil──▶ fulfilled
///                   ├─────fail────▶ failed
///                   └──deadline───▶ timedOut
public struct CollaborationCoordinator: Sendable {
    /// How long a handler has.
    public let timeout: TimeInterval
    private(set) var pending: [String: CollaborationAction] = [:]

    public init(timeout: TimeInterval = 30) {
        precondition(timeout > 0, "a coordinator needs a positive timeout")
        self.timeout = timeout
    }

    /// Actions waiting, oldest deadline first.
    public var waiting: [CollaborationAction] { pending.values.sorted { ($0.deadline, $0.id) < ($1.deadline, $1.id) } }

    /// The next deadline, if any action waits.
    public var nextDeadline: Date? { pending.values.map(\.deadline).min() }

    /// A new pending action.
    public mutating func submit(_ kind: CollaborationAction.Kind, id: String, requiresConfirmation: Bool, now: Date) -> CollaborationAction {
        precondition(pending[id] == nil, "action id \(id) reused")
        let action = CollaborationAction(id: id, kind: kind, deadline: now.addingTimeInterval(timeout), requiresConfirmation: requiresConfirmation)
        pending[id] = action
        return action
    }

    /// The action, taken out, if it was still pending; nil when it already completed (the later call is a no-op).
    public mutating func complete(_ id: String) -> CollaborationAction? { pending.removeValue(forKey: id) }

    /// The actions whose deadline has come, taken out.
    public mutating func expire(now: Date) -> [CollaborationAction] {
        let due = pending.values.filter { $0.deadline <= now }.sorted { $0.id < $1.id }
        for action in due { pending[action.id] = nil }
        return due
    }
}
