import CallHistory
import ConversationKit
import Foundation
@testable import ParleyEngine
import Synchronization
import Testing

/// A store whose server can be "down": inserts fail as `unavailable` while it is; everything else is a real SQLite
/// store in a temporary file.
private final class FlakyStore: CallHistoryStore {
    let inner: SQLiteCallHistory
    let down = Atomic<Bool>(true)
    let attempts = Atomic<Int>(0)
    private let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "parley-flaky-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        inner = try SQLiteCallHistory(path: directory.appending(path: "history.sqlite").path, durability: .normal)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func insertReturningRecords(_ records: [CallRecord]) throws(CallHistoryError) -> [CallRecord] {
        attempts.add(1, ordering: .relaxed)
        if down.load(ordering: .relaxed) { throw .unavailable(server: "postgresql test@nowhere", detail: "down") }
        return try inner.insertReturningRecords(records)
    }
    func insert(_ record: CallRecord) throws(CallHistoryError) -> CallRecord { try insertReturningRecords([record])[0] }
    func insert(contentsOf records: [CallRecord]) throws(CallHistoryError) -> Int { try insertReturningRecords(records).count }
    func record(id: Int64) throws(CallHistoryError) -> CallRecord { try inner.record(id: id) }
    func record(uuid: UUID) throws(CallHistoryError) -> CallRecord? { try inner.record(uuid: uuid) }
    func query(_ query: HistoryQuery) throws(CallHistoryError) -> HistoryPage { try inner.query(query) }
    func count(_ query: HistoryQuery) throws(CallHistoryError) -> Int { try inner.count(query) }
    func recents(limit: Int) throws(CallHistoryError) -> [RecentsEntry] { try inner.recents(limit: limit) }
    func markRead(ids: [Int64]) throws(CallHistoryError) -> Int { try inner.markRead(ids: ids) }
    func markAllRead() throws(CallHistoryError) -> Int { try inner.markAllRead() }
    func delete(id: Int64) throws(CallHistoryError) { try inner.delete(id: id) }
    func deleteAll(endedBefore date: Date) throws(CallHistoryError) -> Int { try inner.deleteAll(endedBefore: date) }
    func check() throws(CallHistoryError) -> [String] { try inner.check() }
}

