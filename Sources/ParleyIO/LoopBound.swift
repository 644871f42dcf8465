import Glibc
import Synchronization

/// Which thread is an event loop's thread: claimed once by that thread when it starts and given up when it ends (a
/// later thread may get the same `pthread_t`), readable from any thread.
package final class LoopThreadIdentity: Sendable {
    /// The loop thread's `pthread_t` (an unsigned long on Linux), or 0 before the thread has started or after it ended.
    private let thread = Atomic<UInt>(0)

    /// Called by the loop thread itself, before it runs anything else.
    package func claim() {
        thread.store(pthread_self(), ordering: .releasing)
    }

    /// Called by the loop thread itself, after it ran its last handler.
    package func release() {
        thread.store(0, ordering: .releasing)
    }

    /// Whether the calling thread is the loop thread.
    package var isCurrent: Bool {
        thread.load(ordering: .acquiring) == pthread_self()
    }
}

/// A value that only the loop thread may touch: the way loop-confined state travels inside `Sendable` types.
// @unchecked Sendable: `wrapped` is private and reached only through `value`, which traps unless the caller runs on the
// loop thread named by `identity`. The value is handed over `sending` (no other reference to its region remains with
// the creator), so after construction exactly one thread ever uses it, and the hand-over itself happens through the
// loop's Mutex-guarded queue or thread start, both of which order the construction before any use.
package struct LoopBound<Value>: @unchecked Sendable {
    private let wrapped: Value
    private let identity: LoopThreadIdentity

    package init(_ value: sending Value, identity: LoopThreadIdentity) {
        wrapped = value
        self.identity = identity
    }

    /// The value; traps when called off the loop thread (a broken promise of our own, not a peer fault).
    package var value: Value {
        precondition(identity.isCurrent, "loop-confined state touched off its event loop thread")
        return wrapped
    }
}

/// A weak reference to a loop-confined object, for callbacks that arrive on other threads (a clock's wake-up) and
/// hop onto the loop before they touch it.
// @unchecked Sendable: `wrapped` is private and read only through `value`, which traps unless the caller runs on the
// loop thread named by `identity`; the reference is made on that thread too (the initialiser checks). So the object
// is only ever touched on its loop, and the box itself holds nothing else mutable.
package struct LoopWeak<Value: AnyObject>: @unchecked Sendable {
    private weak var wrapped: Value?
    private let identity: LoopThreadIdentity

    /// A reference to `value`, made on its loop's thread.
    package init(_ value: Value, identity: LoopThreadIdentity) {
        precondition(identity.isCurrent, "a loop-confined object is referenced on its own loop thread")
        wrapped = value
        self.identity = identity
    }

    /// The object, if it still lives; traps when called off the loop thread.
    package var value: Value? {
        precondition(identity.isCurrent, "loop-confined state touched off its event loop thread")
        return wrapped
    }
}
