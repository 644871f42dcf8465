import Foundation

/// The hash function of an `a=fingerprint` (RFC 8122 §5): the ones Parley can check, and any other kept by name so
/// the caller can refuse it.
public enum SDPHashFunction: Sendable, Hashable, CustomStringConvertible {
    /// SHA-1 (20 bytes): old peers' default; still second-preimage resistant, which is what a fingerprint needs.
    case sha1
    /// SHA-256 (32 bytes): what RFC 5763 §5 requires every endpoint to support, and what baresip and linphone send.
    case sha256
    /// SHA-384 (48 bytes).
    case sha384
    /// SHA-512 (64 bytes).
    case sha512
    /// Any other name (md5, sha-224, a token of the future), lower-cased: parsed, never verifiable here.
    case unknown(String)

    /// The function named `name`, in any case (baresip writes `SHA-256`, RFC 8122 `sha-256`).
    public init(name: some StringProtocol) {
        switch name.lowercased() {
        case "sha-1": self = .sha1
        case "sha-256": self = .sha256
        case "sha-384": self = .sha384
        case "sha-512": self = .sha512
        case let other: self = .unknown(other)
        }
    }

    /// The name as RFC 8122 writes it.
    public var name: String {
        switch self {
        case .sha1: "sha-1"
        case .sha256: "sha-256"
        case .sha384: "sha-384"
        case .sha512: "sha-512"
        case .unknown(let name): name
        }
    }

    /// The name.
    public var description: String { name }

    /// The digest's length in bytes; nil for an unknown function.
    public var digestLength: Int? {
        switch self {
        case .sha1: 20
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        case .unknown: nil
        }
    }

    /// Whether Parley can check a certificate against it (every function but an unknown one).
    public var isKnown: Bool { digestLength != nil }

    /// The known functions, strongest first: which of several fingerprints a check uses.
    public static let strongestFirst: [SDPHashFunction] = [.sha512, .sha384, .sha256, .sha1]
}

/// Why an `a=fingerprint` line was refused (and skipped).
public enum SDPFingerprintRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not `<hash-function> <fingerprint>`, or a hash function name that is not a token of at most 32 characters.
    case malformed
    /// A fingerprint that is not pairs of hex digits separated by colons (at most 64 of them).
    case badHex
    /// A fingerprint of another length than its hash function's digest.
    case wrongLength(expected: Int, actual: Int)

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .malformed: "malformed a=fingerprint"
        case .badHex: "a=fingerprint is not colon-separated hex pairs"
        case .wrongLength(let expected, let actual): "a=fingerprint has \(actual) bytes, its hash needs \(expected)"
        }
    }
}

/// A certificate fingerprint (`a=fingerprint`, RFC 8122): the hash function and the digest of the DER certificate.
/// Public, not secret: DTLS-SRTP's peer must present a certificate with this digest (GStreamer does not check it).
public struct SDPFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The hash function.
    public let hashFunction: SDPHashFunction
    /// The digest: `hashFunction.digestLength` bytes for a known function, 1 to 64 for an unknown one.
    public let digest: [UInt8]

    /// The most digest bytes read for an unknown hash function (SHA-512's length).
    static let maximumLength = 64

    /// A fingerprint; nil when the digest has the wrong length for its function.
    public init?(hashFunction: SDPHashFunction, digest: [UInt8]) {
        if let length = hashFunction.digestLength {
            guard digest.count == length else { return nil }
        } else {
            guard (1...Self.maximumLength).contains(digest.count) else { return nil }
        }
        self.hashFunction = hashFunction
        self.digest = digest
    }

    /// Reads the value of an `a=fingerprint` attribute: `<hash-function> <XX:XX:…>`. The hex digits may be in either
    /// case (RFC 8122 writes upper case; some peers write lower). Refused: a malformed value, bad hex, a digest whose
    /// length is not its function's. An unknown function is kept (``SDPHashFunction/unknown(_:)``), not refused.
    public init(attributeValue value: some StringProtocol) throws(SDPFingerprintRefusal) {
        let fields = String(value).split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count == 2, fields[0].utf8.count <= 32, fields[0].utf8.allSatisfy(SIPSyntax.isTokenByte) else {
            throw .malformed
        }
        let function = SDPHashFunction(name: fields[0])
        let pairs = fields[1].split(separator: ":", omittingEmptySubsequences: false)
        guard pairs.count <= Self.maximumLength else { throw function.digestLength.map { .wrongLength(expected: $0, actual: pairs.count) } ?? .badHex }
        var digest: [UInt8] = []
        digest.reserveCapacity(pairs.count)
        for pair in pairs {
            guard pair.utf8.count == 2, pair.utf8.allSatisfy(SIPSyntax.isHexDigit), let byte = UInt8(pair, radix: 16) else {
                throw .badHex
            }
            digest.append(byte)
        }
        if let expected = function.digestLength, expected != digest.count {
            throw .wrongLength(expected: expected, actual: digest.count)
        }
        self.hashFunction = function
        self.digest = digest
    }

    /// The attribute's value: the function's name, the digest in upper-case hex pairs.
    public var attributeValue: String {
        hashFunction.name + " " + digest.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + hex : hex
        }.joined(separator: ":")
    }

    /// The attribute's value (fingerprints are public).
    public var description: String { attributeValue }
}

