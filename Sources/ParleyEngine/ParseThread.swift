import Dispatch
import Foundation
import ParleyIO
import SIPMessages
import SIPSignaling
import SIPTransport
import Synchronization

/// A message the engine's thread read (a datagram, or one framed off a stream) and the parse thread parsed: the
/// message, or why it is malformed; a request as received (`ReceivedRequest`: stamped, its transaction key
/// found); for a new INVITE carrying SDP, its offer parsed too. The engine would do each of these next, on its own
/// thread, and none needs its state.
struct ParsedInbound: Sendable {
    let inbound: InboundSIPMessage
    let source: SIPDestination
    let result: Result<SIPMessage, SIPParseError>
    /// The request, ready for the transactions (nil for a response or a malformed message).
    let request: ReceivedRequest?
    /// The new INVITE's SDP body and what parsing it gave.
    let offer: (body: Data, result: Result<SDPSession, SDPParseError>)?

    init(inbound: InboundSIPMessage, source: SIPDestination, memo: SIPParseMemo) {
        self.inbound = inbound
        self.source = source
        result = Result { () throws(SIPParseError) in try SIPMessage.parse(inbound.bytes, memo: memo) }
        if case .success(.request(let request)) = result {
            self.request = ReceivedRequest(request, from: source)
            if let body = request.newInviteOffer {
                offer = (body, Result { () throws(SDPParseError) in try SDPSession.parse(body) })
            } else {
                offer = nil
            }
        } else {
            request = nil
            offer = nil
        }
    }
}

/// A request as the engine takes it in: stamped with where it came from (RFC 3581, `stampingReceived`) and with the
/// key of the server transaction it belongs to (nil when it lacks the fields matching needs).
struct ReceivedRequest: Sendable {
    let request: SIPRequest
    let key: TransactionKey?

    init(_ request: SIPRequest, from source: SIPDestination) {
        self.request = SIPUserAgent.stampingReceived(request, from: source)
        key = TransactionKey(serverRequest: self.request)
    }
}

extension SIPRequest {
    /// The SDP body of a new INVITE (no To tag, Content-Type application/sdp), which the engine parses as the offer.
    var newInviteOffer: Data? {
        guard method == .invite, !body.isEmpty, headers.toTag == nil,
            headers.contentType?.mediaType.lowercased() == "application/sdp"
        else { return nil }
        return body
    }
}

/// Parses inbound SIP on a thread of its own, so that parsing (about a third of the engine's instructions per call,
/// with a new INVITE's SDP offer) runs on the second core while the engine's thread drives calls. UDP datagrams and
/// messages framed off TCP and TLS streams alike: one thread and one queue keep the arrival order (per connection
/// too); parsed messages go back to the engine's thread in batches (one `execute` per batch, not per message). The
/// queue is bounded: from three quarters of `limit` on, new out-of-dialog requests are refused (calls in progress keep
/// the rest), and at `limit` everything is; the caller drops what is refused and counts it, as the kernel drops a
/// datagram for a full receive buffer (UDP peers retransmit; over a stream the peer's transaction times out). Once
/// stopped, `submit` says so and the caller parses inline. An idle thread is woken by `wake()` at the end of the engine
/// thread's turn, once for all it read. It needs an environment whose `execute` hands work to the engine's thread
/// (the daemon's event loop).
///
/// ```
///  engine thread: read, frame, ban check, shed check ──submit──► queue ──► parse thread: parse each in order
///       ▲        │ end of turn: wake() ┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄┄► │ (when idle)
///       │        │ full (new requests: ¾ full) → dropped, counted                           │
///       │        │ stopped → parsed inline                                                   │
///       └──────────── deliver(batch) on the engine's thread, in order ◄─────────────────────┘
/// ```
final class ParseThread: Sendable {
    /// What became of a submitted message.
    enum Submission: Equatable {
        /// Queued: it comes back parsed, in order.
        case queued
        /// The queue is full (for a new out-of-dialog request, three quarters full): dropped.
        case full
        /// The thread stopped: parse it where you are.
        case stopped
    }

