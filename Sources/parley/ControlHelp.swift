/// The softphone commands (`parley call`, `answer`, … `web`): each one's line in `parley --help` and its own help.
extension ControlCommands {
    /// The softphone commands, by the word typed after `parley`. (`parley redial` is history's: HistoryHelp.redial.)
    enum Command: String, CaseIterable, Sendable {
        case call, answer, end, hold, resume, mute, unmute, dtmf, video, audio, merge, unmerge, transfer, list, status, watch, dnd
        case videoSource = "video-source"
        case forward
        case reloadContacts = "reload-contacts"
        case web

        /// How many arguments it takes (besides options).
        var arguments: ClosedRange<Int> {
            switch self {
            case .list, .status, .watch, .reloadContacts, .web: 0...0
            case .dnd: 0...1
            case .videoSource: 0...2
            case .forward: 0...3
            case .call, .answer, .end, .hold, .resume, .unmute, .unmerge, .audio: 1...1
            case .mute: 1...2
            case .dtmf, .video, .merge: 2...2
            case .transfer: 1...2
            }
        }

        /// Its line in `parley --help`.
        var summary: String {
            switch self {
            case .call: "place a call through a running parleyd; returns once it rings, connects or fails"
            case .answer: "answer a ringing conversation"
            case .end: "end a call, cancel one still ringing out, or refuse a ringing one"
            case .hold: "put a joined conversation on hold"
            case .resume: "take a held conversation off hold"
            case .mute: "mute or unmute yourself (toggles; on|off to choose)"
            case .unmute: "unmute yourself"
            case .dtmf: "send keypad tones"
            case .video: "turn video on or off in a joined conversation"
            case .videoSource: "the cameras, or what a call's video sends (a camera, a test picture, a file)"
            case .audio: "a call's negotiated audio and its RTCP figures"
            case .merge: "merge two joined conversations"
            case .unmerge: "take a conversation out of its group"
            case .transfer: "hand a call's remote party over to someone else (blind, or attended with --to-call); returns once it answered"
            case .list: "the live conversations of a running parleyd"
            case .status: "a running parleyd's version, addresses, registration, counters and limits"
            case .watch: "print a running parleyd's changes as they happen"
            case .reloadContacts: "make a running parleyd read its contacts file again"
            case .web: "the web softphone's address with the token (--open opens it in a browser)"
            case .dnd: "do-not-disturb: on (calls are refused without ringing), off, or how it is"
            case .forward: "call forwarding: always, busy or no-answer to a SIP URI, off, or how it is"
            }
        }

        /// What `parley COMMAND --help` prints.
        var help: String {
            switch self {
            case .call: ControlHelp.call
            case .answer: ControlHelp.answer
            case .end: ControlHelp.conversationCommand(
                "end", "Ends a conversation: hangs up a connected call (BYE), cancels an outgoing call nobody answered yet\n"
                    + "(CANCEL), or refuses a ringing one (486 Busy Here; 603 Decline with parleyd --decline 603).",
                example: "parley end 1 --data-dir /tmp/parley-a")
            case .hold: ControlHelp.conversationCommand(
                "hold", "Puts a joined conversation on hold: a re-INVITE with a=sendonly, and the audio stops both ways until\n"
                    + "'parley resume'. The peer's list shows it as held-by-peer.", example: "parley hold 1 --data-dir /tmp/parley-a")
            case .resume: ControlHelp.conversationCommand(
                "resume", "Takes a held conversation off hold: a re-INVITE with a=sendrecv, and the audio flows again.",
                example: "parley resume 1 --data-dir /tmp/parley-a")
            case .mute: ControlHelp.mute
            case .unmute: ControlHelp.conversationCommand(
                "unmute", "Unmutes you in a conversation, whether or not you were muted, and says so: \"unmuted\" and the\n"
                    + "conversation. ('parley mute CONV' toggles.)", example: "parley unmute 1 --data-dir /tmp/parley-b")
            case .dtmf: ControlHelp.dtmf
            case .video: ControlHelp.video
            case .videoSource: ControlHelp.videoSource
            case .audio: ControlHelp.conversationCommand(
                "audio", "Shows a call's negotiated audio (codec, local and remote RTP address, direction, ptime, telephone-event)\n"
                    + "and its RTCP figures: packets sent, received and lost, jitter, and the peer's report with the round trip.",
                example: "parley audio 1 --data-dir /tmp/parley-a")
            case .merge: ControlHelp.merge
            case .unmerge: ControlHelp.conversationCommand(
                "unmerge", "Takes a conversation out of its group; the other calls of the group stay merged.",
                example: "parley unmerge 2 --data-dir /tmp/parley-a")
            case .transfer: ControlHelp.transfer
            case .list: ControlHelp.list
            case .status: ControlHelp.status
            case .watch: ControlHelp.watch
            case .reloadContacts: ControlHelp.reloadContacts
            case .web: ControlHelp.web
            case .dnd: ControlHelp.dnd
            case .forward: ControlHelp.forward
            }
        }
    }
}

