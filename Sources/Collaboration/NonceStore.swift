import Foundation

/// The verifier's challenges: 32 random bytes each (the caller draws them), good for one proof within
/// ``ttl`` of being issued, at most ``capacity`` outstanding (the oldest is forgotten first). Pure: the clock is
/// the `now` each call carries.
///
///     issue ──▶ outstanding ──consume──▶ used ──(ttl after expiry)──▶ forgotten
///                   │                                                    ▲
///                   └──(expiry: consume says nonceExpired)──(ttl)────────┘
public struct NonceStore: Sendable {
    private struct Entry: Sendable {
        let scope: String
        let expires: Date
        var used: Bool
    }

    /// How long a challenge is good for.
    public let ttl: TimeInterval
    /// How many challenges may be outstanding at once.
    public let capacity: Int
    private var entries: [[UInt8]: Entry] = [:]
    /// Issue order, for eviction and sweeping (a queue with a moving head).
    private var order: [[UInt8]] = []
    private var head = 0

    public init(ttl: TimeInterval = 60, capacity: Int = 10_000) {
        precondition(ttl > 0 && capacity > 0, "a nonce store needs a positive ttl and capacity")
        self.ttl = ttl
        self.capacity = capacity
    }

    /// Challenges issued and not yet used or expired.
    public func outstanding(now: Date) -> Int { entries.values.count { !$0.used && $0.expires > now } }

    /// Whether `nonce` was issued for `scope` and is neither used nor expired.
    public func isOutstanding(_ nonce: [UInt8], scope: String, now: Date) -> Bool {
        guard let entry = entries[nonce] else { return false }
        return entry.scope == scope && !entry.used && entry.expires > now
    }

    /// Entries remembered (outstanding, used or expired within the grace period).
    public var remembered: Int { entries.count }

    /// Records `nonce` for `scope` (a collaboration); returns when it expires (whole seconds).
    public mutating func issue(_ nonce: [UInt8], scope: String, now: Date) -> Date {
        sweep(now: now)
        let expires = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + ttl).rounded(.down))
        if entries[nonce] == nil { order.append(nonce) }
        entries[nonce] = Entry(scope: scope, expires: expires, used: false)
        while entries.count > capacity { evictOldest() }
        return expires
    }

    /// Uses `nonce` for `scope`: it is spent before the proof is checked, so one nonce buys one try.
    public mutating func consume(_ nonce: [UInt8], scope: String, now: Date) -> Result<Date, ProofRejection> {
        guard var entry = entries[nonce], entry.scope == scope else { return .failure(.nonceUnknown) }
        guard !entry.used else { return .failure(.nonceReused) }
        entry.used = true
        entries[nonce] = entry
        guard now < entry.expires else { return .failure(.nonceExpired) }
        return .success(entry.expires)
    }

    /// Forgets entries whose expiry is more than ``ttl`` ago (so a late replay still reads "reused" or "expired").
    public mutating func sweep(now: Date) {
        while head < order.count {
            let nonce = order[head]
            if let entry = entries[nonce], entry.expires.addingTimeInterval(ttl) > now { break }
            entries[nonce] = nil
            head += 1
        }
        compact()
    }

    private mutating func evictOldest() {
        while head < order.count {
            let nonce = order[head]
            head += 1
            if entries.removeValue(forKey: nonce) != nil { break }
        }
        compact()
    }

    private mutating func compact() {
        if head > 1024 && head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
