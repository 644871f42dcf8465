import Foundation

/// The events a subscribed client receives, each `{"v":1,"event":NAME,"data":{…}}`.
public enum ControlEventMessage: Sendable, Equatable {
    /// Anything about a conversation changed.
    case conversationChanged(ConversationChanged)
    /// The peer sent keypad tones.
    case tonesReceived(TonesReceived)
    /// A transfer in a call progressed.
    case transferProgress(TransferProgress)
    /// A call's negotiated audio changed.
    case mediaChanged(MediaChanged)
    /// A call's audio figures.
    case mediaStats(MediaStats)
    /// A page's part in a call's audio connected or ended.
    case browserAudioChanged(BrowserAudioChanged)
    /// Do-not-disturb was turned on or off.
    case doNotDisturbChanged(DoNotDisturbState)
    /// The devices calls play on changed.
    case audioRouteChanged(AudioRouteChanged)
    /// How loud a call's audio is (to subscribers that asked).
    case audioLevels(AudioLevelsEvent)
    /// Records were added, marked read or deleted.
    case historyChanged(HistoryChanged)
    /// The registration changed.
    case registrationChanged(RegistrationInfo)
    /// A VoIP push was handled.
    case pushReceived(PushReceived)
    /// An action completed, failed or timed out.
    case actionSettled(ActionSettled)
    /// A group session was offered, activated, joined or invalidated.
    case groupSessionChanged(GroupSessionChanged)
    /// A group session's participants changed.
    case groupParticipantsChanged(GroupParticipantsChanged)
    /// A group message arrived.
    case groupMessage(GroupMessageReceived)
    /// A group message of ours is delivered (or not).
    case groupSendResult(GroupSendResult)
    /// Text from a call's peer outside any session.
    case textMessage(TextMessageReceived)
    /// A collaboration started, was shared, changed or ended.
    case collaborationChanged(CollaborationChanged)
    /// A participants update (to confirm, when asked).
    case collaborationParticipantsUpdate(CollaborationUpdateEvent)
    /// A collaboration action completed.
    case collaborationActionCompleted(CollaborationActionCompleted)
    /// The owner checked a proof.
    case collaborationVerified(CollaborationVerified)
    /// A collaboration notice arrived.
    case collaborationNotice(CollaborationNoticeEvent)
    /// A group member announced their identity.
    case identityAnnounced(IdentityAnnounced)

    /// The event names, in reference order.
    public enum Name: String, Sendable, CaseIterable {
        /// `conversationChanged`.
        case conversationChanged
        /// `tonesReceived`.
        case tonesReceived
        /// `transferProgress`.
        case transferProgress
        /// `mediaChanged`.
        case mediaChanged
        /// `mediaStats`.
        case mediaStats
        /// `browserAudioChanged`.
        case browserAudioChanged
        /// `doNotDisturbChanged`.
        case doNotDisturbChanged
        /// `audioRouteChanged`.
        case audioRouteChanged
        /// `audioLevels` (only to subscribers that asked: ``SubscribeParams/audioLevels``).
        case audioLevels
        /// `historyChanged`.
        case historyChanged
        /// `registrationChanged`.
        case registrationChanged
        /// `pushReceived`.
        case pushReceived
        /// `actionSettled`.
        case actionSettled
        /// `groupSessionChanged`.
        case groupSessionChanged
        /// `groupParticipantsChanged`.
        case groupParticipantsChanged
        /// `groupMessage`.
        case groupMessage
        /// `groupSendResult`.
        case groupSendResult
        /// `textMessage`.
        case textMessage
        /// `collaborationChanged`.
        case collaborationChanged
        /// `collaborationParticipantsUpdate`.
        case collaborationParticipantsUpdate
        /// `collaborationActionCompleted`.
        case collaborationActionCompleted
        /// `collaborationVerified`.
        case collaborationVerified
        /// `collaborationNotice`.
        case collaborationNotice
        /// `identityAnnounced`.
        case identityAnnounced
    }

    /// Its name.
    public var name: Name {
        switch self {
        case .conversationChanged: .conversationChanged
        case .tonesReceived: .tonesReceived
        case .transferProgress: .transferProgress
        case .mediaChanged: .mediaChanged
        case .mediaStats: .mediaStats
        case .browserAudioChanged: .browserAudioChanged
        case .doNotDisturbChanged: .doNotDisturbChanged
        case .audioRouteChanged: .audioRouteChanged
        case .audioLevels: .audioLevels
        case .historyChanged: .historyChanged
        case .registrationChanged: .registrationChanged
        case .pushReceived: .pushReceived
        case .actionSettled: .actionSettled
        case .groupSessionChanged: .groupSessionChanged
        case .groupParticipantsChanged: .groupParticipantsChanged
        case .groupMessage: .groupMessage
        case .groupSendResult: .groupSendResult
        case .textMessage: .textMessage
        case .collaborationChanged: .collaborationChanged
        case .collaborationParticipantsUpdate: .collaborationParticipantsUpdate
        case .collaborationActionCompleted: .collaborationActionCompleted
        case .collaborationVerified: .collaborationVerified
        case .collaborationNotice: .collaborationNotice
        case .identityAnnounced: .identityAnnounced
        }
    }