extension [SDPFingerprint] {
    /// Whether a certificate matches these fingerprints (RFC 8122 §5): of the known hash functions present, the
    /// strongest is used, and one fingerprint of that function must equal the certificate's digest under it
    /// (`digest(function)`: the DER certificate hashed; nil if it cannot be computed). False when none is known.
    public func matchesCertificate(digest: (SDPHashFunction) -> [UInt8]?) -> Bool {
        guard let function = SDPHashFunction.strongestFirst.first(where: { known in contains { $0.hashFunction == known } }),
            let certificate = digest(function)
        else { return false }
        return contains { $0.hashFunction == function && $0.digest == certificate }
    }

    /// Whether one of them has a hash function Parley can check.
    public var hasKnownHashFunction: Bool { contains { $0.hashFunction.isKnown } }
}

/// The `a=setup` attribute (RFC 4145 §4, RFC 5763 §5, RFC 8842 §5): who starts the DTLS handshake.
public enum SDPSetupRole: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Either: what an offerer writes (RFC 5763 §5); the answer chooses.
    case actpass
    /// The writer starts the handshake: the DTLS client.
    case active
    /// The writer waits for it: the DTLS server.
    case passive
    /// No connection for now.
    case holdconn

    /// The role named `name`, in any case.
    public init?(name: some StringProtocol) {
        guard let role = Self.allCases.first(where: { $0.rawValue.caseInsensitiveEquals(name) }) else { return nil }
        self = role
    }

    /// The name.
    public var description: String { rawValue }

    /// The role an answerer takes to an offer that says `offered` (nil: the offer has no `a=setup`, which RFC 4145 §4
    /// reads as `active`), preferring `preferred` when the offer leaves the choice: `active` to `actpass` by default
    /// (RFC 5763 §5 recommends it: the answerer's ClientHello goes out with the answer, saving a round trip, and the
    /// answerer behind a NAT opens the path itself; baresip and linphone answer so too), `passive` to `active`,
    /// `active` to `passive`; nil to `holdconn`, or when `preferred` is not active or passive.
    public static func answer(to offered: SDPSetupRole?, preferring preferred: SDPSetupRole = .active) -> SDPSetupRole? {
        switch offered ?? .active {
        case .actpass: preferred == .active || preferred == .passive ? preferred : nil
        case .active: .passive
        case .passive: .active
        case .holdconn: nil
        }
    }

    /// Whether the writer of this role is the DTLS client (`active`), the server (`passive`), or nil when the role is
    /// not a final one (actpass, holdconn).
    public var isClient: Bool? {
        switch self {
        case .active: true
        case .passive: false
        case .actpass, .holdconn: nil
        }
    }
}
