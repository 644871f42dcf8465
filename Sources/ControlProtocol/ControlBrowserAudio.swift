import Foundation

/// `{"conversation": "1b4e28ba", "sdp": "v=0…", "takeOver": false}`: a page's WebRTC offer for a call's audio.
public struct BrowserAudioParams: ControlParams {
    /// The conversation.
    public var conversation: String
    /// The page's offer (SDP; opus audio, every candidate gathered).
    public var sdp: String
    /// True: take the call's audio from another page that carries it.
    public var takeOver: Bool?

    /// The longest offer taken.
    public static let maxOfferBytes = 64 * 1_024

    /// Params.
    public init(conversation: String, sdp: String, takeOver: Bool? = nil) {
        self.conversation = conversation
        self.sdp = sdp
        self.takeOver = takeOver
    }

    /// The members.
    public static let fields = [
        ConversationParams.conversationField,
        ControlField(
            "sdp", "a string",
            "the page's RTCPeerConnection offer (its `localDescription.sdp` once ICE gathering completed): opus audio, at most 64 KiB"),
        ControlField(
            "takeOver", "a boolean", optional: true,
            "true: take the call's audio from another page that carries it (else that is `refused`)"),
    ]
    /// An example.
    public static let example = BrowserAudioParams(conversation: "1b4e28ba", sdp: "v=0\r\n…", takeOver: false)

    /// Not blank, not too long.
    public func validate() throws(ControlError) {
        try ConversationParams.check(conversation, "conversation")
        guard sdp.hasPrefix("v=0"), sdp.utf8.count <= Self.maxOfferBytes else {
            throw ControlError(.invalidParams, "sdp must be an SDP offer (v=0…) of at most 64 KiB.", field: "sdp")
        }
    }
}

/// The `browserAudio` method's result: parleyd's answer to the page.
public struct BrowserAudioResult: Codable, Sendable, Equatable {
    /// The conversation's uuid.
    public var conversation: String
    /// This page's part in the call's audio, as `browserAudioChanged` names it.
    public var session: String
    /// parleyd's answer (SDP, its candidates in it).
    public var sdp: String

    /// A result.
    public init(conversation: String, session: String, sdp: String) {
        self.conversation = conversation
        self.session = session
        self.sdp = sdp
    }
}

/// The `browserAudioEnd` method's result.
public struct BrowserAudioEnded: Codable, Sendable, Equatable {
    /// The conversation's uuid.
    public var conversation: String
    /// Whether a page carried its audio until now.
    public var ended: Bool

    /// A result.
    public init(conversation: String, ended: Bool) {
        self.conversation = conversation
        self.ended = ended
    }
}

/// `browserAudioChanged`: a page's part in a call's audio connected or ended.
public struct BrowserAudioChanged: Codable, Sendable, Equatable {
    /// The conversation's uuid.
    public var conversation: String
    /// Which page's part (the `browserAudio` result's `session`).
    public var session: String
    /// `connecting`, `connected` or `ended`.
    public var state: String
    /// Why it ended, else null.
    @Nullable public var reason: String?

    /// An event.
    public init(conversation: String, session: String, state: String, reason: String? = nil) {
        self.conversation = conversation
        self.session = session
        self.state = state
        self.reason = reason
    }
}

extension BrowserAudioResult: ControlShape {
    /// The `browserAudio` method's result.
    public static let noun = ControlNoun("a browser audio answer", plural: "browser audio answers")
    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("session", .string, "this page's part in the call's audio, as `browserAudioChanged` names it"),
        ControlField("sdp", .string, "parleyd's answer for `setRemoteDescription({type: \"answer\", sdp})`, its candidates in it"),
    ]
    /// An answer.
    public static let examples = [BrowserAudioResult(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", session: "3k9x2a", sdp: "v=0\r\n…")]
}

extension BrowserAudioEnded: ControlShape {
    /// The `browserAudioEnd` method's result.
    public static let noun = ControlNoun("an ended browser audio", plural: "ended browser audio")
    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("ended", .boolean, "whether a page carried the call's audio until now (the configured source and sink take it back)"),
    ]
    /// Ended.
    public static let examples = [BrowserAudioEnded(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", ended: true)]
}

extension BrowserAudioChanged: ControlShape {
    /// The `browserAudioChanged` event's data.
    public static let noun = ControlNoun("a browser audio change", plural: "browser audio changes")
    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("session", .string, "which page's part: the `browserAudio` result's `session` (a page acts only on its own)"),
        ControlField(
            "state", .oneOf(["connecting", "connected", "ended"]),
            "where the page's audio stands: the answer was given, the page's connection is up, or the call took its own source and sink back"),
        ControlField("reason", .nullable(.string), "why it ended (the page closed or lost its connection, another page took it, the call ended…), else null"),
    ]
    /// Connected, then ended.
    public static let examples = [
        BrowserAudioChanged(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", session: "3k9x2a", state: "connected"),
        BrowserAudioChanged(
            conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", session: "3k9x2a", state: "ended", reason: "the page was gone for 5 s"),
    ]
}
