import ConversationKit
import Foundation

/// `{"to": "sip:bob@127.0.0.1:5062", "video": false}`.
public struct StartParams: ControlParams {
    /// Whom to call: a SIP URI or a phone number.
    public var to: String
    /// A video call (default false).
    public var video: Bool?
    /// Where the frontend takes the call's RTP (`parleyd --media external` only).
    public var media: MediaEndpointParams?
    /// The account to call through (its name or address of record); the default account when absent.
    public var account: String?
    /// What this call's offer encrypts its media with, instead of parleyd's `--media-encryption`: `none`, `auto`,
    /// `sdes` or `dtls`.
    public var encryption: String?

    /// Params.
    public init(
        to: String, video: Bool? = nil, media: MediaEndpointParams? = nil, account: String? = nil, encryption: String? = nil
    ) {
        self.to = to
        self.video = video
        self.media = media
        self.account = account
        self.encryption = encryption
    }

    /// What `encryption` may say.
    public static let encryptionMethods = ["none", "auto", "sdes", "dtls"]

    /// The members.
    public static let fields = [
        ControlField(
            "to", "a string",
            "whom to call: a SIP URI (`sip:bob@127.0.0.1:5062`, `sips:…`) or a phone number (`+1 415 555 0100`), "
                + "dialled at `--phone-domain`, else the registrar's domain"),
        ControlField("video", "a boolean", optional: true, "a video call (default false; needs `parleyd --video`)"),
        MediaEndpointParams.field,
        ControlField(
            "account", "a string", optional: true,
            "the account to call through: its name (`work`) or address of record (`sip:alice@example.com`); default: the first account"),
        ControlField(
            "encryption", "a string", optional: true,
            "what this call's offer encrypts its media with, instead of `parleyd --media-encryption`: `none` (plain RTP), "
                + "`auto` (SDES over TLS signalling), `sdes` (SRTP keyed in the SDP) or `dtls` (DTLS-SRTP)"),
    ]
    /// An example.
    public static let example = StartParams(to: "sip:bob@127.0.0.1:5062", video: false)

    /// `to` must not be blank; `media` must be an endpoint.
    public func validate() throws(ControlError) {
        guard !to.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw ControlError(.invalidParams, "Say whom to call.", field: "to")
        }
        try media?.validate()
        if let encryption, !Self.encryptionMethods.contains(encryption) {
            throw ControlError(
                .invalidParams, "Say none, auto, sdes or dtls for the encryption, not \(encryption).", field: "encryption")
        }
    }
}

/// `{"conversation": "1b4e28ba", "media": {"address": "127.0.0.1", "port": 50000}}`.
public struct JoinParams: ControlParams {
    /// A conversation's uuid, or a unique prefix of it.
    public var conversation: String
    /// Where the frontend takes the call's RTP (`parleyd --media external` only).
    public var media: MediaEndpointParams?
    /// True: the other calls that are up (joined or held) end first ("End & Answer"); otherwise they are held, as
    /// `parleyd --on-new-call` says.
    public var endOthers: Bool?

    /// Params.
    public init(conversation: String, media: MediaEndpointParams? = nil, endOthers: Bool? = nil) {
        self.conversation = conversation
        self.media = media
        self.endOthers = endOthers
    }

    /// The members.
    public static let fields = [
        ConversationParams.conversationField, MediaEndpointParams.field,
        ControlField(
            "endOthers", "a boolean", optional: true,
            "true: the other joined or held calls end before this one is answered (End & Answer); otherwise the joined ones "
                + "are held first (`parleyd --on-new-call hold`, the default) or left as they are (`none`)"),
    ]
    /// An example.
    public static let example = JoinParams(conversation: "1b4e28ba", media: MediaEndpointParams(address: "127.0.0.1", port: 50_000))

    /// Not blank; `media` must be an endpoint.
    public func validate() throws(ControlError) {
        try ConversationParams.check(conversation, "conversation")
        try media?.validate()
    }
}

