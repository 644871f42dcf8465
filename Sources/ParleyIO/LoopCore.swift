internal import CLinux
import Glibc

/// Something with a file descriptor registered on the loop's epoll set. Called on the loop thread only.
package protocol LoopFDHandler: AnyObject {
    /// The descriptor is ready: `events` is the epoll mask (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP…).
    func handle(events: UInt32)
    /// The loop is shutting down: close the descriptor and free what hangs on it. No other loop call follows.
    func loopWillShutDown()
}

/// epoll interest masks, as the plain `UInt32` that `epoll_event.events` holds.
package enum LoopInterest {
    package static let readable = UInt32(clinux_epoll_in())
    package static let writable = UInt32(clinux_epoll_out())
    package static let readWrite = readable | writable
    package static let error = UInt32(clinux_epoll_err())
    package static let hangUp = UInt32(clinux_epoll_hup())
}

/// The loop thread's own state: the epoll set, what is registered on it, and the timers. Loop-confined.
final class LoopCore {
    /// The token of the wake-up eventfd in `epoll_event.data.u64`; handler tokens start at 1.
    static let wakeToken: UInt64 = 0
    private static let eventCapacity: Int32 = 256

    let epollFD: Int32
    private var handlers: [UInt64: any LoopFDHandler] = [:]
    private var descriptors: [UInt64: Int32] = [:]
    private var nextToken: UInt64 = 1
    var timers = TimerQueue()
    /// Work for the end of this turn (`EventLoop.atEndOfTurn`).
    var endOfTurn: [() -> Void] = []
    /// Time spent waiting in `epoll_wait` since the loop started (nanoseconds): the loop's idle time, from which
    /// its busy share is read.
    var idleNanoseconds: UInt64 = 0
    private let events: UnsafeMutablePointer<epoll_event>
    /// The loop's read buffer (see `EventLoop.scratch`).
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

    init(wakeFD: Int32) throws(IOError) {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw IOError("epoll_create1", code: errno) }
        epollFD = fd
        events = .allocate(capacity: Int(Self.eventCapacity))
        var event = epoll_event()
        event.events = LoopInterest.readable
        event.data.u64 = Self.wakeToken
        guard epoll_ctl(fd, EPOLL_CTL_ADD, wakeFD, &event) == 0 else {
            let code = errno
            close(fd)
            events.deallocate()
            throw IOError("epoll_ctl", code: code)
        }
    }

    deinit {
        events.deallocate()
        scratch.deallocate()
        close(epollFD)
    }

    /// Adds `fd` with interest `mask`; the returned token names the registration.
    func register(_ fd: Int32, interest mask: UInt32, handler: any LoopFDHandler) throws(IOError) -> UInt64 {
        let token = nextToken
        nextToken += 1
        var event = epoll_event()
        event.events = mask
        event.data.u64 = token
        guard epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else {
            throw IOError("epoll_ctl", code: errno)
        }
        handlers[token] = handler
        descriptors[token] = fd
        return token
    }

    /// Changes the interest of a registration.
    func modify(_ token: UInt64, interest mask: UInt32) {
        guard let fd = descriptors[token] else { preconditionFailure("modify of an unknown loop registration") }
        var event = epoll_event()
        event.events = mask
        event.data.u64 = token
        // EPOLL_CTL_MOD on a registered, open descriptor fails only on kernel memory exhaustion.
        precondition(epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event) == 0, "epoll_ctl(MOD) failed: errno \(errno)")
    }

    /// Removes a registration (before its owner closes the descriptor). Events already read for it are skipped.
    func deregister(_ token: UInt64) {
        guard let fd = descriptors.removeValue(forKey: token) else { return }
        handlers.removeValue(forKey: token)
        var unused = epoll_event()
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &unused)
    }

    /// Waits for readiness (or the next timer), then calls the handlers; returns whether the wake-up fd fired.
    func poll(timeoutMilliseconds: Int32) -> Bool {
        let waitStarted = monotonicNanoseconds()
        let count = epoll_wait(epollFD, events, Self.eventCapacity, timeoutMilliseconds)
        idleNanoseconds &+= monotonicNanoseconds() &- waitStarted
        guard count >= 0 else {
            precondition(errno == EINTR, "epoll_wait failed: errno \(errno)")
            return false
        }
        var woken = false
        for index in 0..<Int(count) {
            let token = events[index].data.u64
            if token == Self.wakeToken {
                woken = true
            } else if let handler = handlers[token] {
                handler.handle(events: events[index].events)
            }
        }
        return woken
    }

    /// Runs the end-of-turn work queued so far; what it queues waits for the next turn.
    func runEndOfTurn() {
        guard !endOfTurn.isEmpty else { return }
        let work = endOfTurn
        endOfTurn.removeAll(keepingCapacity: true)
        for item in work { item() }
    }

    /// Tells every registered handler the loop is ending, and forgets them, the timers and the end-of-turn work.
    func shutDownHandlers() {
        let all = handlers
        handlers.removeAll()
        descriptors.removeAll()
        timers.removeAll()
        endOfTurn.removeAll()
        for (_, handler) in all.sorted(by: { $0.key < $1.key }) { handler.loopWillShutDown() }
    }

    var registrationCount: Int { handlers.count }
}

/// The monotonic clock (CLOCK_MONOTONIC) in nanoseconds.
package func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

extension Duration {
    /// `seconds` as a duration of at least a millisecond (a deadline of zero, a negative or NaN time would be no
    /// deadline at all), and at most a year (an infinite time never comes).
    package static func seconds(atLeastAMillisecond seconds: Double) -> Duration {
        guard seconds.isFinite, seconds > 0.001 else { return seconds == .infinity ? .seconds(31_536_000) : .milliseconds(1) }
        return .milliseconds(Int64(min(seconds, 31_536_000) * 1000))
    }

    /// Whole nanoseconds; zero or negative durations give 0, and huge ones saturate at `UInt64.max`.
    package var clampedNanoseconds: UInt64 {
        guard self > .zero else { return 0 }
        let (seconds, attoseconds) = components
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, carry) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow || carry ? .max : sum
    }
}
