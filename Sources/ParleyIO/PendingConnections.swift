import Glibc

/// Where a connection comes from, as the budget of connections still saying hello counts it: an IPv4 address, an IPv6
/// address by its /64 prefix (one host holds a whole /64 and picks a fresh address in it for free), or one key for
/// every Unix-socket peer (the socket's mode already keeps other users out).
package enum StreamSource: Hashable, Sendable, CustomStringConvertible {
    /// An IPv4 address (network byte order, as `s_addr`).
    case ipv4(UInt32)
    /// The first 64 bits of an IPv6 address (as they lie in memory).
    case ipv6Prefix(UInt64)
    /// A Unix-domain peer.
    case local

    /// The source of a peer (nil: a Unix-domain peer).
    package init(_ peer: SocketAddress?) {
        guard let peer else {
            self = .local
            return
        }
        switch peer.ip.storage {
        case .v4(let raw): self = .ipv4(raw)
        case .v6(let high, _): self = .ipv6Prefix(high)
        }
    }

    /// `127.0.0.1`, `2001:db8::/64` or `local`.
    package var description: String {
        switch self {
        case .ipv4(let raw): IPAddress(in_addr(s_addr: raw)).text
        case .ipv6Prefix(let high):
            withUnsafeBytes(of: (high, UInt64(0))) { raw in
                var address = in6_addr()
                withUnsafeMutableBytes(of: &address) { $0.copyMemory(from: raw) }
                return IPAddress(address).text + "/64"
            }
        case .local: "local"
        }
    }
}

/// The connections of a ``StreamServer`` that have not said hello yet, and the small budget they share instead of the
/// client slots: at most `maxTotal` at once, at most `maxPerSource` from one ``StreamSource``. Beyond a bound the
/// newcomer is let in and an older pending connection gives up its place (``displacedForNewcomer(from:)``): a peer
/// holding idle connections open cannot keep a newcomer from even reaching its hello. The one displaced is the oldest
/// of the newcomer's source that has sent nothing yet (no complete frame: an idle or dripping connection), else the
/// oldest of that source; when only the total is reached, it comes from the source holding the most, so a source with
/// few pending connections keeps them. A pure value, kept by the server on its loop.
package struct PendingConnections: Sendable {
    /// The most connections awaiting their hello at once.
    package let maxTotal: Int
    /// The most of them from one source.
    package let maxPerSource: Int

    private struct Entry: Sendable {
        let id: StreamClientID
        /// Whether a complete frame came from it (an upgrade request, a hello under way).
        var heard = false
    }

    /// Per source, oldest first (identifiers grow with acceptance).
    private var bySource: [StreamSource: [Entry]] = [:]
    private var sourceOf: [StreamClientID: StreamSource] = [:]

    /// An empty budget with these bounds (each at least 1).
    package init(maxTotal: Int, maxPerSource: Int) {
        precondition(maxTotal > 0 && maxPerSource > 0, "pending connection bounds must be positive")
        self.maxTotal = maxTotal
        self.maxPerSource = maxPerSource
    }

    /// Connections pending now.
    package var count: Int { sourceOf.count }

    /// Connections pending now from `source`.
    package func count(from source: StreamSource) -> Int { bySource[source]?.count ?? 0 }

    /// Whether `id` is pending.
    package func contains(_ id: StreamClientID) -> Bool { sourceOf[id] != nil }

    /// Whether a complete frame came from pending `id`.
    package func isHeard(_ id: StreamClientID) -> Bool {
        guard let source = sourceOf[id] else { return false }
        return bySource[source]?.first { $0.id == id }?.heard ?? false
    }

    /// The pending connection a newcomer from `source` takes the place of, or nil while both bounds leave room. The
    /// caller closes it and calls ``remove(_:)``.
    package func displacedForNewcomer(from source: StreamSource) -> StreamClientID? {
        if count(from: source) >= maxPerSource { return bySource[source].flatMap(Self.candidate) }
        guard count >= maxTotal else { return nil }
        let largest = bySource.values.map(\.count).max() ?? 0
        let candidates = bySource.values.filter { $0.count == largest }.compactMap { entries in
            Self.candidate(entries).map { id in (id, entries.first { $0.id == id }?.heard ?? false) }
        }
        // Silent ones first, then the oldest.
        return candidates.min { (!$0.1 ? 0 : 1, $0.0) < (!$1.1 ? 0 : 1, $1.0) }?.0
    }

    /// Adds a newly accepted connection (its identifier greater than every other's).
    package mutating func add(_ id: StreamClientID, from source: StreamSource) {
        guard sourceOf[id] == nil else { return }
        sourceOf[id] = source
        bySource[source, default: []].append(Entry(id: id))
    }

    /// Notes that a complete frame came from `id` (nothing if it is not pending).
    package mutating func heard(_ id: StreamClientID) {
        guard let source = sourceOf[id], let index = bySource[source]?.firstIndex(where: { $0.id == id }) else { return }
        bySource[source]?[index].heard = true
    }

    /// Removes `id` (it authenticated or closed); nothing if it is not pending.
    package mutating func remove(_ id: StreamClientID) {
        guard let source = sourceOf.removeValue(forKey: id) else { return }
        bySource[source]?.removeAll { $0.id == id }
        if bySource[source]?.isEmpty == true { bySource[source] = nil }
    }

    /// Forgets every connection.
    package mutating func removeAll() {
        bySource = [:]
        sourceOf = [:]
    }

    /// The oldest silent entry, else the oldest.
    private static func candidate(_ entries: [Entry]) -> StreamClientID? {
        (entries.first { !$0.heard } ?? entries.first)?.id
    }
}
