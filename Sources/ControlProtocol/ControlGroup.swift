import Foundation
import GroupActivities

/// `groupActivate`: share an activity in a joined conversation (and its merged group).
public struct GroupActivateParams: ControlParams {
    /// The conversation's uuid, or a unique prefix of it.
    public var conversation: String
    /// The app's identifier of the activity.
    public var identifier: String
    /// What people see.
    public var title: String
    /// `generic` (the default) or the app's kind.
    public var type: String?

    /// Params.
    public init(conversation: String, identifier: String, title: String, type: String? = nil) {
        self.conversation = conversation
        self.identifier = identifier
        self.title = title
        self.type = type
    }

    /// The members.
    public static let fields = [
        ConversationParams.conversationField,
        ControlField("identifier", "a string", "the app's identifier of the activity, 1–128 bytes (`com.example.list`)"),
        ControlField("title", "a string", "what people see, 1–256 bytes"),
        ControlField("type", "a string", optional: true, "the kind of activity; `generic` when absent"),
    ]
    /// An example.
    public static let example = GroupActivateParams(conversation: "1b4e28ba", identifier: "com.example.list", title: "Shopping list", type: "generic")

    /// The activity, checked.
    public var activity: GroupActivity { GroupActivity(identifier: identifier, title: title, type: type ?? "generic") }

    /// Sizes.
    public func validate() throws(ControlError) {
        try ConversationParams.check(conversation, "conversation")
        if let problem = activity.problem {
            let field = problem.contains("identifier") ? "identifier" : problem.contains("title") ? "title" : "type"
            throw ControlError(.invalidParams, problem.prefix(1).uppercased() + problem.dropFirst() + ".", field: field)
        }
    }
}

/// `groupJoin`, `groupLeave`, `groupEnd`: one session.
public struct GroupSessionParams: ControlParams {
    /// The session's id.
    public var session: String

    /// Params.
    public init(session: String) { self.session = session }

    /// The members.
    public static let fields = [ControlField("session", "a string", "a group session's id (from `groupSessions` or its events)")]
    /// An example.
    public static let example = GroupSessionParams(session: "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10")

    /// Not blank.
    public func validate() throws(ControlError) { try ConversationParams.check(session, "session") }
}

/// Who a group message goes to: `"all"` or a list of participant ids.
public enum GroupTargets: Codable, Sendable, Equatable {
    /// Every other active participant.
    case all
    /// These participants, by id.
    case only([String])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let word = try? container.decode(String.self) {
            guard word == "all" else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "\"all\" or a list of participant ids")
            }
            self = .all
        } else {
            self = .only(try container.decode([String].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .all: try container.encode("all")
        case .only(let ids): try container.encode(ids)
        }
    }

    /// The messenger's form.
    public var recipients: GroupRecipients {
        switch self {
        case .all: .all
        case .only(let ids): .only(Set(ids))
        }
    }
}

/// `groupSend`: a message to the session's other participants.
public struct GroupSendParams: ControlParams {
    public var session: String
    /// The app's name for the message's kind; `text` reaches plain softphones too.
    public var type: String
    /// Any JSON value.
    public var data: JSONValue
    public var to: GroupTargets?
    /// `reliable` (the default) or `unreliable`.
    public var mode: String?
    /// Replay to members who join later (the host keeps the newest 64).
    public var keep: Bool?

    /// Params.
    public init(session: String, type: String, data: JSONValue, to: GroupTargets? = nil, mode: String? = nil, keep: Bool? = nil) {
        self.session = session
        self.type = type
        self.data = data
        self.to = to
        self.mode = mode
        self.keep = keep
    }

    /// The members.
    public static let fields = [
        GroupSessionParams.fields[0],
        ControlField("type", "a string", "the message's kind: 1–64 letters, digits, `.`, `-`, `_`; `text` (data a string or `{\"text\": …}`) also reaches plain softphones as `[Name] text`"),
        ControlField("data", "any JSON value but null", "the message; with `type` at most 768 bytes when any leg runs over UDP, 60 KiB otherwise"),
        ControlField("to", "\"all\" or a list of strings", optional: true, "participant ids; everyone else when absent"),
        ControlField("mode", "a string", optional: true, "`reliable` (default: once, one order for everyone) or `unreliable` (best effort; a waiting one is replaced by a newer of its type)"),
        ControlField("keep", "a boolean", optional: true, "replay it to members who join later"),
    ]
    /// An example.
    public static let example = GroupSendParams(
        session: "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", type: "app.item", data: .object(["item": .string("milk"), "done": .bool(false)]),
        to: .all, mode: "reliable", keep: true)

    /// The delivery mode.
    public var deliveryMode: GroupDeliveryMode { mode.flatMap(GroupDeliveryMode.init(rawValue:)) ?? .reliable }

    /// A known mode.
    public func validate() throws(ControlError) {
        try ConversationParams.check(session, "session")
        if case .null = data { throw ControlError(.invalidParams, "\"data\" may be any JSON value but null.", field: "data") }
        if let mode, GroupDeliveryMode(rawValue: mode) == nil {
            throw ControlError(.invalidParams, "\"mode\" must be \"reliable\" or \"unreliable\".", field: "mode")
        }
    }
}

/// A participant of a group session.
public struct GroupParticipantInfo: Codable, Sendable, Equatable {
    public var id: String
    public var name: String

    public init(_ participant: GroupParticipant) {
        id = participant.id
        name = participant.name
    }
}

