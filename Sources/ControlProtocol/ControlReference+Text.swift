import ConversationKit
import Foundation

/// The reference's prose: what each method and event does, and the rules every shape follows.
extension ControlReference {
    /// What each method does.
    public static func summary(of method: ControlMethodName) -> String {
        switch method {
        case .status: "who this parleyd is: its version and addresses, its registration, what it counted and its limits"
        case .list: "one page of the live conversations, oldest first (follow `nextCursor` for the rest)"
        case .subscribe:
            "from now on, every event comes on this connection (see Events) but `audioLevels`, which comes only with `\"audioLevels\": true`; it is answered before the first event"
        case .start:
            "call someone; answered as soon as the conversation exists (usually still `idle`: the call may already be ringing), then follow its events — `pendingActions` holds `start` until the call rings, connects or fails (`actionSettled`). A SIP URI's `;transport=` must be `udp`, `tcp` or `tls`"
        case .join: "answer a ringing incoming conversation (`refused` on a call this parleyd placed)"
        case .end: "end, cancel or refuse a conversation"
        case .hold:
            "put a joined conversation on hold (re-INVITE with a=sendonly). When the peer's own re-INVITE is still open, parleyd sends ours as soon as it settles"
        case .resume: "take a conversation off hold (re-INVITE with a=sendrecv)"
        case .mute: "mute ourselves (silence is sent; RTP keeps flowing), or unmute with `\"muted\": false`"
        case .unmute: "unmute ourselves (the same as `mute` with `\"muted\": false`)"
        case .playTone:
            "send keypad tones: RFC 4733 events in the call's audio when both sides list telephone-event, else one SIP INFO application/dtmf-relay per digit; a peer's refusal fails it with its status in `details.sipStatus`"
        case .mediaStats:
            "a live call's negotiated audio and its figures so far (RTP counts and RTCP receiver reports, read every two seconds while parleyd carries the audio)"
        case .browserAudio:
            "make this page the call's microphone and speaker: parleyd answers the page's WebRTC offer (opus, DTLS-SRTP over ICE) and hands the call's audio to it in place of its configured source and sink, transcoding to the call's codec; the call must have audio (answered, or up). Another page's audio is `refused` unless `takeOver`. `browserAudioChanged` follows: `connected`, and `ended` when the page closes or loses its connection (5 s), never connects (10 s) or the call ends; the call then takes its configured source and sink back (docs/web-softphone.md)"
        case .browserAudioEnd: "give the call's audio back to its configured source and sink (a page that no longer wants it)"
        case .audioDevices:
            "the desktop's microphones (`source`) and speakers (`sink`) as the sound server has them now (GStreamer's device monitor; empty without a sound server), the defaults marked"
        case .setAudioDevice:
            "play one call on these devices (ids from `audioDevices`; null: the default, followed as it moves): its pipeline is rebuilt at once; `refused` for a call that does not play on the desktop's devices (a file, a tone, a browser, no PulseAudio). A chosen device that goes away sends the call back to the default, with an `audioRouteChanged` event"
        case .videoDevices:
            "the machine's cameras as GStreamer's device monitor has them now (V4L2: `id` is the `/dev/videoN` that `setVideoSource` takes as `camera:ID`; empty without a camera)"
        case .setVideoSource:
            "what one call's video sends: `camera` (the first), `camera:ID` (from `videoDevices`), `test:PATTERN` (GStreamer's test picture: `red`, `ball`, `smpte`…) or `file:PATH` (a video file in the folder parleyd's `--video-files` names, played once); null: parleyd's `--video-source`. Kept for the call's life: video sent now changes at once (the source is swapped while the call's video plays: what is received, and a DTLS-SRTP association, go on untouched), a later upgrade sends it. `invalidParams` for a source that is not one of these, a camera that is not there, or a file that is not a readable regular file in that folder; `notFound` when the call ended meanwhile; `refused` without `parleyd --video` and `--media gstreamer`"
        case .forwarding:
            "set where incoming calls are forwarded, or read it (`{}`): `always` forwards every call before it rings, `busy` the calls refused as busy (do-not-disturb on, or every line taken), `noAnswer` those not answered within `noAnswerSeconds` (the conversation ends `forwarded`); each is answered 302 Moved Temporarily with the target as Contact, and recorded in the history as `forwarded` (unread). A member that is absent stays as it is, an empty string turns that rule off. parleyd starts with `--forward-always`, `--forward-busy`, `--forward-no-answer` and `--forward-after`"
        case .doNotDisturb:
            "turn do-not-disturb on or off, or read it (`{}`): while on, every new incoming call is refused with 486 Busy Here before it rings and recorded in the history as `doNotDisturb` (unread); calls already up are not touched. A change is a `doNotDisturbChanged` event (parleyd starts with it off, or on with `--dnd`)"
        case .silence:
            "stop the ringtone of a ringing incoming conversation (or the ringback of an outgoing one): it goes on ringing, without sound (D-Bus: `Silence`). parleyd rings only when calls' audio sink is the device (docs/desktop.md)"
        case .video:
            "turn video on or off in a joined conversation: a re-INVITE with or without m=video, answered once the peer took it or refused it (`failed`); the capability change comes as `conversationChanged` (`isVideo`, `capabilities`). Not a manager action: LiveCommunicationKit reports media changes as updates. Needs `parleyd --video` (else `refused`); with `--media gstreamer` the video itself is carried (docs/media.md, \"Video\"). Like a hold, it waits while the peer's re-INVITE or ours is open; a video change and a hold or resume waiting at once do not combine: the newer replaces the older, which fails (\"superseded\")"
        case .merge: "merge two joined conversations into a group (parleyd is the local focus)"
        case .unmerge: "take a conversation out of its group"
        case .transfer:
            "hand a joined or held conversation's remote party over to `to` (a blind transfer: SIP REFER, RFC 3515): answered when the remote party reports that `to` answered it (the final NOTIFY, not the REFER's 202), after which this conversation ends (`left` with reason `transferred`); an error when the remote party refuses or `to` does not answer, and the call goes on as it was"
        case .history: "recorded conversations, newest first, a page at a time"
        case .historyCount: "how many records match the filters — a missed-calls badge is `{\"missed\": true, \"unread\": true}`"
        case .markRead: "mark one record, or all, as read (a `historyChanged` event follows when a record changed)"
        case .deleteRecord: "delete one record (a `historyChanged` event follows)"
        case .clearHistory: "delete every record (a `historyChanged` event follows)"
        case .redial:
            "call a record's party again, at the address it called from, through the account the call went through (when parleyd still has it; else the default); answered like `start` (the action is a `start`)"
        case .contact: "the contact name for a handle, by Parley's matching rules (see Handles)"
        case .contacts:
            "the contacts whose name or handle contains `query` (any case; digits match phone numbers in any written form), by name: a dial field's autocomplete"
        case .reloadContacts: "read the `--contacts` file again (as SIGHUP does); live conversations are renamed"
        case .groupSessions: "the group sessions this parleyd hosts, joined or was offered (docs/group-activities.md)"
        case .groupActivate:
            "share an activity in a joined or paused conversation and, once merged, its whole group: this parleyd hosts the session (it orders every message) and has joined it; Parley peers are offered it (`groupSessionChanged` with `offered`), plain softphones are members at once and get `text` messages as text. A session the conversation carried before is replaced: here it is `invalidated` with reason `replaced`, its members see it end (`ended`). `notJoined` when the call is not connected"
        case .groupJoin: "join a session a peer offered"
        case .groupLeave: "leave a session (the host's leaving ends it for everyone)"
        case .groupEnd: "end a session this parleyd hosts, for everyone (a member leaves)"
        case .groupSend:
            "send a message to the session's other participants; answered when every participant it went to has it (`reliable`: once, in one order for every member) or at once (`unreliable`). Errors: `messageTooLarge`, `throttled` (20 a second, bursts of 40, per sender), `notJoined`, `unknownParticipant`, `notFound`"
        case .identity:
            "this device's collaboration identity (docs/collaboration.md): its P-256 key, its person root over every device of the person, and its proof of inclusion"
        case .collaborations: "the collaborations this parleyd owns or was shared"
        case .collaborationStart:
            "start a collaboration in a joined conversation and, once merged, its group (Apple's start collaboration action): it rides the conversation's group session (one is activated when there is none), the members are told (`collaborationChanged` there) and announce their person roots, which become participants updates (`collaborationParticipantsUpdate`, announced whether or not they wait for `collaborationConfirm`). Errors: `invalidParams` (metadata rules: a picker with two selected options…), `notJoined`"
        case .collaborationOpen:
            "on a member: ask the owner for access (opening the link): this device answers the owner's challenge with its signed proof; the result comes as `collaborationChanged` with `access` `granted` or `rejected` (and `rejection`)"
        case .collaborationChallenge:
            "on the owner: a fresh single-use challenge (32-byte nonce, 60 s) for a device outside the group to sign with `collaborationProve`"
        case .collaborationProve: "sign a challenge with this device's key: the domain-separated statement of docs/collaboration.md"
        case .collaborationVerify:
            "on the owner: check a proof for a challenge it issued (the nonce is spent first); a success binds the root. Errors: `proofRejected` with `details.reason` (" + ProofRejectionNames.all + "), `notFound`, `refused` (not the owner), `throttled` (more than 1,000 proofs a second from frontends, bursts of 200: try again after `details.retryAfterMs`; the nonce is not spent)"
        case .collaborationConfirm:
            "accept or refuse a participants update that waits for confirmation (`confirmUpdates`); `notFound` when it is no longer pending (fulfilled, failed or timed out after 30 s)"
        case .collaborationNotice:
            "post a notice into the collaboration's conversation (Apple's highlight events): `change` (`edit`, `comment`), `mention` (to the mentioned person alone; `unknownParticipant` when nobody in the group has that root), `persistence` (`created`, `deleted`, `renamed`, `moved`), `membership` (`addedCollaborator`, `removedCollaborator`)"
        case .identityUpdateProve:
            "on an old device of a person whose device set changed (a device added to `DATA_DIR/identity/devices`): sign `parley-identity-update-v1` from the old root (this device and `oldDevices`) to this device's current root, for a challenge of the collaboration's owner"
        case .collaborationReplaceIdentity:
            "on the owner: replace a stored root by the person's new one, vouched for by an old device's proof against the old root (`identityUpdateProve`); the nonce is spent first. The new device is a collaborator once this is done; a new device cannot vouch for itself. Errors: `proofRejected` (`details.reason`)"
        case .collaborationEnd: "on the owner: end a collaboration; members are told"
        }
    }

