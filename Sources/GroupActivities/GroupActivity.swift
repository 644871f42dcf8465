import Foundation

/// What a group session is about: stable metadata only (Apple's `GroupActivity`). What changes while people share it
/// travels as messages; a new state of the activity ("a new canvas") is a new session.
public struct GroupActivity: Sendable, Hashable, Codable {
    /// The app's identifier of the activity (`com.example.list`); 1–128 characters.
    public var identifier: String
    /// What people see (`Shopping list`); 1–256 characters.
    public var title: String
    /// The kind of activity; `generic` for a custom one (Apple's `GroupActivityMetadata.ActivityType.generic`).
    public var type: String

    /// An activity.
    public init(identifier: String, title: String, type: String = "generic") {
        self.identifier = identifier
        self.title = title
        self.type = type
    }

    /// Why it cannot be used, if it cannot.
    public var problem: String? {
        if identifier.isEmpty || identifier.utf8.count > 128 { return "the activity's identifier must have 1–128 bytes" }
        if title.isEmpty || title.utf8.count > 256 { return "the activity's title must have 1–256 bytes" }
        if type.isEmpty || type.utf8.count > 64 { return "the activity's type must have 1–64 bytes" }
        return nil
    }
}

/// One person's device in a group session (Apple's `Participant`): its identifier is stable for the session.
public struct GroupParticipant: Sendable, Hashable, Codable, Comparable {
    /// Unique within the session (the host's conversation uuid for a remote member, a session-made one for the host).
    public var id: String
    /// What the others see (the caller's display name).
    public var name: String

    /// A participant.
    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }

    public static func < (left: GroupParticipant, right: GroupParticipant) -> Bool { left.id < right.id }
}

/// Who a message goes to (Apple's `GroupSessionMessenger.Participants`).
public enum GroupRecipients: Sendable, Hashable {
    /// Every active participant but the sender.
    case all
    /// These participants, by id.
    case only(Set<String>)
}

/// How hard a messenger tries (Apple's `GroupSessionMessenger.DeliveryMode`).
public enum GroupDeliveryMode: String, Sendable, Hashable, Codable {
    /// Delivered once, in one order for everyone, to every member known at send time.
    case reliable
    /// Best effort: a message still waiting behind a busy leg is replaced by a newer one of its type.
    case unreliable
}

/// Where a session stands (Apple's `GroupSession.State`).
///
/// ```
///  waiting ──join()──▶ joined ──leave(), end(), the host ended it, the call ended, replaced──▶ invalidated(reason)
///     └───────────────leave(), the host ended it, the call ended, replaced──────────────────────▲
/// ```
public enum GroupSessionState: Sendable, Hashable {
    /// Offered by a peer; this side has not joined yet.
    case waiting
    /// Sending and receiving messages.
    case joined
    /// Over, for this reason; a session never comes back from here.
    case invalidated(GroupSessionEndReason)

    /// `waiting`, `joined` or `invalidated`.
    public var name: String {
        switch self {
        case .waiting: "waiting"
        case .joined: "joined"
        case .invalidated: "invalidated"
        }
    }
}

/// Why a session was invalidated.
public enum GroupSessionEndReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// This side left it.
    case left
    /// Its host ended it (or this side, the host, did).
    case ended
    /// A new session took its place in the same conversation or group.
    case replaced
    /// The conversation that carried it ended or left the group (the dialog to the host is gone).
    case conversationEnded
}

/// How a conversation's peer reads group messages.
public enum GroupLegFormat: String, Sendable, Hashable, Codable {
    /// A Parley peer: the versioned JSON body (`application/vnd.parley.group+json`).
    case json
    /// A plain softphone: `text` messages as `text/plain` ("[Alice] hi"); other types are not sent there.
    case text
}
