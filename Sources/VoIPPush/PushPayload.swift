import ConversationKit
import Foundation

/// What a VoIP push tells a device: who is calling, which call, until when the push means anything — or, with
/// ``cancel``, that the caller gave up and the ringing should stop.
///
/// The device must report a conversation to its engine before its push handler returns (the iOS PushKit rule;
/// see ``PushAck``). A cancel push is the exception: there is nothing to report, so it never counts as a strike.
///
/// JSON: `{"uuid": "…", "handle": {"kind": "generic", "value": "sip:alice@…", "displayName": "Alice"},
/// "callID": "…", "isVideo": false, "sentAt": "2026-01-01T00:00:00.000Z", "expiresAt": "…", "cancel": false}`.
/// Dates are ISO-8601 in UTC with milliseconds (finer precision is lost on the wire); `isVideo` and `cancel`
/// may be left out (false), and so may the handle's `displayName` (its value is shown).
public struct PushPayload: Sendable, Hashable, Codable {
    /// The conversation's identity on the device: the UUID it reports the incoming conversation under.
    public var uuid: UUID
    /// The caller.
    public var handle: Handle
    /// The SIP Call-ID of the INVITE the device should expect (or that was cancelled).
    public var callID: String
    /// Whether the caller offers video.
    public var isVideo: Bool
    /// When the sender created the push.
    public var sentAt: Date
    /// After this the push means nothing (the caller has given up waiting); it is neither stored nor delivered.
    public var expiresAt: Date
    /// A cancel push: the caller gave up, stop ringing. Never a strike, whatever the device acks.
    public var cancel: Bool

    /// A payload; `uuid` is new unless given.
    public init(
        uuid: UUID = UUID(), handle: Handle, callID: String, isVideo: Bool = false, sentAt: Date, expiresAt: Date,
        cancel: Bool = false
    ) {
        self.uuid = uuid
        self.handle = handle
        self.callID = callID
        self.isVideo = isVideo
        self.sentAt = sentAt
        self.expiresAt = expiresAt
        self.cancel = cancel
    }

    /// Whether the push has expired at `now` (its expiry is not after `now`).
    public func isExpired(at now: Date) -> Bool { expiresAt <= now }

    private enum CodingKeys: String, CodingKey { case uuid, handle, callID, isVideo, sentAt, expiresAt, cancel }
    private enum HandleKeys: String, CodingKey { case kind, value, displayName }

    /// Decodes the JSON form; a bad member throws a `DecodingError` whose coding path names it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let uuidText = try container.decode(String.self, forKey: .uuid)
        guard let uuid = UUID(uuidString: uuidText) else {
            throw DecodingError.dataCorruptedError(forKey: .uuid, in: container, debugDescription: "not a UUID: '\(uuidText.clipped())'")
        }
        self.uuid = uuid
        let handle = try container.nestedContainer(keyedBy: HandleKeys.self, forKey: .handle)
        let kindName = try handle.decode(String.self, forKey: .kind)
        guard let kind = Handle.Kind.allCases.first(where: { $0.description == kindName }) else {
            throw DecodingError.dataCorruptedError(
                forKey: .kind, in: handle,
                debugDescription: "unknown handle kind '\(kindName.clipped())' (expected generic, phoneNumber or emailAddress)")
        }
        self.handle = Handle(
            kind: kind, value: try handle.decode(String.self, forKey: .value),
            displayName: try handle.decodeIfPresent(String.self, forKey: .displayName))
        callID = try container.decode(String.self, forKey: .callID)
        isVideo = try container.decodeIfPresent(Bool.self, forKey: .isVideo) ?? false
        sentAt = try WireDate.decode(from: container, forKey: .sentAt)
        expiresAt = try WireDate.decode(from: container, forKey: .expiresAt)
        cancel = try container.decodeIfPresent(Bool.self, forKey: .cancel) ?? false
    }

    /// Encodes the JSON form (every member, `cancel` included).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uuid.uuidString, forKey: .uuid)
        var handle = container.nestedContainer(keyedBy: HandleKeys.self, forKey: .handle)
        try handle.encode(self.handle.kind.description, forKey: .kind)
        try handle.encode(self.handle.value, forKey: .value)
        try handle.encode(self.handle.displayName, forKey: .displayName)
        try container.encode(callID, forKey: .callID)
        try container.encode(isVideo, forKey: .isVideo)
        try container.encode(WireDate.text(sentAt), forKey: .sentAt)
        try container.encode(WireDate.text(expiresAt), forKey: .expiresAt)
        try container.encode(cancel, forKey: .cancel)
    }
}

/// Dates on the wire: ISO-8601, UTC, with milliseconds (`2026-01-01T00:00:00.000Z`); read with or without the
/// fraction. Dates are rounded to the nearest millisecond both ways, so a date read from the wire writes back
/// the same and reads back equal.
enum WireDate {
    private static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    private static let withoutFraction = Date.ISO8601FormatStyle()

    /// The wire text of `date`. (The format style truncates through a binary fraction and sometimes writes a
    /// millisecond less than it should, so the milliseconds are written here.)
    static func text(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = milliseconds / 1000
        var fraction = milliseconds % 1000
        if fraction < 0 {
            seconds -= 1
            fraction += 1000
        }
        let whole = withoutFraction.format(Date(timeIntervalSince1970: TimeInterval(seconds)))
        let digits = String(fraction)
        return whole.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    /// The date in `text` (to the millisecond), or nil.
    static func parse(_ text: String) -> Date? {
        guard let date = (try? withFraction.parse(text)) ?? (try? withoutFraction.parse(text)) else { return nil }
        return Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000)
    }

    /// Decodes a date member, naming it in the error when it is not an ISO-8601 date.
    static func decode<Key: CodingKey>(from container: KeyedDecodingContainer<Key>, forKey key: Key) throws -> Date {
        let text = try container.decode(String.self, forKey: key)
        guard let date = parse(text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container,
                debugDescription: "not an ISO-8601 date: '\(text.clipped())' (expected e.g. 2026-01-01T12:00:00.000Z)")
        }
        return date
    }
}
