import ConversationKit
import Foundation
import GroupActivities

/// Group sessions (Apple's GroupActivities) on the engine's conversations: a frontend activates one on a connected
/// conversation (and its merged group), joins one a peer offered, sends messages, leaves or ends it. Every call
/// hops onto the engine's thread and waits there; what follows comes as ``EngineEvent/group(_:)`` events.
extension ParleyEngine {
    /// The sessions this node hosts or was offered, oldest first.
    public var groupSessions: [GroupSessionInfo] {
        onEngine { $0.groups.messenger.sessionInfos } ?? []
    }

    /// The session a conversation carries, if any.
    public func groupSession(on conversation: UUID) -> GroupSessionInfo? {
        onEngine { $0.groups.messenger.session(on: conversation) } ?? nil
    }

    /// Whether a conversation may activate a session now (it is joined or paused).
    public func isEligibleForGroupSession(_ conversation: UUID) -> Bool {
        onEngine { $0.groups.isEligible(conversation) } ?? false
    }

    /// Activates `activity` on a conversation: this node hosts the session (its sequencer) and its peers are offered it.
    public func activateGroupSession(_ activity: GroupActivity, on conversation: UUID) -> Result<GroupSessionInfo, GroupSendError> {
        onEngine { $0.groups.activate(activity, on: conversation) } ?? .failure(.notJoined)
    }

    /// Joins a session a peer offered.
    public func joinGroupSession(_ session: String) -> Result<GroupSessionInfo, GroupSendError> {
        onEngine { $0.groups.join(session) } ?? .failure(.unknownSession(session))
    }

    /// Leaves a session (`end`: ends it for everyone, when this node hosts it).
    public func leaveGroupSession(_ session: String, end: Bool) -> Result<Void, GroupSendError> {
        onEngine { $0.groups.leave(session, end: end) } ?? .failure(.unknownSession(session))
    }

    /// Sends a message in a session; the id names its `sendFinished` report.
    public func sendGroupMessage(
        _ data: JSONValue, type: String, to recipients: GroupRecipients = .all, mode: GroupDeliveryMode = .reliable,
        keep: Bool = false, in session: String
    ) -> Result<UInt64, GroupSendError> {
        onEngine { $0.groups.send(data, type: type, to: recipients, mode: mode, keep: keep, in: session) }
            ?? .failure(.unknownSession(session))
    }
}