/// The softphone commands' help texts.
enum ControlHelp {
    /// The options every softphone command takes.
    static let options = """
          --data-dir DIR   the data directory of the parleyd to drive (its control.sock and control.token); default
                           $PARLEY_DATA_DIR, else the user's parleyd: its socket in $XDG_RUNTIME_DIR/parley, else
                           in $XDG_DATA_HOME/parley (~/.local/share/parley)
          --json           print the control protocol's own answer (one JSON line) instead of text
        """

    /// What CONV is, and the exit codes.
    static let footer = """
        CONV is a conversation: its uuid, a unique prefix of it, or its # in 'parley list'.
        Exit codes: 0 done, 1 refused or failed (or no parleyd running on the data directory), 64 usage error.
        """

    /// The help of a command that takes one conversation and nothing else.
    static func conversationCommand(_ name: String, _ about: String, example: String) -> String {
        """
        usage: parley \(name) CONV [--data-dir DIR] [--json]

        \(about)

        options:
        \(options)

        example:
          \(example)

        \(footer)
        """
    }

    static let forward = """
        usage: parley forward [always|busy|no-answer TARGET|off [SECONDS]] [--account NAME] [--data-dir DIR] [--json]

        Sets where a running parleyd forwards incoming calls, or says how it is (no arguments). Each forwarded call is
        answered 302 Moved Temporarily with TARGET as Contact, so the caller's phone calls TARGET itself, and the
        history records it as forwarded (unread).
          always TARGET          every call, before it rings
          busy TARGET            calls refused as busy: do-not-disturb on, or every line taken
          no-answer TARGET [S]   calls nobody answered within S seconds (default 20, or as set before)
          always|busy|no-answer off   turns that rule off
        TARGET is a SIP URI (sip:carol@example.com, or carol@example.com).
          --account NAME         the rules of calls made to that account, not parleyd's (a config file's
                                 [account NAME] may hold forward-always, forward-busy, forward-no-answer too)

        options:
        \(options)

        example:
          parley forward no-answer sip:voicemail@example.com 15
          parley forward busy off
          parley forward

        \(footer)
        """

    static let dnd = """
        usage: parley dnd [on|off] [--data-dir DIR] [--json]

        Turns do-not-disturb on or off, or says how it is. While it is on, parleyd refuses every new incoming call
        with 486 Busy Here before it rings, and the history records it as doNotDisturb (unread, so you see who
        called); calls already up go on. The web page, the D-Bus service and 'parley watch' show the change.

        options:
        \(options)

        example:
          parley dnd on
          parley dnd

        \(footer)
        """

    static let answer = """
        usage: parley answer CONV [--end-others] [--data-dir DIR] [--json]

        Answers a ringing conversation (the Join action): parleyd sends 200 OK with its SDP answer, and the
        call is joined once the caller's ACK arrives. The calls that are up are held first (call waiting;
        parleyd --on-new-call none leaves them as they are).

        options:
          --end-others     end the other connected or held calls first (End & Answer)
        \(options)

        example:
          parley answer 1 --data-dir /tmp/parley-b
          parley answer 2 --end-others

        \(footer)
        """

    static let call = """
        usage: parley call TARGET [--video] [--account NAME] [--encryption METHOD] [--data-dir DIR] [--json]

        Places a call through the running parleyd and waits until it rings, connects or fails; then prints the
        conversation (or why the call failed, with the SIP status). TARGET is a SIP URI (sip:bob@example.com,
        sips:…, or just bob@example.com; ;transport=tcp or ;transport=tls is honoured, other transports are
        refused), a bare user name (bob: at the account's domain) or a phone number, dialled at the account's
        phone domain (phone-domain, else its address of record's domain).

        options:
          --video          offer video as well (both parleyd need --video)
          --account NAME   call through this account (its [account NAME] or address of record; default: the
                           first account)
          --encryption METHOD
                           encrypt this call's media with none, auto, sdes or dtls instead of parleyd's
                           --media-encryption (dtls: DTLS-SRTP, the peer's certificate checked)
        \(options)

        examples:
          parley call sip:bob@127.0.0.1:5172 --data-dir /tmp/parley-a
          parley call 'sip:bob@127.0.0.1:5172;transport=tcp' --video
          parley call bob --account work
          parley call sip:bob@127.0.0.1:5172 --encryption dtls

        \(footer)
        """

    static let mute = """
        usage: parley mute CONV [on|off] [--data-dir DIR] [--json]

        Without on or off, toggles: mutes you in the conversation, or unmutes you if you were muted (it reads the
        conversation's muted flag and asks for the other). 'on' always mutes, 'off' always unmutes (as 'parley
        unmute'). Says what happened — "muted" or "unmuted" — and shows the conversation. While you are muted
        parleyd sends silence (RTP keeps flowing).

        options:
        \(options)

        examples:
          parley mute 1 --data-dir /tmp/parley-b        # muted    1b4e28ba  joined …
          parley mute 1 --data-dir /tmp/parley-b        # unmuted  1b4e28ba  joined …
          parley mute 1 on --data-dir /tmp/parley-b     # muted, whatever it was

        \(footer)
        """

