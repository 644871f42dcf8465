import Dispatch
import Foundation
import Glibc
import ParleyIO
import Synchronization

/// Sends UDP datagrams on a thread of its own, so that the kernel's share of a send (`sendto`, the loopback delivery
/// and waking the receiver: about an eighth of the engine thread's time at full call rate) runs on the second core.
/// The loop thread collects a turn's datagrams and hands them over in one batch (`submit`) at the end of the turn;
/// the sender writes them in order (serialising the messages that come as functions), `sendmmsg` for each run of
/// datagrams on one socket. The queue is bounded (`limit`): what does not fit is handed back, for the transport to
/// report as a send failure. What the kernel refuses goes back through `onRefusals`, called on the sender thread
/// (the transport hops back onto its loop to report it). A socket is closed only after `drain` saw everything
/// handed over for it written, or after `stop` returned, so a queued datagram never goes out on a reused descriptor.
///
/// ```
///  loop thread: send ─► pending (this turn) ─► end of turn or 64 pending ─submit─► queue ──► sender thread
///                                                        │ limit waiting → handed back   │ sendmmsg per socket run
///       ◄── execute: refusals reported as send failures, at the end of that loop turn ◄──┘ (refused: errno)
///  close a socket: drain ─► a barrier through the queue; the loop waits until the sender passes it
///  stop: queue dropped, barriers released, returns once the thread has ended
/// ```
final class DatagramSender: Sendable {
    /// One datagram on its way: the socket it leaves from, its bytes (or what writes them) and where it goes.
    struct Datagram: Sendable {
        let fd: Int32
        let payload: OutgoingPayload
        let address: SocketAddress
        let destination: SIPDestination
    }

    /// A datagram with its bytes written, as `DatagramBatch` takes it.
    private struct Written: OutgoingDatagram {
        let bytes: Data
        let address: SocketAddress
        let destination: SIPDestination
    }

    /// A datagram the kernel did not take, and why (errno).
    struct Refusal: Sendable {
        let destination: SIPDestination
        let code: Int32
    }

    /// What the queue holds: datagrams, and barriers a `drain` waits on.
    fileprivate enum Item {
        case datagram(Datagram)
        case barrier(DispatchSemaphore)
    }

    fileprivate struct State {
        var queue: [Item] = []
        /// Datagrams in `queue`.
        var datagrams = 0
        /// The thread waits on `wake`: the next submission must signal it.
        var idle = true
        var stopping = false
    }

    /// The most datagrams in one `sendmmsg`.
    static let chunk = 64
    /// Room for one chunk's bytes (`DatagramBatch` copies them in).
    private static let bufferSize = 256 * 1024

    /// The most datagrams waiting at once.
    let limit: Int
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let bytesWritten = Atomic<Int>(0)
    private let onRefusals: @Sendable ([Refusal]) -> Void

    /// Starts the thread; `onRefusals` hears, on it, each batch's refused datagrams.
    init(limit: Int, onRefusals: @escaping @Sendable ([Refusal]) -> Void) {
        precondition(limit > 0, "a send queue holds at least one datagram")
        self.limit = limit
        self.onRefusals = onRefusals
        let thread = Thread { [self] in run() }
        thread.name = "parley-send"
        thread.start()
    }

    /// Bytes the kernel took so far.
    var bytesSent: Int { bytesWritten.load(ordering: .relaxed) }

    /// Queues datagrams to be sent in this order, after everything submitted before; returns those it refused
    /// because `limit` were already waiting (once stopped, it takes none and refuses none: the transport is closed).
    func submit(_ datagrams: [Datagram]) -> ArraySlice<Datagram> {
        guard !datagrams.isEmpty else { return [] }
        var taken = 0
        let mustWake = state.withLock { state -> Bool in
            if state.stopping {
                taken = datagrams.count
                return false
            }
            taken = min(datagrams.count, limit - state.datagrams)
            state.queue.append(contentsOf: datagrams[..<taken].lazy.map(Item.datagram))
            state.datagrams += taken
            return state.wakeIfIdle()
        }
        if mustWake { wake.signal() }
        return datagrams[taken...]
    }

    /// Waits until everything submitted so far has been written (or the sender stopped). Not on the sender thread.
    func drain() {
        let barrier = DispatchSemaphore(value: 0)
        let (queued, mustWake) = state.withLock { state -> (Bool, Bool) in
            if state.stopping { return (false, false) }
            state.queue.append(.barrier(barrier))
            return (true, state.wakeIfIdle())
        }
        if mustWake { wake.signal() }
        if queued { barrier.wait() }
    }

    /// Stops the thread and waits until it has: what is still queued is dropped and every `drain` waiting returns.
    /// Once it returns, no datagram is written any more (a socket may close). Not on the sender thread.
    func stop() {
        let (dropped, first) = state.withLock { state -> ([Item], Bool) in
            guard !state.stopping else { return ([], false) }
            state.stopping = true
            defer {
                state.queue = []
                state.datagrams = 0
            }
            return (state.queue, true)
        }
        Self.release(dropped)
        if first { wake.signal() }
        // A latch: the thread signals once when it exits; each waiter passes the signal on.
        stopped.wait()
        stopped.signal()
    }

    private static func release(_ items: [Item]) {
        for case .barrier(let barrier) in items { barrier.signal() }
    }

    private func run() {
        let writer = DatagramBatch(capacity: Self.chunk, bufferSize: Self.bufferSize)
        while true {
            wake.wait()
            while true {
                let (batch, stopping) = state.withLock { state -> ([Item], Bool) in
                    if state.stopping { return ([], true) }
                    if state.queue.isEmpty {
                        state.idle = true
                        return ([], false)
                    }
                    var taken: [Item] = []
                    swap(&taken, &state.queue)
                    state.datagrams = 0
                    return (taken, false)
                }
                if stopping {
                    stopped.signal()
                    return
                }
                if batch.isEmpty { break }
                write(batch, with: writer)
            }
        }
    }

    /// Writes a batch in order: barriers are released when reached, datagrams go out in runs per socket.
    private func write(_ batch: [Item], with writer: DatagramBatch) {
        var refusals: [Refusal] = []
        var index = 0
        while index < batch.count {
            guard case .datagram(let first) = batch[index] else {
                if case .barrier(let barrier) = batch[index] { barrier.signal() }
                index += 1
                continue
            }
            var run: [Written] = [Written(bytes: first.payload.bytes, address: first.address, destination: first.destination)]
            var end = index + 1
            while end < batch.count, run.count < Self.chunk, case .datagram(let next) = batch[end], next.fd == first.fd {
                run.append(Written(bytes: next.payload.bytes, address: next.address, destination: next.destination))
                end += 1
            }
            let written = writer.send(run[...], from: first.fd) { refused, code in
                refusals.append(Refusal(destination: refused.destination, code: code))
            }
            bytesWritten.add(written, ordering: .relaxed)
            index = end
        }
        if !refusals.isEmpty { onRefusals(refusals) }
    }
}

extension DatagramSender.State {
    /// Marks the thread busy; true when it was idle (waiting on `wake`), so the caller must signal it.
    fileprivate mutating func wakeIfIdle() -> Bool {
        guard idle else { return false }
        idle = false
        return true
    }
}

/// What a send carries: bytes, or a function that writes them (a message serialised where it is sent from).
enum OutgoingPayload: Sendable {
    case bytes(Data)
    case deferred(@Sendable () -> Data)

    /// The bytes (written now, for a deferred payload).
    var bytes: Data {
        switch self {
        case .bytes(let bytes): bytes
        case .deferred(let write): write()
        }
    }
}
