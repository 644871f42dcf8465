/// The challenge list of a `WWW-Authenticate` or `Proxy-Authenticate` value, read without interpreting it (RFC 7235
/// §2.1, RFC 3261 §25.1): `challenge *( "," challenge )` where `challenge = auth-scheme [ 1*SP ( token68 /
/// #auth-param ) ]` and `auth-param = token BWS "=" BWS ( token / quoted-string )`.
///
/// Commas separate both challenges and the parameters of one challenge; a token not followed by `=` starts a new
/// challenge. Empty list elements (`, ,`) are allowed, as RFC 7230 §7 asks.
struct AuthChallengeSyntax {
    /// One challenge as written: its scheme and its parameters (names lowercased, values unquoted and unescaped).
    struct Challenge {
        var scheme: String
        var token68: String?
        var parameters: [(name: String, value: String)] = []
    }

    private let bytes: [UInt8]
    private var position = 0

    /// Every challenge in `value`, or a `.syntax` error naming the first offset that breaks the grammar.
    static func challenges(in value: String) throws(DigestChallengeError) -> [Challenge] {
        var reader = AuthChallengeSyntax(bytes: Array(value.utf8))
        return try reader.readList()
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func readList() throws(DigestChallengeError) -> [Challenge] {
        var challenges: [Challenge] = []
        while true {
            skipWhitespace()
            guard let byte = peek() else { return challenges }
            if byte == UInt8(ascii: ",") {
                position += 1
                continue
            }
            let start = position
            guard let name = readToken() else { throw syntax("expected a scheme or a parameter name") }
            skipWhitespace()
            if peek() == UInt8(ascii: "=") {
                guard !challenges.isEmpty else {
                    position = start
                    throw syntax("a parameter comes before any scheme")
                }
                position += 1
                skipWhitespace()
                let value = try readValue()
                challenges[challenges.count - 1].parameters.append((name.lowercasedASCII, value))
            } else {
                challenges.append(Challenge(scheme: name, token68: readToken68()))
                continue  // parameters may follow after whitespace, without a comma
            }
            skipWhitespace()
            guard let next = peek() else { return challenges }
            guard next == UInt8(ascii: ",") else { throw syntax("expected a comma after a parameter") }
        }
    }

    /// A token68 right after a scheme (`Bearer mF_9.B5f-4.1JqM`), when what follows is one and not a parameter.
    private mutating func readToken68() -> String? {
        let start = position
        while let byte = peek(), Self.isToken68(byte) { position += 1 }
        guard position > start else { return nil }
        while peek() == UInt8(ascii: "=") { position += 1 }
        let end = position
        skipWhitespace()
        if peek() == nil || peek() == UInt8(ascii: ",") {
            return String(decoding: bytes[start..<end], as: UTF8.self)
        }
        position = start
        return nil
    }

    /// A token or a quoted-string (unquoted and unescaped).
    private mutating func readValue() throws(DigestChallengeError) -> String {
        if peek() == UInt8(ascii: "\"") { return try readQuotedString() }
        guard let token = readToken() else { throw syntax("expected a token or a quoted string") }
        return token
    }

    /// `"` *( qdtext / quoted-pair ) `"`: a backslash escapes the next character; CR, LF and NUL are refused.
    private mutating func readQuotedString() throws(DigestChallengeError) -> String {
        let start = position
        position += 1
        var value: [UInt8] = []
        while let byte = peek() {
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: value, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = peek(), !Self.isForbiddenInQuotes(escaped) else {
                    throw syntax("a backslash must escape a character")
                }
                value.append(escaped)
                position += 1
            case let other where Self.isForbiddenInQuotes(other):
                position -= 1
                throw syntax("a control character inside a quoted string")
            default:
                value.append(byte)
            }
        }
        position = start
        throw syntax("a quoted string is not closed")
    }

    private mutating func readToken() -> String? {
        let start = position
        while let byte = peek(), Self.isTokenCharacter(byte) { position += 1 }
        guard position > start else { return nil }
        return String(decoding: bytes[start..<position], as: UTF8.self)
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { position += 1 }
    }

    private func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    private func syntax(_ reason: String) -> DigestChallengeError {
        .syntax(reason: reason, offset: position)
    }

    /// RFC 3261 token characters plus the RFC 7230 tchar extras (`#$&^|`).
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-.!%*_+`'~#$&^|".utf8.contains(byte)
        }
    }

    private static func isToken68(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-._~+/".utf8.contains(byte)
        }
    }

    private static func isForbiddenInQuotes(_ byte: UInt8) -> Bool {
        byte == 0x00 || byte == 0x0A || byte == 0x0D
    }
}

extension String {
    /// ASCII lowercase (authentication parameter names and tokens are ASCII).
    var lowercasedASCII: String {
        String(decoding: utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
