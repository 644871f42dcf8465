@testable import CallHistory
import ConversationKit
import Foundation
import Testing

@Suite("History store: files, schema and concurrency")
struct StoreLifecycleTests {
    @Test("a version-1 database is migrated in place, its records stay queryable, new ones keep their audio figures")
    func migrationFromVersionOne() throws {
        let temp = try TemporaryHistory()
        do {
            // Build a database as the first schema left it, with one record in it.
            let connection = try SQLiteConnection(path: temp.path, access: .create)
            try connection.execute(HistorySchema.migrations[0])
            try connection.execute("PRAGMA user_version = 1")
            try connection.execute(
                """
                INSERT INTO conversation (id, uuid, direction, status, ended_reason, started_at, connected_at, ended_at,
                    is_video, is_read)
                VALUES (7, '6F9619FF-8B86-D011-B42D-00C04FC964FF', 'incoming', 'missed', 'unanswered', 1000, NULL, 1030, 0, 0);
                INSERT INTO remote_handle (conversation_id, position, kind, value, normalized, display_name)
                VALUES (7, 0, 2, '415-555-0100', '+14155550100', 'Alice');
                """)
        }
        let store = try temp.open()
        #expect(try store.schemaVersion == HistorySchema.currentVersion)
        let record = try store.record(id: 7)
        #expect(record.status == .missed)
        #expect(record.groupUUID == nil && record.callID == nil)
        #expect(record.remoteHandles.first?.handle.displayName == "Alice")
        let found = try store.query(HistoryQuery(handle: Handle(kind: .phoneNumber, value: "+1 415 555 0100")))
        #expect(found.records.map(\.id) == [7], "the handle index was rebuilt with start times")
        #expect(try store.count(.missed(unreadOnly: true)) == 1)
        // New records get the new columns.
        let group = UUID()
        var withAudio = makeRecord([alice], group: group, callID: "x@y")
        withAudio.quality = CallQuality(
            codec: "PCMA", packetsSent: 500, packetsReceived: 497, packetsLost: 3, jitterMs: 1.5, peerPacketsLost: 0,
            peerJitterMs: 0.8, roundTripMs: 0.25)
        let added = try store.insert(withAudio)
        let readBack = try store.record(id: added.id)
        #expect(readBack.groupUUID == group)
        #expect(readBack.quality == withAudio.quality, "the audio figures survive the store")
        #expect(try store.record(id: 7).quality == nil, "an old record has none")
        #expect(try store.record(id: 7).account == nil)
        #expect(try store.record(id: 7).encryption == nil)
        // Opening again is a no-op.
        #expect(try temp.open().schemaVersion == HistorySchema.currentVersion)
    }

    @Test("a version-5 database (before accounts): read-only reads it as it is, read-write migrates it; old rows have no account")
    func migrationFromVersionFive() throws {
        let temp = try TemporaryHistory()
        do {
            // Build a database as version 5 left it, with one record in it (audio figures and all).
            let connection = try SQLiteConnection(path: temp.path, access: .create)
            for step in 0..<5 { try connection.execute(HistorySchema.migrations[step]) }
            try connection.execute("PRAGMA user_version = 5")
            try connection.execute(
                """
                INSERT INTO conversation (id, uuid, direction, status, ended_reason, started_at, connected_at, ended_at,
                    is_video, is_read, call_id, quality)
                VALUES (3, '6F9619FF-8B86-D011-B42D-00C04FC964FF', 'outgoing', 'connected', 'localEnded', 1000, 1002, 1030,
                    0, 1, 'c@h', '{"codec":"PCMU","packetsSent":10,"packetsReceived":10,"packetsLost":0,"jitterMs":1,"peerPacketsLost":0,"peerJitterMs":1,"roundTripMs":0.5}');
                INSERT INTO remote_handle (conversation_id, position, kind, value, normalized, display_name, started_at)
                VALUES (3, 0, 2, '415-555-0100', '+14155550100', 'Alice', 1000);
                """)
        }
        // A CLI newer than the parleyd that writes the file: reads it, account nil, and leaves it at version 5.
        let reader = try SQLiteCallHistory(path: temp.path, access: .readOnly)
        #expect(try reader.schemaVersion == 5)
        let old = try reader.record(id: 3)
        #expect(old.account == nil && old.encryption == nil && old.callID == "c@h" && old.quality?.codec == "PCMU")
        #expect(try reader.record(uuid: old.uuid)?.account == nil)
        #expect(try reader.query(HistoryQuery(handle: alice)).records.map(\.id) == [3])
        #expect(try reader.count(HistoryQuery()) == 1)

        let store = try temp.open()
        #expect(try store.schemaVersion == HistorySchema.currentVersion)
        #expect(try store.record(id: 3) == old, "the old record reads the same after the migration")
        var through = makeRecord([alice], minutes: 1)
        through.account = "sip:alice@example.test"
        let added = try store.insert(through)
        #expect(try store.record(id: added.id).account == "sip:alice@example.test")
        let current = try SQLiteCallHistory(path: temp.path, access: .readOnly)
        #expect(try current.query(HistoryQuery()).records.map(\.account) == ["sip:alice@example.test", nil])
    }

