import Foundation

/// UUIDs that follow one another in the order they were made, for the conversations an engine names (incoming calls),
/// so that an index keyed by them grows at one place instead of at a random page for every record (the call
/// history's uuid index: with random UUIDs each record written dirtied a page of its own).
///
/// A custom (version 8, RFC 9562 §5.8) layout whose first 32 bits — the eight hex digits that `parley` and frontends
/// show and accept as a call's short name — are a tick of 10 µs, mod 2³², that never repeats: the wall clock's tick,
/// or the last one plus one when the clock has not moved on (or went back). So two UUIDs one generator made have
/// different short names unless 2³² ticks (11.9 hours) of them lie between, and made one after the other they sort
/// one after the other (as bytes and as `uuidString`) until the tick wraps, where a new run begins at the start of
/// the order. The other 90 bits are random (`RandomUUID`'s generator), so generators in different processes do not
/// collide.
///
/// ```
///  bits   0 ─ 31           32 ─ 47   48 ─ 51     52 ─ 63   64 ─ 65   66 ─ 127
///         tick mod 2³²     random    version 8   random    variant   random
///  tick = max(wall clock in 10-µs units, last tick + 1)
/// ```
///
/// Confined to its owner's thread (a value: the engine keeps one on its loop); the date comes from the owner's clock.
public struct TimeOrderedUUIDs: Sendable {
    /// Ticks per second (10 µs each).
    public static let ticksPerSecond: Double = 100_000

    /// The last tick given out (not wrapped); 0 before the first.
    private var lastTick: UInt64 = 0

    /// A generator that has made nothing yet.
    public init() {}

    /// The next UUID, made at `date` (dates before 1970, and a NaN, count as 1970).
    public mutating func next(at date: Date) -> UUID {
        let clockTick = UInt64(min(max(0, (date.timeIntervalSince1970 * Self.ticksPerSecond).rounded(.down)), 0x1p62))
        lastTick = max(clockTick, lastTick &+ 1)
        let (high, low) = RandomUUID.randomWords()
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { raw in
            let first = (lastTick & 0xFFFF_FFFF) << 32 | (high & 0xFFFF_FFFF)
            raw.storeBytes(of: first.bigEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
            raw[6] = (raw[6] & 0x0F) | 0x80  // version 8
            raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 9562 variant
        }
        return UUID(uuid: bytes)
    }
}
