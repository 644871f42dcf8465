import Foundation

/// A look at raw bytes before any parsing, for overload control: whether a datagram is a new out-of-dialog request
/// (a new INVITE, OPTIONS, REGISTER, MESSAGE, …), the only kind an overloaded engine may shed unread.
///
/// It errs one way only: whatever it is unsure of (no To field, a folded To, a To that mentions "tag" anywhere, ACK,
/// BYE, CANCEL, PRACK, a response, bytes that do not look like SIP) reads as "not new", so it is parsed and handled
/// as usual. A request it calls new may still be malformed; shedding it loses nothing the parser would have kept.
public enum RequestPeek {
    /// Whether `bytes` starts like a request that opens no dialog of ours and ends none.
    public static func isNewOutOfDialogRequest(_ bytes: Data) -> Bool {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return false }
            return isNew(UnsafeBufferPointer(start: base, count: raw.count))
        }
    }

    /// Whether `needle` (lowercase ASCII) appears in the header part of `bytes` (before the empty line), in any case:
    /// a request's content type, looked at before parsing.
    public static func headers(of bytes: Data, contain needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        return bytes.withUnsafeBytes { raw -> Bool in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress, raw.count >= needle.count else { return false }
            let bytes = UnsafeBufferPointer(start: base, count: raw.count)
            var index = 0
            while index + needle.count <= bytes.count {
                if index + 3 < bytes.count, bytes[index] == 0x0D, bytes[index + 1] == 0x0A, bytes[index + 2] == 0x0D,
                    bytes[index + 3] == 0x0A
                { return false }
                if bytes[index] | 0x20 == needle[0] {
                    var offset = 1
                    while offset < needle.count, bytes[index + offset] | 0x20 == needle[offset] | 0x20 { offset += 1 }
                    if offset == needle.count { return true }
                }
                index += 1
            }
            return false
        }
    }

    /// Methods that belong to a call in progress, whatever their To says.
    private static let neverShed: [[UInt8]] = ["ACK", "BYE", "CANCEL", "PRACK"].map { Array($0.utf8) }

    private static func isNew(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let methodEnd = bytes.firstIndex(of: 0x20), methodEnd > 0, methodEnd <= 16 else { return false }
        let method = bytes[..<methodEnd]
        // A status line's "SIP/2.0" is no token ("/"), so responses stop here.
        guard method.allSatisfy(SIPSyntax.isTokenByte) else { return false }
        if neverShed.contains(where: { $0.elementsEqual(method) }) { return false }
        // Walk the header lines: find To (or t), its value on one line, and no "tag" in it.
        var lineStart = nextLine(bytes, from: 0)
        while let start = lineStart, start < bytes.count {
            let end = lineEnd(bytes, from: start)
            if end == start { return false }  // the empty line: no To at all
            if isToName(bytes, start, end) {
                if let next = nextLine(bytes, from: start), next < bytes.count, SIPSyntax.isWhitespace(bytes[next]) {
                    return false  // folded: unsure
                }
                return !containsTag(bytes, start, end)
            }
            lineStart = nextLine(bytes, from: start)
        }
        return false
    }

    /// The index after the CRLF that ends the line holding `index`, or nil.
    private static func nextLine(_ bytes: UnsafeBufferPointer<UInt8>, from index: Int) -> Int? {
        var position = index
        while position + 1 < bytes.count {
            if bytes[position] == 0x0D, bytes[position + 1] == 0x0A { return position + 2 }
            position += 1
        }
        return nil
    }

    /// Where the line starting at `start` ends (its CR, or the end of the bytes).
    private static func lineEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var position = start
        while position < bytes.count, bytes[position] != 0x0D { position += 1 }
        return position
    }

    /// Whether the line is a `To` or `t` field (any case, whitespace allowed before the colon).
    private static func isToName(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        var position = start
        guard position < end, bytes[position] | 0x20 == UInt8(ascii: "t") else { return false }
        position += 1
        if position < end, bytes[position] | 0x20 == UInt8(ascii: "o") { position += 1 }
        while position < end, SIPSyntax.isWhitespace(bytes[position]) { position += 1 }
        return position < end && bytes[position] == UInt8(ascii: ":")
    }

    /// Whether "tag" appears anywhere in `bytes[start..<end]`, in any case (also for `StatelessRefusal`).
    static func containsTag(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        var position = start
        while position + 2 < end {
            if bytes[position] | 0x20 == UInt8(ascii: "t"), bytes[position + 1] | 0x20 == UInt8(ascii: "a"),
                bytes[position + 2] | 0x20 == UInt8(ascii: "g")
            {
                return true
            }
            position += 1
        }
        return false
    }
}