    /// The whole message.
    public func encoded() -> Data {
        switch self {
        case .conversationChanged(let data): JSONOut.envelope(id: nil, event: name.rawValue, payloadKey: "data", data)
        case .tonesReceived(let data): Self.encode(name, data)
        case .transferProgress(let data): Self.encode(name, data)
        case .mediaChanged(let data): Self.encode(name, data)
        case .mediaStats(let data): Self.encode(name, data)
        case .browserAudioChanged(let data): Self.encode(name, data)
        case .doNotDisturbChanged(let data): Self.encode(name, data)
        case .audioRouteChanged(let data): Self.encode(name, data)
        case .audioLevels(let data): Self.encode(name, data)
        case .historyChanged(let data): Self.encode(name, data)
        case .registrationChanged(let data): Self.encode(name, data)
        case .pushReceived(let data): Self.encode(name, data)
        case .actionSettled(let data): Self.encode(name, data)
        case .groupSessionChanged(let data): Self.encode(name, data)
        case .groupParticipantsChanged(let data): Self.encode(name, data)
        case .groupMessage(let data): Self.encode(name, data)
        case .groupSendResult(let data): Self.encode(name, data)
        case .textMessage(let data): Self.encode(name, data)
        case .collaborationChanged(let data): Self.encode(name, data)
        case .collaborationParticipantsUpdate(let data): Self.encode(name, data)
        case .collaborationActionCompleted(let data): Self.encode(name, data)
        case .collaborationVerified(let data): Self.encode(name, data)
        case .collaborationNotice(let data): Self.encode(name, data)
        case .identityAnnounced(let data): Self.encode(name, data)
        }
    }

    /// Reads an event message (for clients); nil for anything else.
    public static func decode(_ line: Data) -> ControlEventMessage? {
        guard let name = ControlMessage.kind(of: line).event.flatMap(Name.init(rawValue:)) else { return nil }
        let decoder = ControlJSON.decoder
        switch name {
        case .conversationChanged:
            return (try? decoder.decode(Envelope<ConversationChanged>.self, from: line)).map { .conversationChanged($0.data) }
        case .transferProgress:
            return (try? decoder.decode(Envelope<TransferProgress>.self, from: line)).map { .transferProgress($0.data) }
        case .tonesReceived:
            return (try? decoder.decode(Envelope<TonesReceived>.self, from: line)).map { .tonesReceived($0.data) }
        case .mediaChanged:
            return (try? decoder.decode(Envelope<MediaChanged>.self, from: line)).map { .mediaChanged($0.data) }
        case .mediaStats:
            return (try? decoder.decode(Envelope<MediaStats>.self, from: line)).map { .mediaStats($0.data) }
        case .browserAudioChanged:
            return (try? decoder.decode(Envelope<BrowserAudioChanged>.self, from: line)).map { .browserAudioChanged($0.data) }
        case .doNotDisturbChanged:
            return (try? decoder.decode(Envelope<DoNotDisturbState>.self, from: line)).map { .doNotDisturbChanged($0.data) }
        case .audioRouteChanged:
            return (try? decoder.decode(Envelope<AudioRouteChanged>.self, from: line)).map { .audioRouteChanged($0.data) }
        case .audioLevels:
            return (try? decoder.decode(Envelope<AudioLevelsEvent>.self, from: line)).map { .audioLevels($0.data) }
        case .historyChanged:
            return (try? decoder.decode(Envelope<HistoryChanged>.self, from: line)).map { .historyChanged($0.data) }
        case .registrationChanged:
            return (try? decoder.decode(Envelope<RegistrationInfo>.self, from: line)).map { .registrationChanged($0.data) }
        case .pushReceived:
            return (try? decoder.decode(Envelope<PushReceived>.self, from: line)).map { .pushReceived($0.data) }
        case .actionSettled:
            return (try? decoder.decode(Envelope<ActionSettled>.self, from: line)).map { .actionSettled($0.data) }
        case .groupSessionChanged:
            return (try? decoder.decode(Envelope<GroupSessionChanged>.self, from: line)).map { .groupSessionChanged($0.data) }
        case .groupParticipantsChanged:
            return (try? decoder.decode(Envelope<GroupParticipantsChanged>.self, from: line)).map { .groupParticipantsChanged($0.data) }
        case .groupMessage:
            return (try? decoder.decode(Envelope<GroupMessageReceived>.self, from: line)).map { .groupMessage($0.data) }
        case .groupSendResult:
            return (try? decoder.decode(Envelope<GroupSendResult>.self, from: line)).map { .groupSendResult($0.data) }
        case .textMessage:
            return (try? decoder.decode(Envelope<TextMessageReceived>.self, from: line)).map { .textMessage($0.data) }
        case .collaborationChanged:
            return (try? decoder.decode(Envelope<CollaborationChanged>.self, from: line)).map { .collaborationChanged($0.data) }
        case .collaborationParticipantsUpdate:
            return (try? decoder.decode(Envelope<CollaborationUpdateEvent>.self, from: line)).map { .collaborationParticipantsUpdate($0.data) }
        case .collaborationActionCompleted:
            return (try? decoder.decode(Envelope<CollaborationActionCompleted>.self, from: line)).map { .collaborationActionCompleted($0.data) }
        case .collaborationVerified:
            return (try? decoder.decode(Envelope<CollaborationVerified>.self, from: line)).map { .collaborationVerified($0.data) }
        case .collaborationNotice:
            return (try? decoder.decode(Envelope<CollaborationNoticeEvent>.self, from: line)).map { .collaborationNotice($0.data) }
        case .identityAnnounced:
            return (try? decoder.decode(Envelope<IdentityAnnounced>.self, from: line)).map { .identityAnnounced($0.data) }
        }
    }

