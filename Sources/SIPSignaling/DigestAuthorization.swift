import Foundation
import SIPMessages

/// A username and password for one realm.
public struct DigestCredentials: Sendable, Hashable {
    /// The username (any UTF-8 text).
    public var username: String
    /// The password.
    public var password: String

    /// Credentials.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }
}

/// The answer to a Digest challenge: an `Authorization` or `Proxy-Authorization` header.
public struct DigestAuthorization: Sendable, Hashable {
    /// "Authorization" (for a 401) or "Proxy-Authorization" (for a 407).
    public var headerName: String
    /// The header value: `Digest username="…", realm="…", …`.
    public var headerValue: String
    /// The request digest (the `response` parameter), lowercase hex.
    public var response: String
    /// The quality of protection used; nil for a challenge without qop.
    public var qop: DigestQop?
    /// The nonce count sent (`nc`); nil for a challenge without qop.
    public var nonceCount: UInt32?
}

/// Why a challenge could not be answered.
public enum DigestAuthorizationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Only auth-int is offered and the body is not UTF-8 text, which the injected hash function cannot take.
    case bodyNotText
    /// The nonce was used 2^32 − 1 times: the count cannot go on (a new challenge is needed).
    case nonceCountExhausted

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .bodyNotText: "auth-int needs a UTF-8 body"
        case .nonceCountExhausted: "nonce count exhausted"
        }
    }
}

/// The client side of Digest authentication across requests: the nonce count of the current nonce of each realm
/// (RFC 7616 §3.4: `nc` counts the requests sent with one nonce, from 1). The caller keeps this value (one per
/// registration or call leg, or one per account) and passes it to every answer. A new nonce for a realm — a fresh or
/// stale challenge — starts its count again.
public struct DigestSession: Sendable, Hashable {
    private struct Protection: Hashable {
        var origin: DigestChallenge.Origin
        var realm: String
    }

    private struct Counter: Hashable {
        var nonce: String
        var count: UInt32
    }

    private var counters: [Protection: Counter] = [:]

    /// An empty session.
    public init() {}

    /// The nonce count last sent with `nonce` in `realm` (0 if none).
    public func nonceCount(origin: DigestChallenge.Origin, realm: String, nonce: String) -> UInt32 {
        guard let counter = counters[Protection(origin: origin, realm: realm)], counter.nonce == nonce else { return 0 }
        return counter.count
    }

    /// The answer to `challenge` for `request` (its method, Request-URI as written and body); add it to the request
    /// with `request.headers.append(answer.headerName, answer.headerValue)` (the retried request has a new CSeq and
    /// branch, which the caller sets).
    public mutating func authorize(
        _ request: SIPRequest, challenge: DigestChallenge, credentials: DigestCredentials, cnonce: String,
        hash: DigestHash
    ) throws(DigestAuthorizationError) -> DigestAuthorization {
        try authorize(
            method: request.method, uri: request.uri.description, body: request.body, challenge: challenge,
            credentials: credentials, cnonce: cnonce, hash: hash)
    }

