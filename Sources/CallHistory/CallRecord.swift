import ConversationKit
import Foundation

/// How a conversation turned out, as a phone's Recents shows it.
public enum CallStatus: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// It connected (whatever ended it afterwards).
    case connected
    /// Incoming, never answered here: the caller gave up, or the ring timed out.
    case missed
    /// Declined: an incoming one by the local user, or an outgoing one by the remote side.
    case declined
    /// Incoming from a caller the policy does not accept (`--accept-from`), refused before it rang; recorded only
    /// when asked (`--record-blocked`), never unread and never a missed call.
    case blocked
    /// Incoming while do-not-disturb was on: refused (486) before it rang; unread, so the user sees who called.
    case doNotDisturb
    /// Incoming, forwarded elsewhere (302): before it rang, or when nobody answered in time; unread.
    case forwarded
    /// Outgoing, the remote side was busy.
    case busy
    /// Outgoing, ended before anyone answered (by the local user or a ring timeout).
    case cancelled
    /// It could not be serviced.
    case failed
    /// Another device of the user answered it.
    case answeredElsewhere
    /// Another device of the user declined it.
    case declinedElsewhere

    /// The status's name.
    public var description: String { rawValue }

    /// The status of an ended conversation, from its direction, whether it connected, and why it ended.
    public init(direction: Conversation.Direction, connected: Bool, reason: Conversation.EndedReason) {
        if connected {
            self = .connected
            return
        }
        switch (direction, reason) {
        case (_, .failed), (_, .mediaTimeout), (_, .sessionExpired), (_, .mediaSecurityFailed), (_, .iceFailed): self = .failed
        case (_, .joinedElsewhere): self = .answeredElsewhere
        case (_, .declinedElsewhere): self = .declinedElsewhere
        case (_, .forwarded): self = .forwarded
        case (.incoming, .localEnded): self = .declined
        // (Only a connected call is transferred: a Transfer needs joined or paused. Unconnected, it reads as a hang-up.)
        case (.incoming, .unanswered), (.incoming, .cancelled), (.incoming, .remoteEnded), (.incoming, .transferred),
            (.incoming, .busy), (.incoming, .declined), (.incoming, .crashed):
            self = .missed
        case (.outgoing, .crashed): self = .failed
        case (.outgoing, .busy): self = .busy
        case (.outgoing, .declined): self = .declined
        case (.outgoing, .localEnded), (.outgoing, .unanswered), (.outgoing, .cancelled),
            (.outgoing, .remoteEnded), (.outgoing, .transferred):
            self = .cancelled
        }
    }
}

/// A remote party as the call history keeps it: the handle as seen, and its normalised value for matching.
public struct RecordedHandle: Sendable, Hashable, Codable {
    /// The handle as it was seen during the conversation (kind, raw value, display name).
    public var handle: Handle
    /// `handle.value` normalised by the rules in force when it was recorded; nil if it can match nothing.
    public var normalizedValue: String?

    /// Records `handle`, normalising it with `normalizer`.
    public init(_ handle: Handle, normalizer: HandleNormalizer) {
        self.handle = handle
        self.normalizedValue = normalizer.normalizedValue(kind: handle.kind, value: handle.value)
    }

    private enum CodingKeys: String, CodingKey { case handle, normalizedValue }

    /// Encodes both fields; an unusable handle's `normalizedValue` as `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(handle, forKey: .handle)
        try container.encode(normalizedValue, forKey: .normalizedValue)
    }

    /// A recorded handle with a given normalised value (as read back from storage).
    public init(handle: Handle, normalizedValue: String?) {
        self.handle = handle
        self.normalizedValue = normalizedValue
    }
}

