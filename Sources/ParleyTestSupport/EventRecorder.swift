import Dispatch
import Synchronization

/// The longest any test waits for something that should happen at once on loopback; a wait that runs out fails.
public let patience: Duration = .seconds(5)

/// Collects values from any thread and lets a test wait for them (a semaphore per value, never a sleep). Shared by
/// every test target that watches a loop, a server or a process from the outside.
public final class EventRecorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    private let arrived = DispatchSemaphore(value: 0)

    /// An empty recorder.
    public init() {}

    /// Records one value (from any thread).
    public func record(_ value: Value) {
        values.withLock { $0.append(value) }
        arrived.signal()
    }

    /// Everything recorded so far.
    public var all: [Value] { values.withLock { $0 } }

    /// Waits until `count` values have been recorded (at most `timeout`); returns the first `count`, or nil.
    public func wait(for count: Int, within timeout: Duration = patience) -> [Value]? {
        let deadline = Self.deadline(after: timeout)
        while values.withLock({ $0.count }) < count {
            guard arrived.wait(timeout: deadline) == .success else { return nil }
        }
        return Array(values.withLock { $0 }.prefix(count))
    }

    /// Waits until the values recorded satisfy `condition` (at most `timeout`); false if they never do.
    public func wait(until condition: ([Value]) -> Bool, within timeout: Duration = patience) -> Bool {
        let deadline = Self.deadline(after: timeout)
        while !condition(values.withLock { $0 }) {
            guard arrived.wait(timeout: deadline) == .success else { return condition(values.withLock { $0 }) }
        }
        return true
    }

    /// Waits for the first value, at most `timeout`.
    public func first(within timeout: Duration = patience) -> Value? {
        wait(for: 1, within: timeout)?.first
    }

    private static func deadline(after timeout: Duration) -> DispatchTime {
        .now() + .milliseconds(Int(timeout / .milliseconds(1)))
    }
}
