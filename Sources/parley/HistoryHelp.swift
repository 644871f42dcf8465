import CallHistory

/// The help texts of `parley history` and its actions.
enum HistoryHelp {
    /// Where the database is, shared by every action.
    static let location = """
          --db FILE            the history database file
          --db CONNINFO --account AOR
                               a PostgreSQL history shared by several parleyd (postgresql://… or key=value
                               pairs), and the account whose lines to read (docs/scale-out.md)
          --data-dir DIR       the data directory (the file DIR/history.sqlite); default $PARLEY_DATA_DIR,
                               else $XDG_DATA_HOME/parley, else ~/.local/share/parley
        No action creates a database: history is written as conversations end (by the Parley daemon, or by
        'parley demo --data-dir DIR').
        """

    static let list = """
        usage: parley history list [FILTERS] [--limit N] [--cursor C] [--json] [--db FILE | --data-dir DIR]
               parley history [FILTERS] [...]       (list is the default action)

        Lists recorded conversations, newest first: id, start time (local), direction, status, who, talk time,
        video, and * for unread; how each call's media was protected (sdes, dtls), and the account (address of
        record) each call went through, each when a record on the page has one. When more records match than
        fit the page, the last line is the command for the next page.

        options:
        \(HistoryFilters.help)
          --limit N            records per page, 1…1000 (default 50)
          --cursor C           the next page: the cursor the previous page printed
          --json               {"records": [...], "nextCursor": "…" or null}; ISO-8601 dates
        \(location)

        examples:
          parley history --data-dir /tmp/parley
          parley history list --status missed --since -1d --handle 415-555-0100
        """

    static let count = """
        usage: parley history count [FILTERS] [--json] [--db FILE | --data-dir DIR]

        Prints how many recorded conversations match the filters (all of them without any), e.g.
        'parley history count --status missed --unread' is the missed-calls badge.

        options:
        \(HistoryFilters.help)
          --json               {"count": N}
        \(location)

        example:
          parley history count --status missed --unread --data-dir /tmp/parley
        """

    static let recents = """
        usage: parley history recents [--limit N] [--json] [--db FILE | --data-dir DIR]

        Phone-style Recents: consecutive calls with the same person, in the same direction and of the same
        kind (missed or not), on one line with their count — "Alice Liddell (3)  incoming  missed  …" — then
        the newest one's start time and id (#id, * when unread).

        options:
          --limit N            at most N lines, 1…1000 (default 20)
          --json               [{"count": N, "ids": [...], "latest": {record}}, ...]
        \(location)

        example:
          parley history recents --limit 10 --data-dir /tmp/parley
        """

    static let show = """
        usage: parley history show ID [--json] [--db FILE | --data-dir DIR]

        Prints every field of one record: its uuid, parties (and the normalised value they match by), the
        account it went through, times, status and why it ended, how its media was protected, group, SIP
        Call-ID, and whether it has been read.

        options:
          --json               the record as JSON
        \(location)

        example:
          parley history show 3 --data-dir /tmp/parley
        """

    static let markRead = """
        usage: parley history mark-read ID... [--json] [--db FILE | --data-dir DIR]
               parley history mark-read --all [--json] [--db FILE | --data-dir DIR]

        Marks records read (missed calls start unread). An unknown id is an error and then nothing changes.

        options:
          --all                mark every record read
          --json               {"changed": N}
        \(location)

        examples:
          parley history mark-read 3 4 --data-dir /tmp/parley
          parley history mark-read --all
        """

    static let delete = """
        usage: parley history delete ID [--json] [--db FILE | --data-dir DIR]

        Deletes one record for good: it leaves every list, count and Recents line (other records are kept).

        options:
          --json               {"deleted": [ID]}
        \(location)

        example:
          parley history delete 3 --data-dir /tmp/parley
        """

    static let clear = """
        usage: parley history clear --before DATE [--json] [--db FILE | --data-dir DIR]

        Deletes every record of a conversation that ended before DATE, and says how many.
        DATE is \(DateArgument.forms).

        options:
          --before DATE        the cut-off: records of conversations that ended before it go
          --json               {"deleted": N}
        \(location)

        example:
          parley history clear --before 2026-11-01 --data-dir /tmp/parley
        """

    static let check = """
        usage: parley history check [--json] [--db FILE | --data-dir DIR]

        Runs SQLite's consistency check on the history database. Exits 0 and prints "ok" when it is sound,
        1 with the problems found otherwise.

        options:
          --json               {"ok": true, "problems": [], "records": N, "schemaVersion": V}
        \(location)

        example:
          parley history check --data-dir /tmp/parley
        """

    /// The help of `parley redial`, or of `parley history redial` (`invocation` names the one asked about first).
    static func redial(as invocation: String) -> String {
        let other = invocation == "redial" ? "history redial" : "redial"
        return """
        usage: parley \(invocation) ID [--dry-run] [--json] [--db FILE | --data-dir DIR]
               parley \(other) ID [...]   (the same)

        Calls a record's parties again (same handles, same video setting, through the same account when parleyd still
        has it) through the parleyd running on the data directory: its control API performs the Start action, and the
        answer comes once the call rings, connects or fails. Without a running parleyd nothing is dialled and it exits 1,
        saying so; --dry-run only shows the Start action it would perform (exit 0).

        options:
          --dry-run            show the action, dial nothing
          --json               the control API's answer; with --dry-run
                               {"record": ID, "action": {"kind": "start", "handles": [...], "isVideo": false}}
        \(location)

        examples:
          parley \(invocation) 5 --data-dir /tmp/parley-a
          parley \(invocation) 5 --dry-run --json --data-dir /tmp/parley-a
        """
    }

    static let overview = """
        usage: parley history [ACTION] [options]

        The call history: every conversation that ended, recorded by the Parley daemon (or by
        'parley demo --data-dir DIR'). Without an action, lists records (as 'list').

        actions:
          list        records newest first, filtered, a page at a time (the default)
          count       how many records match the filters
          recents     phone-style Recents lines, repeated calls collapsed
          show ID     one record in full
          mark-read   mark records (or --all) read
          delete ID   delete one record
          clear       delete every record that ended before --before DATE
          check       check the database's consistency
          redial ID   call a record's parties again through the running parleyd (--dry-run: only show the action)

        Run 'parley history ACTION --help' (or 'parley help history ACTION') for an action's options and examples.

        examples:
          parley history --data-dir /tmp/parley
          parley history count --status missed --unread
          parley history show 3

        \(list)
        """
}