    /// What a method's result says beyond its shape, if anything.
    static func resultNote(of method: ControlMethodName) -> String? {
        switch method {
        case .start, .redial: "Its `state` is `pending`."
        case .join, .hold, .resume, .mute, .unmute, .playTone, .merge, .unmerge, .transfer:
            "Answered when the engine completed the action; a failure is an error (see `actionSettled`)."
        case .end: "Its conversation is `leaving` or `left` (the `left` event follows)."
        case .video: "Its `action` is `video`."
        case .groupActivate: "The session is `joined`, this parleyd its host."
        case .groupJoin: "The session is `joined`."
        case .collaborationOpen: "Its `access` is `requested`."
        case .collaborationReplaceIdentity: "`root` is the new root."
        case .groupSend: "The same report comes to every subscribed client as `groupSendResult`."
        case .historyCount: "`count`: the records that match."
        case .markRead: "`count`: the records changed."
        case .deleteRecord: "`count`: 1."
        case .clearHistory: "`count`: the records deleted."
        case .status, .list, .subscribe, .mediaStats, .browserAudio, .browserAudioEnd, .doNotDisturb, .forwarding, .silence, .audioDevices, .setAudioDevice,
            .videoDevices, .setVideoSource, .history, .contact, .contacts, .reloadContacts, .groupSessions,
            .groupLeave, .groupEnd, .identity, .collaborations, .collaborationStart, .collaborationChallenge,
            .collaborationProve, .collaborationVerify, .collaborationConfirm, .collaborationNotice, .collaborationEnd,
            .identityUpdateProve:
            nil
        }
    }

