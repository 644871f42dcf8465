@testable import CallHistory
import ConversationKit
import Foundation
import Glibc
import Testing

/// A record of a call still live, as the journal keeps it (`crashed`, ended when written).
private func liveRecord(
    _ handle: Handle, direction: Conversation.Direction, connected: Bool, startedAt: Date = base
) -> CallRecord {
    CallRecord(
        uuid: UUID(), direction: direction, remoteHandles: [RecordedHandle(handle, normalizer: .northAmerica)],
        status: connected ? .connected : .failed, endedReason: .crashed, startedAt: startedAt,
        connectedAt: connected ? startedAt.addingTimeInterval(3) : nil, endedAt: startedAt.addingTimeInterval(3),
        callID: "call-\(handle.value)@peer")
}

/// Sets a file's modification time.
private func setModified(_ path: String, to date: Date) {
    var times = [timespec(tv_sec: Int(date.timeIntervalSince1970), tv_nsec: 0),
                 timespec(tv_sec: Int(date.timeIntervalSince1970), tv_nsec: 0)]
    _ = utimensat(AT_FDCWD, path, &times, 0)
}

@Suite("The journal of live calls")
struct LiveCallJournalTests {
    @Test("replay: the last line of each call wins, an ended call is gone, a line cut short is skipped")
    func replay() {
        let first = liveRecord(alice, direction: .incoming, connected: false)
        var connected = first
        connected.connectedAt = base.addingTimeInterval(4)
        let second = liveRecord(bob, direction: .outgoing, connected: true)
        let third = liveRecord(carol, direction: .outgoing, connected: false)
        var data = LiveCallJournal.encode([.live(first), .live(second), .live(third), .live(connected), .ended(second.uuid)])
        let torn = LiveCallJournal.encode([.live(second)]).dropLast(40)
        data.append(torn)
        let (live, unreadable) = LiveCallJournal.replay(data)
        #expect(live == [connected, third])
        #expect(unreadable == 1)
        #expect(LiveCallJournal.replay(Data()).live.isEmpty)
    }

    @Test("a call live at a crash: connected stays connected, an unanswered incoming one is missed (unread), an outgoing one failed")
    func crashStatuses() {
        let lastAlive = base.addingTimeInterval(120)
        let talking = liveRecord(alice, direction: .incoming, connected: true).endedByCrash(lastAlive: lastAlive)
        #expect(talking.status == .connected && talking.endedReason == .crashed && talking.isRead)
        #expect(talking.endedAt == lastAlive && talking.duration == 117)
        let ringing = liveRecord(bob, direction: .incoming, connected: false).endedByCrash(lastAlive: lastAlive)
        #expect(ringing.status == .missed && !ringing.isRead)
        let calling = liveRecord(carol, direction: .outgoing, connected: false).endedByCrash(lastAlive: lastAlive)
        #expect(calling.status == .failed && calling.isRead)
        // A clock that went back: never before the call began.
        #expect(liveRecord(alice, direction: .incoming, connected: true).endedByCrash(lastAlive: base.addingTimeInterval(-60)).endedAt
            == base.addingTimeInterval(3))
        #expect(CallStatus(direction: .incoming, connected: false, reason: .crashed) == .missed)
        #expect(CallStatus(direction: .outgoing, connected: false, reason: .crashed) == .failed)
    }

    @Test("recovery writes each call live at the crash as crashed, ended at the file's last touch, and empties the journal; a second start writes nothing", arguments: StoreKind.allCases)
    func recovery(kind: StoreKind) throws {
        let folder = try TemporaryHistory()
        let fixture = try StoreFixture(kind)
        let path = folder.directory.appending(path: LiveCallJournal.fileName).path
        let talking = liveRecord(alice, direction: .incoming, connected: true)
        let ringing = liveRecord(bob, direction: .incoming, connected: false)
        let done = liveRecord(carol, direction: .outgoing, connected: true)
        do {
            let journal = try #require(try LiveCallJournal.open(at: path))
            try journal.append([.live(talking), .live(ringing), .live(done)])
            try journal.append([.ended(done.uuid)])
            // The journal's holder dies here (its descriptor, and the lock, go with it).
        }
        var status = stat()
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)
        let lastAlive = base.addingTimeInterval(600)
        setModified(path, to: lastAlive)
        let journal = try #require(try LiveCallJournal.open(at: path))
        let (recovered, unreadable) = try journal.recover(into: fixture.store, now: base.addingTimeInterval(900))
        #expect(unreadable == 0)
        #expect(Set(recovered.map(\.uuid)) == [talking.uuid, ringing.uuid])
        let stored = try #require(try fixture.store.record(uuid: talking.uuid))
        #expect(stored.endedReason == .crashed && stored.status == .connected && stored.endedAt == lastAlive)
        #expect(stored.callID == talking.callID && stored.remoteHandles == talking.remoteHandles)
        #expect(try fixture.store.record(uuid: ringing.uuid)?.status == .missed)
        #expect(try fixture.store.record(uuid: done.uuid) == nil)
        #expect(try journal.read().live.isEmpty)
        #expect(try journal.recover(into: fixture.store, now: Date()).records.isEmpty)
    }

    @Test("one process holds the journal: a second open gets nil until the holder lets go; a clean stop removes the file")
    func oneHolder() throws {
        let folder = try TemporaryHistory()
        let path = folder.directory.appending(path: LiveCallJournal.fileName).path
        var holder = try LiveCallJournal.open(at: path)
        #expect(holder != nil)
        // flock is per open file description: a second open in this process is refused just as another process is.
        #expect(try LiveCallJournal.open(at: path) == nil)
        holder = nil
        let next = try #require(try LiveCallJournal.open(at: path))
        next.remove()
        #expect(!FileManager.default.fileExists(atPath: path))
        _ = holder
    }

    @Test("a rewrite keeps only the live calls and still holds the lock; clear empties the file")
    func rewriteAndClear() throws {
        let folder = try TemporaryHistory()
        let path = folder.directory.appending(path: LiveCallJournal.fileName).path
        let journal = try #require(try LiveCallJournal.open(at: path))
        let records = [alice, bob, carol].map { liveRecord($0, direction: .outgoing, connected: true) }
        try journal.append(records.map { .live($0) } + [.ended(records[0].uuid)])
        try journal.rewrite(Array(records.dropFirst()))
        #expect(try journal.read().live == Array(records.dropFirst()))
        #expect(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count == 2)
        #expect(try LiveCallJournal.open(at: path) == nil)
        #expect(!FileManager.default.fileExists(atPath: path + ".new"))
        try journal.append([.live(records[0])])
        #expect(try journal.read().live.count == 3)
        try journal.clear()
        #expect(try journal.read().live.isEmpty)
    }
}