    static let dtmf = """
        usage: parley dtmf CONV DIGITS [--data-dir DIR] [--json]

        Sends keypad tones in a joined conversation. DIGITS is one or more of 0-9 * # A-D, played in order: as
        RFC 4733 events in the audio when both sides list telephone-event, else as one SIP INFO per digit.

        options:
        \(options)

        example:
          parley dtmf 1 12# --data-dir /tmp/parley-a

        \(footer)
        """

    static let video = """
        usage: parley video CONV on|off [--data-dir DIR] [--json]

        Turns video on or off in a joined conversation with a re-INVITE that adds or refuses the m=video stream
        (parleyd --video). Answers once the peer has answered the re-INVITE.

        options:
        \(options)

        example:
          parley video 1 on --data-dir /tmp/parley-a

        \(footer)
        """

    static let videoSource = """
        usage: parley video-source [--data-dir DIR] [--json]
               parley video-source CONV SOURCE|default [--data-dir DIR] [--json]

        Without arguments, lists the machine's cameras (their ids are /dev/videoN). With CONV and SOURCE, makes that
        call's video send SOURCE, from now on and in every later upgrade (parleyd --video --media gstreamer):
          camera             the first camera
          camera:ID          that camera (an id from the list)
          test:PATTERN       GStreamer's test picture: red, green, blue, ball, smpte, snow…
          file:PATH          a video file in the folder parleyd's --video-files names, played once
          default            parleyd's own --video-source again
        Video being sent changes at once (the source is swapped; what you receive goes on untouched).

        options:
        \(options)

        examples:
          parley video-source --data-dir /tmp/parley-a
          parley video-source 1 test:ball --data-dir /tmp/parley-a

        \(footer)
        """

    static let merge = """
        usage: parley merge CONV OTHER [--data-dir DIR] [--json]

        Merges two joined conversations into one group: parleyd is the local focus, both calls stay up, and
        group sessions and collaborations started on one call span the group.

        options:
        \(options)

        example:
          parley merge 1 2 --data-dir /tmp/parley-a

        \(footer)
        """

    static let transfer = """
        usage: parley transfer CONV TARGET [--data-dir DIR] [--json]
               parley transfer CONV --to-call CONV2 [--data-dir DIR] [--json]

        Hands a joined or held call's remote party over to TARGET (a SIP URI or a phone number, as 'parley call'
        takes it): a blind transfer, SIP REFER. It returns when the remote party reports that TARGET answered,
        and the call then ends ("transferred"); if the remote party refuses, or TARGET is busy or does not answer,
        it says why and the call goes on as it was.
        With --to-call, an attended transfer: CONV2 is an answered call of yours (you asked its peer first); the
        remote party of CONV calls CONV2's peer, replacing your call with it (SIP Replaces), and both your calls end.

        options:
        \(options)

        example:
          parley transfer 1 sip:carol@192.0.2.7 --data-dir /tmp/parley-a
          parley transfer 1 --to-call 2 --data-dir /tmp/parley-a

        \(footer)
        """

    static let list = """
        usage: parley list [--data-dir DIR] [--json]

        Lists the running parleyd's live conversations, oldest first: #, conversation (the uuid's first eight
        digits), state, direction, duration, flags (held, held-by-peer, muted, video), group, and who. The # is
        what the other commands take as CONV. --json prints each page of the protocol's answer.

        options:
        \(options)

        example:
          parley list --data-dir /tmp/parley-b

        \(footer)
        """

    static let status = """
        usage: parley status [--data-dir DIR] [--json]

        Shows the running parleyd in blocks, each under its heading: parleyd (version, protocol, user, the SIP
        addresses it listens on, the web page, the push token), registration (state, until when, why it failed),
        conversations (how many are live), counters (what the engine counted since it started) and limits.

        options:
        \(options)

        example:
          parley status --data-dir /tmp/parley-a

        \(footer)
        """

    static let watch = """
        usage: parley watch [--data-dir DIR] [--json] [--levels]

        Prints every change as it happens, until Ctrl-C: state changes with →, other changes of a conversation
        with ~, tones received, audio and its figures, history changes, registration, pushes, failed actions, group
        sessions and collaborations. --json prints the protocol's event lines as they come. --levels adds each
        call's audio levels, heard and said, four times a second (a meter: who is speaking).

        options:
        \(options)

        example:
          parley watch --data-dir /tmp/parley-b

        \(footer)
        """

    static let reloadContacts = """
        usage: parley reload-contacts [--data-dir DIR] [--json]

        Makes the running parleyd read its --contacts file again (as kill -HUP does) and says how many contacts it
        loaded, and how many handles two contacts claimed (the first one keeps them).

        options:
        \(options)

        example:
          parley reload-contacts --data-dir /tmp/parley-a

        \(footer)
        """

    static let web = """
        usage: parley web [--open] [--data-dir DIR] [--json]

        Prints the address of the web softphone the running parleyd serves (parleyd --websocket 127.0.0.1:PORT),
        with the control token in the address's fragment, which browsers never send to a server.

        options:
          --open           open it in the desktop's browser (xdg-open), through a file only you can read in the
                           data directory, so the token never appears on a command line
        \(options)

        example:
          parley web --open --data-dir /tmp/parley-a

        \(footer)
        """
}
