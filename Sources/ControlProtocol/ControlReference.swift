import ConversationKit
import Foundation

/// docs/control-api.md, generated from this module's types (a test fails when the file drifts; `parley reference
/// control-api > docs/control-api.md` writes it again).
public enum ControlReference {
    /// One documented limit of a connection.
    public struct Limit: Sendable {
        /// What it is called.
        public let name: String
        /// Its default.
        public let value: String
        /// What happens at it.
        public let effect: String
        /// A limit.
        public init(_ name: String, _ value: String, _ effect: String) {
            self.name = name
            self.value = value
            self.effect = effect
        }
    }

    /// What each method does, and what it answers.
    public static func summary(of method: ControlMethodName) -> (does: String, result: String) {
        switch method {
        case .status: ("versions, listening addresses, registration, counters and limits", "`StatusResult`: `{\"protocol\": 1, \"daemon\": {\"version\", \"user\", \"listening\", \"pushToken\", \"webPage\"}, \"registration\": {registration}, \"conversations\": n, \"counters\": {…}, \"limits\": {…}}`; `limits` holds the connection limits below (`maxClients`, `helloTimeoutMs`, …) and the merge limits, `maxConversationGroups` and `maxConversationsPerGroup`, and the SIP limits of docs/robustness.md, `maxCalls`, `maxRingingPerSource`, `maxRequestsPerSource` and `sourceBanSeconds`")
        case .list:
            ("one page of the live conversations, oldest first (follow `nextCursor` for the rest)",
             "`{\"conversations\": [conversation, …], \"nextCursor\": string or null, \"total\": integer}`")
        case .subscribe: ("from now on, every event comes on this connection (see Events)", "`{\"events\": [names]}`")
        case .start: ("call someone; answered as soon as the conversation exists (usually still `idle`: the call may already be ringing), then follow its events — `pendingActions` holds `start` until the call rings, connects or fails (`actionSettled`)", "an action result with `state: \"pending\"`")
        case .join: ("answer a ringing conversation", "an action result")
        case .end: ("end, cancel or refuse a conversation", "an action result; its conversation is `leaving` or `left` (the `left` event follows)")
        case .hold: ("put a joined conversation on hold (re-INVITE with a=sendonly)", "an action result")
        case .resume: ("take a conversation off hold (re-INVITE with a=sendrecv)", "an action result")
        case .mute: ("mute or unmute ourselves", "an action result")
        case .playTone: ("send keypad tones: RFC 4733 events in the call's audio when both sides list telephone-event, else one SIP INFO application/dtmf-relay per digit", "an action result")
        case .mediaStats: ("a live call's negotiated audio and its figures so far (RTP counts and RTCP receiver reports, read every two seconds while parleyd carries the audio)", "`{\"conversation\": uuid, \"media\": media session or null, \"stats\": media figures or null}`")
        case .video: ("turn video on or off in a joined conversation: a re-INVITE with or without m=video, answered once the peer took it or refused it (`failed`); the capability change comes as `conversationChanged` (`isVideo`, `capabilities`). Not a manager action: LiveCommunicationKit reports media changes as updates. Needs `parleyd --video`; the video itself is not carried yet", "an action result (`action: \"video\"`)")
        case .merge: ("merge two joined conversations into a group (parleyd is the local focus)", "an action result")
        case .unmerge: ("take a conversation out of its group", "an action result")
        case .history: ("recorded conversations, newest first, a page at a time", "`{\"records\": [record, …], \"nextCursor\": string or null}`")
        case .historyCount: ("how many records match the filters — a missed-calls badge is `{\"missed\": true, \"unread\": true}`", "`{\"count\": n}`")
        case .markRead: ("mark one record, or all, as read (a `historyChanged` event follows)", "`{\"count\": records changed}`")
        case .deleteRecord: ("delete one record (a `historyChanged` event follows)", "`{\"count\": 1}`")
        case .clearHistory: ("delete every record (a `historyChanged` event follows)", "`{\"count\": records deleted}`")
        case .redial: ("call a record's party again, at the address it called from; answered like `start`", "an action result with `state: \"pending\"`")
        case .contact: ("the contact name for a handle, by Parley's matching rules", "`{\"handle\": handle, \"contactName\": string or null}`")
        case .contacts: ("the contacts whose name or handle contains `query` (any case; digits match phone numbers in any written form), by name: a dial field's autocomplete", "`{\"contacts\": [{\"name\": string, \"handles\": [handle, …]}, …]}`")
        case .reloadContacts: ("read the `--contacts` file again (as SIGHUP does); live conversations are renamed", "`{\"contacts\": n, \"conflicts\": n}`")
        case .groupSessions: ("the group sessions this parleyd hosts, joined or was offered (docs/group-activities.md)", "`{\"sessions\": [group session, …]}`")
        case .groupActivate: ("share an activity in a joined or paused conversation and, once merged, its whole group: this parleyd hosts the session (it orders every message) and has joined it; Parley peers are offered it (`groupSessionChanged` with `offered`), plain softphones are members at once and get `text` messages as text. A session the conversation carried before is replaced. `notJoined` when the call is not connected", "a group session")
        case .groupJoin: ("join a session a peer offered", "a group session (`joined`)")
        case .groupLeave: ("leave a session (the host's leaving ends it for everyone)", "`{\"session\", \"state\": \"invalidated\"}`")
        case .groupEnd: ("end a session this parleyd hosts, for everyone (a member leaves)", "`{\"session\", \"state\": \"invalidated\"}`")
        case .identity: ("this device's collaboration identity (docs/collaboration.md): its P-256 key, its person root over every device of the person, and its proof of inclusion", "`{\"publicKey\", \"root\", \"publicKeyIndex\", \"inclusionHashes\", \"devices\"}` (hex)")
        case .collaborations: ("the collaborations this parleyd owns or was shared", "`{\"collaborations\": [collaboration, …]}`")
        case .collaborationStart: ("start a collaboration in a joined conversation and, once merged, its group (Apple's start collaboration action): it rides the conversation's group session (one is activated when there is none), the members are told (`collaborationChanged` there) and announce their person roots, which become participants updates (`collaborationParticipantsUpdate`). Errors: `invalidParams` (metadata rules: a picker with two selected options…), `notJoined`", "a collaboration")
        case .collaborationOpen: ("on a member: ask the owner for access (opening the link): this device answers the owner's challenge with its signed proof; the result comes as `collaborationChanged` with `access` `granted` or `rejected` (and `rejection`)", "a collaboration (`access`: `requested`)")
        case .collaborationChallenge: ("on the owner: a fresh single-use challenge (32-byte nonce, 60 s) for a device outside the group to sign with `collaborationProve`", "`{\"collaboration\", \"group\", \"nonce\", \"expires\", \"verifier\"}`")
        case .collaborationProve: ("sign a challenge with this device's key: the domain-separated statement of docs/collaboration.md", "a signed proof `{\"publicKey\", \"publicKeyIndex\", \"inclusionHashes\", \"signatureDER\"}`")
        case .collaborationVerify: ("on the owner: check a proof for a challenge it issued (the nonce is spent first); a success binds the root. Errors: `proofRejected` with `details.reason` (" + ProofRejectionNames.all + "), `notFound`, `refused` (not the owner), `throttled` (more than 1,000 proofs a second from frontends, bursts of 200: try again after `details.retryAfterMs`; the nonce is not spent)", "`{\"collaboration\", \"root\"}`")
        case .collaborationConfirm: ("accept or refuse a participants update that waits for confirmation (`confirmUpdates`); `notFound` when it is no longer pending (fulfilled, failed or timed out after 30 s)", "`{\"action\", \"accepted\": boolean}`")
        case .collaborationNotice: ("post a notice into the collaboration's conversation (Apple's highlight events): `change` (`edit`, `comment`), `mention` (to the mentioned person alone; `unknownParticipant` when nobody in the group has that root), `persistence` (`created`, `deleted`, `renamed`, `moved`), `membership` (`addedCollaborator`, `removedCollaborator`)", "`{\"collaboration\", \"posted\": true}`")
        case .identityUpdateProve: ("on an old device of a person whose device set changed (a device added to `DATA_DIR/identity/devices`): sign `parley-identity-update-v1` from the old root (this device and `oldDevices`) to this device's current root, for a challenge of the collaboration's owner", "`{\"oldRoot\", \"newRoot\", \"proof\": signed proof}`")
        case .collaborationReplaceIdentity: ("on the owner: replace a stored root by the person's new one, vouched for by an old device's proof against the old root (`identityUpdateProve`); the nonce is spent first. The new device is a collaborator once this is done; a new device cannot vouch for itself. Errors: `proofRejected` (`details.reason`)", "`{\"collaboration\", \"root\": newRoot}`")
        case .collaborationEnd: ("on the owner: end a collaboration; members are told", "`{\"collaboration\", \"state\": \"ended\"}`")
        case .groupSend: ("send a message to the session's other participants; answered when every participant it went to has it (`reliable`: once, in one order for every member) or at once (`unreliable`). Errors: `messageTooLarge`, `throttled` (20 a second, bursts of 40, per sender), `notJoined`, `unknownParticipant`, `notFound`", "`{\"session\", \"id\", \"seq\": integer or null, \"deliveredTo\": [participant ids], \"failed\": [ids that left first or refused it], \"unsupported\": [plain softphones that cannot read its type], \"error\": error or null}`")
        }
    }

