/// A timer on an `EventLoop`: returned by `schedule(after:_:)`, passed to `cancel(_:)`.
public struct LoopTimer: Hashable, Sendable {
    /// Unique per loop, increasing in scheduling order.
    public let id: UInt64

    /// The timer with this identifier (for code that keeps timers as plain numbers, such as the engine's
    /// environment abstraction).
    public init(id: UInt64) { self.id = id }
}

/// The loop's timers: a binary min-heap of deadlines (monotonic nanoseconds), ties broken by scheduling order (FIFO).
///
/// Cancelling removes the work from `work` in O(1) and leaves the heap entry as a tombstone that is skipped when it
/// surfaces; when tombstones outnumber live timers the heap is rebuilt in O(n), so its size stays within a constant
/// factor of the live count.
package struct TimerQueue {
    struct Entry {
        let deadline: UInt64
        let id: UInt64

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : id < other.id
        }
    }

    private var heap: [Entry] = []
    private var work: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1

    /// Timers scheduled and neither fired nor cancelled.
    package var liveCount: Int { work.count }
    /// Heap entries, tombstones included (for tests of the compaction).
    package var heapCount: Int { heap.count }

    package init() {}

    package mutating func schedule(deadline: UInt64, _ action: @escaping () -> Void) -> LoopTimer {
        let id = nextID
        nextID += 1
        work[id] = action
        push(Entry(deadline: deadline, id: id))
        return LoopTimer(id: id)
    }

    /// Cancels `timer`; false when it already fired or was cancelled.
    @discardableResult
    package mutating func cancel(_ timer: LoopTimer) -> Bool {
        guard work.removeValue(forKey: timer.id) != nil else { return false }
        if heap.count > 1024, heap.count > 2 * work.count { compact() }
        return true
    }

    /// The earliest live deadline, dropping tombstones from the top on the way.
    package mutating func nextDeadline() -> UInt64? {
        while let first = heap.first {
            if work[first.id] != nil { return first.deadline }
            popFirst()
        }
        return nil
    }

    /// Removes and returns the work of the earliest live timer due at `now`, or nil.
    package mutating func popDue(now: UInt64) -> (() -> Void)? {
        while let first = heap.first, first.deadline <= now {
            popFirst()
            if let action = work.removeValue(forKey: first.id) { return action }
        }
        return nil
    }

    /// Drops every timer (loop shutdown).
    package mutating func removeAll() {
        heap.removeAll()
        work.removeAll()
    }

    private mutating func push(_ entry: Entry) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func popFirst() {
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(from: 0)
        }
    }

    private mutating func compact() {
        heap.removeAll { work[$0.id] == nil }
        guard heap.count > 1 else { return }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].precedes(heap[smallest]) { smallest = left }
            if right < heap.count && heap[right].precedes(heap[smallest]) { smallest = right }
            if smallest == parent { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