    private struct State {
        var queue: [(InboundSIPMessage, SIPDestination)] = []
        /// The thread waits on `wakeUp`: work given to it from now on must signal it, once.
        var idle = true
        /// Work was given to the idle thread: the next `wake()` signals it.
        var wakeOwed = false
        /// When the oldest message in `queue` was submitted (monotonic nanoseconds; 0 while the queue is empty).
        var backlogSince: UInt64 = 0
        /// The longest a taken queue's oldest message had waited, since overload control last asked.
        var longestWait: UInt64 = 0
        var stopping = false
        /// Batches the engine's thread is done with, and call legs it forgot, freed here (see `release`).
        var spent: [[ParsedInbound]] = []
        /// Arrays as handed over: appending their legs one by one copied each (retaining all it holds) and left the
        /// engine's thread to release the originals.
        var spentLegs: [[CallLeg]] = []

        mutating func oweWakeIfIdle() {
            guard idle else { return }
            idle = false
            wakeOwed = true
        }
    }

    /// The most messages waiting to be parsed.
    let limit: Int
    private let state = Mutex(State())
    private let wakeUp = DispatchSemaphore(value: 0)
    /// `State.backlogSince`, readable without the lock.
    private let backlogStart = Atomic<UInt64>(0)
    /// Time spent waiting for work, and when the current wait began (0: not waiting), in monotonic nanoseconds.
    private let idleNanoseconds = Atomic<UInt64>(0)
    private let waitingSince = Atomic<UInt64>(0)
    private let stopped = DispatchSemaphore(value: 0)
    private let deliver: @Sendable ([ParsedInbound], ParseThread) -> Void

    /// Starts the thread; `deliver` is called on it with each batch, in arrival order, and this thread (it hands the
    /// batch over to the engine's thread, which gives it back with `release` when done).
    init(limit: Int = 8192, deliver: @escaping @Sendable ([ParsedInbound], ParseThread) -> Void) {
        precondition(limit > 0, "a parse queue holds at least one message")
        self.limit = limit
        self.deliver = deliver
        let thread = Thread { [self] in run() }
        thread.name = "parley-parse"
        thread.start()
    }

    /// Queues a message (from the engine's thread). A new out-of-dialog request (`isNewRequest`, asked only once the
    /// queue is three quarters full) is refused from there on, so that the last quarter stays for calls in progress.
    /// An idle thread is not woken here but by the next `wake()`: once for a whole read burst, not once per message.
    func submit(
        _ inbound: InboundSIPMessage, from source: SIPDestination, isNewRequest: @autoclosure () -> Bool
    ) -> Submission {
        state.withLock { state -> Submission in
            if state.stopping { return .stopped }
            let count = state.queue.count
            if count >= limit || (count >= limit - limit / 4 && isNewRequest()) { return .full }
            if state.queue.isEmpty {
                state.backlogSince = monotonicNanoseconds()
                backlogStart.store(state.backlogSince, ordering: .relaxed)
            }
            state.queue.append((inbound, source))
            state.oweWakeIfIdle()
            return .queued
        }
    }

    /// Wakes the thread for what `submit` and `release` gave it since it went idle; does nothing when it is busy (it
    /// looks at its queue before it sleeps) or owed nothing. The engine's thread calls it at the end of its turn.
    /// Waking once per turn matters: woken per message, the thread took the engine's core for each (10,500 wake-ups
    /// and 10,100 preemptions of the engine's thread a second at 10,000 calls/s; 1,350 and 1,260 once per turn).
    func wake() {
        let owed = state.withLock { state -> Bool in
            defer { state.wakeOwed = false }
            return state.wakeOwed
        }
        if owed { wakeUp.signal() }
    }

    // MARK: Load, for overload control

