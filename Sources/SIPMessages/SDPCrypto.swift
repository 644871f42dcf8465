import Foundation

/// An SRTP crypto suite of SDES (RFC 4568 §6.2; RFC 6188 for AES-256, RFC 7714 for AES-GCM), with the names GStreamer's
/// `srtpenc` and `srtpdec` give its cipher and authentication.
public enum SRTPSuite: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// AES-128 in counter mode, 80-bit HMAC-SHA1 tag: the suite every SDES peer has, offered first.
    case aesCM128SHA1_80 = "AES_CM_128_HMAC_SHA1_80"
    /// AES-128 in counter mode, 32-bit HMAC-SHA1 tag on SRTP (SRTCP keeps an 80-bit one, RFC 4568 §6.2.2).
    case aesCM128SHA1_32 = "AES_CM_128_HMAC_SHA1_32"
    /// AES-256 in counter mode, 80-bit HMAC-SHA1 tag (RFC 6188).
    case aes256CMSHA1_80 = "AES_256_CM_HMAC_SHA1_80"
    /// AES-256 in counter mode, 32-bit HMAC-SHA1 tag on SRTP, 80-bit on SRTCP (RFC 6188).
    case aes256CMSHA1_32 = "AES_256_CM_HMAC_SHA1_32"
    /// AES-128 in Galois/counter mode, authenticated by the cipher itself (RFC 7714).
    case aeadAES128GCM = "AEAD_AES_128_GCM"
    /// AES-256 in Galois/counter mode, authenticated by the cipher itself (RFC 7714).
    case aeadAES256GCM = "AEAD_AES_256_GCM"

    /// Our order of preference, which our offers list and our answers pick by: the 128-bit counter-mode suite with the
    /// 80-bit tag first (the one baresip and linphone prefer), then the others as `allCases` lists them.
    public static let preferred: [SRTPSuite] = allCases

    /// The suite named `name`, in any case (RFC 4568's grammar writes the names as case-insensitive literals).
    public init?(name: some StringProtocol) {
        guard let suite = Self.allCases.first(where: { $0.rawValue.caseInsensitiveEquals(name) }) else { return nil }
        self = suite
    }

    /// The name as `a=crypto` writes it.
    public var description: String { rawValue }

    /// The master key's length in bytes: 16 (AES-128) or 32 (AES-256).
    public var masterKeyLength: Int {
        switch self {
        case .aesCM128SHA1_80, .aesCM128SHA1_32, .aeadAES128GCM: 16
        case .aes256CMSHA1_80, .aes256CMSHA1_32, .aeadAES256GCM: 32
        }
    }

    /// The master salt's length in bytes: 14 for counter mode (RFC 3711), 12 for GCM (RFC 7714 §12).
    public var masterSaltLength: Int { isAEAD ? 12 : 14 }

    /// The length of the `inline:` key: master key then master salt (30, 30, 46, 46, 28 or 44 bytes), which is also
    /// what `srtpenc`'s `key` property and `srtpdec`'s `srtp-key` take.
    public var keyLength: Int { masterKeyLength + masterSaltLength }

    /// Whether the cipher authenticates (GCM): then there is no separate authentication tag.
    public var isAEAD: Bool { self == .aeadAES128GCM || self == .aeadAES256GCM }

    /// `srtpenc`'s `rtp-cipher` (and `srtpdec`'s `srtp-cipher`): aes-128-icm, aes-256-icm, aes-128-gcm or aes-256-gcm.
    public var rtpCipher: String {
        switch self {
        case .aesCM128SHA1_80, .aesCM128SHA1_32: "aes-128-icm"
        case .aes256CMSHA1_80, .aes256CMSHA1_32: "aes-256-icm"
        case .aeadAES128GCM: "aes-128-gcm"
        case .aeadAES256GCM: "aes-256-gcm"
        }
    }

    /// `srtpenc`'s `rtcp-cipher` (and `srtpdec`'s `srtcp-cipher`): the same cipher as RTP's.
    public var rtcpCipher: String { rtpCipher }

    /// `srtpenc`'s `rtp-auth` (and `srtpdec`'s `srtp-auth`): hmac-sha1-80, hmac-sha1-32, or null for GCM.
    public var rtpAuth: String {
        switch self {
        case .aesCM128SHA1_80, .aes256CMSHA1_80: "hmac-sha1-80"
        case .aesCM128SHA1_32, .aes256CMSHA1_32: "hmac-sha1-32"
        case .aeadAES128GCM, .aeadAES256GCM: "null"
        }
    }

    /// `srtpenc`'s `rtcp-auth` (and `srtpdec`'s `srtcp-auth`): hmac-sha1-80 for every counter-mode suite, the _32
    /// ones too (RFC 4568 §6.2.2: the short tag is for SRTP only), null for GCM.
    public var rtcpAuth: String { isAEAD ? "null" : "hmac-sha1-80" }
}

