import Foundation

/// A refusal written straight from a request's bytes, for overload control: when the engine sheds a new request it
/// must cost far less than a call, so the request is not parsed. The response copies the request's Via, From, To,
/// Call-ID and CSeq lines verbatim (RFC 3261 §8.2.6), adds a To tag that marks it as ours, and carries no body.
///
/// The ACK a caller sends for it carries that tag, so `isACKOfRefusal` recognises it unread too and it is dropped
/// (it belongs to no transaction: the refusal kept no state).
///
/// Written by hand because libosip2 would have to parse the request first, which is the cost being avoided; the scan
/// reads only line starts and refuses (returns nil) whatever is unusual: folded lines, a missing field, a To that
/// already has a tag.
public enum StatelessRefusal {
    /// The prefix of the To tags these refusals add.
    public static let tagPrefix = "sr-"

    /// The response to `request`'s bytes: `SIP/2.0 status reason`, the copied fields with To tagged
    /// `tagPrefix + tagSuffix`, then `extra` fields and `Content-Length: 0`. Nil when the bytes do not allow it.
    /// With `tagSuffix` nil the request is one in a dialog: its To, tag included, is copied as it is (and must
    /// carry a tag).
    public static func response(
        to request: Data, status: Int, reason: String, tagSuffix: String?, extra: [(String, String)]
    ) -> Data? {
        precondition((300...699).contains(status) && (tagSuffix.map(SIPSyntax.isToken) ?? true), "a refusal with a token tag")
        return request.withUnsafeBytes { raw -> Data? in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return nil }
            let bytes = UnsafeBufferPointer(start: base, count: raw.count)
            var out: [UInt8] = []
            out.reserveCapacity(512)
            out += Array("SIP/2.0 \(status) \(reason)\r\n".utf8)
            var seen = (via: false, from: false, to: false, callID: false, cseq: false)
            var start = lineEnd(bytes, 0) + 2
            while start < bytes.count {
                let end = lineEnd(bytes, start)
                guard end < bytes.count else { return nil }  // no empty line
                if end == start { break }
                if SIPSyntax.isWhitespace(bytes[start]) { return nil }  // folded
                let line = bytes[start..<end]
                switch fieldKey(line) {
                case "via":
                    seen.via = true
                    out += line
                case "from", "call-id", "cseq":
                    let key = fieldKey(line)
                    if key == "from" { guard !seen.from else { return nil }; seen.from = true }
                    if key == "call-id" { guard !seen.callID else { return nil }; seen.callID = true }
                    if key == "cseq" { guard !seen.cseq else { return nil }; seen.cseq = true }
                    out += line
                case "to":
                    guard !seen.to, RequestPeek.containsTag(bytes, start, end) == (tagSuffix == nil) else { return nil }
                    seen.to = true
                    var value = line[...]
                    while let last = value.last, SIPSyntax.isWhitespace(last) { value = value.dropLast() }
                    out += value
                    if let tagSuffix { out += Array(";tag=\(tagPrefix)\(tagSuffix)".utf8) }
                default:
                    start = end + 2
                    continue
                }
                out += [0x0D, 0x0A]
                start = end + 2
            }
            guard seen.via, seen.from, seen.to, seen.callID, seen.cseq else { return nil }
            for (name, value) in extra { out += Array("\(name): \(value)\r\n".utf8) }
            out += Array("Content-Length: 0\r\n\r\n".utf8)
            return Data(out)
        }
    }

    /// Whether `bytes` is an ACK whose To tag is one of these refusals' (an ACK for a 503 that kept no state).
    public static func isACKOfRefusal(_ bytes: Data) -> Bool {
        bytes.withUnsafeBytes { raw -> Bool in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress, raw.count > 4 else { return false }
            let bytes = UnsafeBufferPointer(start: base, count: raw.count)
            guard bytes[0] == UInt8(ascii: "A"), bytes[1] == UInt8(ascii: "C"), bytes[2] == UInt8(ascii: "K"),
                bytes[3] == 0x20
            else { return false }
            let marker = Array("tag=\(tagPrefix)".utf8)
            var start = lineEnd(bytes, 0) + 2
            while start < bytes.count {
                let end = lineEnd(bytes, start)
                if end == start || end >= bytes.count { return false }
                let line = bytes[start..<end]
                if fieldKey(line) == "to" {
                    return line.indices.contains { index in
                        index + marker.count <= end && bytes[index..<(index + marker.count)].elementsEqual(marker)
                    }
                }
                start = end + 2
            }
            return false
        }
    }

    /// The Call-ID of a request's bytes, read the way `response` copies it (nil when there is none before the empty
    /// line, or a folded line comes first): overload control asks whether a request it would shed belongs to a call in
    /// progress.
    public static func callID(of request: Data) -> String? {
        request.withUnsafeBytes { raw -> String? in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress else { return nil }
            let bytes = UnsafeBufferPointer(start: base, count: raw.count)
            var start = lineEnd(bytes, 0) + 2
            while start < bytes.count {
                let end = lineEnd(bytes, start)
                if end == start || end >= bytes.count || SIPSyntax.isWhitespace(bytes[start]) { return nil }
                let line = bytes[start..<end]
                if fieldKey(line) == "call-id", let colon = line.firstIndex(of: UInt8(ascii: ":")) {
                    var value = line[(colon + 1)...]
                    while let first = value.first, SIPSyntax.isWhitespace(first) { value = value.dropFirst() }
                    while let last = value.last, SIPSyntax.isWhitespace(last) { value = value.dropLast() }
                    return value.isEmpty ? nil : String(decoding: value, as: UTF8.self)
                }
                start = end + 2
            }
            return nil
        }
    }

    /// Where the line starting at `start` ends (its CR), or the end of the bytes.
    private static func lineEnd(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        var position = start
        while position + 1 < bytes.count, !(bytes[position] == 0x0D && bytes[position + 1] == 0x0A) { position += 1 }
        return position + 1 < bytes.count ? position : bytes.count
    }

    /// The lowercased full name of a header line's field (compact forms expanded), or "" when it is not one of the
    /// five copied.
    private static func fieldKey(_ line: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return "" }
        var nameEnd = colon
        while nameEnd > line.startIndex, SIPSyntax.isWhitespace(line[nameEnd - 1]) { nameEnd -= 1 }
        let name = line[line.startIndex..<nameEnd]
        for (spelling, key) in names where spelling.count == name.count {
            if zip(spelling, name).allSatisfy({ $0 == $1 | 0x20 }) { return key }
        }
        return ""
    }

    /// The names looked for, lowercased, and the keys they stand for (no allocation per line).
    private static let names: [([UInt8], String)] = [
        ("via", "via"), ("v", "via"), ("from", "from"), ("f", "from"), ("to", "to"), ("t", "to"),
        ("call-id", "call-id"), ("i", "call-id"), ("cseq", "cseq"),
    ].map { (Array($0.0.utf8), $0.1) }
}