/// `{"address": "127.0.0.1", "port": 50000}`: where a frontend that carries a call's RTP itself takes it.
public struct MediaEndpointParams: Codable, Sendable, Equatable {
    /// A numeric IPv4 or IPv6 address; absent: parleyd's own (the frontend runs on its host).
    public var address: String?
    /// The RTP port (RTCP on the next), 1–65534.
    public var port: Int
    /// The video RTP port (RTCP on the next), when the frontend carries the call's video too (`parleyd --video`).
    public var videoPort: Int?

    /// An endpoint.
    public init(address: String? = nil, port: Int, videoPort: Int? = nil) {
        self.address = address
        self.port = port
        self.videoPort = videoPort
    }

    /// The `media` member of `start` and `join`.
    static let field = ControlField(
        "media", "an object", optional: true,
        "`{\"address\": \"127.0.0.1\", \"port\": 50000, \"videoPort\": 50002}`: where the frontend takes the call's RTP "
            + "(RTCP on the next port; `address` optional, parleyd's own when absent; `videoPort` optional, the video's "
            + "when parleyd runs with `--video`) — only when parleyd runs with `--media external`; the negotiated session "
            + "follows in `mediaChanged` (`media`, and `video`)")

    /// A port in range and a numeric address.
    func validate() throws(ControlError) {
        guard (1...65_534).contains(port) else {
            throw ControlError(.invalidParams, "The RTP port must be between 1 and 65534 (RTCP takes the next).", field: "media.port")
        }
        if let videoPort, !(1...65_534).contains(videoPort) || abs(videoPort - port) < 2 {
            throw ControlError(
                .invalidParams, "The video RTP port must be between 1 and 65534 and apart from the audio's two ports (RTCP takes the next).",
                field: "media.videoPort")
        }
        if let address, !Self.isUnicast(address) {
            throw ControlError(
                .invalidParams, "The RTP address must be a numeric unicast IPv4 or IPv6 address (not 0.0.0.0, ::, or multicast).",
                field: "media.address")
        }
    }

    /// A numeric address a peer can send to: not unspecified (RFC 2543's hold in SDP), not multicast.
    private static func isUnicast(_ address: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, address, &v4) == 1 {
            let first = UInt32(bigEndian: v4.s_addr) >> 24
            return v4.s_addr != 0 && !(224...239).contains(first)
        }
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        return bytes.contains { $0 != 0 } && bytes[0] != 0xFF
    }
}

/// `{"conversation": "1b4e28ba"}`.
public struct ConversationParams: ControlParams {
    /// A conversation's uuid, or a unique prefix of it.
    public var conversation: String

    /// Params.
    public init(conversation: String) { self.conversation = conversation }

    /// The members.
    public static let fields = [conversationField]
    /// The `conversation` member every conversation method takes.
    static let conversationField = ControlField(
        "conversation", "a string", "a live conversation's uuid, or a unique prefix of it (any case)")
    /// An example.
    public static let example = ConversationParams(conversation: "1b4e28ba")

    /// Not blank.
    public func validate() throws(ControlError) { try Self.check(conversation, "conversation") }

    /// A blank conversation (or other) would match every uuid as a prefix: refused.
    static func check(_ value: String, _ field: String) throws(ControlError) {
        guard !value.trimmingCharacters(in: .whitespaces).isEmpty else {
            let which = field == "conversation" || field == "with" ? "Say which call" : "Say which one"
            throw ControlError(.invalidParams, "\(which) (\"\(field)\" is empty).", field: field)
        }
    }
}

/// `{"conversation": "1b4e28ba", "muted": true}`.
public struct MuteParams: ControlParams {
    /// The conversation.
    public var conversation: String
    /// True to mute (default), false to unmute.
    public var muted: Bool?

    /// Params.
    public init(conversation: String, muted: Bool? = nil) {
        self.conversation = conversation
        self.muted = muted
    }

    /// The members.
    public static let fields = [
        ConversationParams.conversationField,
        ControlField("muted", "a boolean", optional: true, "true to mute (default), false to unmute"),
    ]
    /// An example.
    public static let example = MuteParams(conversation: "1b4e28ba", muted: true)

