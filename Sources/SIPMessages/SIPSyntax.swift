/// RFC 3261 §25 character classes and the small lexical helpers the parser, validator and writer share.
/// Checks of SIP grammar that callers outside the module need before they build a message.
public enum SIPGrammar {
    /// Whether `text` is a valid Call-ID (`word ["@" word]`, RFC 3261 §25.1).
    public static func isCallID(_ text: String) -> Bool { SIPSyntax.isCallID(text) }
}

enum SIPSyntax {
    // MARK: Character classes

    /// token = 1*(alphanum / "-" / "." / "!" / "%" / "*" / "_" / "+" / "`" / "'" / "~")
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        // - . ! % * _ + ` ' ~
        case 0x2D, 0x2E, 0x21, 0x25, 0x2A, 0x5F, 0x2B, 0x60, 0x27, 0x7E: true
        default: false
        }
    }

    /// word (Call-ID) = 1*(token chars / "(" / ")" / "<" / ">" / ":" / "\" / DQUOTE / "/" / "[" / "]" / "?" / "{" / "}")
    static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        // ( ) < > : \ " / [ ] ? { }
        case 0x28, 0x29, 0x3C, 0x3E, 0x3A, 0x5C, 0x22, 0x2F, 0x5B, 0x5D, 0x3F, 0x7B, 0x7D: true
        default: isTokenByte(byte)
        }
    }

    /// ALPHA / DIGIT.
    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }

    /// SP or HTAB.
    static func isWhitespace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// Whether every UTF-8 octet of `text` satisfies `test`, read from the string's contiguous storage when it has
    /// one (native strings and their substrings always do: a plain loop, much cheaper than iterating the view).
    @inline(__always)
    static func allBytes(_ text: some StringProtocol, _ test: (UInt8) -> Bool) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(test) } ?? text.utf8.allSatisfy(test)
    }

    /// Whether `text` holds the octet `byte` (from contiguous storage when there is one, as `allBytes`).
    @inline(__always)
    static func containsByte(_ text: some StringProtocol, _ byte: UInt8) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { $0.contains(byte) } ?? text.utf8.contains(byte)
    }

    /// A non-empty RFC 3261 token.
    static func isToken(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && allBytes(text, isTokenByte)
    }

    /// Call-ID = word ["@" word].
    static func isCallID(_ text: String) -> Bool {
        let check = { (bytes: UnsafeBufferPointer<UInt8>) -> Bool in
            guard let at = bytes.firstIndex(of: UInt8(ascii: "@")) else { return !bytes.isEmpty && bytes.allSatisfy(isWordByte) }
            let word = bytes[..<at], host = bytes[(at + 1)...]
            return !word.isEmpty && !host.isEmpty && word.allSatisfy(isWordByte) && host.allSatisfy(isWordByte)
        }
        if let verdict = text.utf8.withContiguousStorageIfAvailable(check) { return verdict }
        return Array(text.utf8).withUnsafeBufferPointer(check)
    }

    /// 1*DIGIT, read as a number no larger than `limit`; nil otherwise (no sign, no spaces, no overflow).
    static func decimal(_ text: some StringProtocol, limit: Int) -> Int? {
        guard !text.isEmpty else { return nil }
        var value = 0
        for byte in text.utf8 {
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            let digit = Int(byte - 0x30)
            guard value <= (limit - digit) / 10, value * 10 + digit <= limit else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    /// A port: 1 to 5 digits, at most 65535.
    static func port(_ text: some StringProtocol) -> Int? {
        guard text.utf8.count <= 5 else { return nil }
        return decimal(text, limit: 65_535)
    }

    /// A host as Parley accepts it: a name or IPv4 address (alphanumerics, "-", ".", and "_" which real peers use), or an
    /// IPv6 address without its brackets (hex digits, ":" and "." only, at least two colons).
    static func isHost(_ host: String) -> Bool {
        guard !host.isEmpty else { return false }
        let bytes = host.utf8
        if containsByte(host, UInt8(ascii: ":")) {
            let colons = bytes.filter { $0 == UInt8(ascii: ":") }.count
            return colons >= 2 && bytes.allSatisfy { isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }
        }
        return allBytes(host) { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") }
    }

    /// A host for writing: IPv6 addresses get their brackets back.
    static func hostForWriting(_ host: String) -> String {
        // A byte scan: with Foundation imported, `contains(":")` is a locale-aware substring search (~4,600
        // instructions a URI, measured in parley-bench-register).
        host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// A URI scheme (RFC 3986): ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
    static func isScheme(_ text: some StringProtocol) -> Bool {
        guard let first = text.utf8.first, isAlphanumeric(first), !(first >= 0x30 && first <= 0x39) else { return false }
        return allBytes(text) { isAlphanumeric($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    /// A header or URI parameter value Parley carries: a quoted-string, or token characters plus ":", "[" and "]"
    /// (IPv6 addresses in `received`, `maddr`).
    static func isParameterValue(_ value: String) -> Bool {
        if value.utf8.first == UInt8(ascii: "\"") { return unquoted(value) != nil }
        return !value.isEmpty && allBytes(value) {
            isTokenByte($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "[") || $0 == UInt8(ascii: "]")
        }
    }

    // MARK: Trimming and splitting

    /// `text` without leading and trailing SP and HTAB.
    static func trimmed(_ text: Substring) -> Substring {
        let utf8 = text.utf8
        var start = utf8.startIndex
        var end = utf8.endIndex
        while start < end, isWhitespace(utf8[start]) { start = utf8.index(after: start) }
        while end > start, isWhitespace(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
        return text[start..<end]
    }

    /// Splits a header value at the commas that separate values: those outside quoted-strings (with their quoted-pairs)
    /// and outside `<…>`. Each piece is trimmed; empty pieces stay (so "a,,b" shows as malformed to the caller).
    static func splitValues(_ value: String) -> [Substring] {
        let utf8 = value.utf8
        guard containsByte(value, UInt8(ascii: ",")) else { return [trimmed(value[...])] }
        var pieces: [Substring] = []
        var inQuotes = false
        var inAngle = false
        var escaped = false
        var start = utf8.startIndex
        var index = utf8.startIndex
        while index < utf8.endIndex {
            let byte = utf8[index]
            if escaped {
                escaped = false
            } else if inQuotes {
                if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inQuotes = false }
            } else if byte == UInt8(ascii: "\"") {
                inQuotes = true
            } else if byte == UInt8(ascii: "<") {
                inAngle = true
            } else if byte == UInt8(ascii: ">") {
                inAngle = false
            } else if byte == UInt8(ascii: ","), !inAngle {
                pieces.append(trimmed(value[start..<index]))
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        pieces.append(trimmed(value[start..<utf8.endIndex]))
        return pieces
    }

    // MARK: Quoted strings

    /// The content of a quoted-string with its quoted-pairs resolved; nil if `text` is not exactly one quoted-string.
    static func unquoted(_ text: String) -> String? {
        var characters = text.unicodeScalars.makeIterator()
        guard characters.next() == "\"" else { return nil }
        var result = String.UnicodeScalarView()
        var escaped = false
        while let scalar = characters.next() {
            if escaped {
                result.append(scalar)
                escaped = false
            } else if scalar == "\\" {
                escaped = true
            } else if scalar == "\"" {
                return characters.next() == nil ? String(result) : nil
            } else {
                result.append(scalar)
            }
        }
        return nil
    }

    /// `text` as a quoted-string: `"` and `\` escaped, CR and LF (which no quoted-pair may carry) replaced by spaces.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"", "\\": result += "\\" + String(scalar)
            case "\r", "\n": result += " "
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    // MARK: Percent encoding

    /// unreserved = alphanum / "-" / "_" / "." / "!" / "~" / "*" / "'" / "(" / ")"
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        // - _ . ! ~ * ' ( )
        case 0x2D, 0x5F, 0x2E, 0x21, 0x7E, 0x2A, 0x27, 0x28, 0x29: true
        default: false
        }
    }

    /// What each part of a SIP URI may carry unescaped (RFC 3261 §25.1).
    enum URIPart {
        /// user-unreserved: "&" / "=" / "+" / "$" / "," / ";" / "?" / "/"
        case user
        /// "&" / "=" / "+" / "$" / ","
        case password
        /// param-unreserved: "[" / "]" / "/" / ":" / "&" / "+" / "$"
        case parameter
        /// hnv-unreserved: "[" / "]" / "/" / "?" / ":" / "+" / "$"
        case header

        /// Whether `byte` may stand unescaped in this part.
        fileprivate func allows(_ byte: UInt8) -> Bool {
            if isUnreserved(byte) { return true }
            switch (self, byte) {
            // & = + $ , ; ? /
            case (.user, 0x26), (.user, 0x3D), (.user, 0x2B), (.user, 0x24), (.user, 0x2C), (.user, 0x3B),
                (.user, 0x3F), (.user, 0x2F):
                return true
            // & = + $ ,
            case (.password, 0x26), (.password, 0x3D), (.password, 0x2B), (.password, 0x24), (.password, 0x2C):
                return true
            // [ ] / : & + $
            case (.parameter, 0x5B), (.parameter, 0x5D), (.parameter, 0x2F), (.parameter, 0x3A), (.parameter, 0x26),
                (.parameter, 0x2B), (.parameter, 0x24):
                return true
            // [ ] / ? : + $
            case (.header, 0x5B), (.header, 0x5D), (.header, 0x2F), (.header, 0x3F), (.header, 0x3A), (.header, 0x2B),
                (.header, 0x24):
                return true
            default:
                return false
            }
        }
    }

    /// `text` with every byte its URI part may not carry written as %XX.
    static func percentEncoded(_ text: String, for part: URIPart) -> String {
        guard !allBytes(text, part.allows) else { return text }
        var result = [UInt8]()
        result.reserveCapacity(text.utf8.count * 3)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            if part.allows(byte) {
                result.append(byte)
            } else {
                result += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// `text` with %XX escapes resolved; a "%" not followed by two hex digits stays as it is. Bytes that are not UTF-8
    /// become U+FFFD.
    static func percentDecoded(_ text: String) -> String {
        guard containsByte(text, UInt8(ascii: "%")) else { return text }
        let bytes = Array(text.utf8)
        var result = [UInt8]()
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, isHexDigit(bytes[index + 1]),
                isHexDigit(bytes[index + 2])
            {
                result.append(hexValue(bytes[index + 1]) << 4 | hexValue(bytes[index + 2]))
                index += 3
            } else {
                result.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8 {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        default: byte - 0x61 + 10
        }
    }
}
