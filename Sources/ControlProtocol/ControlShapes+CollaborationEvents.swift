import Collaboration
import Foundation

extension CollaborationChanged: ControlShape {
    /// The `collaborationChanged` event's data.
    public static let noun = ControlNoun("a collaboration change", plural: "collaboration changes")

    /// The members.
    public static let fields = [ControlField("collaboration", .object(CollaborationData.self), "the collaboration now")]

    /// A change.
    public static let examples = [CollaborationChanged(collaboration: CollaborationData.examples[0])]
}

extension CollaborationUpdateEvent: ControlShape {
    /// The `collaborationParticipantsUpdate` event's data.
    public static let noun = ControlNoun("a participants update", plural: "participants updates")

    /// The members.
    public static let fields = [
        ControlField("action", .string, "the update's action id, for `collaborationConfirm`"),
        ControlField("collaboration", .string, "the collaboration's identifier"),
        ControlField("added", .array(.string), "the roots of the people to add: `invited` once it is fulfilled"),
        ControlField("removed", .array(.string), "the roots of the people removed: already `revoked`"),
        ControlField(
            "requiresConfirmation", .boolean,
            "true: answer with `collaborationConfirm` before `deadline` (the collaboration was started with `confirmUpdates`); false: parleyd fulfils it at once, this says what it does"),
        ControlField("deadline", .timestamp, "when an unanswered update times out (and adds nobody)"),
    ]

    /// One to confirm, and one parleyd did itself.
    public static let examples: [CollaborationUpdateEvent] = [
        ControlExample.decode(
            #"{"action": "action-3", "collaboration": "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", "added": ["\#(String(repeating: "cd", count: 32))"], "#
                + #""removed": [], "requiresConfirmation": true, "deadline": "2026-12-01T10:01:30.000Z"}"#),
        ControlExample.decode(
            #"{"action": "action-4", "collaboration": "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", "added": [], "#
                + #""removed": ["\#(String(repeating: "cd", count: 32))"], "requiresConfirmation": false, "deadline": "2026-12-01T10:02:00.000Z"}"#),
    ]
}

extension CollaborationActionCompleted: ControlShape {
    /// The `collaborationActionCompleted` event's data.
    public static let noun = ControlNoun("a completed collaboration action", plural: "completed collaboration actions")

    /// The members.
    public static let fields = [
        ControlField("action", .string, "the action's id"),
        ControlField("kind", .oneOf(["start", "updateParticipants"]), "what it was"),
        ControlField("outcome", .oneOf(["fulfilled", "failed", "timedOut"]), "how it ended"),
    ]

    /// Fulfilled.
    public static let examples: [CollaborationActionCompleted] = [
        ControlExample.decode(#"{"action": "action-3", "kind": "updateParticipants", "outcome": "fulfilled"}"#)
    ]
}

extension CollaborationVerified: ControlShape {
    /// The `collaborationVerified` event's data.
    public static let noun = ControlNoun("a checked proof", plural: "checked proofs")

    /// The members.
    public static let fields = [
        ControlField("collaboration", .string, "the collaboration's identifier"),
        ControlField("participant", .nullable(.string), "the group participant who sent the proof; null for one given to `collaborationVerify`"),
        ControlField("granted", .boolean, "the proof was accepted"),
        ControlField("root", .nullable(.string), "the person root it proved (when granted)"),
        ControlField("reason", .nullable(.oneOf(ProofRejection.allCases.map(\.rawValue))), "why it was refused (when not granted)"),
    ]

    /// Granted, and refused.
    public static let examples = [
        CollaborationVerified(
            collaboration: "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", participant: "8c1f0e4b-2a53-4c2b-9e0a-6d1f3b7a9c21",
            result: .success(PersonIdentity(hex: String(repeating: "cd", count: 32))!)),
        CollaborationVerified(collaboration: "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", participant: nil, result: .failure(.nonceReused)),
    ]
}

extension CollaborationNoticeEvent: ControlShape {
    /// The `collaborationNotice` event's data.
    public static let noun = ControlNoun("a notice", plural: "notices")

    /// The members.
    public static let fields = [
        ControlField("collaboration", .string, "the collaboration's identifier"),
        ControlField("title", .nullable(.string), "the document's title"),
        ControlField("url", .string, "the document's link"),
        ControlField("kind", .oneOf(["change", "mention", "persistence", "membership"]), "what kind of notice"),
        ControlField(
            "trigger", .string,
            "`edit`, `comment` (change); `created`, `deleted`, `renamed`, `moved` (persistence); `addedCollaborator`, `removedCollaborator` (membership); the mentioned person's root (mention)"),
        ControlField("from", .string, "the participant id of who posted it"),
        ControlField("fromName", .string, "their name"),
    ]

    /// An edit.
    public static let examples: [CollaborationNoticeEvent] = [
        ControlExample.decode(
            #"{"collaboration": "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", "title": "Trip plan", "url": "parley://collaboration/8d3c2a10", "#
                + #""kind": "change", "trigger": "edit", "from": "1d2c3b4a-0000-4000-8000-00000000a11c", "fromName": "Alice"}"#),
        ControlExample.decode(
            #"{"collaboration": "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", "title": null, "url": "parley://collaboration/8d3c2a10", "#
                + #""kind": "persistence", "trigger": "renamed", "from": "1d2c3b4a-0000-4000-8000-00000000a11c", "fromName": "Alice"}"#),
    ]
}

extension IdentityAnnounced: ControlShape {
    /// The `identityAnnounced` event's data.
    public static let noun = ControlNoun("an announced identity", plural: "announced identities")

    /// The members.
    public static let fields = [
        ControlField("session", .string, "the group session"),
        ControlField("participant", .string, "the member's participant id"),
        ControlField("name", .string, "the member's name"),
        ControlField("root", .string, "their person root, 64 hex digits (kept with their contact)"),
    ]

    /// Bob.
    public static let examples = [
        IdentityAnnounced(
            session: "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", participant: "8c1f0e4b-2a53-4c2b-9e0a-6d1f3b7a9c21", name: "Bob",
            root: String(repeating: "cd", count: 32))
    ]
}