/// One ended conversation in the call history.
public struct CallRecord: Sendable, Hashable, Identifiable, Codable {
    /// The store's id for the record (stable, increasing); 0 before it is stored.
    public var id: Int64
    /// The conversation's uuid.
    public var uuid: UUID
    /// Incoming or outgoing.
    public var direction: Conversation.Direction
    /// The remote parties, sorted by kind and value (a conversation's members are a set).
    public var remoteHandles: [RecordedHandle]
    /// The local party, when known.
    public var localHandle: Handle?
    /// How it turned out.
    public var status: CallStatus
    /// Why it ended.
    public var endedReason: Conversation.EndedReason
    /// When it began (reported incoming, or Start performed).
    public var startedAt: Date
    /// When media connected, if it did.
    public var connectedAt: Date?
    /// When it ended.
    public var endedAt: Date
    /// Whether it carried video.
    public var isVideo: Bool
    /// The group it had been merged into, if any; conversations of one group share it.
    public var groupUUID: UUID?
    /// The SIP Call-ID, when the conversation was carried over SIP.
    public var callID: String?
    /// Whether the user has seen it (missed calls start unread; everything else starts read).
    public var isRead: Bool
    /// Its audio figures as they ended, when it carried audio.
    public var quality: CallQuality?
    /// The account the call went through, an address of record (`sip:alice@example.test`); nil: none.
    public var account: String?
    /// How its media was protected once negotiated: `sdes` (SRTP keyed by SDES) or `dtls` (DTLS-SRTP); nil: plain.
    public var encryption: String?

    /// Talk time: from connect to end, 0 if it never connected.
    public var duration: TimeInterval {
        connectedAt.map { max(0, endedAt.timeIntervalSince($0)) } ?? 0
    }

    /// Creates a record field by field.
    public init(
        id: Int64 = 0, uuid: UUID, direction: Conversation.Direction, remoteHandles: [RecordedHandle],
        localHandle: Handle? = nil, status: CallStatus, endedReason: Conversation.EndedReason, startedAt: Date,
        connectedAt: Date? = nil, endedAt: Date, isVideo: Bool = false, groupUUID: UUID? = nil,
        callID: String? = nil, isRead: Bool? = nil, quality: CallQuality? = nil, account: String? = nil,
        encryption: String? = nil
    ) {
        self.id = id
        self.uuid = uuid
        self.direction = direction
        self.remoteHandles = remoteHandles
        self.localHandle = localHandle
        self.status = status
        self.endedReason = endedReason
        self.startedAt = startedAt
        self.connectedAt = connectedAt
        self.endedAt = endedAt
        self.isVideo = isVideo
        self.groupUUID = groupUUID
        self.callID = callID
        self.isRead = isRead ?? (status != .missed && status != .forwarded)
        self.quality = quality
        self.account = account
        self.encryption = encryption
    }

    /// The record of an ended conversation; nil while it is still live.
    public init?(_ conversation: Conversation, normalizer: HandleNormalizer, callID: String? = nil) {
        guard conversation.state == .left, let reason = conversation.endedReason else { return nil }
        self.init(conversation, reason: reason, endedAt: conversation.endedAt ?? conversation.createdAt, normalizer: normalizer, callID: callID)
    }

    /// The record a live conversation leaves if its node stops without ending it (``Conversation/EndedReason/crashed``,
    /// ended `now`), as the journal of live calls keeps it; nil once it has left (it has its own record then).
    public init?(live conversation: Conversation, now: Date, normalizer: HandleNormalizer, callID: String? = nil) {
        guard conversation.state != .left else { return nil }
        self.init(conversation, reason: .crashed, endedAt: max(now, conversation.createdAt), normalizer: normalizer, callID: callID)
    }

    /// This record of a call that was live when its node stopped, ended at `lastAlive` (the last time the node was
    /// known to be alive; never before the call began or connected): `crashed`, with the status that gives.
    public func endedByCrash(lastAlive: Date) -> CallRecord {
        var record = self
        record.endedReason = .crashed
        record.endedAt = max(lastAlive, startedAt, connectedAt ?? startedAt)
        record.status = CallStatus(direction: direction, connected: connectedAt != nil, reason: .crashed)
        record.isRead = record.status != .missed
        record.id = 0
        return record
    }

