import ControlChannel
import ControlProtocol
import Foundation
import Testing

/// The test database (Scripts/test starts a throw-away cluster and exports its connection string); its absence is a
/// failure, not a skip.
func sharedHistoryDatabase() throws -> String {
    guard let conninfo = ProcessInfo.processInfo.environment["PARLEY_TEST_PG"], !conninfo.isEmpty else {
        throw InteropError("PARLEY_TEST_PG is not set: Scripts/test starts a PostgreSQL cluster (Scripts/postgres-cluster) and exports it")
    }
    return conninfo
}

/// Runs one SQL command with psql against `conninfo`; its output, trimmed.
@discardableResult
func psql(_ conninfo: String, _ sql: String) throws -> String {
    let process = try RunningProcess(try Interop.tool("psql"), [conninfo, "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql], name: "psql")
    let status = try process.waitForExit(timeout: .seconds(20))
    guard status == 0 else { throw InteropError("psql \(sql): exit \(status): \(process.standardError)") }
    return process.lines.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines)
}

@Suite("Call history in PostgreSQL shared by several parleyd", .serialized)
struct SharedHistoryTests {
    private func calls(_ count: Int, to daemon: Parleyd) throws -> RunningProcess {
        try SippRun.start([
            "-sn", "uac", "127.0.0.1:\(daemon.port)", "-i", "127.0.0.1", "-p", String(Interop.freePort()), "-s", "parley",
            "-m", String(count), "-r", "20", "-d", "0",
        ])
    }

    @Test("three devices of one account write at once: nothing lost, and each hears the others' records as historyChanged")
    func threeDevices() throws {
        let database = try sharedHistoryDatabase()
        let account = "sip:agent-\(UUID().uuidString.prefix(8).lowercased())@127.0.0.1"
        let shared = ["--history", database, "--history-account", account, "--auto-answer", "0"]
        let watcher = try Parleyd(shared)
        let phone = try Parleyd(shared)
        let laptop = try Parleyd(shared)
        let control = try ControlSession(watcher)
        _ = try control.request(.subscribe(SubscribeParams()))
        let perDevice = 25
        // The watcher takes one call itself: its own record is announced once (by its engine), not again by the
        // database.
        let callers = [try calls(perDevice, to: phone), try calls(perDevice, to: laptop), try calls(1, to: watcher)]
        for caller in callers { #expect(try caller.waitForExit(timeout: .seconds(40)) == 0) }
        try phone.waitForEnded(perDevice)
        try laptop.waitForEnded(perDevice)
        let inserted = try control.collect({ event in
            if case .historyChanged(let change) = event { return change.change == "inserted" }
            return false
        }, until: { $0.count >= 2 * perDevice + 1 })
        var records: Set<Int64> = []
        var conversations: Set<String> = []
        for case .historyChanged(let change) in inserted {
            records.formUnion(change.records)
            if let uuid = change.conversation { conversations.insert(uuid.lowercased()) }
        }
        #expect(records.count == 2 * perDevice + 1, "one event per record, none twice")
        #expect(conversations.count == 2 * perDevice + 1)
        let stored = try psql(database, "SELECT count(*), count(DISTINCT uuid) FROM conversation WHERE account = '\(account)'")
        #expect(stored == "\(2 * perDevice + 1)|\(2 * perDevice + 1)")
        // Every device reads the account's lines, whoever wrote them.
        let count = try control.request(.historyCount(HistoryFilter()))
        #expect(count["count"] as? Int == 2 * perDevice + 1)
        // And so does the CLI, straight from the database.
        let cli = try RunningProcess(
            try Interop.binary("parley"), ["history", "count", "--db", database, "--account", account, "--json"], name: "parley")
        #expect(try cli.waitForExit() == 0)
        #expect(cli.lines.joined().replacingOccurrences(of: " ", with: "").contains("\"count\":\(2 * perDevice + 1)"))
    }

    @Test("PostgreSQL lost mid-run: ended calls wait in memory and are written when it is back")
    func serverLostAndBack() throws {
        let base = try sharedHistoryDatabase()
        let name = "parley_interop_\(UUID().uuidString.prefix(8).lowercased())"
        try psql(base, "CREATE DATABASE \(name)")
        defer { _ = try? psql(base, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
        let database = "\(base) dbname=\(name)"
        let daemon = try Parleyd(["--history", database, "--auto-answer", "0"])
        #expect(try calls(3, to: daemon).waitForExit() == 0)
        try daemon.waitForEnded(3)
        try daemon.process.waitForLine("3 records") { _ in (try? psql(database, "SELECT count(*) FROM conversation")) == "3" }

        try psql(base, "ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS false")
        try psql(base, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '\(name)'")
        #expect(try calls(4, to: daemon).waitForExit() == 0, "calls go on while the history server is away")
        try daemon.process.waitForLine("the outage logged") { $0.contains("cannot be reached") && $0.contains("records wait in memory") }
        // A conversation is reported as ended only once its record is durable: these four are not, yet.
        #expect(daemon.transitions.filter { $0.last?.hasPrefix("left") == true }.count == 3)

        try psql(base, "ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS true")
        try daemon.process.waitForLine(timeout: .seconds(40), "the records written") { $0.contains("the server is back") }
        try daemon.waitForEnded(7)
        #expect(try psql(database, "SELECT count(*) FROM conversation") == "7")
        #expect(!daemon.process.lines.contains { $0.contains("dropped") || $0.contains("not written") })
    }

    @Test("a history server that is down at start, or a wrong connection string, stops parleyd with a clear error")
    func badDatabase() throws {
        let down = try RunningProcess(
            try Interop.binary("parleyd"),
            ["--history", "host=/nonexistent-parley-pg dbname=parley", "--listen", "udp://127.0.0.1:\(Interop.freePort())", "--no-control"],
            name: "parleyd")
        #expect(try down.waitForExit() == 1)
        #expect(down.standardError.contains("the history server cannot be reached"))
        #expect(down.standardError.contains("/nonexistent-parley-pg"))

        let wrong = try RunningProcess(try Interop.binary("parleyd"), ["--history", "/var/lib/history.sqlite"], name: "parleyd")
        #expect(try wrong.waitForExit() == 64)
        #expect(wrong.standardError.contains("--history expects a PostgreSQL connection string"))

        let unknown = try RunningProcess(
            try Interop.binary("parleyd"),
            ["--history", "\(try sharedHistoryDatabase()) dbname=no_such_parley_db", "--listen", "udp://127.0.0.1:\(Interop.freePort())",
             "--no-control"],
            name: "parleyd")
        #expect(try unknown.waitForExit() == 1)
        #expect(unknown.standardError.contains("no_such_parley_db"))
    }
}