    /// What each event says.
    public static func summary(of event: ControlEventMessage.Name) -> String {
        switch event {
        case .conversationChanged:
            "anything about a conversation changed (state, members, hold, mute, video, group, capabilities, pending actions…): `{\"conversation\": conversation, \"from\": previous state or null, \"changes\": [member names, or \"new\"]}`"
        case .tonesReceived: "the peer sent keypad tones: `{\"conversation\": uuid, \"digits\": \"5\"}`"
        case .mediaStats:
            "a call's audio figures, every two seconds while parleyd carries its audio (`--media gstreamer`): `{\"conversation\": uuid, \"stats\": media figures}`"
        case .mediaChanged:
            "a call's negotiated audio changed (an answer, a re-INVITE, either side's hold, the end), when parleyd runs with `--media gstreamer` or `--media external`: `{\"conversation\": uuid, \"media\": media session or null}` (null: no audio now)"
        case .historyChanged:
            "records were added, marked read or deleted: `{\"change\": \"inserted\" | \"read\" | \"deleted\" | \"cleared\", \"records\": [ids] (empty for every record), \"conversation\": uuid or null}`"
        case .registrationChanged:
            "the registration changed: `{\"state\": \"unregistered\" | \"registering\" | \"registered\" | \"failed\", \"expiresAt\": timestamp or null, \"reason\": string or null}`"
        case .pushReceived:
            "a VoIP push was handled: `{\"callID\", \"handling\": \"reported\" | \"alreadyReported\" | \"reportedAndEnded\" | \"cancelled\" | \"notReported\", \"conversation\": uuid or null, \"reason\": string or null}`"
        case .groupSessionChanged:
            "a group session was `offered` by a peer (join it with `groupJoin`), `activated` here, `joined` or `invalidated`: `{\"change\", \"session\": group session}`"
        case .groupParticipantsChanged:
            "a session's active participants changed — the moment to send newcomers a snapshot (`to: [added ids]`): `{\"session\", \"added\": [participant], \"removed\": [participant], \"active\": [participant]}`"
        case .groupMessage:
            "a message from another participant, in the session's order: `{\"session\", \"seq\", \"source\": participant, \"type\", \"data\", \"mode\"}`"
        case .groupSendResult:
            "how one of this parleyd's group messages went (as `groupSend`'s result): `{\"session\", \"id\", \"seq\", \"deliveredTo\", \"failed\", \"unsupported\", \"error\"}`"
        case .collaborationChanged:
            "a collaboration started, was shared with this parleyd, changed (participants, state, this device's access) or ended: `{\"collaboration\": collaboration}`"
        case .collaborationParticipantsUpdate:
            "people to add (their roots become `invited`) or remove (already `revoked`); with `requiresConfirmation`, answer with `collaborationConfirm` before `deadline`: `{\"action\", \"collaboration\", \"added\": [roots], \"removed\": [roots], \"requiresConfirmation\", \"deadline\"}`"
        case .collaborationActionCompleted:
            "a start or participants update action ended: `{\"action\", \"kind\": \"start\" | \"updateParticipants\", \"outcome\": \"fulfilled\" | \"failed\" | \"timedOut\"}`"
        case .collaborationVerified:
            "on the owner, a proof was checked: `{\"collaboration\", \"participant\": id or null, \"granted\", \"root\", \"reason\"}`"
        case .collaborationNotice:
            "a notice posted into a collaboration's conversation: `{\"collaboration\", \"title\", \"url\", \"kind\", \"trigger\" (a mention's is the mentioned root), \"from\", \"fromName\"}`"
        case .identityAnnounced:
            "a member of a group session announced their person root (kept with their contact): `{\"session\", \"participant\", \"name\", \"root\"}`"
        case .textMessage:
            "text a call's peer sent in a SIP MESSAGE outside any group session: `{\"conversation\": uuid, \"text\"}`"
        case .actionSettled:
            "any action — from a frontend or caused by the network — completed, failed or timed out: `{\"action\", \"actionUUID\", \"conversation\", \"state\": \"complete\" | \"failed\" | \"timedOut\", \"error\": error or null}`"
        }
    }