    /// What each event says, and when it comes.
    public static func summary(of event: ControlEventMessage.Name) -> String {
        switch event {
        case .conversationChanged:
            "anything about a conversation changed (state, members, hold, mute, video, group, capabilities, pending actions…); `changes` names the members that did"
        case .tonesReceived: "the peer sent keypad tones (SIP INFO or RFC 4733)"
        case .transferProgress:
            "a transfer in a call progressed: as `transferor` (our `transfer`) each status line the remote party reports of its call to the target (100, 180, then the outcome: 200 answered, 486…), as `transferee` each one we report of the call a peer's REFER made us place; `final` says it is the outcome (the `transfer` action settles with it)"
        case .mediaStats: "a call's audio figures, every two seconds while parleyd carries its audio (`--media gstreamer`)"
        case .audioRouteChanged:
            "the devices calls play on changed, looked at every 2 s while a call plays on them: a new default (calls that follow the default move with it), or a call's chosen microphone or speaker went away (it plays on the default now)"
        case .doNotDisturbChanged: "do-not-disturb was turned on or off (by any client, the D-Bus service or the CLI)"
        case .browserAudioChanged:
            "a page's part in a call's audio (`browserAudio`): its connection came up, or it ended and the call took its configured source and sink back (`reason` says why)"
        case .audioLevels:
            "how loud a call's audio is, heard and said, four times a second while parleyd carries its audio, only to the subscribers that asked (`subscribe` with `\"audioLevels\": true`): a meter, or who is speaking in a merged group (each member's call has its own)"
        case .mediaChanged:
            "a call's negotiated audio changed (an answer, a re-INVITE, either side's hold, the end), when parleyd runs with `--media gstreamer` or `--media external`"
        case .historyChanged: "records were added, marked read or deleted"
        case .registrationChanged: "the registration changed"
        case .pushReceived: "a VoIP push was handled"
        case .groupSessionChanged: "a group session was `offered` by a peer (join it with `groupJoin`), `activated` here, `joined` or `invalidated`"
        case .groupParticipantsChanged: "a session's active participants changed — the moment to send newcomers a snapshot (`to`: the added ids)"
        case .groupMessage: "a message from another participant, in the session's order"
        case .groupSendResult:
            "how a message this parleyd sent into a session went, once its delivery is settled (the moment `groupSend` is answered, or at once for `unreliable`): every subscribed client gets it, so a frontend also sees how other frontends' messages went"
        case .collaborationChanged:
            "a collaboration started, was shared with this parleyd, changed (participants, state, this device's access) or ended"
        case .collaborationParticipantsUpdate:
            "on the owner, people to add (their roots become `invited` once it is fulfilled) or remove (already `revoked`). Every update is announced: with `requiresConfirmation` it waits for `collaborationConfirm` before `deadline`; without (the collaboration was started without `confirmUpdates`), parleyd fulfils it at once (`collaborationActionCompleted` follows) and this tells a frontend what changed"
        case .collaborationActionCompleted: "a start or participants update action ended"
        case .collaborationVerified: "on the owner, a proof was checked"
        case .collaborationNotice: "a notice posted into a collaboration's conversation"
        case .identityAnnounced: "a member of a group session announced their person root (kept with their contact)"
        case .textMessage: "text a call's peer sent in a SIP MESSAGE outside any group session"
        case .actionSettled:
            "any action — from a frontend or caused by the network — completed, failed or timed out. `conversation` is the conversation's uuid; the conversation itself comes in `conversationChanged`"
        }
    }

