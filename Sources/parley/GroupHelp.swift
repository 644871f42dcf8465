/// The help texts of `parley group` and its subcommands.
enum GroupHelp {
    /// What SESSION is, and the exit codes.
    static let footer = """
        SESSION is a group session's id or a unique prefix of it ('parley group list'). Limits and the wire format:
        docs/group-activities.md. Exit codes: 0 done, 1 refused or failed (or no parleyd running), 64 usage error.
        """

    static let overview = """
        usage: parley group <subcommand> [--data-dir DIR] [--json] …

        Group sessions (Apple's Group Activities) in a running parleyd's calls: the parleyd that starts one on a
        call hosts it for the call's whole merged group and orders every message, which travel as SIP MESSAGE.

        subcommands:
          list                           the group sessions: id, activity, state, participants
          start CONV TITLE [--id ID]     share an activity in a joined call (and its merged group); this parleyd hosts it
          join SESSION                   join a session a peer offered (see 'parley group list' or 'parley group watch')
          send SESSION TEXT              send a text message (plain softphones in the call get it as "[Name] TEXT")
          send SESSION --type T --data JSON [--to ID,ID] [--unreliable] [--keep]
                                         send an app message (JSON data) to all or some participants
          leave SESSION                  leave a session
          end SESSION                    end the session this parleyd hosts, for everyone
          watch                          print every change as it happens (as 'parley watch')

        Run 'parley group SUBCOMMAND --help' for a subcommand's options and examples.

        options:
        \(ControlHelp.options)

        examples:
          parley group start 1 "Shopping list" --data-dir /tmp/parley-a
          parley group list --data-dir /tmp/parley-b

        \(footer)
        """

    static let list = """
        usage: parley group list [--data-dir DIR] [--json]

        Lists the group sessions of the running parleyd's calls, one a line: id, state (waiting, joined,
        invalidated), title, whether this parleyd hosts it, its call, the active participants, and the largest
        message the session carries.

        options:
        \(ControlHelp.options)

        example:
          parley group list --data-dir /tmp/parley-b

        \(footer)
        """

    static let start = """
        usage: parley group start CONV TITLE [--id ID] [--data-dir DIR] [--json]

        Shares an activity in a joined call, and in every call merged with it: this parleyd hosts the session and
        offers it to the other members, who join it with 'parley group join'.

        options:
          --id ID          the activity's identifier (default org.parley. and the title's letters)
        \(ControlHelp.options)

        example:
          parley group start 1 "Shopping list" --data-dir /tmp/parley-a

        CONV is a conversation: its uuid, a unique prefix of it, or its # in 'parley list'.
        \(footer)
        """

    static let join = """
        usage: parley group join SESSION [--data-dir DIR] [--json]

        Joins a group session a peer offered in one of the running parleyd's calls: from then on this parleyd
        receives the session's messages and may send its own.

        options:
        \(ControlHelp.options)

        example:
          parley group join 5f0c6a1e --data-dir /tmp/parley-b

        \(footer)
        """

    static let send = """
        usage: parley group send SESSION TEXT [--data-dir DIR] [--json]
               parley group send SESSION --type T --data JSON [--to ID,ID] [--unreliable] [--keep] [--data-dir DIR] [--json]

        Sends a message to the session's other members, in the one order the host gives every message. A text
        reaches plain softphones in the call as "[Name] TEXT"; an app message carries JSON data of type T. Says to
        how many it was delivered, and for whom it failed. A message beyond the limits (768 bytes when a leg runs
        over UDP, 60 KiB over TCP or TLS; 20 a second) fails with its reason.

        options:
          --type T         an app message of type T (with --data), not text
          --data JSON      the app message's data
          --to ID,ID       only these participants (ids from 'parley group list --json'), not everyone
          --unreliable     may be dropped, and the newest wins (DrawTogether's pattern)
          --keep           the host replays it to members who join later
        \(ControlHelp.options)

        examples:
          parley group send 5f0c6a1e "milk please" --data-dir /tmp/parley-b
          parley group send 5f0c6a1e --type app.item --data '{"item":"eggs"}' --keep --data-dir /tmp/parley-a

        \(footer)
        """

    static let leave = """
        usage: parley group leave SESSION [--data-dir DIR] [--json]

        Leaves a group session; the others carry on without this parleyd.

        options:
        \(ControlHelp.options)

        example:
          parley group leave 5f0c6a1e --data-dir /tmp/parley-b

        \(footer)
        """

    static let end = """
        usage: parley group end SESSION [--data-dir DIR] [--json]

        Ends a group session this parleyd hosts, for every member.

        options:
        \(ControlHelp.options)

        example:
          parley group end 5f0c6a1e --data-dir /tmp/parley-a

        \(footer)
        """

    static let watch = """
        usage: parley group watch [--data-dir DIR] [--json]

        Prints every change as it happens, until Ctrl-C — sessions offered, joined and ended, participants coming
        and going, messages and send results — together with the calls' own changes (as 'parley watch').

        options:
        \(ControlHelp.options)

        example:
          parley group watch --data-dir /tmp/parley-b

        \(footer)
        """
}
