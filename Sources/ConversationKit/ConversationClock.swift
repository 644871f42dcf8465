import Dispatch
import Foundation
import Synchronization

/// Where the manager reads the time and asks to be woken for action timeouts. Injected, so tests never sleep.
public protocol ConversationClock: Sendable {
    /// The current time.
    func now() -> Date
    /// Calls `handler` once, at or after `deadline`, on any thread (or never, for a deadline that never comes).
    /// There is no cancellation: the manager tolerates early, late and spurious wake-ups.
    func wakeUp(at deadline: Date, _ handler: @escaping @Sendable () -> Void)
}

/// The wall clock, with wake-ups on a Dispatch queue.
public struct SystemClock: ConversationClock {
    private let queue: DispatchQueue

    /// A system clock waking on `queue` (a private serial queue by default).
    public init(queue: DispatchQueue = DispatchQueue(label: "parley.conversation-clock")) {
        self.queue = queue
    }

    /// `Date()`.
    public func now() -> Date { Date() }

    /// Schedules `handler` on the queue at `deadline` on the wall clock (so a stepped clock moves it too).
    public func wakeUp(at deadline: Date, _ handler: @escaping @Sendable () -> Void) {
        let seconds = deadline.timeIntervalSince1970
        guard seconds.isFinite, seconds < 1e15 else { return }  // never comes
        let whole = seconds.rounded(.down)
        let time = timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
        queue.asyncAfter(wallDeadline: DispatchWallTime(timespec: time), execute: handler)
    }
}

/// A clock that moves only when told: ``advance(by:)`` runs the wake-ups that fall due, in deadline order, on
/// the calling thread. For tests and the conformance runner.
public final class ManualClock: ConversationClock {
    private struct Pending {
        let deadline: Date
        let sequence: Int
        let handler: @Sendable () -> Void
    }
    private struct State {
        var now: Date
        var pending: [Pending] = []
        var nextSequence = 0
    }
    private let state: Mutex<State>

    /// A manual clock starting at `start` (2026-01-01T00:00:00Z by default).
    public init(start: Date = Date(timeIntervalSince1970: 1_767_225_600)) {
        state = Mutex(State(now: start))
    }

    /// The clock's current time.
    public func now() -> Date { state.withLock { $0.now } }

    /// How many wake-ups are waiting.
    public var pendingWakeUps: Int { state.withLock { $0.pending.count } }

    /// Records the wake-up; it runs during a later ``advance(by:)`` (or at once if the deadline has passed
    /// and ``advance(by:)`` is called with 0).
    public func wakeUp(at deadline: Date, _ handler: @escaping @Sendable () -> Void) {
        state.withLock { state in
            state.pending.append(Pending(deadline: deadline, sequence: state.nextSequence, handler: handler))
            state.nextSequence += 1
        }
    }

    /// Moves time forward by `interval` seconds (must not be negative), running each due wake-up at its deadline.
    public func advance(by interval: TimeInterval) {
        precondition(interval >= 0, "ManualClock cannot go backwards")
        let target = now().addingTimeInterval(interval)
        while true {
            let due: Pending? = state.withLock { state in
                guard let index = state.pending.indices.min(by: { a, b in
                    let x = state.pending[a], y = state.pending[b]
                    return (x.deadline, x.sequence) < (y.deadline, y.sequence)
                }), state.pending[index].deadline <= target else { return nil }
                let item = state.pending.remove(at: index)
                state.now = max(state.now, item.deadline)
                return item
            }
            guard let due else { break }
            due.handler()
        }
        state.withLock { $0.now = max($0.now, target) }
    }
}