    /// What an ended reason means.
    static func meaning(of reason: Conversation.EndedReason) -> String {
        switch reason {
        case .failed: "an error ended it: no answer to our INVITE, a refusal not listed here (404, 488…), an action that timed out"
        case .remoteEnded: "the peer hung up (BYE)"
        case .unanswered: "nobody answered in time: `--ring-timeout` here, or 408/480 from the callee"
        case .joinedElsewhere: "another device of the same user answered (CANCEL with Reason cause 200)"
        case .declinedElsewhere: "another device of the same user declined (CANCEL with Reason cause 603)"
        case .declined: "the callee declined (603, 607)"
        case .busy: "the callee was busy (486, 600)"
        case .cancelled: "the caller gave up before it was answered (CANCEL)"
        case .localEnded: "we ended it with `end`: hung up, cancelled our own call, or refused a ringing one"
        case .transferred: "we handed the peer over to someone else (`transfer`) and that party answered it: we sent BYE"
        case .forwarded: "an incoming call nobody answered within the no-answer forwarding time: we forwarded it (302 with the target as Contact; `forwarding`)"
        case .mediaTimeout: "the peer's audio stopped (no RTP or RTCP for `--media-timeout`, the call not held): we sent BYE"
        case .sessionExpired: "the RFC 4028 session timer ran out (`--session-timer`): no session refresh came in time; we sent BYE"
        case .mediaSecurityFailed: "the audio could not be secured: the peer's DTLS certificate did not match its SDP fingerprint, or the DTLS handshake did not complete within 10 s; no audio flowed, we sent BYE"
        case .iceFailed: "ICE found no path for the audio: every connectivity check failed, none succeeded in time, or the peer stopped granting consent (RFC 7675); we sent BYE (docs/nat.md)"
        case .crashed: "parleyd stopped while the call was up (killed, crashed, the machine went down): in history records only, written at its next start from its journal of live calls; `endedAt` is the last time parleyd was known to be alive (within 10 s), `duration` counts to it"
        }
    }