    private struct Envelope<Payload: Codable>: Codable {
        var v: Int
        var event: String
        var data: Payload
    }

    private static func encode<Payload: Codable>(_ name: Name, _ data: Payload) -> Data {
        ControlJSON.encode(Envelope(v: ControlProtocol.version, event: name.rawValue, data: data))
    }
}

/// `conversationChanged`: the conversation now, what it was, and what changed.
public struct ConversationChanged: Codable, Sendable, Equatable {
    /// The conversation after the change.
    public var conversation: ConversationInfo
    /// The state before, or null for a conversation seen for the first time.
    @Nullable public var from: String?
    /// The members of ``ConversationInfo`` that changed (`["new"]` for a new conversation).
    public var changes: [String]

    /// An event.
    public init(conversation: ConversationInfo, from: String?, changes: [String]) {
        self.conversation = conversation
        self.from = from
        self.changes = changes
    }
}

/// `tonesReceived`: keypad tones the peer sent (SIP INFO).
public struct TonesReceived: Codable, Sendable, Equatable {
    /// The conversation's uuid.
    public var conversation: String
    /// The digits, in order.
    public var digits: String

    /// An event.
    public init(conversation: String, digits: String) {
        self.conversation = conversation
        self.digits = digits
    }
}

/// `transferProgress`: a transfer in a call progressed (a NOTIFY's sipfrag status line, received or sent).
public struct TransferProgress: Codable, Sendable, Equatable {
    /// The conversation's uuid (the call whose peer is handed over).
    public var conversation: String
    /// `transferor` (we hand the peer over; the peer reports) or `transferee` (the peer hands us over; we report).
    public var role: String
    /// The new call's status: 100 trying, 180 ringing, 200 answered, 486 busy…
    public var status: Int
    /// Its reason phrase.
    public var reason: String
    /// Whether it is the outcome (no more progress comes).
    public var final: Bool

    /// An event.
    public init(conversation: String, role: String, status: Int, reason: String, final: Bool) {
        (self.conversation, self.role, self.status, self.reason, self.final) = (conversation, role, status, reason, final)
    }
}

/// `historyChanged`: what happened to which records.
public struct HistoryChanged: Codable, Sendable, Equatable {
    /// `inserted`, `read`, `deleted` or `cleared`.
    public var change: String
    /// The ids of the records concerned (empty for "every record": markRead all, clearHistory).
    public var records: [Int64]
    /// The conversation recorded (`inserted`), else null.
    @Nullable public var conversation: String?

    /// An event.
    public init(change: String, records: [Int64], conversation: String? = nil) {
        self.change = change
        self.records = records
        self.conversation = conversation
    }
}

/// `pushReceived`: a VoIP push and what parleyd did with it.
public struct PushReceived: Codable, Sendable, Equatable {
    /// The call's SIP Call-ID.
    public var callID: String
    /// `reported`, `alreadyReported`, `reportedAndEnded`, `cancelled` or `notReported`.
    public var handling: String
    /// The conversation concerned, or null.
    @Nullable public var conversation: String?
    /// Why it was ended or not reported, or null.
    @Nullable public var reason: String?

    /// An event.
    public init(callID: String, handling: String, conversation: String?, reason: String?) {
        self.callID = callID
        self.handling = handling
        self.conversation = conversation
        self.reason = reason
    }
}

/// `actionSettled`: any action — from a frontend or caused by the network — completed, failed or timed out.
public struct ActionSettled: Codable, Sendable, Equatable {
    /// The action's name.
    public var action: String
    /// The action's uuid.
    public var actionUUID: String
    /// The conversation's uuid.
    public var conversation: String
    /// `complete`, `failed` or `timedOut`.
    public var state: String
    /// Why it failed or timed out (a toast-ready message, SIP status in its details), or null.
    @Nullable public var error: ControlError?

    /// An event.
    public init(action: String, actionUUID: String, conversation: String, state: String, error: ControlError?) {
        self.action = action
        self.actionUUID = actionUUID
        self.conversation = conversation
        self.state = state
        self.error = error
    }
}