@Suite("History writer: a history server that goes away")
struct HistoryWriterOutageTests {
    @Test("records wait in order while the server is down, the oldest beyond the bound are dropped, the rest written when it is back")
    func waitsThenWrites() throws {
        let store = try FlakyStore()
        let lines = Mutex<[String]>([])
        let log = EngineLog(level: .info) { _, line in lines.withLock { $0.append(line) } }
        var configuration = ConversationManager.Configuration()
        configuration.includesConversationInRecents = true
        let writer = HistoryWriter(
            recorder: HistoryRecorder(store: store, configuration: configuration), log: log, maxWaiting: 3, firstRetry: 0.01)
        let outcomes = Mutex<[String: Bool]>([:])
        let settled = DispatchSemaphore(value: 0)
        let caller = Handle(kind: .generic, value: "sip:bob@127.0.0.1")
        let local = Handle(kind: .generic, value: "sip:parley@127.0.0.1")
        for index in 1...5 {
            writer.recordBlocked(caller, to: local, callID: "call-\(index)", account: nil, at: Date()) { record in
                outcomes.withLock { $0["call-\(index)"] = record != nil }
                settled.signal()
            }
        }
        // The two oldest are dropped at once (the bound is 3), whatever the writer was doing.
        for _ in 0..<2 { #expect(settled.wait(timeout: .now() + 5) == .success) }
        #expect(outcomes.withLock { $0 } == ["call-1": false, "call-2": false])
        #expect(writer.waiting == 3)
        // Retries go on while the server is down; nothing is lost, nothing written.
        while store.attempts.load(ordering: .relaxed) < 3 { _ = settled.wait(timeout: .now() + 0.01) }
        #expect(try store.inner.count(HistoryQuery()) == 0)
        store.down.store(false, ordering: .relaxed)
        for _ in 0..<3 { #expect(settled.wait(timeout: .now() + 10) == .success) }
        #expect(outcomes.withLock { $0 }.filter(\.value).keys.sorted() == ["call-3", "call-4", "call-5"])
        let stored = try store.inner.query(HistoryQuery()).records
        #expect(Set(stored.compactMap(\.callID)) == ["call-3", "call-4", "call-5"])
        #expect(stored.sorted { $0.id < $1.id }.compactMap(\.callID) == ["call-3", "call-4", "call-5"], "written in the order they ended")
        let said = lines.withLock { $0 }
        #expect(said.filter { $0.contains("cannot be reached") }.count == 1, "the outage is logged once: \(said)")
        #expect(said.filter { $0.contains("dropped") }.count == 2)
        #expect(said.contains { $0.contains("the server is back; 3 waiting record(s) written") })
    }
}

/// A writer over a store that is up, with `spacing`; `record` queues a blocked caller's record under `callID`, and
/// each `done` lands in `written` (the call IDs stored) and signals `settled`.
private final class GroupCommitFixture: Sendable {
    let store: FlakyStore
    let writer: HistoryWriter
    let written = Mutex<[String]>([])
    let settled = DispatchSemaphore(value: 0)

    init(spacing: Double) throws {
        store = try FlakyStore()
        store.down.store(false, ordering: .relaxed)
        var configuration = ConversationManager.Configuration()
        configuration.includesConversationInRecents = true
        writer = HistoryWriter(
            recorder: HistoryRecorder(store: store, configuration: configuration), log: .silent, commitSpacing: spacing)
    }

    func record(_ callID: String) {
        let caller = Handle(kind: .generic, value: "sip:bob@127.0.0.1")
        let local = Handle(kind: .generic, value: "sip:parley@127.0.0.1")
        writer.recordBlocked(caller, to: local, callID: callID, account: nil, at: Date()) { [self] record in
            if let record { written.withLock { $0.append(record.callID ?? "?") } }
            settled.signal()
        }
    }
}

@Suite("History writer: group commit")
struct HistoryWriterGroupCommitTests {
    @Test("a record after a quiet spell is written at once; those within the commit spacing of it wait and share one commit")
    func spacedCommits() throws {
        // An hour's spacing: nothing but `drain` writes the later records, so the test does not depend on timing.
        let fixture = try GroupCommitFixture(spacing: 3_600)
        let (store, writer, settled) = (fixture.store, fixture.writer, fixture.settled)
        fixture.record("first")
        #expect(settled.wait(timeout: .now() + 10) == .success, "the first record is not held back")
        #expect(store.attempts.load(ordering: .relaxed) == 1)
        for index in 1...20 { fixture.record("call-\(index)") }
        #expect(settled.wait(timeout: .now() + 0.05) == .timedOut, "records within the spacing wait for the next commit")
        #expect(writer.waiting == 20)
        writer.drain()
        for _ in 1...20 { #expect(settled.wait(timeout: .now() + 10) == .success) }
        #expect(store.attempts.load(ordering: .relaxed) == 2, "the twenty share one commit")
        #expect(fixture.written.withLock { $0 } == ["first"] + (1...20).map { "call-\($0)" })
        #expect(try store.inner.count(HistoryQuery()) == 21)
    }

    @Test("with a short spacing the waiting records go in one commit of their own, no drain needed")
    func spacingTimer() throws {
        let fixture = try GroupCommitFixture(spacing: 0.5)
        let (store, settled) = (fixture.store, fixture.settled)
        fixture.record("first")
        #expect(settled.wait(timeout: .now() + 10) == .success)
        for index in 1...10 { fixture.record("call-\(index)") }
        for _ in 1...10 { #expect(settled.wait(timeout: .now() + 10) == .success, "written when the spacing is up") }
        #expect(store.attempts.load(ordering: .relaxed) == 2)
        #expect(try store.inner.count(HistoryQuery()) == 11)
    }
}