    @Test("a version-6 database (before encryption): read-only reads it as it is, read-write migrates it; old rows have none")
    func migrationFromVersionSix() throws {
        let temp = try TemporaryHistory()
        do {
            // Build a database as version 6 left it, with one record in it (its account and all).
            let connection = try SQLiteConnection(path: temp.path, access: .create)
            for step in 0..<6 { try connection.execute(HistorySchema.migrations[step]) }
            try connection.execute("PRAGMA user_version = 6")
            try connection.execute(
                """
                INSERT INTO conversation (id, uuid, direction, status, ended_reason, started_at, connected_at, ended_at,
                    is_video, is_read, call_id, account)
                VALUES (4, '6F9619FF-8B86-D011-B42D-00C04FC964FF', 'outgoing', 'connected', 'localEnded', 1000, 1002, 1030,
                    0, 1, 'c@h', 'sip:me@example.test');
                INSERT INTO remote_handle (conversation_id, position, kind, value, normalized, display_name, started_at)
                VALUES (4, 0, 2, '415-555-0100', '+14155550100', 'Alice', 1000);
                """)
        }
        // A CLI newer than the parleyd that writes the file: reads it, encryption nil, and leaves it at version 6.
        let reader = try SQLiteCallHistory(path: temp.path, access: .readOnly)
        #expect(try reader.schemaVersion == 6)
        let old = try reader.record(id: 4)
        #expect(old.encryption == nil && old.account == "sip:me@example.test" && old.callID == "c@h")
        #expect(try reader.record(uuid: old.uuid)?.encryption == nil)
        #expect(try reader.query(HistoryQuery(handle: alice)).records.map(\.account) == ["sip:me@example.test"])
        #expect(try reader.count(HistoryQuery()) == 1)

        let store = try temp.open()
        #expect(try store.schemaVersion == HistorySchema.currentVersion)
        #expect(try store.record(id: 4) == old, "the old record reads the same after the migration")
        var encrypted = makeRecord([alice], minutes: 1)
        encrypted.encryption = "sdes"
        let added = try store.insert(encrypted)
        #expect(try store.record(id: added.id).encryption == "sdes")
        let current = try SQLiteCallHistory(path: temp.path, access: .readOnly)
        #expect(try current.query(HistoryQuery()).records.map(\.encryption) == ["sdes", nil])
    }