    /// How long the oldest message waiting now has waited (zero when none waits): how long one queued now will wait
    /// at least.
    func backlogAge() -> Duration {
        let since = backlogStart.load(ordering: .relaxed)
        guard since != 0 else { return .zero }
        return .nanoseconds(Int64(clamping: monotonicNanoseconds() &- since))
    }

    /// The time the thread has spent waiting for work since it started, the wait going on now included.
    var idleTime: Duration {
        let idle = idleNanoseconds.load(ordering: .relaxed)
        let since = waitingSince.load(ordering: .relaxed)
        let now = since == 0 ? 0 : monotonicNanoseconds() &- since
        return .nanoseconds(Int64(clamping: idle &+ now))
    }

    /// The longest a message waited in the queue before the thread took it, since the last call (nil: none taken).
    func takeLongestWait() -> Duration? {
        let longest = state.withLock { state -> UInt64 in
            defer { state.longestWait = 0 }
            return state.longestWait
        }
        return longest == 0 ? nil : .nanoseconds(Int64(clamping: longest))
    }

    /// Takes back a delivered batch the engine's thread has handled, and the call legs it forgot meanwhile, to free
    /// them here: the messages the batch alone still holds (most of them: an ACK, a BYE, a retransmission) and each
    /// leg's INVITE were allocated on this thread, and freeing them cost the engine's thread about 3 % of its time
    /// for the batches and as much again for the legs. An idle thread is woken for it by the next `wake()`, so nothing
    /// is held while the engine idles; once stopped, they are freed by the caller.
    func release(_ batch: [ParsedInbound], legs: [CallLeg] = []) {
        state.withLock { state in
            guard !state.stopping else { return }
            if !batch.isEmpty { state.spent.append(batch) }
            if !legs.isEmpty { state.spentLegs.append(legs) }
            state.oweWakeIfIdle()
        }
    }

    /// Stops the thread and waits until it has (every caller does); what is still queued is dropped. Not from the
    /// parse thread itself (its `deliver` hands work over; it never stops the thread).
    func stop() {
        let first = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.stopping = true
            state.queue.removeAll()
            state.spent.removeAll()
            state.spentLegs.removeAll()
            return true
        }
        if first { wakeUp.signal() }
        // A latch: the thread signals once when it exits; each waiter passes the signal on.
        stopped.wait()
        stopped.signal()
    }

    private func run() {
        // The memo lives on this thread only (the engine's thread parses only after the thread stopped, with its own).
        let memo = SIPParseMemo()
        while true {
            let since = monotonicNanoseconds()
            waitingSince.store(since, ordering: .relaxed)
            wakeUp.wait()
            // Added before the wait is cleared: a reader in between counts the wait twice, never not at all.
            idleNanoseconds.add(monotonicNanoseconds() &- since, ordering: .relaxed)
            waitingSince.store(0, ordering: .relaxed)
            while true {
                var spent: [[ParsedInbound]] = []
                var spentLegs: [[CallLeg]] = []
                let (batch, stopping) = state.withLock { state -> ([(InboundSIPMessage, SIPDestination)], Bool) in
                    if state.stopping { return ([], true) }
                    swap(&spent, &state.spent)
                    swap(&spentLegs, &state.spentLegs)
                    if state.queue.isEmpty {
                        state.idle = true
                        return ([], false)
                    }
                    var taken: [(InboundSIPMessage, SIPDestination)] = []
                    swap(&taken, &state.queue)
                    state.longestWait = max(state.longestWait, monotonicNanoseconds() &- state.backlogSince)
                    state.backlogSince = 0
                    backlogStart.store(0, ordering: .relaxed)
                    return (taken, false)
                }
                spent.removeAll()  // outside the lock
                spentLegs.removeAll()
                if stopping {
                    stopped.signal()
                    return
                }
                if batch.isEmpty { break }
                deliver(batch.map { inbound, source in ParsedInbound(inbound: inbound, source: source, memo: memo) }, self)
            }
        }
    }
}