    /// The whole document.
    public static func markdown(limits: [Limit]) -> String {
        var text = header
        text += "\n## Limits\n\n| limit | default | at the limit |\n|---|---|---|\n"
        for limit in limits { text += "| \(limit.name) | \(limit.value) | \(limit.effect) |\n" }
        text += "\n## Shapes\n\nEvery member is always present; one that has no value is `null`. Times are ISO 8601 "
            + "timestamps in UTC with milliseconds (`2026-11-29T17:02:03.123Z`); durations are integer milliseconds in "
            + "members ending in `Ms`.\n"
        text += table("A conversation", ConversationInfo.fields)
        text += table("A handle", HandleInfo.fields)
        text += table("A history record", HistoryRecordInfo.fields)
        text += table("A media session", MediaInfo.fields)
        text += table("Media figures", MediaStatsInfo.fields)
        text += "\nAn action result is `{\"action\": name, \"actionUUID\": uuid, \"state\": \"complete\" or \"pending\", "
            + "\"conversation\": conversation}`.\n"
        text += "\nEnded reasons: " + Conversation.EndedReason.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", ")
            + ". States: " + Conversation.State.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", ") + ".\n"
        text += "\n## Methods\n"
        for method in ControlMethodName.allCases {
            let (does, result) = summary(of: method)
            let type = ControlCommand.paramsType(of: method)
            text += "\n### `\(method.rawValue)`\n\n\(does).\n\n"
            if type.fields.isEmpty {
                text += "No parameters.\n"
            } else {
                text += "| param | type | |\n|---|---|---|\n"
                for field in type.fields {
                    text += "| `\(field.name)` | \(field.type)\(field.isOptional ? ", optional" : "") | \(field.summary) |\n"
                }
            }
            text += "\n```json\n" + example(method, type) + "\n```\n\nResult: \(result).\n"
        }
        text += "\n## Events\n\nAfter `subscribe`, `{\"v\": 1, \"event\": name, \"data\": {…}}`:\n"
        for event in ControlEventMessage.Name.allCases {
            text += "\n### `\(event.rawValue)`\n\n" + summary(of: event) + "\n"
        }
        text += "\n## Errors\n\n`{\"v\": 1, \"id\": 7, \"error\": {\"code\": \"refused\", \"message\": \"Can't hold this call: "
            + "it is still ringing.\", \"details\": {…}}}`. `message` is a short sentence for people (a toast); "
            + "`code` is what a program switches on; `details` (when present) holds what applies of `field`, "
            + "`sipStatus`, `sipReason`, `retryAfter`, `action`, `methods`, `matches` and `technical` (the log's words).\n"
            + "Connection-level errors come from the transport, outside any request: `{\"v\": 1, \"type\": \"error\", "
            + "\"id\": null, \"error\": {\"code\": \"tooManyClients\", \"message\": \"…\"}}`.\n\n| code | meaning |\n|---|---|\n"
        for code in ControlError.Code.allCases { text += "| `\(code.rawValue)` | \(code.meaning) |\n" }
        return text
    }

    private static func table(_ title: String, _ fields: [ControlField]) -> String {
        var text = "\n\(title):\n\n| member | type | |\n|---|---|---|\n"
        for field in fields { text += "| `\(field.name)` | \(field.type) | \(field.summary) |\n" }
        return text
    }

    private static func example(_ method: ControlMethodName, _ type: any ControlParams.Type) -> String {
        func line(_ params: some ControlParams) -> String {
            let encoded = String(decoding: ControlJSON.encode(params), as: UTF8.self)
            return "{\"v\": 1, \"id\": 1, \"method\": \"\(method.rawValue)\", \"params\": \(encoded)}"
        }
        return line(type.example)
    }

    private static let header = """
        # parleyd control API (version 1)

        <!-- Generated from the ControlProtocol module by `parley reference control-api`; a test fails when it drifts. -->

        Frontends drive a running parleyd and watch it over a Unix domain socket at `DATA_DIR/control.sock` (mode
        0600), one JSON object per line (UTF-8, LF-terminated), or — started with `--websocket 127.0.0.1:PORT` — over
        an RFC 6455 WebSocket at `ws://127.0.0.1:PORT/ws`, one JSON message per text frame. Browsers send an
        `Origin`: it must be the web softphone's own (`http://127.0.0.1:PORT`, the page parleyd serves at `/` on that
        port; `parley web` prints its address with the token) or one given with `--allow-origin` (repeatable), else
        the upgrade gets 403; clients without an Origin are let in. Every other path on the port is a page of the
        softphone or 404.

        ## Connecting

        Only who can read parleyd's token may connect: parleyd writes 64 hex characters to `DATA_DIR/control.token`
        (mode 0600) when it starts. The first message a client sends is

        ```json
        {"v": 1, "type": "hello", "token": "<the token>"}
        ```

        and parleyd answers `{"v": 1, "type": "welcome"}`, or a connection-level error (`unauthorized`) and closes.

        ## Messages

        ```json
        {"v": 1, "id": 7, "method": "start", "params": {"to": "sip:bob@127.0.0.1:5062"}}
        {"v": 1, "id": 7, "result": {"action": "start", "actionUUID": "…", "state": "pending", "conversation": {…}}}
        {"v": 1, "id": 7, "error": {"code": "invalidParams", "message": "Missing \\"to\\".", "details": {"field": "to"}}}
        {"v": 1, "event": "conversationChanged", "data": {"conversation": {…}, "from": "ringing", "changes": ["state"]}}
        ```

        `id` is an integer or a string of 1–128 bytes and comes back in the answer; answers to one connection's
        requests may come in any order. `v` must be 1. Unknown members are ignored (a newer client may send more);
        a missing or mistyped parameter is `invalidParams` with `details.field` naming it. Actions other than `start`
        and `redial` are answered when the engine has completed them (a hold when the re-INVITE is accepted, an end
        when the BYE or CANCEL is out), failed them, or timed them out.

        """
}
