import CallHistory
import ConversationKit
import Foundation
@testable import ParleyEngine
import Synchronization
import Testing

/// Waits (bounded: the journal is written off the engine's thread, the first change at once) until `condition` holds.
private func eventually(within timeout: TimeInterval = 5, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while try !condition() {
        guard Date() < deadline else { return false }
        usleep(5_000)
    }
    return true
}

@Suite("Engine: the journal of live calls")
struct LiveCallJournalEngineTests {
    @Test("a ringing call is journaled as a missed call would be, answered as connected, and once its record is written it is gone and the file empty")
    func journaledWhileLive() throws {
        let history = try TemporaryHistory("journal")
        let path = history.directory.appending(path: LiveCallJournal.fileName).path
        let journal = try #require(try LiveCallJournal.open(at: path))
        let harness = try EngineHarness(history: history.recorder, journal: journal)
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let uuid = try #require(harness.conversation?.uuid)
        #expect(try eventually { try journal.read().live.map(\.status) == [.missed] })
        let ringing = try #require(try journal.read().live.first)
        #expect(ringing.uuid == uuid && ringing.endedReason == .crashed && ringing.callID == "call-1@peer")
        #expect(ringing.remoteHandles.first?.handle.value == "sip:alice@127.0.0.1:5062")
        try harness.manager.perform([.join(conversationUUID: uuid)])
        let tag = try #require(harness.sent().first?.toTag)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        #expect(harness.conversation?.state == .joined)
        #expect(try eventually { try journal.read().live.first?.connectedAt != nil })
        harness.deliver(PeerMessages.inDialog("BYE", localTag: tag, cseq: 2, branch: "z9hG4bK-bye-1"))
        #expect(try eventually { try journal.read().live.isEmpty })
        #expect(try history.store.record(uuid: uuid)?.endedReason == .remoteEnded)
        var status = stat()
        #expect(try eventually { stat(path, &status) == 0 && status.st_size == 0 }, "emptied when no call is live")
    }

    @Test("a call that begins and ends between two writes is never written; a clean stop removes the file, or keeps the calls still live")
    func coalescedAndDrained() throws {
        let history = try TemporaryHistory("journal-writer")
        let harness = try EngineHarness()
        for index in 1...3 {
            harness.deliver(PeerMessages.invite(callID: "call-\(index)@peer", branch: "z9hG4bK-in-\(index)"), body: PeerMessages.offer)
        }
        let conversations = harness.manager.conversations.sorted { $0.createdAt < $1.createdAt }
        try #require(conversations.count == 3)
        let (first, second, third) = (conversations[0], conversations[1], conversations[2])
        let path = history.directory.appending(path: LiveCallJournal.fileName).path
        try journalAndStop(path, history, first, second, third)
        let kept = try #require(try LiveCallJournal.open(at: path)).read().live
        #expect(kept.map(\.uuid) == [third.uuid])
        // A stop with none live removes the file.
        let again = try #require(try LiveCallJournal.open(at: path))
        try again.clear()
        let clean = LiveCallWriter(journal: again, recorder: history.recorder, log: .silent)
        clean.changed(first, callID: "call-1@peer")
        clean.ended(first.uuid)
        clean.drain()
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    /// Journals three calls (the second begins and ends within one batch), ends the first and stops with the third
    /// live; the journal is let go on return, as when the process exits.
    private func journalAndStop(
        _ path: String, _ history: TemporaryHistory, _ first: Conversation, _ second: Conversation, _ third: Conversation
    ) throws {
        let journal = try #require(try LiveCallJournal.open(at: path))
        let writer = LiveCallWriter(journal: journal, recorder: history.recorder, log: .silent, spacing: 0.3)
        writer.changed(first, callID: "call-1@peer")
        #expect(try eventually { try journal.read().live.count == 1 })  // after a quiet spell: at once
        writer.changed(second, callID: "call-2@peer")
        writer.changed(third, callID: "call-3@peer")
        writer.changed(third, callID: "call-3@peer")  // nothing it records changed: no second line
        writer.ended(second.uuid)
        #expect(try eventually { try journal.read().live.count == 2 })
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!text.contains(second.uuid.uuidString), "began and ended within one batch: never written")
        #expect(text.split(separator: "\n").count == 2)
        // A stop with a call still live keeps it for the next start.
        writer.ended(first.uuid)
        writer.drain()
        #expect(FileManager.default.fileExists(atPath: path))
    }
}
