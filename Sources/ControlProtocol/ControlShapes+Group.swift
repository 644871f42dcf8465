import Foundation
import GroupActivities

extension GroupParticipantInfo: ControlShape {
    /// `a participant`.
    public static let noun = ControlNoun("a participant", plural: "participants")

    /// The members.
    public static let fields = [
        ControlField(
            "id", .string,
            "stable for the session: on the host, a remote member's is its conversation's uuid in lower case; give it in `groupSend`'s `to`"),
        ControlField("name", .string, "what the others see: the member's contact or display name"),
    ]

    /// Bob.
    public static let examples = [GroupParticipantInfo(GroupParticipant(id: "8c1f0e4b-2a53-4c2b-9e0a-6d1f3b7a9c21", name: "Bob"))]
}

extension GroupActivity: ControlShape {
    /// `an activity`.
    public static let noun = ControlNoun("an activity", plural: "activities")

    /// The members.
    public static let fields = [
        ControlField("identifier", .string, "the app's identifier of the activity, 1–128 bytes (`com.example.list`)"),
        ControlField("title", .string, "what people see, 1–256 bytes"),
        ControlField("type", .string, "the kind of activity, 1–64 bytes; `generic` for an app's own"),
    ]

    /// A shared list.
    public static let examples = [GroupActivity(identifier: "com.example.list", title: "Shopping list")]
}

extension GroupSessionData: ControlShape {
    /// `a group session`.
    public static let noun = ControlNoun("a group session", plural: "group sessions")

    /// The members.
    public static let fields = [
        ControlField("session", .string, "its id (lower case), for `groupJoin`, `groupSend`…"),
        ControlField("activity", .object(GroupActivity.self), "what it is about"),
        ControlField("state", .oneOf(["waiting", "joined", "invalidated"]), "`waiting`: offered by a peer, join it with `groupJoin`"),
        ControlField(
            "reason", .nullable(.oneOf(GroupSessionEndReason.allCases.map(\.rawValue))),
            "why it was invalidated (`replaced`: a newer session took its place); null while it lasts"),
        ControlField("isHost", .boolean, "this parleyd hosts it: it orders every message"),
        ControlField("conversation", .string, "the uuid of the conversation it was activated on or arrived on"),
        ControlField("localParticipant", .object(GroupParticipantInfo.self), "this side, as the others see it"),
        ControlField("activeParticipants", .array(.object(GroupParticipantInfo.self)), "everyone taking part now, this side included once joined"),
        ControlField("maxMessageBytes", .integer, "the most bytes a message's type and data may have now (768 when any leg runs over UDP)"),
    ]