    /// The history status of a call that never connected and ended for `reason` (one that connected is `connected`).
    public static func historyStatus(of reason: Conversation.EndedReason) -> (incoming: String, outgoing: String) {
        switch reason {
        case .failed, .mediaTimeout, .sessionExpired, .mediaSecurityFailed, .iceFailed: ("failed", "failed")
        case .joinedElsewhere: ("answeredElsewhere", "answeredElsewhere")
        case .declinedElsewhere: ("declinedElsewhere", "declinedElsewhere")
        case .localEnded: ("declined", "cancelled")
        case .busy: ("missed", "busy")
        case .declined: ("missed", "declined")
        case .unanswered, .cancelled, .remoteEnded, .transferred: ("missed", "cancelled")
        case .crashed: ("missed", "failed")
        case .forwarded: ("forwarded", "forwarded")
        }
    }

    static let shapeRules = """
        Every member is always present; one that has no value is `null` (error details are the one exception). A
        member's type is written in a small grammar: `a string`, `an integer`, `a number`, `a boolean`, `a
        timestamp`, `any JSON value`, an object by its name below (`a handle`), `an array of …`, `an object of … by
        name`, each maybe followed by `or null`, and, for a string that takes only some values, a colon and the
        values (`` a string: `incoming` or `outgoing` ``).

        - **Times** are ISO 8601 timestamps in UTC with milliseconds (`2026-11-29T17:02:03.123Z`).
        - **Durations and sizes are integers** in the unit their name ends with: `Ms` milliseconds (`durationMs`,
          `jitterMs`, `retryAfterMs`), `Seconds` seconds, `Bytes` bytes, `Percent` percent (`lossPercent` with two
          decimals, the load counters whole).
        - **Identifiers** compare ignoring case, and parameters take them in any case. parleyd writes the uuids of
          conversations, actions and conversation groups in upper case (`8C1F0E4B-…`), and the ids of group sessions,
          participants and collaborations in lower case (`5f0c6a1e-…`; on the host a remote participant's id is its
          conversation's uuid, lower-cased). A conversation parameter also takes a unique prefix of the uuid; incoming
          calls' uuids are ordered by time, so calls close in time share their first digits: give eight or more.

        """

    /// Before the handle's table: how callers become handles, and how handles match.
    static let handlesNote = """
        How a caller becomes a handle: from the INVITE's From header, a `tel:` URI is a `phoneNumber`; a SIP URI whose
        user part is a telephone number (at least three digits, an optional leading `+`, and `-`, `.`, `(`, `)`
        between them) or that carries `;user=phone` is a `phoneNumber` whose value is the whole URI (so it can be
        called back as it is); any other SIP URI is `generic`, its value `sip:user@host:port` with every parameter
        removed. The port stays as written; a From without a port whose user and host are the Contact's takes the
        Contact's port (a UA that is not registered can only be called back there). `displayName` is the header's
        display name, else the user part (a number) or the value.

        How handles match (contacts, history filters): a `phoneNumber` by its E.164 digits (`+1 (415) 555-0100`,
        `14155550100`, `415-555-0100` and `sip:+14155550100@host` are the same, with parleyd's country code 1), an
        `emailAddress` ignoring case after trimming (`mailto:` dropped), a `generic` value exactly, so
        `sip:bob@host` and `sip:bob@host:5060` are different parties; a generic SIP URI whose user part is a number
        matches as that number. Handles of different kinds never match, and display names never take part.
        `history`'s `handle` reads its value as `start` reads `to` (a number, else a SIP URI) and matches it by these
        rules; `contact` reads it by its `kind`, or decides (see `contact`).
        """

    /// Before the contact's table: what a contacts file may hold.
    static let contactsFileNote = """
        The contacts file (`parleyd --contacts FILE`) is JSON, `{"contacts": [{"name", "handles": [{"kind",
        "value"}]}]}` (Examples/contacts.json), or vCard 3.0/4.0 (Examples/contacts.vcf): of each card parleyd reads
        `FN` (else `N`) as the name, `TEL` as phone numbers, `EMAIL` as email addresses, and `X-SIP`, and `IMPP` or
        `URL` when they hold a `sip:`/`sips:` URI, as generic handles; every other property is ignored.
        """
}