    /// The answer to `challenge` for a request with this method, digest-uri and body (RFC 2617 §3.2.2, RFC 7616
    /// §3.4, RFC 8760).
    ///
    /// The qop is `auth` when offered, else `auth-int` (whose body hash needs the body as UTF-8 text); a challenge
    /// without qop gets the RFC 2069 answer, without cnonce and nc. With qop the nonce count goes up by one.
    /// `cnonce` is the client nonce (random, chosen by the caller; it must not be empty: a programming error traps).
    /// For a `-sess` algorithm A1 is keyed with this request's cnonce (RFC 7616 §3.4.2), as servers compute it.
    /// `hash` computes the digests. The answer carries username (hashed when the challenge asks for userhash), realm,
    /// nonce, uri, response, algorithm, cnonce, opaque, qop and nc, quoted where RFC 3261 §25.1 quotes them.
    public mutating func authorize(
        method: SIPMethod, uri: String, body: Data = Data(), challenge: DigestChallenge,
        credentials: DigestCredentials, cnonce: String, hash: DigestHash
    ) throws(DigestAuthorizationError) -> DigestAuthorization {
        let qop = challenge.qopOptions.map { $0.contains(.auth) ? DigestQop.auth : .authInt }
        var bodyText = ""
        if qop == .authInt {
            guard let text = String(data: body, encoding: .utf8) else { throw .bodyNotText }
            bodyText = text
        }
        let function = challenge.algorithm.hashFunction
        func digest(_ input: String) -> String { hash(function, input) }

        var a1Hash = digest("\(credentials.username):\(challenge.realm):\(credentials.password)")
        if challenge.algorithm.isSession {
            precondition(!cnonce.isEmpty, "A Digest answer needs a client nonce")
            a1Hash = digest("\(a1Hash):\(challenge.nonce):\(cnonce)")
        }
        var a2 = "\(method.token):\(uri)"
        if qop == .authInt { a2 += ":" + digest(bodyText) }
        let a2Hash = digest(a2)

        var nonceCount: UInt32?
        let response: String
        if let qop {
            precondition(!cnonce.isEmpty, "A Digest answer needs a client nonce")
            let count = try nextNonceCount(for: challenge)
            nonceCount = count
            let nc = Self.hex8(count)
            response = digest("\(a1Hash):\(challenge.nonce):\(nc):\(cnonce):\(qop.token):\(a2Hash)")
        } else {
            response = digest("\(a1Hash):\(challenge.nonce):\(a2Hash)")
        }

        let username = challenge.wantsUserhash
            ? digest("\(credentials.username):\(challenge.realm)") : credentials.username
        var parts = [
            "username=" + Self.quoted(username), "realm=" + Self.quoted(challenge.realm),
            "nonce=" + Self.quoted(challenge.nonce), "uri=" + Self.quoted(uri), "response=" + Self.quoted(response),
            "algorithm=" + challenge.algorithm.token,
        ]
        if let qop, let nonceCount {
            parts.append("cnonce=" + Self.quoted(cnonce))
            if let opaque = challenge.opaque { parts.append("opaque=" + Self.quoted(opaque)) }
            parts.append("qop=" + qop.token)
            parts.append("nc=" + Self.hex8(nonceCount))
        } else if let opaque = challenge.opaque {
            parts.append("opaque=" + Self.quoted(opaque))
        }
        if challenge.wantsUserhash { parts.append("userhash=true") }
        return DigestAuthorization(
            headerName: challenge.origin.authorizationHeaderName,
            headerValue: "Digest " + parts.joined(separator: ", "), response: response, qop: qop,
            nonceCount: nonceCount)
    }

    /// Counts one more request with the challenge's nonce (restarting at 1 for a new nonce in the realm).
    private mutating func nextNonceCount(for challenge: DigestChallenge) throws(DigestAuthorizationError) -> UInt32 {
        let key = Protection(origin: challenge.origin, realm: challenge.realm)
        var counter = counters[key] ?? Counter(nonce: challenge.nonce, count: 0)
        if counter.nonce != challenge.nonce { counter = Counter(nonce: challenge.nonce, count: 0) }
        guard counter.count < UInt32.max else { throw .nonceCountExhausted }
        counter.count += 1
        counters[key] = counter
        return counter.count
    }

    /// Eight lowercase hex digits (RFC 7616 `nc-value`).
    static func hex8(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// A quoted-string: `"` … `"` with `"` and `\` escaped.
    static func quoted(_ text: String) -> String {
        // Bytes, not Characters: `"` and `\` are ASCII and never part of a multi-byte scalar, and walking Characters
        // (grapheme breaking) cost ~8,000 instructions per quoted value, measured in parley-bench-register.
        var result: [UInt8] = [UInt8(ascii: "\"")]
        result.reserveCapacity(text.utf8.count + 8)
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { result.append(UInt8(ascii: "\\")) }
            result.append(byte)
        }
        result.append(UInt8(ascii: "\""))
        return String(decoding: result, as: UTF8.self)
    }
}