    /// Not blank.
    public func validate() throws(ControlError) { try ConversationParams.check(conversation, "conversation") }
}

/// `{"conversation": "1b4e28ba", "digits": "12#"}`.
public struct ToneParams: ControlParams {
    /// The conversation.
    public var conversation: String
    /// Keypad digits.
    public var digits: String

    /// Params.
    public init(conversation: String, digits: String) {
        self.conversation = conversation
        self.digits = digits
    }

    /// The members.
    public static let fields = [
        ConversationParams.conversationField,
        ControlField("digits", "a string", "keypad digits: 0-9, *, #, A-D (one SIP INFO each)"),
    ]
    /// An example.
    public static let example = ToneParams(conversation: "1b4e28ba", digits: "12#")

    /// Only keypad digits.
    public func validate() throws(ControlError) {
        try ConversationParams.check(conversation, "conversation")
        guard !digits.isEmpty, digits.allSatisfy({ "0123456789*#ABCDabcd".contains($0) }) else {
            throw ControlError(.invalidParams, "Keypad tones are 0-9, *, # and A-D.", field: "digits")
        }
    }
}

/// `{"conversation": "1b4e28ba", "enabled": true}`.
public struct VideoParams: ControlParams {
    /// The conversation.
    public var conversation: String
    /// True to turn video on, false to turn it off.
    public var enabled: Bool

    /// Params.
    public init(conversation: String, enabled: Bool) {
        self.conversation = conversation
        self.enabled = enabled
    }

    /// The members.
    public static let fields = [
        ConversationParams.conversationField,
        ControlField("enabled", "a boolean", "true: turn video on (an upgrade), false: turn it off"),
    ]
    /// An example.
    public static let example = VideoParams(conversation: "1b4e28ba", enabled: true)

    /// Not blank.
    public func validate() throws(ControlError) { try ConversationParams.check(conversation, "conversation") }
}

/// `{"conversation": "1b4e28ba", "with": "9f0c"}`.
/// `transfer`: hand a joined (or held) call's remote party over to someone else (a blind transfer, SIP REFER).
public struct TransferParams: ControlParams {
    /// The conversation.
    public var conversation: String
    /// Whom the remote party is handed to (a blind transfer).
    public var to: String?
    /// The call whose peer the remote party replaces (an attended transfer).
    public var toConversation: String?

    /// Params: a blind transfer to `to`, or an attended one to the call `toConversation`.
    public init(conversation: String, to: String? = nil, toConversation: String? = nil) {
        self.conversation = conversation
        self.to = to
        self.toConversation = toConversation
    }

    /// The members.
    public static let fields = [
        ConversationParams.conversationField,
        ControlField(
            "to", "a string", optional: true,
            "a blind transfer: whom the remote party should call instead, a SIP URI or a phone number, read as `start` reads its `to`"),
        ControlField(
            "toConversation", "a string", optional: true,
            "an attended transfer: another answered call of ours (the consultation); the remote party calls its peer, replacing that call (RFC 3891 Replaces), and both our calls end. Exactly one of `to` and `toConversation`"),
    ]
    /// An example.
    public static let example = TransferParams(conversation: "1b4e28ba", to: "sip:carol@example.com")

    /// The conversation, and exactly one of the two targets, neither blank.
    public func validate() throws(ControlError) {
        try ConversationParams.check(conversation, "conversation")
        switch (to, toConversation) {
        case (let to?, nil): try ConversationParams.check(to, "to")
        case (nil, let other?): try ConversationParams.check(other, "toConversation")
        default: throw ControlError(.invalidParams, "Give exactly one of to (a blind transfer) and toConversation (an attended one).", field: "to")
        }
    }
}

public struct MergeParams: ControlParams {
    /// The conversation.
    public var conversation: String
    /// The other one.
    public var with: String

    /// Params.
    public init(conversation: String, with: String) {
        self.conversation = conversation
        self.with = with
    }