/// An SRTP master key and salt, concatenated (what SDES's `inline:` carries and `srtpenc`'s `key` takes). Secret: its
/// `description`, `debugDescription` and mirror show its length only, so no log, dump or interpolation of any value
/// holding one (an ``SDPSession``, an ``SDPCrypto``) can show it.
public struct SRTPKey: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The raw bytes: master key, then master salt.
    public let bytes: [UInt8]

    /// A key from its bytes (from a CSPRNG such as OpenSSL's `RAND_bytes`, or decoded from a peer's `inline:`).
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The length only: the bytes are secret.
    public var description: String { "SRTPKey(\(bytes.count) bytes, redacted)" }

    /// The length only: the bytes are secret.
    public var debugDescription: String { description }

    /// The length as the only child: `dump` and reflection show nothing else.
    public var customMirror: Mirror { Mirror(self, children: ["length": bytes.count], displayStyle: .struct) }
}

/// Why an `a=crypto` line was refused (and skipped: the rest of the description still counts).
public enum SDPCryptoRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not `<tag> <suite> <key-params> [session params]`, or more than a lifetime and an MKI after the key.
    case malformed
    /// A tag that is not 1 to 999999999 (one to nine digits).
    case badTag
    /// A suite Parley does not have.
    case unknownSuite
    /// A key method other than `inline:`.
    case unknownKeyMethod
    /// More than one key (`;`): RFC 4568 allows it only with MKIs.
    case multipleKeys
    /// An `inline:` key that is not base64.
    case badBase64
    /// A key of another length than the suite's.
    case wrongKeyLength(expected: Int, actual: Int)
    /// A lifetime below 2^31 packets (a call could outlive the key; nothing here re-keys on a count) or above the
    /// suite's maximum, 2^48, or malformed.
    case lifetime
    /// A master key identifier: Parley sends and reads packets without one.
    case mki
    /// A session parameter Parley does not implement (UNENCRYPTED_SRTP, UNENCRYPTED_SRTCP, UNAUTHENTICATED_SRTP, KDR,
    /// FEC_ORDER, FEC_KEY, or an unknown one without the "-" that makes it optional).
    case unsupportedSessionParameter

    /// A sentence for logs (never the key).
    public var description: String {
        switch self {
        case .malformed: "malformed a=crypto"
        case .badTag: "a=crypto tag is not 1 to 999999999"
        case .unknownSuite: "unknown SRTP crypto suite"
        case .unknownKeyMethod: "a=crypto key method is not inline"
        case .multipleKeys: "a=crypto with more than one key"
        case .badBase64: "a=crypto key is not base64"
        case .wrongKeyLength(let expected, let actual): "a=crypto key has \(actual) bytes, the suite needs \(expected)"
        case .lifetime: "a=crypto key lifetime below 2^31 or above 2^48"
        case .mki: "a=crypto with an MKI"
        case .unsupportedSessionParameter: "a=crypto session parameter not supported"
        }
    }
}

/// One SDES `a=crypto` attribute (RFC 4568): a tag, a suite and the key its writer sends with. `description` redacts
/// the key; `attributeValue`, the wire form, carries it.
public struct SDPCrypto: Sendable, Hashable, CustomStringConvertible {
    /// The tag, 1 to 999999999: an answer echoes the tag of the offered line it accepts (RFC 4568 §5.1.2).
    public let tag: Int
    /// The crypto suite.
    public let suite: SRTPSuite
    /// The master key and salt, exactly `suite.keyLength` bytes.
    public let key: SRTPKey

    /// The highest tag RFC 4568 allows (nine digits).
    public static let maximumTag = 999_999_999

    /// A line; nil when the tag is not 1 to 999999999 or the key is not `suite.keyLength` bytes.
    public init?(tag: Int, suite: SRTPSuite, key: SRTPKey) {
        guard (1...Self.maximumTag).contains(tag), key.bytes.count == suite.keyLength else { return nil }
        self.tag = tag
        self.suite = suite
        self.key = key
    }

    /// One line for each suite, in order, with tags 1, 2, 3…, each with its own key from `key` (called once per
    /// suite with that suite: give it `suite.keyLength` bytes from a CSPRNG). What an offer lists, and what an answer
    /// picks from (`SDPSession.answer(…, security: .sdes(lines))`). A suite whose key has the wrong length is left out.
    public static func fresh(suites: [SRTPSuite] = SRTPSuite.preferred, key: (SRTPSuite) -> [UInt8]) -> [SDPCrypto] {
        var lines: [SDPCrypto] = []
        for suite in suites where !lines.contains(where: { $0.suite == suite }) {
            if let line = SDPCrypto(tag: lines.count + 1, suite: suite, key: SRTPKey(key(suite))) { lines.append(line) }
        }
        return lines
    }

