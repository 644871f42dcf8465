@testable import CallHistory
import ConversationKit
import Foundation
import Testing

@Suite("History store: safety")
struct StoreSafetyTests {
    @Test("a SQLite file of something else is refused and left exactly as it was")
    func foreignDatabase() throws {
        let temp = try TemporaryHistory()
        do {
            let connection = try SQLiteConnection(path: temp.path, access: .create)
            try connection.execute("CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('keep me')")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: temp.path))
        for access in [SQLiteCallHistory.Access.create, .readWrite, .readOnly] {
            #expect(throws: CallHistoryError.notAHistory(path: temp.path)) {
                try SQLiteCallHistory(path: temp.path, access: access)
            }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: temp.path)) == before)
        #expect(!FileManager.default.fileExists(atPath: temp.path + "-wal"), "not switched to WAL")
    }

    @Test("a negative schema version is corruption, not a crash")
    func negativeVersion() throws {
        let temp = try TemporaryHistory()
        _ = try temp.open()
        do {
            let connection = try SQLiteConnection(path: temp.path, access: .readWrite)
            try connection.execute("PRAGMA user_version = -1")
        }
        #expect(throws: CallHistoryError.corruptDatabase(path: temp.path, detail: "negative schema version -1")) {
            try temp.open()
        }
    }

    @Test("several processes creating one database at once: each opens it, one set of rules wins")
    func concurrentCreation() async throws {
        let temp = try TemporaryHistory()
        let path = temp.path
        let rules = try await withThrowingTaskGroup(of: HandleNormalizer.self) { group in
            for code in ["1", "44", "33", "49"] {
                group.addTask {
                    try SQLiteCallHistory(path: path, normalizer: try HandleNormalizer(defaultCountryCode: code)).normalizer
                }
            }
            var seen: [HandleNormalizer] = []
            for try await rule in group { seen.append(rule) }
            return seen
        }
        #expect(rules.count == 4)
        #expect(Set(rules).count == 1, "every store normalises by the one stored rule set")
        #expect(try temp.open().normalizer == rules[0])
    }

    @Test("text with a NUL byte is stored whole")
    func nulInText() throws {
        let temp = try TemporaryHistory()
        let store = try temp.open()
        let odd = Handle(kind: .generic, value: "sip:x\u{0}y@host", displayName: "A\u{0}B")
        let stored = try store.insert(makeRecord([odd]))
        #expect(try store.record(id: stored.id).remoteHandles.first?.handle == odd)
    }

    @Test("records with impossible times are refused with a clear error")
    func impossibleTimes() throws {
        let temp = try TemporaryHistory()
        let store = try temp.open()
        var nan = makeRecord([alice])
        nan.startedAt = Date(timeIntervalSinceReferenceDate: .nan)
        var infinite = makeRecord([alice])
        infinite.endedAt = .distantFuture.addingTimeInterval(.infinity)
        var unconnected = makeRecord([alice])
        unconnected.connectedAt = nil
        for record in [nan, infinite, unconnected] {
            #expect(throws: CallHistoryError.self) { try store.insert(record) }
        }
        #expect(try store.count(HistoryQuery()) == 0)
    }

    @Test("clearing many records works in batches")
    func batchedClear() throws {
        let temp = try TemporaryHistory()
        let store = try temp.open()
        try store.insert(contentsOf: (0..<2_500).map { makeRecord([alice], minutes: -Double($0) - 10) })
        try store.insert(makeRecord([bob], minutes: 10))
        #expect(try store.deleteAll(endedBefore: base) == 2_500)
        #expect(try store.count(HistoryQuery()) == 1)
    }

    @Test("both halves of a merged pair keep their group link in the history")
    func groupLink() throws {
        let temp = try TemporaryHistory()
        let store = try temp.open()
        let recorder = HistoryRecorder(store: store, configuration: .init())
        let clock = ManualClock()
        let manager = try ConversationManager(configuration: .init(), clock: clock)
        let collector = Collector()
        manager.delegate = collector
        let a = UUID(), b = UUID()
        for (uuid, handle) in [(a, alice), (b, bob)] {
            try manager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [handle]))
            try manager.perform([.join(conversationUUID: uuid)])
        }
        try manager.perform([.merge(conversationUUID: a, with: b)])
        let group = try #require(manager.groups.first?.uuid)
        for uuid in [a, b] {
            try manager.reportConversationEvent(.ended(clock.now(), .remoteEnded), for: uuid)
            try recorder.conversationChanged(try #require(collector.seen[uuid]))
        }
        #expect(try store.query(HistoryQuery()).records.map(\.groupUUID) == [group, group])
    }
}

@Suite("History store: files only their owner can read")
struct StorePermissionTests {
    private func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test("a new history and its -wal and -shm are 0600")
    func newFilesArePrivate() throws {
        let temp = try TemporaryHistory()
        let store = try temp.open()
        try store.insert(makeRecord([alice]))
        for file in [temp.path, temp.path + "-wal", temp.path + "-shm"] {
            #expect(FileManager.default.fileExists(atPath: file), "\(file)")
            #expect(try mode(file) == 0o600, "\(file)")
        }
    }

    @Test("an existing history others could read is made 0600 when opened; a file that is not ours is left alone")
    func existingFilesAreTightened() throws {
        let temp = try TemporaryHistory()
        do {
            let store = try temp.open()
            try store.insert(makeRecord([alice]))
        }
        for file in [temp.path, temp.path + "-wal", temp.path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file)
        }
        _ = try temp.open()
        for file in [temp.path, temp.path + "-wal", temp.path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            #expect(try mode(file) == 0o600, "\(file)")
        }
        let foreign = try TemporaryHistory()
        do {
            let connection = try SQLiteConnection(path: foreign.path, access: .create)
            try connection.execute("CREATE TABLE notes (x TEXT)")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: foreign.path)
        #expect(throws: CallHistoryError.notAHistory(path: foreign.path)) { try foreign.open() }
        #expect(try mode(foreign.path) == 0o644)
    }
}
