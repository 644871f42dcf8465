import Foundation
import Testing

/// `parley history` and `parley redial` on bad input: usage errors exit 64, failures 1, each with a clear message.
@Suite("parley history errors")
struct HistoryErrorTests {
    /// Runs `parley ARGS…` and checks the exit status and that stderr contains `message`.
    private func expectError(
        _ arguments: [String], status: Int32, _ message: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let run = try CLI.run(arguments)
        #expect(run.status == status, "\(arguments): \(run.stderr)", sourceLocation: sourceLocation)
        #expect(run.stderr.contains(message), "\(arguments): \(run.stderr)", sourceLocation: sourceLocation)
        #expect(run.stdout.isEmpty, "\(arguments): \(run.stdout)", sourceLocation: sourceLocation)
    }

    @Test("a missing database is an error that says where Parley looked, and nothing is created")
    func missingDatabase() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let absent = directory.appending(path: "nowhere")
        for action in [[], ["list"], ["count"], ["recents"], ["show", "1"], ["mark-read", "--all"], ["delete", "1"],
                       ["clear", "--before", "-1d"], ["check"], ["redial", "1", "--dry-run"]] {
            let run = try CLI.run(["history"] + action + ["--data-dir", absent.path])
            #expect(run.status == 1, "\(action)")
            #expect(run.stderr.contains("no call history at \(absent.path)/history.sqlite (from --data-dir)"), "\(action)")
            #expect(run.stderr.contains("parley demo --data-dir DIR"))
        }
        #expect(!FileManager.default.fileExists(atPath: absent.path), "a read created the data directory")
        try expectError(["redial", "1", "--dry-run", "--db", absent.appending(path: "h.db").path], status: 1, "no call history at")

        // The default location: $PARLEY_DATA_DIR, else $XDG_DATA_HOME/parley, else ~/.local/share/parley.
        var environment = ProcessInfo.processInfo.environment
        environment["PARLEY_DATA_DIR"] = nil
        environment["XDG_DATA_HOME"] = nil
        environment["HOME"] = directory.path
        let home = try CLI.run(["history"], environment: environment)
        #expect(home.status == 1)
        #expect(home.stderr.contains("\(directory.path)/.local/share/parley/history.sqlite (from ~/.local/share/parley)"))
        environment["XDG_DATA_HOME"] = absent.path
        let xdg = try CLI.run(["history", "count"], environment: environment)
        #expect(xdg.stderr.contains("\(absent.path)/parley/history.sqlite (from $XDG_DATA_HOME/parley)"))
        environment["PARLEY_DATA_DIR"] = directory.path
        let parley = try CLI.run(["history", "recents"], environment: environment)
        #expect(parley.stderr.contains("\(directory.path)/history.sqlite (from $PARLEY_DATA_DIR)"))

