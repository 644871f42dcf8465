/// A timer on an `EventLoop`: returned by `schedule(after:_:)`, passed to `cancel(_:)`.
public struct LoopTimer: Hashable, Sendable {
    /// Its slot in the loop's timer table and that slot's generation (`TimerQueue`): unique among the timers a loop
    /// ever scheduled until one slot has been reused 2³² times, and never zero.
    public let id: UInt64

    /// The timer with this identifier (for code that keeps timers as plain numbers, such as the engine's
    /// environment abstraction).
    public init(id: UInt64) { self.id = id }
}

/// The loop's timers: a binary min-heap of deadlines (monotonic nanoseconds), ties broken by scheduling order (FIFO),
/// and a table of slots holding the work. A timer's handle names its slot and the slot's generation, so cancelling
/// finds the work without hashing; a slot's generation moves on when its timer fires or is cancelled, so an old
/// handle matches nothing and the slot is reused.
///
/// Cancelling empties the slot in O(1) and leaves the heap entry as a tombstone that is skipped when it surfaces;
/// when tombstones outnumber live timers the heap is rebuilt in O(n), so its size stays within a constant factor of
/// the live count.
///
/// ```
///  schedule ──► free slot (or a new one) ◄── work ──► heap entry (deadline, order, slot, generation)
///  cancel(handle) ── generation matches? ──► slot emptied, generation + 1, slot free; heap entry now a tombstone
///  popDue ── earliest entry due ── generation matches? ──► its work (slot freed) │ else a tombstone: dropped
/// ```
package struct TimerQueue {
    struct Entry {
        let deadline: UInt64
        /// Scheduling order, for FIFO among equal deadlines.
        let order: UInt64
        let slot: UInt32
        let generation: UInt32

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : order < other.order
        }
    }

    /// Where a timer's work waits. `generation` starts at 1 (no handle is zero) and moves on each time the slot
    /// empties.
    private struct Slot {
        var generation: UInt32 = 1
        var work: (() -> Void)?
    }

    private var heap: [Entry] = []
    private var slots: [Slot] = []
    private var freeSlots: [UInt32] = []
    private var nextOrder: UInt64 = 1

    /// Timers scheduled and neither fired nor cancelled.
    package private(set) var liveCount = 0
    /// Heap entries, tombstones included (for tests of the compaction).
    package var heapCount: Int { heap.count }

    package init() {}

    package mutating func schedule(deadline: UInt64, _ action: @escaping () -> Void) -> LoopTimer {
        let slot: UInt32
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            precondition(slots.count < Int(UInt32.max), "more than 2³² timers at once")
            slot = UInt32(slots.count)
            slots.append(Slot())
        }
        slots[Int(slot)].work = action
        let generation = slots[Int(slot)].generation
        push(Entry(deadline: deadline, order: nextOrder, slot: slot, generation: generation))
        nextOrder += 1
        liveCount += 1
        return LoopTimer(id: UInt64(generation) << 32 | UInt64(slot))
    }

    /// Cancels `timer`; false when it already fired or was cancelled.
    @discardableResult
    package mutating func cancel(_ timer: LoopTimer) -> Bool {
        let slot = Int(timer.id & 0xFFFF_FFFF)
        guard slot < slots.count, slots[slot].generation == UInt32(timer.id >> 32), slots[slot].work != nil else {
            return false
        }
        _ = empty(slot)
        if heap.count > 1024, heap.count > 2 * liveCount { compact() }
        return true
    }

    /// The earliest live deadline, dropping tombstones from the top on the way.
    package mutating func nextDeadline() -> UInt64? {
        while let first = heap.first {
            if isLive(first) { return first.deadline }
            popFirst()
        }
        return nil
    }

    /// Removes and returns the work of the earliest live timer due at `now`, or nil.
    package mutating func popDue(now: UInt64) -> (() -> Void)? {
        while let first = heap.first, first.deadline <= now {
            popFirst()
            if isLive(first) { return empty(Int(first.slot)) }
        }
        return nil
    }

    /// Drops every timer (loop shutdown). The slots stay, each a generation on, so no handle given out before
    /// matches a timer scheduled after.
    package mutating func removeAll() {
        heap.removeAll()
        for slot in slots.indices where slots[slot].work != nil { _ = empty(slot) }
    }

    private func isLive(_ entry: Entry) -> Bool {
        slots[Int(entry.slot)].generation == entry.generation
    }

    /// Takes a live slot's work and frees the slot (a new generation: its handle and heap entry match no more).
    private mutating func empty(_ slot: Int) -> (() -> Void)? {
        let work = slots[slot].work
        slots[slot].work = nil
        slots[slot].generation &+= 1
        if slots[slot].generation == 0 { slots[slot].generation = 1 }
        freeSlots.append(UInt32(slot))
        liveCount -= 1
        return work
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
        let slots = self.slots
        heap.removeAll { slots[Int($0.slot)].generation != $0.generation }
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
