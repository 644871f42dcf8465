import CallHistory
import ConversationKit
import Dispatch
import Foundation
@testable import PostgresHistory
import Synchronization
import Testing

/// A database of its own on the test server, dropped on deinit: for what an account cannot isolate (the schema,
/// the server going away).
final class ScratchDatabase {
    let name = "parley_scratch_\(UUID().uuidString.prefix(8).lowercased())"
    let admin: PostgresConnection
    /// Its connection string (the test one, with the database replaced: libpq keeps the last of a repeated key).
    let conninfo: String

    init() throws {
        let base = try testDatabase()
        admin = try PostgresConnection(conninfo: base, applicationName: "parley-test-admin")
        try admin.execute("CREATE DATABASE \(name)")
        conninfo = "\(base) dbname=\(name)"
    }

    /// Runs SQL in the scratch database itself.
    func execute(_ sql: String) throws {
        try PostgresConnection(conninfo: conninfo, applicationName: "parley-test-admin").execute(sql)
    }

    /// Refuses new sessions and ends the current ones: the server is "down" for this database.
    func takeDown() throws {
        try admin.execute("ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS false")
        try admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
    }

    /// Takes sessions again.
    func bringUp() throws { try admin.execute("ALTER DATABASE \(name) WITH ALLOW_CONNECTIONS true") }

    deinit {
        try? bringUp()
        try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }
}

@Suite("History store: PostgreSQL shared by many parleyd")
struct PostgresStoreTests {
    private func account() -> String { "sip:user-\(UUID().uuidString)@127.0.0.1" }

    @Test("accounts see only their own lines; the same conversation stored twice keeps one record")
    func accounts() throws {
        let conninfo = try testDatabase()
        let alicePhone = try PostgresCallHistory(connection: conninfo, account: account())
        let aliceLaptop = try PostgresCallHistory(connection: conninfo, account: alicePhone.account)
        let bobPhone = try PostgresCallHistory(connection: conninfo, account: account())
        let call = makeRecord([bob], status: .missed, minutes: 1)
        let stored = try alicePhone.insert(call)
        #expect(try aliceLaptop.insert(call).id == stored.id, "the other device's replay is the same record")
        #expect(try aliceLaptop.insert(contentsOf: [call]) == 0)
        #expect(try aliceLaptop.record(uuid: call.uuid)?.id == stored.id)
        try bobPhone.insert(makeRecord([alice], status: .missed, minutes: 2))
        #expect(try bobPhone.record(uuid: call.uuid) == nil)
        #expect(throws: CallHistoryError.unknownRecord(stored.id)) { try bobPhone.record(id: stored.id) }
        #expect(throws: CallHistoryError.unknownRecord(stored.id)) { try bobPhone.markRead(ids: [stored.id]) }
        #expect(throws: CallHistoryError.unknownRecord(stored.id)) { try bobPhone.delete(id: stored.id) }
        #expect(try bobPhone.markAllRead() == 1)
        #expect(try aliceLaptop.count(.missed(unreadOnly: true)) == 1, "bob's mark-all touches bob's lines only")
        #expect(try bobPhone.deleteAll(endedBefore: .distantFuture) == 1)
        #expect(try alicePhone.count(HistoryQuery()) == 1)
        #expect(try alicePhone.check() == [])
    }

