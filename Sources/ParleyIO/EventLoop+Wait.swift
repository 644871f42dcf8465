import Dispatch
import Synchronization

extension EventLoop {
    /// Runs `work` on the loop and waits for its result; nil when the loop is shut down (the work then never runs).
    /// On the loop thread itself it runs `work` at once (waiting would wait for itself), so callers that may be on
    /// either side need no check of their own.
    public func executeAndWait<Value: Sendable>(_ work: @escaping @Sendable () -> Value) -> Value? {
        wait(for: work, until: .distantFuture)
    }

    /// `executeAndWait`, giving up after `timeout`: nil when the loop is shut down or did not run `work` in time
    /// (it may still run it later). For callers that must not hang on a loop that is stopping.
    public func executeAndWait<Value: Sendable>(
        within timeout: Duration, _ work: @escaping @Sendable () -> Value
    ) -> Value? {
        wait(for: work, until: .now() + .milliseconds(Int(timeout / .milliseconds(1))))
    }

    private func wait<Value: Sendable>(for work: @escaping @Sendable () -> Value, until deadline: DispatchTime) -> Value? {
        if inEventLoop { return work() }
        let box = ResultBox<Value>()
        guard offer({
            box.value.withLock { $0 = work() }
            box.done.signal()
        }) else { return nil }
        guard box.done.wait(timeout: deadline) == .success else { return nil }
        return box.value.withLock { $0 }
    }
}

/// Where `executeAndWait` leaves the result for the waiting thread.
private final class ResultBox<Value: Sendable>: Sendable {
    let value = Mutex<Value?>(nil)
    let done = DispatchSemaphore(value: 0)
}
