import CallHistory
import ConversationKit
import Foundation
import Synchronization

/// Keeps the ``LiveCallJournal`` of the calls live on this node, off the signalling thread: each live conversation's
/// crash record (what the history gets if the node stops without ending it) when it appears and whenever what it would
/// record changes (connected, members, group, video, account, encryption, Call-ID), and its end once its own history
/// record is durable. Changes are written in batches at most ``spacing`` (100 ms) apart, each flushed to disk; a change
/// after a quiet spell is written at once. A call that begins and ends between two writes is never written at all (at
/// 10,000 calls a second most are), so a crash forgets at most the calls that began in its last 100 ms. While calls
/// are live the file is touched every ``heartbeat`` (10 s): its modification time is the end time a crash gets.
final class LiveCallWriter: Sendable {
    /// The least time between two writes (seconds).
    let spacing: Double
    /// How often the file is touched while calls are live (seconds).
    let heartbeat: Double
    private let journal: LiveCallJournal
    private let recorder: HistoryRecorder
    private let log: EngineLog
    private let queue = DispatchQueue(label: "parley.live-calls")
    private let pending = Mutex(Pending())
    /// What the file holds: touched on `queue` only.
    private let written = Mutex(Written())

    /// What a call's record depends on: a change of any of these rewrites its line.
    private struct Shape: Equatable {
        var connected: Bool
        var members: Set<Handle>
        var group: UUID?
        var isVideo: Bool
        var account: String?
        var encryption: String?
        var callID: String?
    }

    private enum Change {
        case live(Conversation, callID: String?)
        case ended
    }

    private struct Pending {
        /// Each live conversation's shape as last queued.
        var shapes: [UUID: Shape] = [:]
        var changes: [UUID: Change] = [:]
        var flushScheduled = false
        /// When the last write started (`DispatchTime` uptime nanoseconds; 0: none yet).
        var lastWrite: UInt64 = 0
    }

    private struct Written {
        /// The calls with a live line in the file, as written.
        var live: [UUID: CallRecord] = [:]
        var lines = 0
        var heartbeatScheduled = false
        var failed = false
        var closed = false
    }

    init(journal: LiveCallJournal, recorder: HistoryRecorder, log: EngineLog, spacing: Double = 0.1, heartbeat: Double = 10) {
        self.journal = journal
        self.recorder = recorder
        self.log = log
        self.spacing = spacing
        self.heartbeat = heartbeat
    }

    /// Notes a change of a live conversation (any thread); only a change of what it would record is written.
    func changed(_ conversation: Conversation, callID: String?) {
        let shape = Shape(
            connected: conversation.connectedAt != nil, members: conversation.members,
            group: conversation.groupUUID ?? conversation.lastGroupUUID, isVideo: conversation.isVideo,
            account: conversation.account, encryption: conversation.encryption, callID: callID)
        let uuid = conversation.uuid
        let flushAt = pending.withLock { pending -> DispatchTime? in
            guard pending.shapes[uuid] != shape else { return nil }
            pending.shapes[uuid] = shape
            pending.changes[uuid] = .live(conversation, callID: callID)
            return schedule(&pending)
        }
        if let flushAt { queue.asyncAfter(deadline: flushAt) { self.flush() } }
    }

    /// Notes that a conversation's own history record is durable (or that it will have none): it is live no more.
    func ended(_ uuid: UUID) {
        let flushAt = pending.withLock { pending -> DispatchTime? in
            guard pending.shapes.removeValue(forKey: uuid) != nil else { return nil }
            pending.changes[uuid] = .ended
            return schedule(&pending)
        }
        if let flushAt { queue.asyncAfter(deadline: flushAt) { self.flush() } }
    }

    /// When the next write is due, if none is scheduled yet.
    private func schedule(_ pending: inout Pending) -> DispatchTime? {
        guard !pending.flushScheduled else { return nil }
        pending.flushScheduled = true
        let due = pending.lastWrite + UInt64(spacing * 1e9)
        return pending.lastWrite == 0 || due <= DispatchTime.now().uptimeNanoseconds ? .now() : DispatchTime(uptimeNanoseconds: due)
    }

    /// Writes what is queued, then, at a clean stop: removes the file when no call is live (else says how many the
    /// next start will record as crashed).
    func drain() {
        queue.sync {
            flush()
            let left = written.withLock { written -> Int in
                written.closed = true
                return written.live.count
            }
            if left == 0 {
                journal.remove()
            } else {
                journal.close()
                log.error("live-call journal: \(left) call(s) still live at the stop; the next start records them as crashed")
            }
        }
    }

    /// On `queue`.
    private func flush() {
        let changes = pending.withLock { pending in
            defer {
                pending.changes = [:]
                pending.flushScheduled = false
                pending.lastWrite = DispatchTime.now().uptimeNanoseconds
            }
            return pending.changes
        }
        guard !changes.isEmpty else { return }
        let now = Date()
        written.withLock { written in
            guard !written.closed, !written.failed else { return }
            var entries: [LiveCallJournal.Entry] = []
            for (uuid, change) in changes {
                switch change {
                case .live(let conversation, let callID):
                    guard let record = recorder.crashRecord(for: conversation, callID: callID, now: now) else { continue }
                    written.live[uuid] = record
                    entries.append(.live(record))
                case .ended:
                    // Never written (it began and ended between two writes): nothing to take back.
                    guard written.live.removeValue(forKey: uuid) != nil else { continue }
                    entries.append(.ended(uuid))
                }
            }
            do throws(CallHistoryError) {
                if written.live.isEmpty {
                    if written.lines > 0 { try journal.clear() }
                    written.lines = 0
                } else if written.lines + entries.count > 2 * written.live.count + 256 {
                    try journal.rewrite(written.live.values.sorted { $0.startedAt < $1.startedAt })
                    written.lines = written.live.count
                } else {
                    try journal.append(entries)
                    written.lines += entries.count
                }
            } catch {
                written.failed = true
                log.error("live-call journal: \(error); calls up at a crash are not recorded until parleyd restarts")
                return
            }
            if !written.live.isEmpty, !written.heartbeatScheduled {
                written.heartbeatScheduled = true
                queue.asyncAfter(deadline: .now() + heartbeat) { [weak self] in self?.beat() }
            }
        }
    }

    /// On `queue`: touches the file while calls are live.
    private func beat() {
        written.withLock { written in
            written.heartbeatScheduled = false
            guard !written.live.isEmpty, !written.closed, !written.failed else { return }
            journal.touch()
            written.heartbeatScheduled = true
            queue.asyncAfter(deadline: .now() + heartbeat) { [weak self] in self?.beat() }
        }
    }
}
