/// The outline of a name-addr / addr-spec value (RFC 3261 §20.10, §25.1), checked before libosip2 reads it, because
/// libosip2 ignores whatever follows the first address (`<sip:a> garbage`, `<sip:a>, <sip:b>`).
enum AddressShape {
    /// Where the URI is in `bytes` (a header value's UTF-8) if the value is one address: `[display-name] <URI> *(;param)`
    /// or `URI *(;param)`, where
    /// - a display name is a quoted-string or words of token characters (non-ASCII text must be quoted);
    /// - the URI inside `<>` has no whitespace (RFC 4475 badaspec);
    /// - an addr-spec without `<>` holds no `?`, `,` or whitespace (RFC 4475 regbadct: its URI headers make it
    ///   ambiguous), and its `;` parameters belong to the header (RFC 4475 cparam01);
    /// - only parameters follow the address.
    /// Nil when it is not.
    static func uriBytes(_ bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        guard !bytes.isEmpty else { return nil }
        guard let open = firstUnquotedAngle(bytes) else {
            let uriEnd = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
            let uri = trimmed(bytes, 0..<uriEnd)
            guard !uri.isEmpty, uri.allSatisfy({ isURIByte(bytes[$0]) && !isAddrSpecDelimiter(bytes[$0]) }) else { return nil }
            return uri
        }
        let display = trimmed(bytes, 0..<open)
        if !display.isEmpty {
            if bytes[display.lowerBound] == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[display]), as: UTF8.self)
                guard SIPSyntax.unquoted(text) != nil else { return nil }
            } else {
                guard display.allSatisfy({ SIPSyntax.isTokenByte(bytes[$0]) || SIPSyntax.isWhitespace(bytes[$0]) }) else {
                    return nil
                }
            }
        }
        guard let close = bytes[open...].firstIndex(of: UInt8(ascii: ">")) else { return nil }
        let uri = (open + 1)..<close
        guard !uri.isEmpty, uri.allSatisfy({ isURIByte(bytes[$0]) && bytes[$0] != UInt8(ascii: "<") }) else { return nil }
        let rest = trimmed(bytes, (close + 1)..<bytes.count)
        guard rest.isEmpty || bytes[rest.lowerBound] == UInt8(ascii: ";") else { return nil }
        return uri
    }

    /// Octets a URI may hold at all: printable, no space, no DQUOTE.
    private static func isURIByte(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte != 0x7F && byte != UInt8(ascii: "\"")
    }

    /// Octets that force the name-addr form (RFC 3261 §20.10), and angle brackets.
    private static func isAddrSpecDelimiter(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "?") || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">")
    }

    /// The display name libosip2 found, unquoted: a quoted-string loses its quotes and escapes, token words stay.
    /// Nil if a quoted form is broken.
    static func displayName(_ raw: String) -> String? {
        let text = String(SIPSyntax.trimmed(Substring(raw)))
        if text.hasPrefix("\"") { return SIPSyntax.unquoted(text) }
        return text
    }

    /// The index of the first `<` outside a quoted-string; nil if there is none or a quote is left open before it.
    private static func firstUnquotedAngle(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var inQuotes = false
        var escaped = false
        for (index, byte) in bytes.enumerated() {
            if escaped {
                escaped = false
            } else if inQuotes {
                if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inQuotes = false }
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = true
            } else if byte == UInt8(ascii: "<") {
                return index
            }
        }
        return nil
    }

    /// `range` without leading and trailing SP and HTAB.
    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, SIPSyntax.isWhitespace(bytes[lower]) { lower += 1 }
        while upper > lower, SIPSyntax.isWhitespace(bytes[upper - 1]) { upper -= 1 }
        return lower..<upper
    }
}
