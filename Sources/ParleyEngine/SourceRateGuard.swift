import Foundation

/// The key per-source limits count under: an IPv4 address as it is, an IPv6 address by its /64 prefix (one host
/// or one customer holds a whole /64, and picks a fresh address in it for free).
struct SourceKey: Hashable, Sendable, CustomStringConvertible {
    /// The address, or the /64 written `2001:db8:1:2::/64`.
    let description: String

    /// Every source the guard's full table cannot track, counted as one (so a spoofed flood that fills the table
    /// does not turn the check off for newcomers: they share one limit, and one ban).
    static let untracked = SourceKey(named: "(untracked sources)")

    private init(named name: String) { description = name }

    /// The key of `host`, a numeric address as the transports report it (IPv6 without brackets).
    init(host: String) {
        var address = in6_addr()
        guard host.utf8.contains(0x3A), inet_pton(AF_INET6, host, &address) == 1 else {
            description = host
            return
        }
        let groups = withUnsafeBytes(of: address) { bytes in
            (0..<4).map { String(UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]), radix: 16) }
        }
        description = groups.joined(separator: ":") + "::/64"
    }
}

/// A pike-style density check of the new requests each source sends (Kamailio's `pike` module does the same in
/// front of a proxy): a source that opens more than `limit` transactions in one second gets 503 for the request
/// that crossed the line, then nothing at all for the ban period; a source that keeps flooding while banned stays
/// banned. Once the table holds 1,024 sources, those quiet for a second are swept away (at most once a second), so a
/// spoofed flood from many addresses costs one small entry per address for about a second, and at most `maxSources`
/// entries in all; beyond that, new sources count together under ``SourceKey/untracked``.
///
///   request from S ──► S counting ── count ≤ limit ──────────► admit
///                          │
///                          └── count > limit ──► refuse (503), ban S until now + ban ── logged once
///   request from S ──► S banned ──── now < until ────────────► drop (silently; counted: flooding extends the ban)
///                          └──────── now ≥ until ────────────► S counting again, from zero
///
/// A pure value: the caller passes the time (the environment's monotonic uptime).
struct SourceRateGuard {
    /// What becomes of one new request.
    enum Verdict: Equatable {
        /// Within the limit: open its transaction.
        case admit
        /// The request that crossed the limit: refuse it (503 with Retry-After), and say that a ban began.
        case refuse
        /// The source is banned: send nothing.
        case drop
    }

    /// One source's second.
    private struct Entry {
        var windowStart: Duration
        var count: Int
        var bannedUntil: Duration?
    }

    /// New requests one source may send in one second (0: no limit).
    let limit: Int
    /// How long a source that crossed the limit is dropped.
    let ban: Duration
    /// Sources tracked at most; beyond, new sources count as one (``SourceKey/untracked``) until the table is swept.
    let maxSources: Int
    private var entries: [SourceKey: Entry] = [:]
    /// The table size that calls for a sweep (at most one a second), and when the last one was.
    private var sweepAt: Int
    private var lastSweep: Duration?
    /// When the latest ban ends: before then some source may be banned, after it none is (the common case costs
    /// no lookup).
    private var bansEnd: Duration = .zero
    private static let window = Duration.seconds(1)

    /// A guard admitting `limit` new requests per source per second and banning a source for `ban` beyond it.
    init(limit: Int, ban: Duration, maxSources: Int = 200_000) {
        precondition(limit >= 0 && ban >= .zero && maxSources > 0, "limits are never negative")
        self.limit = limit
        self.ban = ban
        self.maxSources = maxSources
        self.sweepAt = min(1024, maxSources)
    }

    /// Whether any source may be banned at `now` (false: no need to look one up).
    func mayBan(at now: Duration) -> Bool { limit > 0 && now < bansEnd }

    /// Whether `source` is banned at `now` (nothing it sends is answered).
    func isBanned(_ source: SourceKey, at now: Duration) -> Bool {
        guard limit > 0, now < bansEnd, let until = entries[source]?.bannedUntil else { return false }
        return now < until
    }

    /// Sources banned at `now`.
    func bannedSources(at now: Duration) -> Int { entries.values.count { $0.bannedUntil.map { now < $0 } ?? false } }

    /// Counts one new request from `source` at `now` and says what to do with it.
    mutating func check(_ source: SourceKey, at now: Duration) -> Verdict {
        guard limit > 0 else { return .admit }
        if entries.count >= sweepAt, lastSweep.map({ now - $0 >= Self.window }) ?? true { sweep(at: now) }
        var source = source
        if entries[source] == nil && entries.count >= maxSources { source = .untracked }
        guard var entry = entries[source] else {
            entries[source] = Entry(windowStart: now, count: 1)
            return .admit
        }
        if now - entry.windowStart >= Self.window {
            entry.windowStart = now
            entry.count = 0
        }
        entry.count += 1
        defer { entries[source] = entry }
        if let until = entry.bannedUntil {
            if now < until {
                if entry.count > limit { banUntil(now + ban, &entry) }
                return .drop
            }
            entry.bannedUntil = nil
        }
        guard entry.count > limit else { return .admit }
        banUntil(now + ban, &entry)
        return .refuse
    }

    private mutating func banUntil(_ until: Duration, _ entry: inout Entry) {
        entry.bannedUntil = until
        bansEnd = max(bansEnd, until)
    }

    /// Forgets sources whose second is over and who are not banned (or whose ban is over).
    private mutating func sweep(at now: Duration) {
        entries = entries.filter { _, entry in
            if let until = entry.bannedUntil, now < until { return true }
            return now - entry.windowStart < Self.window
        }
        sweepAt = min(maxSources, max(1024, entries.count * 2))
        lastSweep = now
    }
}