    /// Reads the value of an `a=crypto` attribute: `<tag> <suite> inline:<base64>[|lifetime] [session params]`.
    ///
    /// Refused: a malformed line, a tag out of range, an unknown suite, a method other than `inline`, several keys,
    /// bad base64 (RFC 4648's alphabet; the `=` padding may be left out, as the length check makes it redundant), a
    /// key of the wrong length, an MKI, a lifetime below 2^31 or above 2^48 packets, and every session parameter but
    /// `WSH=` (a replay window hint, ignored) and those RFC 4568 §6.3 marks optional with a leading "-" (ignored).
    ///
    /// A lifetime of 2^31 or more is accepted and not kept: SRTP's own limit is 2^48 packets, and 2^31 packets take
    /// 497 days at 50 packets a second (248 at 100), so no call reaches it; one below 2^31 could be reached in a
    /// long call, and nothing re-keys on a packet count, so such a line is refused rather than its lifetime ignored.
    public init(attributeValue value: some StringProtocol) throws(SDPCryptoRefusal) {
        let fields = String(value).split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 3 else { throw .malformed }
        guard fields[0].utf8.count <= 9, let tag = SIPSyntax.decimal(fields[0], limit: Self.maximumTag), tag > 0 else {
            throw .badTag
        }
        guard let suite = SRTPSuite(name: fields[1]) else { throw .unknownSuite }
        let keyParams = fields[2]
        guard !keyParams.utf8.contains(UInt8(ascii: ";")) else { throw .multipleKeys }
        guard keyParams.utf8.count >= 7, keyParams.prefix(7).caseInsensitiveEquals("inline:") else { throw .unknownKeyMethod }
        let keyInfo = keyParams.dropFirst(7).split(separator: "|", omittingEmptySubsequences: false)
        guard keyInfo.count <= 3 else { throw .malformed }
        for extra in keyInfo.dropFirst() {
            guard !extra.utf8.contains(UInt8(ascii: ":")) else { throw .mki }
            guard Self.isAcceptableLifetime(extra) else { throw .lifetime }
        }
        guard let bytes = Base64.decode(keyInfo[0]) else { throw .badBase64 }
        guard bytes.count == suite.keyLength else { throw .wrongKeyLength(expected: suite.keyLength, actual: bytes.count) }
        for parameter in fields.dropFirst(3) where !parameter.hasPrefix("-") {
            guard parameter.utf8.count > 4, parameter.prefix(4).caseInsensitiveEquals("WSH="),
                SIPSyntax.decimal(parameter.dropFirst(4), limit: Int(Int32.max)) != nil
            else { throw .unsupportedSessionParameter }
        }
        self.tag = tag
        self.suite = suite
        self.key = SRTPKey(bytes)
    }

    /// A lifetime from 2^31 to 2^48 packets, written as `2^n` or in decimal.
    private static func isAcceptableLifetime(_ text: Substring) -> Bool {
        if text.hasPrefix("2^") {
            guard let exponent = SIPSyntax.decimal(text.dropFirst(2), limit: 99) else { return false }
            return (31...48).contains(exponent)
        }
        guard text.utf8.count <= 15, let packets = SIPSyntax.decimal(text, limit: 1 << 48) else { return false }
        return packets >= 1 << 31
    }

    /// The attribute's value as written after `a=crypto:` — with the key in base64: the wire form, not for logs.
    public var attributeValue: String { "\(tag) \(suite.rawValue) inline:\(Base64.encode(key.bytes))" }

    /// Tag and suite; the key redacted.
    public var description: String { "SDPCrypto(\(tag) \(suite.rawValue), key redacted)" }
}

/// Base64 (RFC 4648 §4) for `inline:` keys: the standard alphabet, no whitespace, the `=` padding optional but right
/// when present, and no stray bits in the last character (so each key has exactly one spelling).
enum Base64 {
    /// The bytes of `text`, or nil when it is not base64 as above.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var unpadded = Substring(text)
        var padding = 0
        while unpadded.hasSuffix("="), padding < 2 {
            unpadded = unpadded.dropLast()
            padding += 1
        }
        let count = unpadded.utf8.count
        guard count > 0, count % 4 != 1, padding == 0 || (count + padding) % 4 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in unpadded.utf8 {
            guard let value = sextet(character) else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        return accumulator == 0 ? bytes : nil
    }

    /// `bytes` in base64 with padding.
    static func encode(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}

extension StringProtocol {
    /// Whether the two are equal, ASCII letters compared without regard to case (a byte compare: no locale).
    func caseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return zip(utf8, other.utf8).allSatisfy { Self.lowercased($0) == Self.lowercased($1) }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }
}
