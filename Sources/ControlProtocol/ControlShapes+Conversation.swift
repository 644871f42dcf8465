import ConversationKit
import Foundation

/// The words a conversation's members may be, from the engine's own enums.
enum ControlWords {
    /// Lifecycle states.
    static let states = Conversation.State.allCases.map(\.rawValue)
    /// `incoming`, `outgoing`.
    static let directions = Conversation.Direction.allCases.map(\.rawValue)
    /// Why conversations end.
    static let endedReasons = Conversation.EndedReason.allCases.map(\.rawValue)
    /// What a conversation can do.
    static let capabilities = Conversation.Capabilities.named.map(\.name)
    /// Handle kinds.
    static let handleKinds = Handle.Kind.allCases.map(\.description)
    /// The actions a conversation may have running, by the method that asks for each.
    static let pendingActions = ["start", "join", "end", "hold", "resume", "mute", "unmute", "playTone", "merge", "unmerge", "transfer"]
    /// The actions a result or a settlement may name: the pending ones, and `video`.
    static let actions = pendingActions + ["video"]
    /// What a history record's status may be.
    static let historyStatuses = [
        "connected", "missed", "declined", "blocked", "doNotDisturb", "busy", "cancelled", "failed", "answeredElsewhere", "declinedElsewhere",
    ]
}

extension HandleInfo: ControlShape {
    /// `a handle`.
    public static let noun = ControlNoun("a handle", plural: "handles")
    /// How callers become handles, and how handles match.
    public static var note: String? { ControlReference.handlesNote }

    /// The members.
    public static let fields = [
        ControlField("kind", .oneOf(ControlWords.handleKinds), "how it is matched against contacts (see Handles)"),
        ControlField("value", .string, "the address; a SIP URI stays whole so it can be dialled back as it is"),
        ControlField("displayName", .string, "the SIP display name, else the value"),
        ControlField("contactName", .nullable(.string), "the matching contact's name (`--contacts`), else null"),
    ]

    /// A caller from a SIP URI, and a contact's number.
    public static let examples = [
        HandleInfo(Handle(kind: .generic, value: "sip:bob@192.0.2.7:5062", displayName: "Bob"), contactName: nil),
        HandleInfo(Handle(kind: .phoneNumber, value: "+1 415 555 0100"), contactName: "Alice Liddell"),
    ]
}

extension ConversationInfo: ControlShape {
    /// `a conversation`.
    public static let noun = ControlNoun("a conversation", plural: "conversations")

    /// The members.
    public static let fields = [
        ControlField("uuid", .string, "the conversation's uuid (upper case; compare uuids ignoring case)"),
        ControlField("state", .oneOf(ControlWords.states), "where it is in its lifecycle"),
        ControlField("direction", .oneOf(ControlWords.directions), "who placed it"),
        ControlField("displayName", .string, "who the other side is, for a UI: contact names, else SIP display names, joined with \", \""),
        ControlField("members", .array(.object(HandleInfo.self)), "the remote members"),
        ControlField(
            "activeRemoteMembers", .array(.object(HandleInfo.self)),
            "the remote members taking part now: the caller while it rings, the peer once connected; empty while the peer holds us"),
        ControlField("localMember", .nullable(.object(HandleInfo.self)), "our own handle: on an incoming call the address called (its To); null on calls we place"),
        ControlField("encryption", .nullable(.oneOf(["sdes", "dtls"])), "how its media is protected once negotiated: `sdes` (SRTP keyed by SDES) or `dtls` (SRTP keyed by DTLS, the peer's certificate checked against its fingerprint; no audio flows until it is); null while plain (a UI shows a lock)"),
        ControlField("transferredFrom", .nullable(.string), "the conversation whose peer transferred us into this one (its REFER asked for this call; `docs/transfer.md`), null otherwise"),
        ControlField("account", .nullable(.string), "the account it goes through, by address of record: the one a call we place went out through (`start`'s `account`, else the default), the one an incoming call was called at; null without accounts, or for a call straight from a peer that named none"),
        ControlField("isRemotelyHeld", .boolean, "the peer put us on hold (no remote member active while joined)"),
        ControlField("isMuted", .boolean, "we are muted"),
        ControlField("isVideo", .boolean, "it carries video"),
        ControlField("viaPush", .boolean, "a VoIP push announced it before its INVITE (an incoming banner says so)"),
        ControlField(
            "canShareActivity", .boolean,
            "a group session may be activated on it now (`groupActivate`: it is joined or paused); a frontend shows its share button only then"),
        ControlField(
            "capabilities", .array(.oneOf(ControlWords.capabilities)),
            "what kind of call it is: the actions it supports at all; its state decides which are allowed now (hold and tones while joined, unmerge while merged; a refused one says why)"),
        ControlField(
            "pendingActions", .array(.oneOf(ControlWords.pendingActions)),
            "actions running on it now, by the method that asks for each (a `mute` with `muted: false` is an `unmute`): show a spinner"),
        ControlField("group", .nullable(.string), "the uuid of the group it is merged into"),
        ControlField("callID", .nullable(.string), "its SIP Call-ID"),
        ControlField("createdAt", .timestamp, "when parleyd first knew of it"),
        ControlField("connectedAt", .nullable(.timestamp), "when media first connected"),
        ControlField("endedAt", .nullable(.timestamp), "when it ended"),
        ControlField("endedReason", .nullable(.oneOf(ControlWords.endedReasons)), "why it ended"),
        ControlField("sipStatus", .nullable(.integer), "the final SIP status that ended it (486, 603…)"),
        ControlField("sipReason", .nullable(.string), "that status's reason phrase"),
    ]

