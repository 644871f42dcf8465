import Foundation

/// The methods of the control protocol, with what they take and give: the single source of the reference in
/// docs/control-api.md (a test checks the document against this table).
public struct ControlMethod: Sendable, Hashable {
    /// The method's name on the wire.
    public let name: String
    /// What it does.
    public let summary: String
    /// Its parameters: name → description (with type).
    public let params: [(name: String, description: String)]
    /// An example request's params.
    public let example: String

    /// Methods are equal when their names are.
    public static func == (lhs: ControlMethod, rhs: ControlMethod) -> Bool { lhs.name == rhs.name }
    /// Hashes the name.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }

    static let conversation = ("conversation", "string: a conversation's uuid, or a unique prefix of it")

    /// Every method.
    public static let all: [ControlMethod] = [
        ControlMethod(
            name: "status", summary: "versions, listening addresses, registration, live counts", params: [],
            example: "{}"),
        ControlMethod(
            name: "list", summary: "the live conversations, oldest first, each with its full state", params: [],
            example: "{}"),
        ControlMethod(
            name: "subscribe", summary: "from now on, events arrive on this connection (conversationChanged)",
            params: [], example: "{}"),
        ControlMethod(
            name: "start", summary: "call someone: a Start action through the manager; answers when the call rings or ends",
            params: [
                ("to", "string: a SIP URI (sip:bob@127.0.0.1:5062) or a phone number"),
                ("video", "boolean, optional: a video call (default false)"),
            ],
            example: #"{"to": "sip:bob@127.0.0.1:5062"}"#),
        ControlMethod(
            name: "join", summary: "answer a ringing conversation (Join action)", params: [conversation],
            example: #"{"conversation": "1b4e28ba"}"#),
        ControlMethod(
            name: "end", summary: "end or refuse a conversation (End action)", params: [conversation],
            example: #"{"conversation": "1b4e28ba"}"#),
        ControlMethod(
            name: "hold", summary: "pause a joined conversation (Pause action: re-INVITE a=sendonly)",
            params: [conversation], example: #"{"conversation": "1b4e28ba"}"#),
        ControlMethod(
            name: "resume", summary: "resume a paused conversation (re-INVITE a=sendrecv)", params: [conversation],
            example: #"{"conversation": "1b4e28ba"}"#),
        ControlMethod(
            name: "mute", summary: "mute or unmute the local member",
            params: [conversation, ("muted", "boolean, optional: true to mute (default), false to unmute")],
            example: #"{"conversation": "1b4e28ba", "muted": true}"#),
        ControlMethod(
            name: "playTone", summary: "send keypad tones (SIP INFO application/dtmf-relay, one per digit)",
            params: [conversation, ("digits", "string: 0-9, *, #, A-D")],
            example: #"{"conversation": "1b4e28ba", "digits": "12#"}"#),
        ControlMethod(
            name: "merge", summary: "merge two joined conversations into a group (Parley is the local focus)",
            params: [conversation, ("with", "string: the other conversation's uuid or prefix")],
            example: #"{"conversation": "1b4e28ba", "with": "9f0c"}"#),
        ControlMethod(
            name: "unmerge", summary: "take a conversation out of its group", params: [conversation],
            example: #"{"conversation": "1b4e28ba"}"#),
        ControlMethod(
            name: "history", summary: "recorded conversations, newest first, a page at a time",
            params: [
                ("limit", "integer, optional: 1–200 (default 20)"),
                ("cursor", "string, optional: the nextCursor of the previous page"),
                ("missed", "boolean, optional: missed calls only"), ("unread", "boolean, optional: unread only"),
                ("handle", "string, optional: calls with this party (phone numbers match in any written form)"),
            ],
            example: #"{"missed": true, "limit": 10}"#),
        ControlMethod(
            name: "markRead", summary: "mark one record, or all, as read",
            params: [("id", "integer: a history record id"), ("all", "boolean, optional: every record instead")],
            example: #"{"id": 42}"#),
        ControlMethod(
            name: "deleteRecord", summary: "delete one history record", params: [("id", "integer: a history record id")],
            example: #"{"id": 42}"#),
        ControlMethod(
            name: "redial", summary: "call a record's parties again (a Start action, answered like start)",
            params: [("id", "integer: a history record id")], example: #"{"id": 42}"#),
        ControlMethod(
            name: "contact", summary: "the contact name for a handle, by Parley's matching rules",
            params: [("handle", "string: a phone number, email or SIP URI")],
            example: #"{"handle": "+1 415 555 0100"}"#),
    ]

    /// The method named `name`.
    public static func named(_ name: String) -> ControlMethod? { all.first { $0.name == name } }
}

/// The events of the control protocol.
public enum ControlEvent: String, Sendable, CaseIterable {
    /// A conversation changed state; `data` is `{"conversation": {…}, "from": "ringing"}`.
    case conversationChanged
    /// An ended conversation is stored in the call history; `data` is `{"conversation": uuid}`.
    case historyChanged
    /// The registration changed; `data` is `{"state": "registered until …"}`.
    case registrationChanged
    /// A VoIP push was handled; `data` is `{"callID": …, "handling": "reported …"}`.
    case pushReceived
    /// An action completed, failed or timed out; `data` is `{"action", "conversation", "uuid", "state", "reason"?}`.
    case actionSettled

    /// What the event says.
    public var summary: String {
        switch self {
        case .conversationChanged:
            "a conversation entered a new state; data: {\"conversation\": {full state}, \"from\": previous state or null}"
        case .historyChanged: "an ended conversation was stored in the call history; data: {\"conversation\": uuid}"
        case .registrationChanged: "the registration changed; data: {\"state\": \"registered until …\"}"
        case .pushReceived: "a VoIP push was handled; data: {\"callID\": …, \"handling\": \"reported …\"}"
        case .actionSettled: "an action completed, failed or timed out"
        }
    }
}
