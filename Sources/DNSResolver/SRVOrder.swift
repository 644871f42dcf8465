internal import ParleyIO

/// RFC 2782's order of SRV records: by priority (lowest first), and within a priority by weighted random choice,
/// records of weight 0 given a small chance of coming first.
enum SRVOrder {
    /// `records` in the order to try them; `random` makes the weighted choices (seeded in tests).
    static func ordered(_ records: [SRVRecord], random: inout some RandomNumberGenerator) -> [SRVRecord] {
        let priorities = Set(records.map(\.priority)).sorted()
        var result: [SRVRecord] = []
        result.reserveCapacity(records.count)
        for priority in priorities {
            let group = records.filter { $0.priority == priority }
            // "All those with weight 0 are placed at the beginning of the list", then the running-sum choice.
            var remaining = group.filter { $0.weight == 0 } + group.filter { $0.weight != 0 }
            while !remaining.isEmpty {
                let total = remaining.reduce(0) { $0 + Int($1.weight) }
                let pick = Int.random(in: 0...total, using: &random)
                var running = 0
                let index = remaining.firstIndex { record in
                    running += Int(record.weight)
                    return running >= pick
                } ?? remaining.count - 1
                result.append(remaining.remove(at: index))
            }
        }
        return result
    }
}

/// Numeric addresses in the forms targets carry them.
enum IPAddressText {
    /// The canonical text of `host` (IPv6 with or without brackets) when it is a numeric address, else nil.
    static func numeric(_ host: String) -> String? {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return IPAddress(bare)?.text
    }
}
