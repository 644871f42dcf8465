internal import CLinux
import Glibc
import Synchronization

/// One thread that runs every socket, timer and handler on it: epoll over non-blocking sockets, an eventfd to wake
/// it, and a min-heap of timer deadlines on the monotonic clock. Every socket in a Parley process is driven by one
/// of these (SIP, the control API, the push channel), so there is one concurrency model: the loop thread.
///
/// A loop lives until `shutdown()`: its thread holds a reference to it, so dropping the last one of yours does not
/// stop it.
///
/// `Sendable`: the only state shared between threads is the work queue (a `Mutex`), the eventfd (written from any
/// thread, a single atomic syscall), the loop thread's identity (an `Atomic`) and the join state (a `Mutex`). The
/// epoll set, registrations and timers live in a `LoopBound` that traps when touched off the loop thread.
public final class EventLoop: Sendable {
    /// Work handed over from other threads, and whether the loop still takes any.
    private struct Inbox {
        var work: [@Sendable () -> Void] = []
        /// An eventfd write is on its way: further `execute` calls need not write again.
        var wakePending = false
        /// Cleared by `shutdown()`; work offered later is dropped.
        var accepting = true
    }

    /// The thread, and whether someone has joined it.
    private struct Lifecycle {
        var thread: pthread_t?
        var joined = false
    }

    /// The name given to the thread (at most 15 bytes of it are visible to the system).
    public let name: String
    package let identity = LoopThreadIdentity()
    private let inbox = Mutex(Inbox())
    private let lifecycle = Mutex(Lifecycle())
    private let wakeFD: Int32
    private let core: LoopBound<LoopCore>

    /// Starts the loop thread. Throws when the kernel refuses an eventfd, epoll set or thread.
    public init(name: String = "parley-loop") throws(IOError) {
        self.name = name
        let fd = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        guard fd >= 0 else { throw IOError("eventfd", code: errno) }
        wakeFD = fd
        let loopCore: LoopCore
        do {
            loopCore = try LoopCore(wakeFD: fd)
        } catch {
            close(fd)
            throw error
        }
        core = LoopBound(loopCore, identity: identity)
        // The thread holds the loop until it ends, so `shutdown()` is what releases it.
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let code = pthread_create(&thread, nil, { context in
            let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
            loop.run()
            return nil
        }, context)
        guard code == 0 else {
            Unmanaged<EventLoop>.fromOpaque(context).release()
            throw IOError("pthread_create", code: code)
        }
        lifecycle.withLock { $0.thread = thread }
    }

    deinit {
        close(wakeFD)
    }

    /// Whether the caller runs on this loop's thread.
    public var inEventLoop: Bool { identity.isCurrent }

    /// How long the loop has waited for work since it started (time in `epoll_wait`); the rest of its life it was
    /// busy. Loop thread only (traps elsewhere).
    public var idleTime: Duration { .nanoseconds(Int64(clamping: core.value.idleNanoseconds)) }

