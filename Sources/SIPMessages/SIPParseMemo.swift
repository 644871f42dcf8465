import Foundation

/// Values parsed recently, by their exact text: a Request-URI or address seen again is copied from here instead of
/// going through libosip2 once more. Peers repeat themselves — every call to us names the same Request-URI, the ACK and
/// BYE of a call carry its INVITE's From, and in-dialog requests are sent to our own Contact — so most of a call's
/// URIs and addresses are found here.
///
/// Parsing is a pure function of the text, so a value found is the value a parse would give; only successful parses
/// are kept (a malformed value is judged afresh each time). Direct-mapped: each text has one slot, by its hash, and a
/// newer text takes the slot over, and texts over `longestText` bytes are parsed without the memo, so the memory is
/// bounded (`slots` entries of each kind, each at most that long) and nothing is ever swept.
///
/// Not thread-safe: one memo per thread (the engine keeps one on its loop thread).
public final class SIPParseMemo {
    private var uris: Slots<SIPURI>
    private var addresses: Slots<SIPAddress>
    private let mask: Int
    /// Lookups answered from the memo, and lookups that had to parse (for tests and benchmarks).
    public private(set) var hits = 0
    public private(set) var misses = 0

    /// The longest text kept: longer ones (rare, and each could pin up to 64 KiB) are parsed every time.
    public static let longestText = 512

    /// A memo of `slots` URIs and as many addresses (1 to 65,536, rounded up to a power of two).
    public init(slots: Int = 256) {
        precondition((1...65_536).contains(slots), "a parse memo has 1 to 65,536 slots")
        var size = 1
        while size < slots { size <<= 1 }
        mask = size - 1
        uris = Slots(count: size)
        addresses = Slots(count: size)
    }

    /// The URI `text` parses to, from the memo or from `parse`.
    func uri(_ text: String, _ parse: (String) -> SIPURI?) -> SIPURI? {
        look(up: text, in: &uris, parse)
    }

    /// The address `text` parses to, from the memo or from `parse`.
    func address(_ text: String, _ parse: (String) -> SIPAddress?) -> SIPAddress? {
        look(up: text, in: &addresses, parse)
    }

    @inline(__always)
    private func look<Value>(up text: String, in slots: inout Slots<Value>, _ parse: (String) -> Value?) -> Value? {
        guard text.utf8.count <= Self.longestText else { return parse(text) }
        let slot = text.hashValue & mask
        if let entry = slots.entries[slot], Self.sameBytes(entry.text, text) {
            hits += 1
            return entry.value
        }
        misses += 1
        guard let value = parse(text) else { return nil }
        slots.entries[slot] = (text, value)
        return value
    }

    /// One kind of value's slots, a power of two of them.
    private struct Slots<Value> {
        var entries: [(text: String, value: Value)?]

        init(count: Int) { entries = Array(repeating: nil, count: count) }
    }

    /// Byte equality: `==` on strings is Unicode canonical equivalence, and a typed value must come from these very
    /// bytes (a display name written precomposed is not the one written decomposed).
    private static func sameBytes(_ left: String, _ right: String) -> Bool {
        left.withUTF8Bytes { a in
            right.withUTF8Bytes { b in
                a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
            }
        }
    }
}
