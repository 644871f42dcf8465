/// A hash function for Digest authentication, injected so that SIPSignaling needs no crypto library: it returns the
/// lowercase hex digest of `input`'s UTF-8 bytes. It is only ever called with `.md5`, `.sha256` or `.sha512_256` (the
/// session variants use the same function), so an implementation maps those three to MD5, SHA-256 and SHA-512/256.
public typealias DigestHash = @Sendable (_ algorithm: DigestAlgorithm, _ input: String) -> String

/// The Digest algorithms Parley answers (RFC 2617, RFC 7616, RFC 8760 for SIP).
public enum DigestAlgorithm: Sendable, Hashable, CaseIterable {
    /// MD5 (RFC 2617; the default when a challenge names none).
    case md5
    /// MD5-sess: MD5 with the session key H(user:realm:password):nonce:cnonce.
    case md5Session
    /// SHA-256 (RFC 7616, RFC 8760).
    case sha256
    /// SHA-256-sess.
    case sha256Session
    /// SHA-512/256 (RFC 7616, RFC 8760): SHA-512 with its own initial values, cut to 256 bits.
    case sha512_256
    /// SHA-512-256-sess.
    case sha512_256Session

    /// The algorithm a challenge names (compared case-insensitively); nil for one Parley does not know.
    public init?(token: String) {
        switch token.lowercasedASCII {
        case "md5": self = .md5
        case "md5-sess": self = .md5Session
        case "sha-256": self = .sha256
        case "sha-256-sess": self = .sha256Session
        case "sha-512-256": self = .sha512_256
        case "sha-512-256-sess": self = .sha512_256Session
        default: return nil
        }
    }

    /// The name as written in challenges and answers: "MD5", "SHA-256-sess", ….
    public var token: String {
        switch self {
        case .md5: "MD5"
        case .md5Session: "MD5-sess"
        case .sha256: "SHA-256"
        case .sha256Session: "SHA-256-sess"
        case .sha512_256: "SHA-512-256"
        case .sha512_256Session: "SHA-512-256-sess"
        }
    }

    /// The hash function underneath: the algorithm without `-sess`.
    public var hashFunction: DigestAlgorithm {
        switch self {
        case .md5, .md5Session: .md5
        case .sha256, .sha256Session: .sha256
        case .sha512_256, .sha512_256Session: .sha512_256
        }
    }

    /// Whether A1 is the session key (RFC 7616 §3.4.2).
    public var isSession: Bool {
        switch self {
        case .md5, .sha256, .sha512_256: false
        case .md5Session, .sha256Session, .sha512_256Session: true
        }
    }

    /// How strong the hash is: SHA-512/256 over SHA-256 over MD5 (a session variant ranks as its hash).
    public var strength: Int {
        switch self {
        case .md5, .md5Session: 1
        case .sha256, .sha256Session: 2
        case .sha512_256, .sha512_256Session: 3
        }
    }
}

/// A quality of protection (RFC 7616 §3.3): what the response digest covers.
public enum DigestQop: Sendable, Hashable, CaseIterable {
    /// Authentication: method and Request-URI.
    case auth
    /// Authentication with integrity: method, Request-URI and the body's hash.
    case authInt

    /// The token as written: "auth" or "auth-int".
    public var token: String {
        switch self {
        case .auth: "auth"
        case .authInt: "auth-int"
        }
    }
}

/// Why a challenge cannot be read or answered.
public enum DigestChallengeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The header value breaks the challenge grammar at this UTF-8 offset.
    case syntax(reason: String, offset: Int)
    /// A Digest challenge lacks a required parameter ("realm" or "nonce").
    case missingParameter(String)
    /// A Digest challenge has the same parameter twice (RFC 7235 §2.1 forbids it).
    case duplicateParameter(String)
    /// The challenge names an algorithm Parley does not know (RFC 7616 §3.3: such a challenge is ignored).
    case unsupportedAlgorithm(String)
    /// The challenge offers qop values of which Parley knows none.
    case unsupportedQop(String)
    /// A session algorithm without qop: no cnonce could be sent, so the server could not check the answer.
    case sessionAlgorithmWithoutQop(String)
    /// The response carries no Digest challenge at all.
    case noDigestChallenge

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .syntax(let reason, let offset): "malformed challenge at offset \(offset): \(reason)"
        case .missingParameter(let name): "Digest challenge without \(name)"
        case .duplicateParameter(let name): "Digest challenge with \(name) twice"
        case .unsupportedAlgorithm(let name): "unsupported Digest algorithm \(name)"
        case .unsupportedQop(let value): "unsupported qop \"\(value)\""
        case .sessionAlgorithmWithoutQop(let name): "\(name) challenge without qop"
        case .noDigestChallenge: "no Digest challenge"
        }
    }
}
