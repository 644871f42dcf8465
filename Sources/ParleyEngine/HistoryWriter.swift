import CallHistory
import ConversationKit
import Foundation
import Synchronization

/// Writes ended conversations to the call history off the signalling thread, in batches (group commit): a durable
/// SQLite commit costs about half a millisecond here, so one commit per call would cap the engine near 2,000 calls
/// per second. `done` runs for each record only after the batch holding it is committed, so whoever logs "ended"
/// from it never reports a conversation the history could lose.
final class HistoryWriter: Sendable {
    private let recorder: HistoryRecorder
    private let queue = DispatchQueue(label: "parley.history")
    private let pending = Mutex(Pending())
    private let log: EngineLog

    private struct Pending {
        var records: [(CallRecord, @Sendable (CallRecord?) -> Void)] = []
        var flushScheduled = false
    }

    init(recorder: HistoryRecorder, log: EngineLog) {
        self.recorder = recorder
        self.log = log
    }

    /// Queues `conversation` (if it has ended and Recents includes it) with its audio figures; `done` gets the stored record, or nil when
    /// nothing was stored (not ended, excluded, or the store failed — which is logged).
    func record(
        _ conversation: Conversation, callID: String?, quality: CallQuality?, done: @escaping @Sendable (CallRecord?) -> Void
    ) {
        guard var record = recorder.record(for: conversation, callID: callID) else {
            done(nil)
            return
        }
        record.quality = quality
        write(record, done: done)
    }

    /// Queues a record made elsewhere (a blocked caller's); `done` as for a conversation.
    func recordBlocked(
        _ caller: Handle, to local: Handle, callID: String, at date: Date, done: @escaping @Sendable (CallRecord?) -> Void
    ) {
        guard let record = recorder.blockedRecord(from: caller, to: local, callID: callID, at: date) else {
            done(nil)
            return
        }
        write(record, done: done)
    }

    private func write(_ record: CallRecord, done: @escaping @Sendable (CallRecord?) -> Void) {
        let schedule = pending.withLock { pending -> Bool in
            pending.records.append((record, done))
            defer { pending.flushScheduled = true }
            return !pending.flushScheduled
        }
        if schedule { queue.async { self.flush() } }
    }

    /// Waits until everything queued so far is committed.
    func drain() {
        queue.sync { flush() }
    }

    private func flush() {
        let batch = pending.withLock { pending in
            defer {
                pending.records.removeAll(keepingCapacity: true)
                pending.flushScheduled = false
            }
            return pending.records
        }
        guard !batch.isEmpty else { return }
        do {
            let stored = try recorder.store.insertReturningRecords(batch.map(\.0))
            for (record, (_, done)) in zip(stored, batch) { done(record) }
        } catch {
            log.error("call history: \(batch.count) record(s) could not be written: \(error)")
            for (_, done) in batch { done(nil) }
        }
    }
}
