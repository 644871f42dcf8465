import Glibc
import Synchronization

/// Which thread is an event loop's thread: claimed once by that thread when it starts, readable from any thread.
final class LoopThreadIdentity: Sendable {
    /// The loop thread's `pthread_t` (an unsigned long on Linux), or 0 before the thread has started.
    private let thread = Atomic<UInt>(0)

    /// Called by the loop thread itself, before it runs anything else.
    func claim() {
        thread.store(pthread_self(), ordering: .releasing)
    }

    /// Whether the calling thread is the loop thread.
    var isCurrent: Bool {
        thread.load(ordering: .acquiring) == pthread_self()
    }
}

/// A value that only the loop thread may touch: the way loop-confined state travels inside `Sendable` types.
// @unchecked Sendable: `wrapped` is private and reached only through `value`, which traps unless the caller runs on the
// loop thread named by `identity`. The value is handed over `sending` (no other reference to its region remains with
// the creator), so after construction exactly one thread ever uses it, and the hand-over itself happens through the
// loop's Mutex-guarded queue or thread start, both of which order the construction before any use.
struct LoopBound<Value>: @unchecked Sendable {
    private let wrapped: Value
    private let identity: LoopThreadIdentity

    init(_ value: sending Value, identity: LoopThreadIdentity) {
        wrapped = value
        self.identity = identity
    }

    /// The value; traps when called off the loop thread (a broken promise of our own, not a peer fault).
    var value: Value {
        precondition(identity.isCurrent, "loop-confined state touched off its event loop thread")
        return wrapped
    }
}