    @Test("four stores writing one account at once lose nothing and never store a conversation twice")
    func concurrentWriters() throws {
        let conninfo = try testDatabase()
        let shared = account()
        let stores = try (0..<4).map { _ in try PostgresCallHistory(connection: conninfo, account: shared) }
        // Each writer stores 250 calls of its own and replays 50 that every writer also stores.
        let common = (0..<50).map { makeRecord([alice], minutes: Double($0)) }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: stores.count) { writer in
            let own = (0..<250).map { makeRecord([bob], minutes: Double(100 + writer * 1000 + $0)) }
            do {
                for chunk in stride(from: 0, to: own.count, by: 25) {
                    _ = try stores[writer].insertReturningRecords(Array(own[chunk..<chunk + 25]) + common.shuffled().prefix(5))
                }
                try stores[writer].insert(contentsOf: common)
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(try stores[0].count(HistoryQuery()) == 4 * 250 + 50)
        let ids = try common.map { try #require(try stores[1].record(uuid: $0.uuid)).id }
        #expect(Set(ids).count == 50)
    }

    @Test("a batch longer than one pipeline (2,500 records, 13 statements) is stored whole, in order, once")
    func longBatch() throws {
        let store = try PostgresCallHistory(connection: try testDatabase(), account: account())
        let records = (0..<2_500).map { makeRecord([alice, bob], minutes: Double($0)) }
        let stored = try store.insertReturningRecords(records)
        #expect(stored.map(\.uuid) == records.map(\.uuid))
        #expect(stored.map(\.id) == stored.map(\.id).sorted() && Set(stored.map(\.id)).count == 2_500)
        #expect(try store.insert(contentsOf: records) == 0)
        #expect(try store.count(HistoryQuery()) == 2_500)
        #expect(try store.record(id: stored[2_499].id).remoteHandles.map(\.handle) == [alice, bob])
    }

    @Test("several parleyd opening a new database together migrate it once")
    func concurrentMigration() throws {
        let scratch = try ScratchDatabase()
        let conninfo = scratch.conninfo
        let outcomes = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { index in
            do {
                let store = try PostgresCallHistory(connection: conninfo, account: "sip:\(index)@127.0.0.1")
                try store.insert(makeRecord([alice], minutes: Double(index)))
                outcomes.withLock { $0.append("ok") }
            } catch {
                outcomes.withLock { $0.append("\(error)") }
            }
        }
        #expect(outcomes.withLock { $0 } == Array(repeating: "ok", count: 6))
        let versions = try PostgresConnection(conninfo: scratch.conninfo, applicationName: "check").run("SELECT version FROM parley_schema")
        #expect(versions.rows == [["\(PostgresSchema.currentVersion)"]])
    }

    @Test("a version-1 database (before call accounts): the CLI reads it as it is, parleyd migrates it; old rows have no account")
    func migrationFromVersionOne() throws {
        let scratch = try ScratchDatabase()
        let owner = account()
        try scratch.execute(
            PostgresSchema.migrations[0] + """

                CREATE TABLE parley_schema (version INTEGER NOT NULL);
                INSERT INTO parley_schema (version) VALUES (1);
                INSERT INTO conversation (account, uuid, direction, status, ended_reason, started_at, ended_at, is_read, call_id)
                VALUES ('\(owner)', '6F9619FF-8B86-D011-B42D-00C04FC964FF', 'incoming', 'missed', 'unanswered', 1000, 1030, 0, 'c@h');
                """)
        let reader = try PostgresCallHistory(connection: scratch.conninfo, account: owner, creatingSchema: false)
        #expect(try reader.schemaVersion == 1, "a store that may not migrate leaves the schema alone")
        let old = try #require(try reader.query(HistoryQuery()).records.first)
        #expect(old.account == nil && old.encryption == nil && old.callID == "c@h" && old.status == .missed)
        #expect(try reader.record(id: old.id).account == nil)

        let store = try PostgresCallHistory(connection: scratch.conninfo, account: owner)
        #expect(try store.schemaVersion == PostgresSchema.currentVersion)
        #expect(try store.record(id: old.id) == old, "the old record reads the same after the migration")
        var through = makeRecord([alice], minutes: 1)
        through.account = "sip:alice@example.test"
        let added = try store.insert(through)
        #expect(added.account == "sip:alice@example.test")
        let columns = try PostgresConnection(conninfo: scratch.conninfo, applicationName: "check").run(
            "SELECT account, call_account FROM conversation WHERE id = $1", [.integer(added.id)])
        #expect(columns.rows == [[owner, "sip:alice@example.test"]], "the owner and the call's account are two columns")
        let cli = try PostgresCallHistory(connection: scratch.conninfo, account: owner, creatingSchema: false)
        #expect(try cli.query(HistoryQuery()).records.map(\.account) == ["sip:alice@example.test", nil])
    }

    @Test("a version-2 database (before encryption): the CLI reads it as it is, parleyd migrates it; old rows have none")
    func migrationFromVersionTwo() throws {
        let scratch = try ScratchDatabase()
        let owner = account()
        try scratch.execute(
            PostgresSchema.migrations[0] + PostgresSchema.migrations[1] + """

                CREATE TABLE parley_schema (version INTEGER NOT NULL);
                INSERT INTO parley_schema (version) VALUES (2);
                INSERT INTO conversation (account, uuid, direction, status, ended_reason, started_at, ended_at, is_read, call_id, call_account)
                VALUES ('\(owner)', '6F9619FF-8B86-D011-B42D-00C04FC964FF', 'incoming', 'missed', 'unanswered', 1000, 1030, 0, 'c@h', 'sip:me@example.test');
                """)
        let reader = try PostgresCallHistory(connection: scratch.conninfo, account: owner, creatingSchema: false)
        #expect(try reader.schemaVersion == 2, "a store that may not migrate leaves the schema alone")
        let old = try #require(try reader.query(HistoryQuery()).records.first)
        #expect(old.encryption == nil && old.account == "sip:me@example.test" && old.callID == "c@h")
        #expect(try reader.record(id: old.id).encryption == nil)

        let store = try PostgresCallHistory(connection: scratch.conninfo, account: owner)
        #expect(try store.schemaVersion == PostgresSchema.currentVersion)
        #expect(try store.record(id: old.id) == old, "the old record reads the same after the migration")
        var encrypted = makeRecord([alice], minutes: 1)
        encrypted.encryption = "sdes"
        let added = try store.insert(encrypted)
        #expect(added.encryption == "sdes")
        let columns = try PostgresConnection(conninfo: scratch.conninfo, applicationName: "check").run(
            "SELECT encryption FROM conversation WHERE id = $1", [.integer(added.id)])
        #expect(columns.rows == [["sdes"]])
        let cli = try PostgresCallHistory(connection: scratch.conninfo, account: owner, creatingSchema: false)
        #expect(try cli.query(HistoryQuery()).records.map(\.encryption) == ["sdes", nil])
    }

    @Test("another instance's writes arrive as notifications; a store's own do not")
    func notifications() throws {
        let conninfo = try testDatabase()
        let shared = account()
        let phone = try PostgresCallHistory(connection: conninfo, account: shared)
        let laptop = try PostgresCallHistory(connection: conninfo, account: shared)
        let stranger = try PostgresCallHistory(connection: conninfo, account: account())
        let heard = Mutex<[HistoryNotification]>([])
        let arrived = DispatchSemaphore(value: 0)
        let listener = try PostgresHistoryListener(for: phone, log: { _ in }) { note in
            heard.withLock { $0.append(note) }
            arrived.signal()
        }
        defer { listener.stop() }
        try phone.insert(makeRecord([alice], minutes: 1))
        try stranger.insert(makeRecord([alice], minutes: 2))
        let record = makeRecord([bob], status: .missed, minutes: 3)
        let stored = try laptop.insert(record)
        #expect(arrived.wait(timeout: .now() + 10) == .success)
        try laptop.markRead(ids: [stored.id])
        #expect(arrived.wait(timeout: .now() + 10) == .success)
        try laptop.delete(id: stored.id)
        #expect(arrived.wait(timeout: .now() + 10) == .success)
        let notes = heard.withLock { $0 }
        #expect(notes.map(\.change) == ["inserted", "read", "deleted"])
        #expect(notes.allSatisfy { $0.records == [stored.id] && $0.conversations == [record.uuid] && $0.source == laptop.source })
    }

    @Test("a server lost mid-run fails calls as unavailable; they work again once it is back")
    func serverLostAndBack() throws {
        let scratch = try ScratchDatabase()
        let store = try PostgresCallHistory(connection: scratch.conninfo, account: account())
        try store.insert(makeRecord([alice], minutes: 1))
        try scratch.takeDown()
        #expect {
            try store.insert(makeRecord([bob], minutes: 2))
        } throws: { error in
            guard case .unavailable = error as? CallHistoryError else { return false }
            return true
        }
        try scratch.bringUp()
        try store.insert(makeRecord([carol], minutes: 3))
        #expect(try store.count(HistoryQuery()) == 2)
    }

    @Test("bad connection strings, unreachable servers and foreign databases are clear errors")
    func badInput() throws {
        #expect(throws: CallHistoryError.self) { try PostgresCallHistory(connection: "host=/tmp dbname", account: "a") }
        do {
            _ = try PostgresCallHistory(connection: "host=/nonexistent-parley dbname=x connect_timeout=2", account: "a")
            Issue.record("connected to a server that does not exist")
        } catch {
            guard case .unavailable(let server, _) = error else { throw error }
            #expect(server.contains("/nonexistent-parley"))
        }
        do {
            _ = try PostgresCallHistory(connection: "\(try testDatabase()) dbname=no_such_parley_db", account: "a")
            Issue.record("opened a database that does not exist")
        } catch {
            guard case .cannotOpen = error as? CallHistoryError else { throw error }
        }
        #expect(throws: CallHistoryError.invalidQuery("the history account (address of record) is empty")) {
            try PostgresCallHistory(connection: try testDatabase(), account: "")
        }
        let foreign = try ScratchDatabase()
        try foreign.execute("CREATE TABLE conversation (id integer)")
        #expect(throws: CallHistoryError.notAHistory(path: "postgresql \(foreign.name)@\(try serverLocation())")) {
            try PostgresCallHistory(connection: foreign.conninfo, account: "a")
        }
        let empty = try ScratchDatabase()
        #expect(throws: CallHistoryError.cannotOpen(path: "postgresql \(empty.name)@\(try serverLocation())", detail: "it holds no call history")) {
            try PostgresCallHistory(connection: empty.conninfo, account: "a", creatingSchema: false)
        }
        let tables = try PostgresConnection(conninfo: empty.conninfo, applicationName: "check").run(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        #expect(tables.scalar == "0", "a store that may not create the schema writes nothing")
        let newer = try ScratchDatabase()
        _ = try PostgresCallHistory(connection: newer.conninfo, account: "a")
        try newer.execute("UPDATE parley_schema SET version = 99")
        #expect(throws: CallHistoryError.newerSchema(path: "postgresql \(newer.name)@\(try serverLocation())", found: 99, supported: PostgresSchema.currentVersion)) {
            try PostgresCallHistory(connection: newer.conninfo, account: "a")
        }
    }

    /// Where the test server listens, as store messages name it.
    private func serverLocation() throws -> String {
        let store = try PostgresCallHistory(connection: try testDatabase(), account: "probe")
        return String(store.server.split(separator: "@", maxSplits: 1)[1])
    }
}