        // With the demo's history there, the default location finds it.
        #expect(try CLI.run(["demo", "--data-dir", directory.path, "--quiet"]).status == 0)
        #expect(try CLI.run(["history", "count"], environment: environment).stdout == "5\n")
    }

    @Test("a corrupt, empty or directory database is a clear error, never a crash, and is left as it was")
    func unusableDatabase() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let corrupt = directory.appending(path: "corrupt.sqlite")
        let garbage = String(repeating: "not a database, just text\n", count: 200)
        try garbage.write(to: corrupt, atomically: true, encoding: .utf8)
        for action in [["list"], ["count"], ["recents"], ["show", "1"], ["check"], ["mark-read", "--all"], ["redial", "1", "--dry-run"]] {
            try expectError(["history"] + action + ["--db", corrupt.path], status: 1,
                            "\(corrupt.path): not a usable call-history database")
        }
        #expect(try String(contentsOf: corrupt, encoding: .utf8) == garbage)
        // The demo refuses to record into it too.
        let demoDirectory = directory.appending(path: "demo")
        try FileManager.default.createDirectory(at: demoDirectory, withIntermediateDirectories: true)
        try garbage.write(to: demoDirectory.appending(path: "history.sqlite"), atomically: true, encoding: .utf8)
        let demo = try CLI.run(["demo", "--data-dir", demoDirectory.path])
        #expect(demo.status == 1)
        #expect(demo.stderr.contains("history.sqlite: not a usable call-history database"))
        let empty = directory.appending(path: "empty.sqlite")
        #expect(FileManager.default.createFile(atPath: empty.path, contents: Data()))
        try expectError(["history", "--db", empty.path], status: 1, "is empty: no call history has been written")
        #expect(try Data(contentsOf: empty).isEmpty)
        try expectError(["history", "--db", directory.path], status: 1, "is a directory")
    }

    @Test("bad arguments are usage errors (64) that say what is accepted")
    func usageErrors() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try CLI.run(["demo", "--data-dir", directory.path, "--quiet"]).status == 0)
        let db = ["--data-dir", directory.path]
        let forms = "ISO-8601 (2026-11-29T14:00:00Z), a date (2026-11-29, local midnight) or a time ago (-30m, -2h, -3d, -1w)"
        let cases: [([String], String)] = [
            (["history", "--since", "yesterday"], "--since expects \(forms); got 'yesterday'"),
            (["history", "--until", "2026-13-01"], "--until expects"),
            (["history", "--since", "-2x"], "--since expects"),
            (["history", "--since", "2026-11-29 14:00"], "--since expects"),
            (["history", "clear", "--before", "soon"], "--before expects \(forms)"),
            (["history", "clear"], "clear needs --before DATE"),
            (["history", "--since", "-1h", "--until", "-2h"], "must be before --until"),
            (["history", "--status", "missed,lost"], "unknown status 'lost' (known: connected, missed, declined"),
            (["history", "count", "--status", ""], "unknown status ''"),
            (["history", "--handle", "x", "--kind", "fax"], "--kind expects phoneNumber, emailAddress or generic, got 'fax'"),
            (["history", "--kind", "generic"], "--kind only goes with --handle"),
            (["history", "--handle", "12+34"], "'12+34' is not a usable phoneNumber handle"),
            (["history", "--handle", "mailto@", "--kind", "emailAddress"], "is not a usable emailAddress handle"),
            (["history", "--direction", "sideways"], "--direction expects incoming or outgoing, got 'sideways'"),
            (["history", "--limit", "0"], "--limit expects a whole number from 1 to 1000, got '0'"),
            (["history", "--limit", "1001"], "got '1001'"),
            (["history", "recents", "--limit", "many"], "got 'many'"),
            (["history", "--cursor", "h2.zz.1"], "--cursor: 'h2.zz.1' is not a paging cursor"),
            (["history", "--cursor", "h1.41c85e3c35000000.0"], "is not a paging cursor"),
            (["history", "show", "abc"], "'abc' is not a record id (ids are positive whole numbers"),
            (["history", "show", "0"], "'0' is not a record id"),
            (["history", "show", "-3"], "'-3' is not a record id"),
            (["history", "show", "1.5"], "'1.5' is not a record id"),
            (["history", "show"], "name the record"),
            (["history", "show", "1", "2"], "name exactly one record id"),
            (["history", "delete", "99999999999999999999"], "is not a record id"),
            (["history", "mark-read"], "name the records to mark read (ids), or --all"),
            (["history", "mark-read", "1", "--all"], "give record ids or --all, not both"),
            (["history", "mark-read", "1", "x"], "'x' is not a record id"),
            (["redial", "first"], "'first' is not a record id"),
            (["history", "count", "--limit", "3"], "unknown option --limit"),
            (["history", "--json", "extra"], "unexpected argument 'extra'"),
            (["history", "--data-dir", directory.path, "recents"], "'recents' is an action: it goes right after 'history'"),
            (["history", "frobnicate"], "unknown action 'frobnicate' (actions: list, count, recents, show, mark-read"),
            (["history", "--db", "a", "--data-dir", "b"], "give --db FILE or --data-dir DIR, not both"),
            (["demo", "--repeat", "0"], "--repeat expects a whole number"),
            (["demo", "--data-dir"], "--data-dir needs a value"),
        ]
        for (arguments, message) in cases {
            let extra = arguments.contains("--db") || arguments.contains("--data-dir") || arguments[0] == "demo" ? [] : db
            try expectError(arguments + extra, status: 64, message)
        }
        // Unknown ids are failures with the store's message; nothing changes.
        try expectError(["history", "show", "42"] + db, status: 1, "no call-history record 42")
        try expectError(["history", "mark-read", "1", "42"] + db, status: 1, "no call-history record 42")
        #expect(try CLI.run(["history", "count", "--unread"] + db).stdout == "1\n")
        try expectError(["history", "delete", "42"] + db, status: 1, "no call-history record 42")
        #expect(try CLI.run(["history", "count"] + db).stdout == "5\n")
    }

    @Test("every action has --help")
    func help() throws {
        let overview = try CLI.run("history", "--help")
        #expect(overview.status == 0)
        for action in ["list", "count", "recents", "show", "mark-read", "delete", "clear", "check", "redial"] {
            #expect(overview.stdout.contains("  \(action)"), "\(action)")
            let run = try CLI.run("history", action, "--help")
            #expect(run.status == 0)
            #expect(run.stdout.hasPrefix("usage: parley "), "\(action)")
            #expect(run.stdout.contains("--data-dir DIR"), "\(action)")
        }
        #expect(try CLI.run("history", "count", "--help").stdout.contains("--status LIST"))
        #expect(try CLI.run("demo", "--help").stdout.contains("--repeat N"))
    }
}
