import Foundation

/// Action deadlines in a binary min-heap. Entries of actions that completed early stay until they surface
/// (lazy deletion); ``compact(liveCount:)`` drops them when they pile up.
struct DeadlineHeap: Sendable {
    struct Entry: Sendable {
        let deadline: Date
        let sequence: UInt64
        let action: ConversationAction

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : sequence < other.sequence
        }
    }

    private(set) var entries: [Entry] = []

    var count: Int { entries.count }
    var earliest: Date? { entries.first?.deadline }

    mutating func push(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    mutating func popDue(at now: Date) -> Entry? {
        guard let first = entries.first, first.deadline <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            siftDown(from: 0)
        }
        return first
    }

    /// Keeps only the entries whose action is still pending, when stale ones outnumber live ones.
    mutating func compact(liveCount: Int) {
        guard entries.count > 1024, entries.count > 2 * liveCount else { return }
        entries.removeAll { !$0.action.isPending(sequence: $0.sequence) }
        guard entries.count > 1 else { return }
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) { siftDown(from: index) }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < entries.count && entries[left].precedes(entries[smallest]) { smallest = left }
            if right < entries.count && entries[right].precedes(entries[smallest]) { smallest = right }
            if smallest == parent { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// The uuids of the most recently ended conversations, so late reports get "has ended" rather than "unknown".
struct RecentlyEnded: Sendable {
    private var ring: [UUID?]
    private var next = 0
    private var members: Set<UUIDKey> = []

    init(capacity: Int) { ring = Array(repeating: nil, count: capacity) }

    func contains(_ uuid: UUID) -> Bool { members.contains(UUIDKey(uuid)) }

    mutating func insert(_ uuid: UUID) {
        if let evicted = ring[next] { members.remove(UUIDKey(evicted)) }
        ring[next] = uuid
        members.insert(UUIDKey(uuid))
        next = (next + 1) % ring.count
    }
}

/// A uuid as a dictionary key with cheap hashing: two 64-bit words fed to the hasher instead of 16 bytes
/// through its generic byte path (which showed up as the engine's largest single cost). The SIP engine keys its
/// call legs by it too.
package struct UUIDKey: Hashable, Sendable {
    let high: UInt64
    let low: UInt64

    package init(_ uuid: UUID) {
        (high, low) = withUnsafeBytes(of: uuid.uuid) { raw in
            (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    /// The uuid it keys.
    package var uuid: UUID {
        var bytes = uuid_t(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            raw.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
        }
        return UUID(uuid: bytes)
    }

    package func hash(into hasher: inout Hasher) {
        // Both words: uuids can come from peers (push payloads), so pre-mixing them into one word would let
        // anyone craft colliding keys.
        hasher.combine(high)
        hasher.combine(low)
    }
}