    /// The members.
    public static let fields = [
        ConversationParams.conversationField,
        ControlField("with", "a string", "the other conversation's uuid or prefix"),
    ]
    /// An example.
    public static let example = MergeParams(conversation: "1b4e28ba", with: "9f0c")

    /// Neither blank.
    public func validate() throws(ControlError) {
        try ConversationParams.check(conversation, "conversation")
        try ConversationParams.check(with, "with")
    }
}

/// The filters of `history` and `historyCount`.
public struct HistoryFilter: ControlParams {
    /// Missed calls only.
    public var missed: Bool?
    /// Unread records only.
    public var unread: Bool?
    /// Calls with this party.
    public var handle: String?
    /// `incoming` or `outgoing` only.
    public var direction: String?

    /// Filters.
    public init(missed: Bool? = nil, unread: Bool? = nil, handle: String? = nil, direction: String? = nil) {
        self.missed = missed
        self.unread = unread
        self.handle = handle
        self.direction = direction
    }

    /// The members.
    public static let fields = [
        ControlField("missed", "a boolean", optional: true, "missed calls only"),
        ControlField("unread", "a boolean", optional: true, "unread records only"),
        ControlField(
            "handle", "a string", optional: true, "calls with this party (phone numbers match in any written form)"),
        ControlField("direction", "`incoming` or `outgoing`", optional: true, "one direction only"),
    ]
    /// An example: the missed-calls badge.
    public static let example = HistoryFilter(missed: true, unread: true)

    /// A known direction.
    public func validate() throws(ControlError) {
        if let direction, direction != "incoming", direction != "outgoing" {
            throw ControlError(.invalidParams, "\"direction\" must be `incoming` or `outgoing`.", field: "direction")
        }
    }
}

/// `{"limit": 20, "cursor": "…", "missed": true}`.
public struct HistoryParams: ControlParams {
    /// Records per page, 1–200 (default 20).
    public var limit: Int?
    /// The previous page's `nextCursor`.
    public var cursor: String?
    /// Which records.
    public var filter: HistoryFilter

    /// Params.
    public init(limit: Int? = nil, cursor: String? = nil, filter: HistoryFilter = HistoryFilter()) {
        self.limit = limit
        self.cursor = cursor
        self.filter = filter
    }

    private enum CodingKeys: String, CodingKey { case limit, cursor }

    /// Reads the paging members and the filters from the same object.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        limit = try container.decodeIfPresent(Int.self, forKey: .limit)
        cursor = try container.decodeIfPresent(String.self, forKey: .cursor)
        filter = try HistoryFilter(from: decoder)
    }

    /// Writes them into one object.
    public func encode(to encoder: any Encoder) throws {
        try filter.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(limit, forKey: .limit)
        try container.encodeIfPresent(cursor, forKey: .cursor)
    }

    /// The members.
    public static let fields = [
        ControlField("limit", "an integer from 1 to 200", optional: true, "records per page (default 20)"),
        ControlField("cursor", "a string", optional: true, "the `nextCursor` of the previous page"),
    ] + HistoryFilter.fields
    /// An example.
    public static let example = HistoryParams(limit: 10, cursor: nil, filter: HistoryFilter(missed: true))

    /// A limit in range.
    public func validate() throws(ControlError) {
        try Self.check(limit: limit)
        try filter.validate()
    }

    /// A page size, when given, is 1–200 (history pages, contact searches).
    static func check(limit: Int?) throws(ControlError) {
        if let limit, !(1...200).contains(limit) {
            throw ControlError(.invalidParams, "\"limit\" must be an integer from 1 to 200.", field: "limit")
        }
    }
}

/// `{"id": 42}` or `{"all": true}`.
public struct MarkReadParams: ControlParams {
    /// One record.
    public var id: Int64?
    /// Every record instead.
    public var all: Bool?

    /// Params.
    public init(id: Int64? = nil, all: Bool? = nil) {
        self.id = id
        self.all = all
    }

