import Foundation

/// One MESSAGE body for a leg; its answer comes back with `token`.
public struct GroupTransmission: Sendable, Hashable {
    /// Names this transmission in `answered` and `failed`.
    public let token: UInt64
    /// `application/vnd.parley.group+json` or `text/plain;charset=utf-8`.
    public let contentType: String
    public let body: Data
}

/// A session as the frontend sees it.
public struct GroupSessionInfo: Sendable, Hashable {
    public let id: String
    public let activity: GroupActivity
    public let state: GroupSessionState
    /// Whether this side is the sequencer (it activated, or it holds the merged group).
    public let isHost: Bool
    /// The conversation it was activated on (host) or arrived on (member).
    public let conversation: UUID
    public let localParticipant: GroupParticipant
    /// The active participants, this side included, ordered by id.
    public let activeParticipants: [GroupParticipant]
    /// The most bytes a message's `type` and `data` may have in this session now.
    public let maxMessageBytes: Int

    /// A session's view.
    public init(
        id: String, activity: GroupActivity, state: GroupSessionState, isHost: Bool, conversation: UUID,
        localParticipant: GroupParticipant, activeParticipants: [GroupParticipant], maxMessageBytes: Int
    ) {
        self.id = id
        self.activity = activity
        self.state = state
        self.isHost = isHost
        self.conversation = conversation
        self.localParticipant = localParticipant
        self.activeParticipants = activeParticipants
        self.maxMessageBytes = maxMessageBytes
    }
}

/// A message for the local frontend.
public struct GroupDelivery: Sendable, Hashable {
    public let session: String
    /// The session's sequence number: one order for every member.
    public let seq: UInt64
    public let source: GroupParticipant
    public let type: String
    public let data: JSONValue
    public let mode: GroupDeliveryMode

    /// A delivery.
    public init(session: String, seq: UInt64, source: GroupParticipant, type: String, data: JSONValue, mode: GroupDeliveryMode) {
        self.session = session
        self.seq = seq
        self.source = source
        self.type = type
        self.data = data
        self.mode = mode
    }
}

/// How one of the local frontend's sends ended: delivered to whom, failed for whom, and which plain softphones
/// could not take its type. `error` is set when it went to nobody (throttled at the host, too large…).
public struct GroupSendReport: Sendable, Hashable {
    /// The id `send` returned.
    public let id: UInt64
    public let session: String
    /// Its place in the session's order (nil when it was refused).
    public let seq: UInt64?
    public let deliveredTo: [String]
    public let failed: [String]
    public let unsupported: [String]
    public let error: GroupSendError?

    /// A report.
    public init(
        id: UInt64, session: String, seq: UInt64?, deliveredTo: [String], failed: [String], unsupported: [String],
        error: GroupSendError?
    ) {
        self.id = id
        self.session = session
        self.seq = seq
        self.deliveredTo = deliveredTo
        self.failed = failed
        self.unsupported = unsupported
        self.error = error
    }
}

/// What the driver does for the messenger.
public enum GroupEffect: Sendable, Hashable {
    /// Send this body in a MESSAGE in the leg's dialog (at most one is out per leg).
    case transmit(leg: UUID, GroupTransmission)
    /// Call `resume(leg:)` after this long (the peer asked for a pause with Retry-After).
    case resumeLater(leg: UUID, after: Duration)
    /// A peer offered a session; the frontend may join it.
    case sessionOffered(GroupSessionInfo)
    /// A session's state changed (joined, invalidated).
    case sessionChanged(GroupSessionInfo)
    /// A session's active participants changed: the catch-up trigger (send a snapshot `.only(added)`).
    case participantsChanged(session: String, added: [GroupParticipant], removed: [GroupParticipant], active: [GroupParticipant])
    /// A message for the frontend.
    case deliver(GroupDelivery)
    /// One of the frontend's sends is over.
    case sendFinished(GroupSendReport)
    /// Text for a conversation outside any session (a 1:1 message): in its dialog (`claimedSender` nil), or from
    /// outside it by a sender whose From names the conversation's peer (`claimedSender` that From: unverified, since
    /// anyone can write it; such text never reaches a session).
    case textReceived(leg: UUID, text: String, claimedSender: String?)
    /// The leg's dialog is dead (481, 408, no answer): its conversation should end.
    case endConversation(leg: UUID, status: Int)
    /// A line for the log.
    case log(String)
}