    /// A call ringing in, and one that ended busy.
    public static let examples: [ConversationInfo] = [
        ControlExample.decode(
            #"{"uuid": "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", "state": "joined", "direction": "incoming", "displayName": "Bob", "#
                + #""members": [{"kind": "generic", "value": "sip:bob@192.0.2.7:5062", "displayName": "Bob", "contactName": null}], "#
                + #""activeRemoteMembers": [{"kind": "generic", "value": "sip:bob@192.0.2.7:5062", "displayName": "Bob", "contactName": null}], "#
                + #""localMember": {"kind": "generic", "value": "sip:alice@example.com", "displayName": "sip:alice@example.com", "contactName": null}, "#
                + #""account": "sip:alice@example.com", "encryption": "sdes", "transferredFrom": null, "#
                + #""isRemotelyHeld": false, "isMuted": true, "isVideo": false, "viaPush": false, "canShareActivity": true, "#
                + #""capabilities": ["merging", "unmerging", "pausing", "playingTones"], "pendingActions": ["hold"], "#
                + #""group": "0B6D2E7F-1C4A-4F3E-8B2D-5A9C7E1F3D40", "callID": "a84b4c76e66710@192.0.2.7", "#
                + #""createdAt": "2026-11-29T17:02:03.123Z", "connectedAt": "2026-11-29T17:02:05.002Z", "endedAt": null, "#
                + #""endedReason": null, "sipStatus": null, "sipReason": null}"#),
        ControlExample.decode(
            #"{"uuid": "3F2A9D10-7B6E-4E1C-A5D4-2C8B0F9E6A13", "state": "left", "direction": "outgoing", "displayName": "Carol", "#
                + #""members": [{"kind": "phoneNumber", "value": "+1 650 555 0199", "displayName": "+1 650 555 0199", "contactName": "Carol"}], "#
                + #""activeRemoteMembers": [], "localMember": null, "account": null, "encryption": null, "#
                + #""transferredFrom": "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", "isRemotelyHeld": false, "isMuted": false, "isVideo": false, "#
                + #""viaPush": false, "canShareActivity": false, "capabilities": [], "pendingActions": [], "group": null, "#
                + #""callID": null, "createdAt": "2026-11-29T17:03:00.000Z", "connectedAt": null, "#
                + #""endedAt": "2026-11-29T17:03:02.500Z", "endedReason": "busy", "sipStatus": 486, "sipReason": "Busy Here"}"#),
    ]
}

extension ActionResult: ControlShape {
    /// `an action result`.
    public static let noun = ControlNoun("an action result", plural: "action results")

    /// The members.
    public static let fields = [
        ControlField(
            "action", .oneOf(ControlWords.actions),
            "the action, by the method that asked for it (`redial` is a `start`, a `mute` with `muted: false` an `unmute`)"),
        ControlField("actionUUID", .string, "the action's uuid: its `actionSettled` event names it"),
        ControlField(
            "state", .oneOf(["complete", "pending"]),
            "`complete`, or `pending` for `start` and `redial`, answered as soon as the conversation exists"),
        ControlField("conversation", .object(ConversationInfo.self), "the conversation after the action"),
    ]

    /// A hold that completed.
    public static let examples = [
        ActionResult(
            action: "hold", actionUUID: "5E0D3C1B-8A7F-4B2E-9D6C-1F4A3B2C5D6E", state: "complete",
            conversation: ConversationInfo.examples[0])
    ]
}

extension RegistrationInfo: ControlShape {
    /// `a registration`.
    public static let noun = ControlNoun("a registration", plural: "registrations")

    /// The members.
    public static let fields = [
        ControlField("account", .nullable(.string), "the account's address of record (`sip:alice@example.com`); null without accounts"),
        ControlField("name", .nullable(.string), "the account's name in the config file (`[account work]`), else its address of record; null without accounts"),
        ControlField(
            "state", .oneOf(["unregistered", "registering", "registered", "failed"]),
            "`unregistered` also when parleyd has no account; `registering` also while a refresh is under way (the binding still holds)"),
        ControlField("expiresAt", .nullable(.timestamp), "until when the registrar keeps the binding (while `registered`)"),
        ControlField("reason", .nullable(.string), "why the last attempt failed (while `failed`): the registrar's status and phrase, or what went wrong"),
        ControlField(
            "mappedAddress", .nullable(.string),
            "while `registered` behind a NAT: our `HOST:PORT` as the registrar saw it (its Via `received`/`rport`, RFC 3581) where our Contact said another; the address our Contact and SDP give peers through the registrar. Null without a NAT, and with `--public-address`"),
    ]

    /// Registered behind a NAT, refused, and no account at all.
    public static let examples = [
        RegistrationInfo(
            account: "sip:alice@example.com", name: "work", state: "registered", expiresAt: "2026-11-29T18:02:03.123Z",
            mappedAddress: "203.0.113.2:5070"),
        RegistrationInfo(account: "sip:alice@example.org", name: "home", state: "failed", reason: "403 Forbidden"),
        RegistrationInfo(state: "unregistered"),
    ]
}

extension HistoryRecordInfo: ControlShape {
    /// `a history record`.
    public static let noun = ControlNoun("a history record", plural: "history records")

    /// The members.
    public static let fields = [
        ControlField("id", .integer, "the record's id (for `markRead`, `deleteRecord`, `redial`)"),
        ControlField("uuid", .string, "the conversation's uuid"),
        ControlField("direction", .oneOf(ControlWords.directions), "who placed it"),
        ControlField("status", .oneOf(ControlWords.historyStatuses), "how it went, for Recents"),
        ControlField("endedReason", .oneOf(ControlWords.endedReasons), "the conversation's ended reason"),
        ControlField("displayName", .string, "who the other side was: contact names, else SIP display names"),
        ControlField(
            "members", .array(.object(HandleInfo.self)),
            "the remote members, each with the address it called from; a member's `displayName` is the name recorded with the call (the contact's name then, else the SIP display name), its `contactName` the contact's name now"),
        ControlField("localMember", .nullable(.object(HandleInfo.self)), "our own handle"),
        ControlField(
            "account", .nullable(.string),
            "the account it went through (its address of record, `sip:alice@example.com`); null when none, and for calls recorded before parleyd kept it"),
        ControlField("isVideo", .boolean, "it carried video"),
        ControlField(
            "encryption", .nullable(.oneOf(["sdes", "dtls"])),
            "how its media was protected once negotiated: `sdes` (SRTP keyed by SDES) or `dtls` (DTLS-SRTP); null for a plain call, and for calls recorded before parleyd kept it"),
        ControlField("group", .nullable(.string), "the group it was merged into"),
        ControlField("callID", .nullable(.string), "its SIP Call-ID"),
        ControlField("createdAt", .timestamp, "when it began"),
        ControlField("connectedAt", .nullable(.timestamp), "when media connected"),
        ControlField("endedAt", .timestamp, "when it ended"),
        ControlField("durationMs", .integer, "connected time in milliseconds (0 if it never connected)"),
        ControlField("isRead", .boolean, "whether it was marked read (missed calls start unread)"),
        ControlField(
            "quality", .nullable(.object(MediaStatsInfo.self)),
            "its audio figures as the call ended (read at most two seconds before), null without parleyd's own audio"),
    ]

    /// A missed call, and a connected one with its figures.
    public static let examples = [
        HistoryRecordInfo(
            id: 3, uuid: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", direction: "incoming", status: "missed",
            endedReason: "unanswered", displayName: "Bob", members: [HandleInfo.examples[0]], localMember: nil, isVideo: false,
            group: nil, callID: nil, createdAt: "2026-11-29T17:02:03.123Z", connectedAt: nil,
            endedAt: "2026-11-29T17:02:33.123Z", durationMs: 0, isRead: false),
        HistoryRecordInfo(
            id: 4, uuid: "3F2A9D10-7B6E-4E1C-A5D4-2C8B0F9E6A13", direction: "outgoing", status: "connected",
            endedReason: "localEnded", displayName: "Alice Liddell", members: [HandleInfo.examples[1]],
            localMember: HandleInfo.examples[0], isVideo: false, group: "0B6D2E7F-1C4A-4F3E-8B2D-5A9C7E1F3D40",
            callID: "a84b4c76e66710@192.0.2.7", createdAt: "2026-11-29T17:03:00.000Z", connectedAt: "2026-11-29T17:03:02.000Z",
            endedAt: "2026-11-29T17:04:00.000Z", durationMs: 58_000, isRead: true, quality: MediaStatsInfo.examples[0],
            account: "sip:bob@example.com", encryption: "sdes"),
    ]
}

extension ContactInfo: ControlShape {
    /// `a contact`.
    public static let noun = ControlNoun("a contact", plural: "contacts")
    /// What a contacts file may hold.
    public static var note: String? { ControlReference.contactsFileNote }

    /// The members.
    public static let fields = [
        ControlField("name", .string, "the contact's name"),
        ControlField(
            "handles", .array(.object(HandleInfo.self)),
            "its numbers and addresses as the contacts file writes them (`contactName` is the contact's)"),
    ]

    /// Alice.
    public static let examples = [ContactInfo(name: "Alice Liddell", handles: [HandleInfo.examples[1]])]
}

/// Examples built from the protocol's own JSON, for types whose values come from the engine.
enum ControlExample {
    /// `json` decoded; a broken example is our own bug.
    static func decode<Value: Decodable>(_ json: String) -> Value {
        do {
            return try ControlJSON.decoder.decode(Value.self, from: Data(json.utf8))
        } catch {
            preconditionFailure("a documented example does not decode as \(Value.self): \(error)")
        }
    }
}