    /// Runs `work` on the loop thread soon, after the work offered before it (FIFO). Callable from any thread,
    /// the loop thread included. Work offered after `shutdown()` began is dropped, never run.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        _ = offer(work)
    }

    /// `execute`, telling whether the work was taken (false once `shutdown()` has begun). Work taken always runs.
    package func offer(_ work: @escaping @Sendable () -> Void) -> Bool {
        let (accepted, mustWake) = inbox.withLock { inbox -> (Bool, Bool) in
            guard inbox.accepting else { return (false, false) }
            inbox.work.append(work)
            guard !inbox.wakePending else { return (true, false) }
            inbox.wakePending = true
            return (true, true)
        }
        if mustWake { wake() }
        return accepted
    }

    /// Runs `work` on the loop thread after `delay` (monotonic clock) and returns a handle for `cancel(_:)`. Timers
    /// due at the same moment fire in the order they were scheduled. Loop thread only.
    @discardableResult
    public func schedule(after delay: Duration, _ work: @escaping () -> Void) -> LoopTimer {
        let (deadline, overflow) = monotonicNanoseconds().addingReportingOverflow(delay.clampedNanoseconds)
        return core.value.timers.schedule(deadline: overflow ? .max : deadline, work)
    }

    /// Runs `work` once at the end of this loop turn: after its socket handlers, its timers and the work offered
    /// from other threads (work it adds runs at the end of the next turn). For batching what a turn produced, such
    /// as datagrams to send. Loop thread only.
    package func atEndOfTurn(_ work: @escaping () -> Void) {
        core.value.endOfTurn.append(work)
    }

    /// Cancels a timer that has not fired yet; does nothing for one that fired or was cancelled. Loop thread only.
    public func cancel(_ timer: LoopTimer) {
        core.value.timers.cancel(timer)
    }

    /// Timers scheduled and neither fired nor cancelled. Loop thread only.
    public var pendingTimerCount: Int { core.value.timers.liveCount }

    /// Stops the loop and waits for its thread to end: work already offered runs, pending timers are dropped,
    /// every socket registered on the loop is closed. Idempotent; callable from any thread but the loop's own.
    public func shutdown() {
        precondition(!inEventLoop, "EventLoop.shutdown() called on its own thread would wait for itself")
        stopAccepting()
        lifecycle.withLock { state in
            guard !state.joined, let thread = state.thread else { return }
            pthread_join(thread, nil)
            state.joined = true
        }
    }

    /// Stops the loop without waiting for its thread, which ends on its own once the work already offered has run
    /// (for an owner going away, possibly on the loop thread itself). Idempotent.
    public func shutdownWithoutWaiting() {
        stopAccepting()
        lifecycle.withLock { state in
            guard !state.joined, let thread = state.thread else { return }
            pthread_detach(thread)
            state.joined = true
        }
    }

    /// Takes no more work and wakes the thread, which then runs the last batch and ends.
    private func stopAccepting() {
        let mustWake = inbox.withLock { inbox -> Bool in
            let first = inbox.accepting
            inbox.accepting = false
            return first
        }
        if mustWake { wake() }
    }

    // MARK: - Package: registrations of the sockets on this loop

    /// Adds a descriptor to the epoll set. Loop thread only.
    package func register(_ fd: Int32, interest: UInt32, handler: any LoopFDHandler) throws(IOError) -> UInt64 {
        try core.value.register(fd, interest: interest, handler: handler)
    }

    /// Changes what a registration waits for. Loop thread only.
    package func modify(_ token: UInt64, interest: UInt32) {
        core.value.modify(token, interest: interest)
    }

    /// Removes a registration; call before closing its descriptor. Loop thread only.
    package func deregister(_ token: UInt64) {
        core.value.deregister(token)
    }

    /// A 64 KiB buffer for reads on the loop thread (reads never nest: handlers run one at a time). Loop thread only.
    package var scratch: UnsafeMutableRawBufferPointer { core.value.scratch }

    /// Traps when called on the loop thread (for calls that wait for the loop).
    package func preconditionNotInEventLoop(_ function: StaticString = #function) {
        precondition(!inEventLoop, "\(function) waits for the EventLoop, so it must not be called on its thread")
    }

    // MARK: - The loop thread

    private func wake() {
        var one: UInt64 = 1
        // The counter saturates only after 2^64-2 unread wake-ups; EAGAIN then still means "a wake-up is pending".
        _ = write(wakeFD, &one, MemoryLayout<UInt64>.size)
    }

    private func run() {
        identity.claim()
        _ = clinux_name_thread(name)
        let core = self.core.value
        while true {
            let woken = core.poll(timeoutMilliseconds: timeout(core))
            runDueTimers(core)
            let stop = woken && drainInbox()
            core.runEndOfTurn()
            if stop { break }
        }
        core.shutDownHandlers()
        identity.release()
    }

    /// How long epoll may sleep: until the earliest timer (rounded up to whole milliseconds), or forever; not at
    /// all while end-of-turn work waits.
    private func timeout(_ core: LoopCore) -> Int32 {
        if !core.endOfTurn.isEmpty { return 0 }
        guard let deadline = core.timers.nextDeadline() else { return -1 }
        let now = monotonicNanoseconds()
        guard deadline > now else { return 0 }
        let milliseconds = (deadline - now + 999_999) / 1_000_000
        return Int32(clamping: milliseconds)
    }

    /// Fires the timers due now; timers they schedule for "now" wait for the next turn, so a zero-delay timer that
    /// re-schedules itself cannot starve the sockets.
    private func runDueTimers(_ core: LoopCore) {
        let now = monotonicNanoseconds()
        while let work = core.timers.popDue(now: now) { work() }
    }

    /// Runs the work offered from other threads; returns true when the loop must stop.
    private func drainInbox() -> Bool {
        var counter: UInt64 = 0
        _ = read(wakeFD, &counter, MemoryLayout<UInt64>.size)
        let (work, stop) = inbox.withLock { inbox in
            inbox.wakePending = false
            let work = inbox.work
            inbox.work.removeAll()
            return (work, !inbox.accepting)
        }
        // Once `accepting` is false nothing more can join the queue: this batch is the last.
        for item in work { item() }
        return stop
    }
}