    /// The members.
    public static let fields = [
        ControlField("id", "an integer", optional: true, "a history record's id"),
        ControlField("all", "a boolean", optional: true, "true: every record instead (give `id` or `all`)"),
    ]
    /// An example.
    public static let example = MarkReadParams(id: 42)

    /// One of the two.
    public func validate() throws(ControlError) {
        if all != true, id == nil { throw ControlError(.invalidParams, "Missing \"id\" (or \"all\": true).", field: "id") }
    }
}

/// `{"id": 42}`.
public struct RecordParams: ControlParams {
    /// A history record's id.
    public var id: Int64

    /// Params.
    public init(id: Int64) { self.id = id }

    /// The members.
    public static let fields = [ControlField("id", "an integer", "a history record's id")]
    /// An example.
    public static let example = RecordParams(id: 42)
}

/// `{"handle": "+1 415 555 0100"}` or `{"handle": "dave@example.com", "kind": "emailAddress"}`.
public struct ContactParams: ControlParams {
    /// A phone number, email address or SIP URI.
    public var handle: String
    /// How to read it: `phoneNumber`, `emailAddress` or `generic`; decided from the value when absent.
    public var kind: String?

    /// Params.
    public init(handle: String, kind: String? = nil) {
        self.handle = handle
        self.kind = kind
    }

    /// The members.
    public static let fields = [
        ControlField("handle", "a string", "a phone number, email address or SIP URI"),
        ControlField(
            "kind", "`phoneNumber`, `emailAddress` or `generic`", optional: true,
            "how to read `handle`; when absent: `tel:` and numbers are phone numbers, `mailto:` and a bare `user@host` an email address (a bare `user@host` that names no contact as an email is tried as `sip:user@host`), `sip:`/`sips:` URIs as callers are (see Handles)"),
    ]
    /// An example.
    public static let example = ContactParams(handle: "dave@example.com", kind: "emailAddress")

    /// Not blank; the kind, when given, is one of the three.
    public func validate() throws(ControlError) {
        try ConversationParams.check(handle, "handle")
        if let kind, Handle.Kind(name: kind) == nil {
            throw ControlError(.invalidParams, "\"kind\" must be \"phoneNumber\", \"emailAddress\" or \"generic\".", field: "kind")
        }
    }
}

/// `{"limit": 100, "cursor": "…"}`: one page of the live conversations.
public struct ListParams: ControlParams {
    /// Conversations per page (1–200, default 100).
    public var limit: Int?
    /// The previous page's `nextCursor`.
    public var cursor: String?

    /// Params.
    public init(limit: Int? = nil, cursor: String? = nil) {
        self.limit = limit
        self.cursor = cursor
    }

    /// The members.
    public static let fields = [
        ControlField("limit", "an integer from 1 to 200", optional: true, "conversations per page (default 100)"),
        ControlField("cursor", "a string", optional: true, "the `nextCursor` of the previous page"),
    ]
    /// An example.
    public static let example = ListParams(limit: 50, cursor: nil)
    /// The page size when none is given.
    public static let defaultLimit = 100

    /// A limit in range.
    public func validate() throws(ControlError) { try HistoryParams.check(limit: limit) }
}

/// `{"query": "ali", "limit": 10}`.
public struct ContactSearchParams: ControlParams {
    /// Part of a name or a handle; empty or absent: every contact.
    public var query: String?
    /// At most this many contacts (1–200, default 50).
    public var limit: Int?

    /// Params.
    public init(query: String? = nil, limit: Int? = nil) {
        self.query = query
        self.limit = limit
    }

    /// The members.
    public static let fields = [
        ControlField("query", "a string", optional: true, "part of a name, address or number (empty: every contact)"),
        ControlField("limit", "an integer from 1 to 200", optional: true, "contacts at most (default 50)"),
    ]
    /// An example.
    public static let example = ContactSearchParams(query: "ali", limit: 10)

    /// A limit in range.
    public func validate() throws(ControlError) { try HistoryParams.check(limit: limit) }
}
