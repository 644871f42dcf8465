import Foundation

/// A history record as the protocol writes it; the same names and units as ``ConversationInfo``.
public struct HistoryRecordInfo: Codable, Sendable, Equatable {
    /// The record's id (for markRead, deleteRecord, redial).
    public var id: Int64
    /// The conversation's uuid.
    public var uuid: String
    /// `incoming` or `outgoing`.
    public var direction: String
    /// `connected`, `missed`, `declined`, `blocked`, `busy`, `cancelled`, `failed`, `answeredElsewhere`, `declinedElsewhere`.
    public var status: String
    /// The conversation's ended reason.
    public var endedReason: String
    /// What a UI shows for the other side.
    public var displayName: String
    /// The remote members, with the address each called from (redial dials exactly that).
    public var members: [HandleInfo]
    /// Our own handle.
    @Nullable public var localMember: HandleInfo?
    /// The account the call went through (an address of record), or null.
    @Nullable public var account: String?
    /// It carried video.
    public var isVideo: Bool
    /// How its media was protected once negotiated (`sdes`, `dtls`), or null for a plain call.
    @Nullable public var encryption: String?
    /// The group it was merged into.
    @Nullable public var group: String?
    /// Its SIP Call-ID.
    @Nullable public var callID: String?
    /// When it began.
    public var createdAt: String
    /// When media connected.
    @Nullable public var connectedAt: String?
    /// When it ended.
    public var endedAt: String
    /// Connected time in milliseconds (0 when it never connected).
    public var durationMs: Int64
    /// Whether it was marked read.
    public var isRead: Bool
    /// Its audio figures as the call ended, or null (no audio, or a frontend carried it).
    @Nullable public var quality: MediaStatsInfo?

    /// A record.
    public init(
        id: Int64, uuid: String, direction: String, status: String, endedReason: String, displayName: String,
        members: [HandleInfo], localMember: HandleInfo?, isVideo: Bool, group: String?, callID: String?,
        createdAt: String, connectedAt: String?, endedAt: String, durationMs: Int64, isRead: Bool,
        quality: MediaStatsInfo? = nil, account: String? = nil, encryption: String? = nil
    ) {
        self.id = id
        self.uuid = uuid
        self.direction = direction
        self.status = status
        self.endedReason = endedReason
        self.displayName = displayName
        self.members = members
        self.localMember = localMember
        self.account = account
        self.isVideo = isVideo
        self.encryption = encryption
        self.group = group
        self.callID = callID
        self.createdAt = createdAt
        self.connectedAt = connectedAt
        self.endedAt = endedAt
        self.durationMs = durationMs
        self.isRead = isRead
        self.quality = quality
    }
}

/// An account's registration as the protocol writes it.
public struct RegistrationInfo: Codable, Sendable, Equatable {
    /// The account's address of record, or null (no account).
    @Nullable public var account: String?
    /// The account's name (its address of record unless the configuration names it), or null.
    @Nullable public var name: String?
    /// `unregistered`, `registering`, `registered` or `failed`.
    public var state: String
    /// Until when the binding holds (registered), or null.
    @Nullable public var expiresAt: String?
    /// Why the last attempt failed, or null.
    @Nullable public var reason: String?
    /// Our `HOST:PORT` as the registrar saw it when a NAT changed it from our Contact, or null.
    @Nullable public var mappedAddress: String?

    /// A registration state.
    public init(
        account: String? = nil, name: String? = nil, state: String, expiresAt: String? = nil, reason: String? = nil,
        mappedAddress: String? = nil
    ) {
        self.account = account
        self.name = name
        self.state = state
        self.expiresAt = expiresAt
        self.reason = reason
        self.mappedAddress = mappedAddress
    }
}

/// The result of `list`: one page of the live conversations.
public struct ListResult: Codable, Sendable, Equatable {
    /// Oldest first.
    public var conversations: [ConversationInfo]
    /// Give it as `cursor` for the next page; null on the last.
    @Nullable public var nextCursor: String?
    /// Live conversations in all, on every page.
    public var total: Int
    /// A page.
    public init(conversations: [ConversationInfo], nextCursor: String? = nil, total: Int? = nil) {
        self.conversations = conversations
        self.nextCursor = nextCursor
        self.total = total ?? conversations.count
    }
}

/// The result of `subscribe`.
public struct SubscribeResult: Codable, Sendable, Equatable {
    /// The events that will come.
    public var events: [String]
    /// A subscription.
    public init(events: [String]) { self.events = events }
}

/// The result of every action method (start, join, end, hold, resume, mute, playTone, merge, unmerge, redial).
public struct ActionResult: Codable, Sendable, Equatable {
    /// The action's name.
    public var action: String
    /// The action's uuid (its `actionSettled` event names it).
    public var actionUUID: String
    /// `complete`, or `pending` for start and redial (answered as soon as the conversation exists).
    public var state: String
    /// The conversation after the action (for `end`, in state `left`).
    public var conversation: ConversationInfo

    /// A result.
    public init(action: String, actionUUID: String, state: String, conversation: ConversationInfo) {
        self.action = action
        self.actionUUID = actionUUID
        self.state = state
        self.conversation = conversation
    }
}

/// The result of `history`.
public struct HistoryResult: Codable, Sendable, Equatable {
    /// Newest first.
    public var records: [HistoryRecordInfo]
    /// Give it as `cursor` for the next page; null on the last.
    @Nullable public var nextCursor: String?
    /// A page.
    public init(records: [HistoryRecordInfo], nextCursor: String?) {
        self.records = records
        self.nextCursor = nextCursor
    }
}

/// The result of `historyCount`, `markRead`, `deleteRecord` and `clearHistory`.
public struct HistoryCountResult: Codable, Sendable, Equatable {
    /// How many records matched, changed or went.
    public var count: Int
    /// A count.
    public init(count: Int) { self.count = count }
}

/// The result of `contact`.
public struct ContactResult: Codable, Sendable, Equatable {
    /// The handle as read.
    public var handle: HandleInfo
    /// The contact's name, or null.
    @Nullable public var contactName: String?
    /// A lookup.
    public init(handle: HandleInfo, contactName: String?) {
        self.handle = handle
        self.contactName = contactName
    }
}

/// The result of `reloadContacts`.
public struct ReloadContactsResult: Codable, Sendable, Equatable {
    /// Contacts loaded.
    public var contacts: Int
    /// Handles claimed by two contacts (the first kept).
    public var conflicts: Int
    /// A reload.
    public init(contacts: Int, conflicts: Int) {
        self.contacts = contacts
        self.conflicts = conflicts
    }
}

/// The result of `silence`.
public struct SilenceResult: Codable, Sendable, Equatable {
    /// The conversation.
    public var conversation: String
    /// Whether it was ringing (its sound is silenced now); false for a conversation that does not ring.
    public var silenced: Bool
    /// A result.
    public init(conversation: String, silenced: Bool) {
        self.conversation = conversation
        self.silenced = silenced
    }
}

/// One contact in the result of `contacts`.
public struct ContactInfo: Codable, Sendable, Equatable {
    /// The contact's name.
    public var name: String
    /// Its addresses and numbers, as written in the contacts file.
    public var handles: [HandleInfo]
    /// A contact.
    public init(name: String, handles: [HandleInfo]) {
        self.name = name
        self.handles = handles
    }
}

/// The result of `contacts`.
public struct ContactsResult: Codable, Sendable, Equatable {
    /// The matching contacts, by name.
    public var contacts: [ContactInfo]
    /// A search's answer.
    public init(contacts: [ContactInfo]) { self.contacts = contacts }
}