    @Test("a database from a newer Parley is refused, not touched")
    func newerSchema() throws {
        let temp = try TemporaryHistory()
        _ = try temp.open()
        do {
            let connection = try SQLiteConnection(path: temp.path, access: .readWrite)
            try connection.execute("PRAGMA user_version = 99")
        }
        #expect(throws: CallHistoryError.newerSchema(path: temp.path, found: 99, supported: HistorySchema.currentVersion)) {
            try temp.open()
        }
    }

    @Test("a file that is not a database gives a clear error and is left as it was")
    func corruptFile() throws {
        let temp = try TemporaryHistory()
        let junk = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try junk.write(to: URL(fileURLWithPath: temp.path))
        do {
            _ = try temp.open()
            Issue.record("opening a junk file succeeded")
        } catch let error as CallHistoryError {
            guard case .corruptDatabase(let path, _) = error else {
                Issue.record("expected corruptDatabase, got \(error)")
                return
            }
            #expect(path == temp.path)
            #expect(error.description.contains("not a usable call-history database"))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: temp.path)) == junk)
    }

    @Test("missing files, unwritable places and directories are clear errors")
    func unopenable() throws {
        let temp = try TemporaryHistory()
        #expect(throws: CallHistoryError.cannotOpen(path: temp.path, detail: "no such file")) {
            try SQLiteCallHistory(path: temp.path, access: .readWrite)
        }
        #expect(throws: CallHistoryError.self) {
            try SQLiteCallHistory(path: temp.directory.appending(path: "missing/dir/history.sqlite").path)
        }
        #expect(throws: CallHistoryError.cannotOpen(path: temp.directory.path, detail: "it is a directory")) {
            try SQLiteCallHistory(path: temp.directory.path)
        }
    }

    @Test("records survive closing and reopening, and the database checks clean")
    func reopen() throws {
        let temp = try TemporaryHistory()
        var uuids: [UUID] = []
        do {
            let store = try temp.open(durability: .full)
            for minute in 0..<20 { uuids.append(try store.insert(makeRecord([alice], minutes: Double(minute))).uuid) }
        }
        let store = try temp.open()
        #expect(try uuids.allSatisfy { try store.record(uuid: $0) != nil })
        #expect(try store.check().isEmpty)
    }

    @Test("UUIDs are stored as Foundation's uuidString spells them, so rows of every build are found by UUID")
    func uuidText() throws {
        let temp = try TemporaryHistory()
        let edges = [
            UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
            UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)),
            UUID(uuid: (0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF, 0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10)),
        ]
        let records = (edges + (0..<20).map { _ in UUID() }).map { group in
            var record = makeRecord([alice], group: group)
            record.uuid = group
            return record
        }
        let store = try temp.open()
        try store.insert(contentsOf: records)
        let connection = try SQLiteConnection(path: temp.path, access: .readWrite)
        for record in records {
            let statement = try connection.statement("SELECT uuid, group_uuid FROM conversation WHERE id = ?")
            statement.bind(try #require(try store.record(uuid: record.uuid)).id, at: 1)
            #expect(try statement.step())
            #expect(statement.text(0) == record.uuid.uuidString && statement.text(1) == record.uuid.uuidString)
        }
    }

    @Test("one writer and three readers on one file at once (WAL): no errors, readers see whole records")
    func concurrentWriterAndReaders() async throws {
        let temp = try TemporaryHistory()
        let writer = try temp.open()
        let readers = try (0..<3).map { _ in try temp.open() }
        let total = 300
        try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                for minute in 0..<total {
                    try writer.insert(makeRecord([alice, bob], status: minute % 3 == 0 ? .missed : .connected, minutes: Double(minute)))
                }
                return total
            }
            for reader in readers {
                group.addTask {
                    var last = 0
                    var reads = 0
                    while last < total {
                        let count = try reader.count(HistoryQuery())
                        #expect(count >= last, "counts never go backwards")
                        last = count
                        for record in try reader.query(HistoryQuery(handle: bob, limit: 20)).records {
                            #expect(record.remoteHandles.count == 2, "a record is never seen half-written")
                        }
                        _ = try reader.recents(limit: 5)
                        reads += 1
                    }
                    return reads
                }
            }
            var results: [Int] = []
            for try await result in group { results.append(result) }
            #expect(results.count == 4)
        }
        #expect(try writer.count(HistoryQuery()) == total)
        #expect(try readers[0].count(.missed()) == total / 3)
    }

    @Test("the recorder stores ended conversations once, and none when Recents are off")
    func recorder() throws {
        let temp = try TemporaryHistory()
        let store = try temp.open()
        let recorder = HistoryRecorder(store: store, configuration: .init())
        let silent = HistoryRecorder(store: store, configuration: .init(includesConversationInRecents: false))
        let clock = ManualClock()
        let manager = try ConversationManager(configuration: .init(), clock: clock)
        let collector = Collector()
        manager.delegate = collector
        let uuid = UUID()
        try manager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [alice]))
        #expect(try recorder.conversationChanged(manager.conversation(uuid)!) == nil, "live conversations are not recorded")
        clock.advance(by: 30)
        try manager.reportConversationEvent(.ended(clock.now(), .cancelled), for: uuid)
        let ended = try #require(collector.last)
        #expect(try silent.conversationChanged(ended) == nil)
        let record = try #require(try recorder.conversationChanged(ended, callID: "c@h"))
        #expect(record.status == .missed)
        #expect(record.isRead == false)
        #expect(try recorder.conversationChanged(ended)?.id == record.id)
        #expect(try store.count(HistoryQuery()) == 1)
    }
}

@Suite("History store: damaged rows")
struct DamagedRowTests {
    static let damages = [
        "UPDATE conversation SET uuid = 'not-a-uuid'",
        "UPDATE conversation SET status = 'vanished'",
        "UPDATE conversation SET ended_reason = 'gone'",
        "UPDATE remote_handle SET kind = 9",
    ]

    @Test("a row with a value Parley never writes is reported as corruption, not a crash", arguments: damages)
    func damagedRow(_ damage: String) throws {
        let temp = try TemporaryHistory()
        let store = try temp.open()
        let record = try store.insert(makeRecord([alice], status: .missed))
        let connection = try SQLiteConnection(path: temp.path, access: .readWrite)
        try connection.execute(damage)
        let error = queryError(store)
        #expect(error?.description.contains("record \(record.id) has") == true, "\(String(describing: error))")
    }

    private func queryError(_ store: SQLiteCallHistory) -> CallHistoryError? {
        do {
            _ = try store.query(HistoryQuery())
            return nil
        } catch {
            return error
        }
    }
}