extension ControlReference {
    static let header = """
        # parleyd control API (version 1)

        <!-- Generated from the ControlProtocol module by `parley reference control-api`; a test fails when it drifts. -->

        Frontends drive a running parleyd and watch it over a Unix domain socket, `control.sock` (mode 0600) in
        `$XDG_RUNTIME_DIR/parley` (or in `DATA_DIR` when parleyd was given `--data-dir DIR`, or the session has no
        runtime directory: docs/desktop.md), one JSON object per line (UTF-8, LF-terminated), or — started with `--websocket 127.0.0.1:PORT` — over
        an RFC 6455 WebSocket at `ws://127.0.0.1:PORT/ws`, one JSON message per text frame. Browsers send an
        `Origin`: it must be the web softphone's own (`http://127.0.0.1:PORT`, the page parleyd serves at `/` on that
        port, under any name of a loopback listener: `http://localhost:PORT` too; `parley web` prints its address with
        the token) or one given with `--allow-origin` (repeatable), else the upgrade gets 403; clients without an
        Origin are let in. Every other path on the port is a page of the
        softphone or 404.

        ## Connecting

        Only who can read parleyd's token may connect: parleyd writes 64 hex characters to `control.token` (mode
        0600) beside the socket when it starts. The first message a client sends is

        ```json
        {"v": 1, "type": "hello", "token": "<the token>"}
        ```

        and parleyd answers `{"v": 1, "type": "welcome"}`, or a connection-level error and closes: `unauthorized` for
        a wrong or missing token, any other first message, or none within the hello deadline; `unsupportedVersion` for
        a hello whose `v` is not 1; `frameTooLarge` for one over the size limit.

        The two transports differ in one thing: a Unix socket line that is not UTF-8 is answered with `invalidFrame` and
        skipped (the connection stays), while a WebSocket text frame that is not UTF-8 closes the connection with
        status 1007, as RFC 6455 §8.1 requires of every WebSocket endpoint. Over WebSocket a connection-level error is
        followed by a close frame: 1008 after `unauthorized` and `unsupportedVersion`, 1009 after `frameTooLarge`, 1013
        after `tooManyClients` and `evicted`; a binary frame closes the connection with 1003.

        ## Messages

        ```json
        {"v": 1, "id": 7, "method": "start", "params": {"to": "sip:bob@127.0.0.1:5062"}}
        {"v": 1, "id": 7, "result": {"action": "start", "actionUUID": "…", "state": "pending", "conversation": {…}}}
        {"v": 1, "id": 7, "error": {"code": "invalidParams", "message": "Missing \\"to\\".", "details": {"field": "to"}}}
        {"v": 1, "event": "conversationChanged", "data": {"conversation": {…}, "from": "ringing", "changes": ["state"]}}
        ```

        `id` is an integer or a string of 1–128 bytes and comes back in the answer; answers to one connection's
        requests may come in any order. `v` must be 1. Unknown members are ignored (a newer client may send more);
        a missing or mistyped parameter is `invalidParams` with `details.field` naming it (the parameter itself, also
        when the fault is inside an object parameter such as `media`). Actions other than `start` and `redial` are
        answered when the engine has completed them (a hold when the re-INVITE is accepted, an end when the BYE or
        CANCEL is out), failed them, or timed them out: an action not completed within 30 s is `timedOut`, and a
        timed-out `start`, `join` or `end` ends its conversation as `failed`.

        """

    /// The Errors section.
    static var errorsSection: String {
        var text = "\n## Errors\n\nAn error answers a request as `{\"v\": 1, \"id\": 7, \"error\": error}` (an error and its "
            + "details are under Shapes), for example `{\"code\": \"failed\", \"message\": \"The line is busy.\", \"details\": "
            + "{\"sipStatus\": 486, \"sipReason\": \"Busy Here\", \"action\": \"start\"}}`. `message` is a short sentence for "
            + "people (a toast); `code` is what a program switches on. Connection-level errors come from the transport, "
            + "outside any request: `{\"v\": 1, \"type\": \"error\", \"id\": null, \"error\": {\"code\": \"tooManyClients\", "
            + "\"message\": \"…\", \"details\": null}}`.\n\n| code | meaning |\n|---|---|\n"
        for code in ControlError.Code.allCases { text += "| `\(code.rawValue)` | \(code.meaning) |\n" }
        return text
    }
}
