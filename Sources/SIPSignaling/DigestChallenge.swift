import SIPMessages

/// A Digest challenge from a `WWW-Authenticate` (401) or `Proxy-Authenticate` (407) header (RFC 3261 §22, RFC 2617
/// §3.2.1, RFC 7616 §3.3, RFC 8760).
public struct DigestChallenge: Sendable, Hashable {
    /// Who challenged, which decides the header the answer goes in.
    public enum Origin: Sendable, Hashable {
        /// The user agent server or registrar: `WWW-Authenticate`, answered in `Authorization`.
        case server
        /// A proxy: `Proxy-Authenticate`, answered in `Proxy-Authorization`.
        case proxy

        /// The header that carries challenges of this origin.
        public var challengeHeaderName: String {
            switch self {
            case .server: "WWW-Authenticate"
            case .proxy: "Proxy-Authenticate"
            }
        }

        /// The header that carries the answer.
        public var authorizationHeaderName: String {
            switch self {
            case .server: "Authorization"
            case .proxy: "Proxy-Authorization"
            }
        }
    }

    /// Who challenged.
    public var origin: Origin
    /// The protection space; credentials are chosen by it.
    public var realm: String
    /// The server's nonce.
    public var nonce: String
    /// The opaque value to echo, if the server sent one.
    public var opaque: String?
    /// The algorithm (MD5 when the challenge names none).
    public var algorithm: DigestAlgorithm
    /// The qualities of protection offered, in the server's order, unknown ones left out; nil when the challenge
    /// has no qop (an RFC 2069-style challenge, answered without cnonce and nc).
    public var qopOptions: [DigestQop]?
    /// Whether the previous answer failed only because its nonce had expired (retry without asking the user again).
    public var isStale: Bool
    /// Whether the server wants the username hashed (RFC 7616 §3.4.4 `userhash=true`).
    public var wantsUserhash: Bool

    /// A challenge with these parts.
    public init(
        origin: Origin, realm: String, nonce: String, opaque: String? = nil, algorithm: DigestAlgorithm = .md5,
        qopOptions: [DigestQop]? = [.auth], isStale: Bool = false, wantsUserhash: Bool = false
    ) {
        self.origin = origin
        self.realm = realm
        self.nonce = nonce
        self.opaque = opaque
        self.algorithm = algorithm
        self.qopOptions = qopOptions
        self.isStale = isStale
        self.wantsUserhash = wantsUserhash
    }

    /// The Digest challenges of one header value, in order. Challenges of other schemes (Basic, Bearer, …) are
    /// skipped. A value whose syntax is broken throws `.syntax`; a Digest challenge that reads but cannot be
    /// answered (no realm or nonce, a parameter twice, an unknown algorithm or qop) is left out and its reason
    /// returned in `ignored`.
    public static func parse(
        _ value: String, origin: Origin
    ) throws(DigestChallengeError) -> (challenges: [DigestChallenge], ignored: [DigestChallengeError]) {
        var challenges: [DigestChallenge] = []
        var ignored: [DigestChallengeError] = []
        for raw in try AuthChallengeSyntax.challenges(in: value) where raw.scheme.lowercasedASCII == "digest" {
            do {
                challenges.append(try DigestChallenge(raw, origin: origin))
            } catch {
                ignored.append(error)
            }
        }
        return (challenges, ignored)
    }

    /// The challenges to answer for a 401 or 407 `response`: every `WWW-Authenticate` and `Proxy-Authenticate` value
    /// is read (a proxy that forked may gather both kinds in one response, RFC 3261 §16.7), and for each origin and
    /// realm the strongest supported algorithm wins (SHA-512-256 over SHA-256 over MD5; among equals the topmost).
    /// The result keeps the order in which each realm first appears; the caller answers every one of them.
    ///
    /// Throws when nothing can be answered: the first reason a Digest challenge was refused (syntax first), or
    /// `.noDigestChallenge`.
    public static func preferred(in response: SIPResponse) throws(DigestChallengeError) -> [DigestChallenge] {
        var chosen: [DigestChallenge] = []
        var syntaxErrors: [DigestChallengeError] = []
        var ignored: [DigestChallengeError] = []
        for origin in [Origin.server, .proxy] {
            for value in response.headers.values(origin.challengeHeaderName) {
                do {
                    let parsed = try parse(value, origin: origin)
                    ignored += parsed.ignored
                    for challenge in parsed.challenges { keepStrongest(challenge, in: &chosen) }
                } catch {
                    syntaxErrors.append(error)
                }
            }
        }
        guard chosen.isEmpty else { return chosen }
        throw syntaxErrors.first ?? ignored.first ?? .noDigestChallenge
    }

    /// Adds `challenge` unless one for the same origin and realm is at least as strong; replaces a weaker one in place.
    private static func keepStrongest(_ challenge: DigestChallenge, in chosen: inout [DigestChallenge]) {
        guard let index = chosen.firstIndex(where: { $0.origin == challenge.origin && $0.realm == challenge.realm })
        else {
            chosen.append(challenge)
            return
        }
        if challenge.algorithm.strength > chosen[index].algorithm.strength { chosen[index] = challenge }
    }

    /// Reads a Digest challenge's parameters (names case-insensitive; unknown ones such as domain and charset ignored).
    private init(_ raw: AuthChallengeSyntax.Challenge, origin: Origin) throws(DigestChallengeError) {
        var values: [String: String] = [:]
        for parameter in raw.parameters {
            guard values.updateValue(parameter.value, forKey: parameter.name) == nil else {
                throw .duplicateParameter(parameter.name)
            }
        }
        guard let realm = values["realm"] else { throw .missingParameter("realm") }
        guard let nonce = values["nonce"] else { throw .missingParameter("nonce") }
        var algorithm = DigestAlgorithm.md5
        if let name = values["algorithm"] {
            guard let known = DigestAlgorithm(token: name) else { throw .unsupportedAlgorithm(name) }
            algorithm = known
        }
        var qopOptions: [DigestQop]?
        if let qop = values["qop"] {
            let tokens = qop.split(separator: ",").map { String($0).trimmingSpaces.lowercasedASCII }
            let known = tokens.compactMap { token in DigestQop.allCases.first { $0.token == token } }
            guard !known.isEmpty else { throw .unsupportedQop(qop) }
            qopOptions = known
        }
        if algorithm.isSession, qopOptions == nil { throw .sessionAlgorithmWithoutQop(algorithm.token) }
        self.init(
            origin: origin, realm: realm, nonce: nonce, opaque: values["opaque"], algorithm: algorithm,
            qopOptions: qopOptions, isStale: values["stale"]?.lowercasedASCII == "true",
            wantsUserhash: values["userhash"]?.lowercasedASCII == "true")
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return String(text)
    }
}
