import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ParleyIO
import ParleyTestSupport

@Suite("The event loop: work queue, timers, shutdown")
struct EventLoopTests {
    @Test("work from many threads runs on the loop thread, each thread's work in its order")
    func executeOrdering() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        #expect(!loop.inEventLoop)
        let recorder = EventRecorder<(thread: Int, sequence: Int, onLoop: Bool)>()
        let threads = 4, perThread = 2000
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for sequence in 0..<perThread {
                loop.execute { recorder.record((thread, sequence, loop.inEventLoop)) }
            }
        }
        let all = try #require(recorder.wait(for: threads * perThread))
        #expect(all.allSatisfy { $0.onLoop })
        for thread in 0..<threads {
            #expect(all.filter { $0.thread == thread }.map(\.sequence) == Array(0..<perThread))
        }
    }

    @Test("timers fire in deadline order, equal deadlines in scheduling order")
    func timerOrder() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let fired = EventRecorder<String>()
        loop.execute {
            for (label, milliseconds) in [("c30", 30), ("a10", 10), ("b20", 20), ("z0", 0), ("a10bis", 10), ("d40", 40)] {
                loop.schedule(after: .milliseconds(milliseconds)) { fired.record(label) }
            }
        }
        #expect(fired.wait(for: 6) == ["z0", "a10", "a10bis", "b20", "c30", "d40"])
    }

    @Test("a timer never fires early")
    func notEarly() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let elapsed = EventRecorder<Duration>()
        loop.execute {
            let start = ContinuousClock.now
            loop.schedule(after: .milliseconds(25)) { elapsed.record(ContinuousClock.now - start) }
        }
        #expect(try #require(elapsed.first()) >= .milliseconds(25))
    }

    @Test("cancelled timers never fire; thousands of them do not pile up")
    func cancel() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let fired = EventRecorder<Int>()
        let done = EventRecorder<Int>()
        loop.execute {
            var timers: [LoopTimer] = []
            for index in 0..<10_000 {
                timers.append(loop.schedule(after: .milliseconds(5 + index % 20)) { fired.record(index) })
            }
            for (index, timer) in timers.enumerated() where index % 10 != 0 { loop.cancel(timer) }
            loop.cancel(timers[1])  // twice: harmless
            loop.schedule(after: .milliseconds(60)) { done.record(loop.pendingTimerCount) }
        }
        #expect(done.first() == 0)
        let all = fired.all
        #expect(all.count == 1000)
        #expect(all.allSatisfy { $0 % 10 == 0 })
    }

    @Test("the timer heap drops tombstones once they outnumber live timers")
    func compaction() {
        var queue = TimerQueue()
        let timers = (0..<5000).map { queue.schedule(deadline: UInt64($0), {}) }
        for timer in timers.dropFirst(100) { queue.cancel(timer) }
        #expect(queue.liveCount == 100)
        #expect(queue.heapCount < 2100)
        var order: [Int] = []
        while queue.popDue(now: .max) != nil { order.append(order.count) }
        #expect(order.count == 100)
        #expect(queue.nextDeadline() == nil)
    }

    @Test("a handle whose timer fired or was cancelled matches nothing, though its slot now holds another timer")
    func staleHandles() {
        var queue = TimerQueue()
        var fired: [String] = []
        let first = queue.schedule(deadline: 10) { fired.append("first") }
        let cancelled = queue.schedule(deadline: 20) { fired.append("cancelled") }
        let cancelledNow = queue.cancel(cancelled)
        #expect(cancelledNow)
        // Both slots come free and are taken again by the next two timers.
        queue.popDue(now: 10)?()
        let second = queue.schedule(deadline: 30) { fired.append("second") }
        let third = queue.schedule(deadline: 30) { fired.append("third") }
        #expect(Set([first.id, cancelled.id, second.id, third.id]).count == 4)
        let staleCancels = [queue.cancel(first), queue.cancel(cancelled)]
        #expect(staleCancels == [false, false])
        #expect(queue.liveCount == 2)
        let next = queue.nextDeadline()
        #expect(next == 30)
        while let work = queue.popDue(now: 30) { work() }
        // Equal deadlines fire in scheduling order; the tombstone of the cancelled timer never fires.
        #expect(fired == ["first", "second", "third"])
        let afterFiring = queue.cancel(second)
        #expect(!afterFiring)
        #expect(queue.liveCount == 0)
        let none = queue.nextDeadline()
        #expect(none == nil)
    }

    @Test("end-of-turn work runs after the turn's other work, and what it adds runs at the next turn's end")
    func endOfTurn() throws {
        let loop = try makeLoop()
        defer { loop.shutdown() }
        let order = EventRecorder<String>()
        // Hold the loop so that the next two pieces of work are drained in one turn.
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        loop.execute {
            held.signal()
            release.wait()
        }
        held.wait()
        loop.execute {
            loop.atEndOfTurn {
                order.record("end")
                // Added at the end of a turn with nothing else to do: the loop must not sleep on it.
                loop.atEndOfTurn { order.record("next end") }
            }
            order.record("work")
        }
        loop.execute { order.record("more work") }
        release.signal()
        #expect(order.wait(for: 4) == ["work", "more work", "end", "next end"])
    }

    @Test("after removeAll (the loop's shutdown) no handle given out before matches a new timer")
    func removeAllKeepsHandlesStale() {
        var queue = TimerQueue()
        let old = (0..<3).map { _ in queue.schedule(deadline: 5, {}) }
        queue.removeAll()
        #expect(queue.liveCount == 0)
        var fired = 0
        let new = (0..<3).map { _ in queue.schedule(deadline: 5) { fired += 1 } }
        #expect(Set(old.map(\.id)).isDisjoint(with: new.map(\.id)))
        let cancels = old.map { queue.cancel($0) }
        #expect(cancels == [false, false, false])
        while let work = queue.popDue(now: 5) { work() }
        #expect(fired == 3)
    }

    @Test("shutdown runs the work already offered, joins, drops later work and is idempotent")
    func shutdown() throws {
        let loop = try makeLoop()
        let count = Atomic<Int>(0)
        for _ in 0..<500 { loop.execute { count.add(1, ordering: .relaxed) } }
        loop.shutdown()
        #expect(count.load(ordering: .relaxed) == 500)
        loop.execute { count.add(1, ordering: .relaxed) }
        #expect(loop.executeAndWait { 1 } == nil)
        loop.shutdown()
        #expect(count.load(ordering: .relaxed) == 500)
    }

    @Test("a loop that ended is nobody's: a later thread with its pthread_t is not in it")
    func identityEndsWithTheThread() throws {
        let ended = try makeLoop()
        ended.shutdown()
        // glibc hands a new thread the descriptor (so the pthread_t) of one that was joined; ten loops in a row give
        // it every chance to.
        for _ in 0..<10 {
            let later = try makeLoop()
            defer { later.shutdown() }
            #expect(later.executeAndWait { ended.inEventLoop } == false)
            #expect(ended.executeAndWait { 1 } == nil)
        }
    }
}

/// An event loop for one test, shut down by `defer`.
func makeLoop() throws -> EventLoop {
    try EventLoop(name: "test-loop")
}
