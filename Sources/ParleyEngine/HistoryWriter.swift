import CallHistory
import ConversationKit
import Foundation
import Synchronization

/// Writes ended conversations to the call history off the signalling thread, in batches (group commit): a durable
/// SQLite commit costs about half a millisecond here, so one commit per call would cap the engine near 2,000 calls
/// per second. At a high call rate commits start ``commitSpacing`` (20 ms) apart, so each takes the records of that time
/// together: a batch's appended pages and its `fdatasync` are shared by all of its records; a record that finds the last
/// commit longer ago than that is written at once. Under load a record (and the `left` that waits for it) may so wait
/// up to 20 ms: 5 ms cost the history thread 33 µs per call at 7,000 calls/s, 10 ms 26 µs, 20 ms 22 µs. `done` runs for
/// each record only after the batch holding it is committed, so whoever logs "ended" from it never reports a
/// conversation the history could lose.
///
/// When a history server (PostgreSQL) cannot be reached, records wait in memory, in order, and are written when it is
/// back — retried after 1 s, doubling to 30 s. At most ``maxWaiting`` (10,000) wait: beyond that the oldest are dropped, each
/// drop logged as an error (their `done` gets nil). Other store errors drop the batch at once, logged, as before.
final class HistoryWriter: Sendable {
    /// Records that may wait for an unreachable server (about 1 KiB each).
    let maxWaiting: Int
    /// Seconds before the first retry of an unreachable server (doubling to 30 s).
    private let firstRetry: Double
    /// The least time from one commit's start to the next one's (seconds).
    let commitSpacing: Double
    private let recorder: HistoryRecorder
    private let queue = DispatchQueue(label: "parley.history")
    private let pending = Mutex(Pending())
    private let log: EngineLog

    private struct Pending {
        var records: [(CallRecord, @Sendable (CallRecord?) -> Void)] = []
        /// Records taken out of `records` by the write under way (back in `records` if the server is unreachable).
        var writing = 0
        var flushScheduled = false
        /// Seconds until the next retry while the server is unreachable (nil: it is reachable).
        var retryDelay: Double?
        /// When the last commit started (`DispatchTime` uptime, nanoseconds; 0: none yet).
        var lastCommit: UInt64 = 0
    }

    init(
        recorder: HistoryRecorder, log: EngineLog, maxWaiting: Int = 10_000, firstRetry: Double = 1,
        commitSpacing: Double = 0.020
    ) {
        self.recorder = recorder
        self.log = log
        self.maxWaiting = maxWaiting
        self.firstRetry = firstRetry
        precondition(commitSpacing >= 0 && commitSpacing <= 86_400, "commit spacing of \(commitSpacing) s")
        self.commitSpacing = commitSpacing
    }

    /// How many records wait to be written (those of an unreachable server included, and those a write under way
    /// is trying).
    var waiting: Int { pending.withLock { $0.records.count + $0.writing } }

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
        _ caller: Handle, to local: Handle, callID: String, account: String?, at date: Date, status: CallStatus = .blocked,
        done: @escaping @Sendable (CallRecord?) -> Void
    ) {
        guard let record = recorder.blockedRecord(from: caller, to: local, callID: callID, at: date, account: account, status: status) else {
            done(nil)
            return
        }
        write(record, done: done)
    }

    private func write(_ record: CallRecord, done: @escaping @Sendable (CallRecord?) -> Void) {
        let (flushAt, dropped) = pending.withLock {
            pending -> (DispatchTime?, [(CallRecord, @Sendable (CallRecord?) -> Void)]) in
            pending.records.append((record, done))
            let excess = pending.records.count - maxWaiting
            let dropped = excess > 0 ? Array(pending.records.prefix(excess)) : []
            if excess > 0 { pending.records.removeFirst(excess) }
            defer { pending.flushScheduled = true }
            guard !pending.flushScheduled else { return (nil, dropped) }
            guard pending.lastCommit > 0 else { return (.now(), dropped) }
            return (DispatchTime(uptimeNanoseconds: pending.lastCommit + UInt64(commitSpacing * 1e9)), dropped)
        }
        drop(dropped)
        if let flushAt {
            if flushAt > .now() {
                queue.asyncAfter(deadline: flushAt) { self.flush() }
            } else {
                queue.async { self.flush() }
            }
        }
    }

    private func drop(_ records: [(CallRecord, @Sendable (CallRecord?) -> Void)]) {
        for (lost, done) in records {
            log.error("call history: conversation \(lost.uuid) dropped: more than \(maxWaiting) records wait for the server")
            done(nil)
        }
    }

    /// Waits until everything queued so far is committed — or, while the server is unreachable, tries once more and
    /// says how many records are still waiting (a process stopping now loses them; the log names each conversation).
    func drain() {
        queue.sync { flush() }
        let left = pending.withLock { $0.retryDelay == nil ? [] : $0.records.map(\.0.uuid) }
        for uuid in left { log.error("call history: conversation \(uuid) not written: the server is still unreachable") }
    }

    private func flush() {
        let batch = pending.withLock { pending in
            defer {
                if !pending.records.isEmpty { pending.lastCommit = DispatchTime.now().uptimeNanoseconds }
                pending.writing = pending.records.count
                pending.records.removeAll(keepingCapacity: true)
                pending.flushScheduled = false
            }
            return pending.records
        }
        guard !batch.isEmpty else { return }
        do {
            let stored = try recorder.store.insertReturningRecords(batch.map(\.0))
            let recovered = pending.withLock { pending in
                defer {
                    pending.retryDelay = nil
                    pending.writing = 0
                }
                return pending.retryDelay != nil
            }
            if recovered { log.info("call history: the server is back; \(batch.count) waiting record(s) written") }
            for (record, (_, done)) in zip(stored, batch) { done(record) }
        } catch .unavailable(let server, let detail) {
            // Back to the front, in order (the oldest beyond the bound dropped); a retry is scheduled instead of the
            // usual flush.
            let (delay, dropped) = pending.withLock { pending -> (Double, [(CallRecord, @Sendable (CallRecord?) -> Void)]) in
                pending.records.insert(contentsOf: batch, at: 0)
                pending.writing = 0
                let excess = max(0, pending.records.count - maxWaiting)
                let dropped = Array(pending.records.prefix(excess))
                pending.records.removeFirst(excess)
                let delay = pending.retryDelay.map { min($0 * 2, 30) } ?? firstRetry
                if pending.retryDelay == nil {
                    log.error("call history: \(server) cannot be reached (\(detail)); records wait in memory (at most \(maxWaiting))")
                }
                pending.retryDelay = delay
                pending.flushScheduled = true
                return (delay, dropped)
            }
            drop(dropped)
            queue.asyncAfter(deadline: .now() + delay) { self.flush() }
        } catch {
            pending.withLock { $0.writing = 0 }
            log.error("call history: \(batch.count) record(s) could not be written: \(error)")
            for (_, done) in batch { done(nil) }
        }
    }
}