    /// A hosted session, and one that ended.
    public static let examples: [GroupSessionData] = [
        ControlExample.decode(
            #"{"session": "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", "activity": {"identifier": "com.example.list", "title": "Shopping list", "#
                + #""type": "generic"}, "state": "joined", "reason": null, "isHost": true, "#
                + #""conversation": "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", "localParticipant": {"id": "1d2c3b4a-0000-4000-8000-00000000a11c", "#
                + #""name": "Alice"}, "activeParticipants": [{"id": "1d2c3b4a-0000-4000-8000-00000000a11c", "name": "Alice"}, "#
                + #"{"id": "8c1f0e4b-2a53-4c2b-9e0a-6d1f3b7a9c21", "name": "Bob"}], "maxMessageBytes": 768}"#),
        ControlExample.decode(
            #"{"session": "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", "activity": {"identifier": "com.example.list", "title": "Shopping list", "#
                + #""type": "generic"}, "state": "invalidated", "reason": "ended", "isHost": false, "#
                + #""conversation": "3F2A9D10-7B6E-4E1C-A5D4-2C8B0F9E6A13", "localParticipant": {"id": "8c1f0e4b-2a53-4c2b-9e0a-6d1f3b7a9c21", "#
                + #""name": "Bob"}, "activeParticipants": [], "maxMessageBytes": 61440}"#),
    ]
}

extension GroupSessionsResult: ControlShape {
    /// `groupSessions`' result.
    public static let noun = ControlNoun("a list of group sessions", plural: "lists of group sessions")

    /// The members.
    public static let fields = [
        ControlField("sessions", .array(.object(GroupSessionData.self)), "the sessions this parleyd hosts, joined or was offered")
    ]

    /// Two sessions.
    public static let examples = [GroupSessionsResult(sessions: GroupSessionData.examples)]
}

extension GroupLeft: ControlShape {
    /// `groupLeave`'s and `groupEnd`'s result.
    public static let noun = ControlNoun("a session left", plural: "sessions left")

    /// The members.
    public static let fields = [
        ControlField("session", .string, "the session's id"),
        ControlField("state", .oneOf(["invalidated"]), "always `invalidated`"),
    ]

    /// Left.
    public static let examples = [GroupLeft(session: "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", state: "invalidated")]
}

extension GroupSessionChanged: ControlShape {
    /// The `groupSessionChanged` event's data.
    public static let noun = ControlNoun("a group session change", plural: "group session changes")

    /// The members.
    public static let fields = [
        ControlField(
            "change", .oneOf(["offered", "activated", "joined", "invalidated"]),
            "`offered`: a peer offers it (join with `groupJoin`); `activated`: this parleyd started it"),
        ControlField("session", .object(GroupSessionData.self), "the session now"),
    ]

    /// Offered.
    public static let examples = [GroupSessionChanged(change: "offered", session: GroupSessionData.examples[0])]
}

extension GroupParticipantsChanged: ControlShape {
    /// The `groupParticipantsChanged` event's data.
    public static let noun = ControlNoun("a participants change", plural: "participants changes")

    /// The members.
    public static let fields = [
        ControlField("session", .string, "the session's id"),
        ControlField("added", .array(.object(GroupParticipantInfo.self)), "who came: send them a snapshot (`to`: their ids)"),
        ControlField("removed", .array(.object(GroupParticipantInfo.self)), "who went"),
        ControlField("active", .array(.object(GroupParticipantInfo.self)), "everyone taking part now"),
    ]

    /// Bob came.
    public static let examples = [
        GroupParticipantsChanged(
            session: "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", added: GroupParticipantInfo.examples, removed: [],
            active: GroupParticipantInfo.examples)
    ]
}

extension GroupMessageReceived: ControlShape {
    /// The `groupMessage` event's data.
    public static let noun = ControlNoun("a group message", plural: "group messages")

    /// The members.
    public static let fields = [
        ControlField("session", .string, "the session's id"),
        ControlField("seq", .integer, "its place in the session's order, the same for every member (0 for an unreliable message)"),
        ControlField("source", .object(GroupParticipantInfo.self), "who sent it"),
        ControlField("type", .string, "the sender's name for its kind (`text` from plain softphones)"),
        ControlField("data", .json, "the message as the sender gave it"),
        ControlField("mode", .oneOf(GroupDeliveryModeNames.all), "how it was sent"),
    ]

    /// An item.
    public static let examples: [GroupMessageReceived] = [
        ControlExample.decode(
            #"{"session": "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", "seq": 7, "source": {"id": "8c1f0e4b-2a53-4c2b-9e0a-6d1f3b7a9c21", "#
                + #""name": "Bob"}, "type": "app.item", "data": {"item": "eggs"}, "mode": "reliable"}"#)
    ]
}

extension GroupSendResult: ControlShape {
    /// `a send result`.
    public static let noun = ControlNoun("a send result", plural: "send results")
    /// Where it comes.
    public static var note: String? { "`groupSend`'s result and the `groupSendResult` event's data." }

    /// The members.
    public static let fields = [
        ControlField("session", .string, "the session's id"),
        ControlField("id", .integer, "this parleyd's number for the message"),
        ControlField("seq", .nullable(.integer), "its place in the session's order (reliable messages the host ordered), else null"),
        ControlField("deliveredTo", .array(.string), "the ids of the participants that have it"),
        ControlField("failed", .array(.string), "the ids of those that left first or refused it"),
        ControlField("unsupported", .array(.string), "the ids of plain softphones that cannot read its type"),
        ControlField("error", .nullable(.object(ControlError.self)), "why it went to nobody (`throttled`, `notJoined`…), else null"),
    ]

    /// Delivered, and refused.
    public static let examples: [GroupSendResult] = [
        ControlExample.decode(
            #"{"session": "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", "id": 3, "seq": 7, "deliveredTo": ["8c1f0e4b-2a53-4c2b-9e0a-6d1f3b7a9c21"], "#
                + #""failed": [], "unsupported": [], "error": null}"#),
        ControlExample.decode(
            #"{"session": "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", "id": 4, "seq": null, "deliveredTo": [], "failed": [], "#
                + #""unsupported": [], "error": {"code": "notJoined", "message": "Join the session first.", "details": null}}"#),
    ]
}

extension TextMessageReceived: ControlShape {
    /// The `textMessage` event's data.
    public static let noun = ControlNoun("a text message", plural: "text messages")

    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("text", .string, "what the peer wrote"),
        ControlField("verified", .boolean, "it came in the call's own dialog; false for a MESSAGE from outside the dialog, which anyone may send"),
        ControlField("from", .nullable(.string), "for an unverified text, the address its From header claims (show it as a claim); null when verified"),
    ]

    /// Hello, in the dialog and from outside it.
    public static let examples = [
        TextMessageReceived(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", text: "hello"),
        TextMessageReceived(
            conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", text: "hello", verified: false, from: "sip:bob@192.0.2.7"),
    ]
}

/// The delivery modes' names.
enum GroupDeliveryModeNames {
    /// `reliable`, `unreliable`.
    static let all = ["reliable", "unreliable"].filter { GroupDeliveryMode(rawValue: $0) != nil }
}
