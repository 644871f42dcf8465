internal import ParleyIO

/// Answers kept for their TTL (and "no such name" or "no records" for the SOA's negative TTL), on an injected
/// clock; bounded, the entry closest to expiry leaving first when full.
struct DNSCache {
    private struct Entry {
        var result: Result<DNSAnswer, DNSLookupFailure>
        var expires: ContinuousClock.Instant
    }

    private var entries: [DNSQuestion: Entry] = [:]
    let capacity: Int

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { entries.count }

    /// The entry for `key` if it has not expired; an answer's TTL is what remains of it (whole seconds, rounded up).
    mutating func lookup(_ key: DNSQuestion, now: ContinuousClock.Instant) -> Result<DNSAnswer, DNSLookupFailure>? {
        guard let entry = entries[key] else { return nil }
        guard now < entry.expires else {
            entries.removeValue(forKey: key)
            return nil
        }
        guard case .success(var answer) = entry.result else { return entry.result }
        let left = now.duration(to: entry.expires)
        answer.ttl = UInt32(clamping: (left.clampedNanoseconds + 999_999_999) / 1_000_000_000)
        return .success(answer)
    }

    /// Keeps `result` for `ttl` seconds (a TTL of 0 is not kept).
    mutating func store(_ key: DNSQuestion, _ result: Result<DNSAnswer, DNSLookupFailure>, ttl: UInt32, now: ContinuousClock.Instant) {
        guard ttl > 0, capacity > 0 else { return }
        if entries[key] == nil, entries.count >= capacity {
            entries = entries.filter { $0.value.expires > now }
            if entries.count >= capacity, let soonest = entries.min(by: { $0.value.expires < $1.value.expires }) {
                entries.removeValue(forKey: soonest.key)
            }
        }
        entries[key] = Entry(result: result, expires: now.advanced(by: .seconds(Int64(ttl))))
    }

    mutating func removeAll() { entries.removeAll() }
}