/// A group session as the control API shows it.
public struct GroupSessionData: Codable, Sendable, Equatable {
    public var session: String
    public var activity: GroupActivity
    /// `waiting`, `joined` or `invalidated`.
    public var state: String
    /// Why it was invalidated: `left`, `ended`, `replaced`, `conversationEnded`.
    @Nullable public var reason: String?
    /// Whether this parleyd is its sequencer.
    public var isHost: Bool
    /// The conversation it was activated on or arrived on.
    public var conversation: String
    public var localParticipant: GroupParticipantInfo
    public var activeParticipants: [GroupParticipantInfo]
    /// The most bytes a message's type and data may have now.
    public var maxMessageBytes: Int

    public init(_ info: GroupSessionInfo) {
        session = info.id
        activity = info.activity
        state = info.state.name
        if case .invalidated(let why) = info.state { reason = why.rawValue } else { reason = nil }
        isHost = info.isHost
        conversation = info.conversation.uuidString
        localParticipant = GroupParticipantInfo(info.localParticipant)
        activeParticipants = info.activeParticipants.map(GroupParticipantInfo.init)
        maxMessageBytes = info.maxMessageBytes
    }
}

/// `groupSessions`' result.
public struct GroupSessionsResult: Codable, Sendable, Equatable {
    public var sessions: [GroupSessionData]
    public init(sessions: [GroupSessionData]) { self.sessions = sessions }
}

/// `groupSessionChanged`: offered, activated, joined or invalidated.
public struct GroupSessionChanged: Codable, Sendable, Equatable {
    /// `offered` (a peer offers it: join with `groupJoin`), `activated`, `joined`, `invalidated`.
    public var change: String
    public var session: GroupSessionData
    public init(change: String, session: GroupSessionData) {
        self.change = change
        self.session = session
    }
}

/// `groupParticipantsChanged`: who came (send them a snapshot) and who went.
public struct GroupParticipantsChanged: Codable, Sendable, Equatable {
    public var session: String
    public var added: [GroupParticipantInfo]
    public var removed: [GroupParticipantInfo]
    public var active: [GroupParticipantInfo]
    public init(session: String, added: [GroupParticipantInfo], removed: [GroupParticipantInfo], active: [GroupParticipantInfo]) {
        self.session = session
        self.added = added
        self.removed = removed
        self.active = active
    }
}

/// `groupMessage`: a message from another participant.
public struct GroupMessageReceived: Codable, Sendable, Equatable {
    public var session: String
    /// The session's order (0 for an unreliable message).
    public var seq: UInt64
    public var source: GroupParticipantInfo
    public var type: String
    public var data: JSONValue
    public var mode: String

    public init(_ delivery: GroupDelivery) {
        session = delivery.session
        seq = delivery.seq
        source = GroupParticipantInfo(delivery.source)
        type = delivery.type
        data = delivery.data
        mode = delivery.mode.rawValue
    }
}

/// `groupSend`'s result and the `groupSendResult` event: delivered to whom, failed for whom, unsupported by whom.
public struct GroupSendResult: Codable, Sendable, Equatable {
    public var session: String
    public var id: UInt64
    @Nullable public var seq: UInt64?
    public var deliveredTo: [String]
    public var failed: [String]
    public var unsupported: [String]
    @Nullable public var error: ControlError?

    public init(_ report: GroupSendReport) {
        session = report.session
        id = report.id
        seq = report.seq
        deliveredTo = report.deliveredTo
        failed = report.failed
        unsupported = report.unsupported
        error = report.error.map(ControlError.init(group:))
    }
}

/// `textMessage`: text from a call's peer outside any group session — in the call's dialog (verified), or a MESSAGE
/// from outside it whose From header names the call's peer (unverified: anyone may write that header).
public struct TextMessageReceived: Codable, Sendable, Equatable {
    public var conversation: String
    public var text: String
    /// It came in the call's own dialog; false for a MESSAGE from outside it.
    public var verified: Bool
    /// For an unverified text, the address its From header claims; null for a verified one (the conversation's peer).
    @Nullable public var from: String?
    public init(conversation: String, text: String, verified: Bool = true, from: String? = nil) {
        self.conversation = conversation
        self.text = text
        self.verified = verified
        self.from = from
    }
}

extension ControlError {
    /// A messenger's refusal as a control error with its own code and numbers.
    public init(group error: GroupSendError) {
        switch error {
        case .messageTooLarge(let size, let limit):
            self.init(.messageTooLarge, "The message is too large (\(size) bytes; at most \(limit)).", details: .init(size: size, limit: limit))
        case .throttled(let wait):
            let ms = GroupSendError.milliseconds(wait)
            self.init(.throttled, "Too many messages; try again in \(ms) ms.", details: .init(retryAfterMs: ms))
        case .notJoined: self.init(.notJoined, "Join the session first (or the call is not connected).")
        case .unknownParticipant(let id): self.init(.unknownParticipant, "No active participant \(id).", details: .init(participant: id))
        case .participantLeft(let id): self.init(.participantLeft, "A participant left before the message reached it.", details: .init(participant: id))
        case .invalidMessage(let why): self.init(.invalidParams, why.prefix(1).uppercased() + why.dropFirst() + ".", field: "type")
        case .unknownSession(let id): self.init(.notFound, "No group session \(id).", details: .init(field: "session"))
        }
    }
}

/// `groupLeave`'s and `groupEnd`'s result.
public struct GroupLeft: Codable, Sendable, Equatable {
    public var session: String
    public var state: String
    public init(session: String, state: String) {
        self.session = session
        self.state = state
    }
}