    private init(
        _ conversation: Conversation, reason: Conversation.EndedReason, endedAt: Date, normalizer: HandleNormalizer,
        callID: String?
    ) {
        let remote = conversation.members.subtracting(conversation.localMember.map { [$0] } ?? [])
            .sorted { ($0.kind.rawValue, $0.value, $0.displayName) < ($1.kind.rawValue, $1.value, $1.displayName) }
        self.init(
            uuid: conversation.uuid, direction: conversation.direction,
            remoteHandles: remote.map { RecordedHandle($0, normalizer: normalizer) },
            localHandle: conversation.localMember,
            status: CallStatus(direction: conversation.direction, connected: conversation.hasConnected, reason: reason),
            endedReason: reason, startedAt: conversation.createdAt, connectedAt: conversation.connectedAt,
            endedAt: endedAt, isVideo: conversation.isVideo,
            groupUUID: conversation.groupUUID ?? conversation.lastGroupUUID, callID: callID,
            account: conversation.account, encryption: conversation.encryption)
    }

    /// A Start action that calls the same handles again, with the same video setting (Recents redial).
    public func redialAction(conversationUUID: UUID = RandomUUID.make()) -> ConversationAction {
        .start(conversationUUID: conversationUUID, handles: remoteHandles.map(\.handle), isVideo: isVideo)
    }

    private enum CodingKeys: String, CodingKey {
        case id, uuid, direction, remoteHandles, localHandle, status, endedReason, startedAt, connectedAt, endedAt
        case isVideo, groupUUID, callID, isRead, duration, quality, account, encryption
    }

    /// Encodes every field, absent ones as `null`, plus the talk time as `duration` (seconds).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(uuid, forKey: .uuid)
        try container.encode(direction, forKey: .direction)
        try container.encode(remoteHandles, forKey: .remoteHandles)
        try container.encode(localHandle, forKey: .localHandle)
        try container.encode(status, forKey: .status)
        try container.encode(endedReason, forKey: .endedReason)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encode(connectedAt, forKey: .connectedAt)
        try container.encode(endedAt, forKey: .endedAt)
        try container.encode(isVideo, forKey: .isVideo)
        try container.encode(groupUUID, forKey: .groupUUID)
        try container.encode(callID, forKey: .callID)
        try container.encode(isRead, forKey: .isRead)
        try container.encode(duration, forKey: .duration)
        try container.encode(quality, forKey: .quality)
        try container.encode(account, forKey: .account)
        try container.encode(encryption, forKey: .encryption)
    }

    /// Decodes what ``encode(to:)`` writes (`duration` is derived and ignored; `account` and `encryption` may be
    /// absent, as in JSON written before records had them).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(Int64.self, forKey: .id), uuid: try container.decode(UUID.self, forKey: .uuid),
            direction: try container.decode(Conversation.Direction.self, forKey: .direction),
            remoteHandles: try container.decode([RecordedHandle].self, forKey: .remoteHandles),
            localHandle: try container.decodeIfPresent(Handle.self, forKey: .localHandle),
            status: try container.decode(CallStatus.self, forKey: .status),
            endedReason: try container.decode(Conversation.EndedReason.self, forKey: .endedReason),
            startedAt: try container.decode(Date.self, forKey: .startedAt),
            connectedAt: try container.decodeIfPresent(Date.self, forKey: .connectedAt),
            endedAt: try container.decode(Date.self, forKey: .endedAt),
            isVideo: try container.decode(Bool.self, forKey: .isVideo),
            groupUUID: try container.decodeIfPresent(UUID.self, forKey: .groupUUID),
            callID: try container.decodeIfPresent(String.self, forKey: .callID),
            isRead: try container.decode(Bool.self, forKey: .isRead),
            quality: try container.decodeIfPresent(CallQuality.self, forKey: .quality),
            account: try container.decodeIfPresent(String.self, forKey: .account),
            encryption: try container.decodeIfPresent(String.self, forKey: .encryption))
    }

    /// The name to show: the first remote handle's display name, or "Unknown".
    public var displayName: String {
        remoteHandles.first?.handle.displayName ?? "Unknown"
    }
}
