import Synchronization
import Dispatch

/// A one-shot event a shutdown waits for: fired once (later calls do nothing), waited for once.
final class ShutdownSignal: Sendable {
    private let fired = Atomic<Bool>(false)
    private let semaphore = DispatchSemaphore(value: 0)

    /// Fires the event; the first call wakes the waiter.
    func fire() {
        guard !fired.exchange(true, ordering: .acquiringAndReleasing) else { return }
        semaphore.signal()
    }

    /// Waits until the event has fired.
    func wait() { semaphore.wait() }
}
