import Foundation

/// How a stream's media is protected: the family of its RTP profile.
public enum SDPEncryption: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// RTP in clear (RTP/AVP, RTP/AVPF).
    case plain
    /// SRTP keyed in the SDP by `a=crypto` (RFC 4568; RTP/SAVP, RTP/SAVPF).
    case sdes
    /// SRTP keyed by a DTLS handshake on the media path (RFC 5763/5764; UDP/TLS/RTP/SAVP, UDP/TLS/RTP/SAVPF).
    case dtls

    /// The name.
    public var description: String { rawValue }
}

/// The transport protocol of an `m=` line (RFC 4566's `<proto>`): the RTP profiles Parley knows, any other by its text.
public enum SDPTransportProtocol: Sendable, Hashable, CustomStringConvertible {
    /// RTP/AVP (RFC 3551): plain RTP.
    case rtpAVP
    /// RTP/AVPF (RFC 4585): plain RTP with RTCP feedback.
    case rtpAVPF
    /// RTP/SAVP (RFC 3711): SRTP, keyed by SDES.
    case rtpSAVP
    /// RTP/SAVPF (RFC 5124): SRTP with RTCP feedback, keyed by SDES.
    case rtpSAVPF
    /// UDP/TLS/RTP/SAVP (RFC 5764): SRTP keyed by DTLS.
    case udpTLSRTPSAVP
    /// UDP/TLS/RTP/SAVPF (RFC 5764): SRTP with RTCP feedback keyed by DTLS.
    case udpTLSRTPSAVPF
    /// Any other protocol, as written.
    case unknown(String)

    /// The protocol `text` names, in any case.
    public init(_ text: some StringProtocol) {
        let known: [SDPTransportProtocol] = [.rtpAVP, .rtpAVPF, .rtpSAVP, .rtpSAVPF, .udpTLSRTPSAVP, .udpTLSRTPSAVPF]
        self = known.first { $0.text.caseInsensitiveEquals(text) } ?? .unknown(String(text))
    }

    /// The known profile of `encryption`, with RTCP feedback or without.
    public static func rtp(_ encryption: SDPEncryption, feedback: Bool = false) -> SDPTransportProtocol {
        switch encryption {
        case .plain: feedback ? .rtpAVPF : .rtpAVP
        case .sdes: feedback ? .rtpSAVPF : .rtpSAVP
        case .dtls: feedback ? .udpTLSRTPSAVPF : .udpTLSRTPSAVP
        }
    }

    /// The text of the `m=` line.
    public var text: String {
        switch self {
        case .rtpAVP: "RTP/AVP"
        case .rtpAVPF: "RTP/AVPF"
        case .rtpSAVP: "RTP/SAVP"
        case .rtpSAVPF: "RTP/SAVPF"
        case .udpTLSRTPSAVP: "UDP/TLS/RTP/SAVP"
        case .udpTLSRTPSAVPF: "UDP/TLS/RTP/SAVPF"
        case .unknown(let text): text
        }
    }

    /// The text.
    public var description: String { text }

    /// The family of a known profile; nil for an unknown protocol.
    public var encryption: SDPEncryption? {
        switch self {
        case .rtpAVP, .rtpAVPF: .plain
        case .rtpSAVP, .rtpSAVPF: .sdes
        case .udpTLSRTPSAVP, .udpTLSRTPSAVPF: .dtls
        case .unknown: nil
        }
    }

    /// Whether the media is SRTP (SAVP, SAVPF, over SDES or DTLS).
    public var isSecure: Bool { encryption == .sdes || encryption == .dtls }

    /// Whether it is an RTCP feedback profile (the "F": AVPF, SAVPF).
    public var hasFeedback: Bool { self == .rtpAVPF || self == .rtpSAVPF || self == .udpTLSRTPSAVPF }

    /// Whether the keys come from DTLS (UDP/TLS/RTP/…).
    public var isDTLS: Bool { encryption == .dtls }
}

/// What one side of an offer/answer states for its audio stream's protection, and what the engine hands in to secure
/// an offer (``SDPSession/secured(_:feedback:)``) or to answer a secure one (`SDPSession.answer(…, security:)`). Its
/// description redacts keys.
public enum SDPMediaSecurity: Sendable, Hashable, CustomStringConvertible {
    /// Plain RTP.
    case plain
    /// SDES: the `a=crypto` lines. In an offer, one per suite, each with its own fresh key (``SDPCrypto/fresh(suites:key:)``);
    /// in an answer's input, the same: our key for every suite we accept, in our order of preference.
    case sdes([SDPCrypto])
    /// DTLS-SRTP: our certificate's fingerprints and the setup role. In an offer the role is written (`actpass`,
    /// RFC 5763 §5); in an answer's input it is the role taken when the offer says `actpass` (`active` or `passive`).
    case dtls(fingerprints: [SDPFingerprint], setup: SDPSetupRole)

    /// The family.
    public var encryption: SDPEncryption {
        switch self {
        case .plain: .plain
        case .sdes: .sdes
        case .dtls: .dtls
        }
    }

    /// The family and the public parts (tags, suites, fingerprints, role); never a key.
    public var description: String {
        switch self {
        case .plain: "plain"
        case .sdes(let lines): "sdes(\(lines.map(\.description).joined(separator: ", ")))"
        case .dtls(let fingerprints, let setup): "dtls(\(setup), \(fingerprints.map(\.description).joined(separator: ", ")))"
        }
    }
}

extension SDPSession {
    /// What this description states for its audio stream: by its protocol's family, its `a=crypto` lines, or its
    /// fingerprints and setup role (`active` when it has none, as RFC 4145 §4 reads a missing `a=setup`). An unknown
    /// protocol states nothing usable: plain.
    public var security: SDPMediaSecurity {
        switch audioProtocol.encryption {
        case .sdes: .sdes(crypto)
        case .dtls: .dtls(fingerprints: fingerprints, setup: setup ?? .active)
        case .plain, nil: .plain
        }
    }

    /// This description with its audio stream secured by `security`, for an offer: RTP/AVP, RTP/SAVP with the
    /// `a=crypto` lines, or UDP/TLS/RTP/SAVP with the fingerprints and setup role (the F profiles with `feedback`);
    /// the attributes of the other families are removed. (An answer gets its security from `answer(…, security:)`.)
    public func secured(_ security: SDPMediaSecurity, feedback: Bool = false) -> SDPSession {
        var copy = self
        copy.audioProtocol = .rtp(security.encryption, feedback: feedback)
        copy.crypto = []
        copy.fingerprints = []
        copy.setup = nil
        switch security {
        case .plain: break
        case .sdes(let lines): copy.crypto = lines
        case .dtls(let fingerprints, let setup):
            copy.fingerprints = fingerprints
            copy.setup = setup
        }
        return copy
    }

    /// The `a=crypto` line an answer with `ours` gives this offer (RFC 4568 §7.1.2): the offer's first line whose
    /// suite one of ours has, with the offer's tag and our key for that suite; nil when no suite is common.
    public func answerCrypto(from ours: [SDPCrypto]) -> SDPCrypto? {
        for offered in crypto {
            if let mine = ours.first(where: { $0.suite == offered.suite }),
                let answer = SDPCrypto(tag: offered.tag, suite: offered.suite, key: mine.key)
            {
                return answer
            }
        }
        return nil
    }

    /// How an answer with `ours` meets this offer's audio protocol: its protocol and security, or nil (488).
    ///
    /// RTP/AVP is answered plain whatever `ours` is, its `a=crypto` lines ignored (as linphone does: only the profile
    /// says SRTP). RTP/SAVP(F) needs `.sdes` and a common suite, UDP/TLS/RTP/SAVP(F) needs `.dtls`, a fingerprint
    /// of a known hash function in the offer and a setup role to answer; both are answered in kind (RFC 5124: the
    /// offer's own profile, with or without F). RTP/AVPF and unknown protocols are not answered.
    func securityAnswer(with ours: SDPMediaSecurity) -> (SDPTransportProtocol, SDPMediaSecurity)? {
        switch audioProtocol {
        case .rtpAVP:
            return (.rtpAVP, .plain)
        case .rtpSAVP, .rtpSAVPF:
            guard case .sdes(let lines) = ours, let chosen = answerCrypto(from: lines) else { return nil }
            return (audioProtocol, .sdes([chosen]))
        case .udpTLSRTPSAVP, .udpTLSRTPSAVPF:
            guard case .dtls(let ourFingerprints, let preferred) = ours, ourFingerprints.hasKnownHashFunction,
                fingerprints.hasKnownHashFunction, let role = SDPSetupRole.answer(to: setup, preferring: preferred)
            else { return nil }
            return (audioProtocol, .dtls(fingerprints: ourFingerprints, setup: role))
        case .rtpAVPF, .unknown:
            return nil
        }
    }
}

/// The security attributes of one level of a description (the audio stream's, or the session's), read one attribute
/// at a time: bounded, so a hundred `a=crypto` lines cost no more than sixteen.
struct SDPSecurityAttributes {
    /// The most `a=crypto` lines examined; the rest are ignored.
    static let maximumCryptoLines = 16
    /// The most `a=fingerprint` lines examined; the rest are ignored.
    static let maximumFingerprintLines = 8

    /// The usable `a=crypto` lines, in order; a line whose tag an earlier one has is skipped.
    private(set) var crypto: [SDPCrypto] = []
    /// The usable `a=fingerprint` lines, in order.
    private(set) var fingerprints: [SDPFingerprint] = []
    /// The first valid `a=setup`.
    private(set) var setup: SDPSetupRole?
    /// Whether `a=rtcp-mux` is present.
    private(set) var rtcpMux = false
    /// How many `a=crypto` lines were seen, usable or not.
    private(set) var cryptoLines = 0
    /// How many `a=fingerprint` lines were seen, usable or not (a level with any overrides the session's).
    private(set) var fingerprintLines = 0

    /// Reads one attribute (`field` as written, `value` nil for a property attribute).
    mutating func read(field: String, value: String?) {
        // Byte compares, no lower-cased copy: every attribute of every description passes here.
        if field.caseInsensitiveEquals("crypto") {
            cryptoLines += 1
            guard cryptoLines <= Self.maximumCryptoLines, let value, let line = try? SDPCrypto(attributeValue: value),
                !crypto.contains(where: { $0.tag == line.tag })
            else { return }
            crypto.append(line)
        } else if field.caseInsensitiveEquals("fingerprint") {
            fingerprintLines += 1
            guard fingerprintLines <= Self.maximumFingerprintLines, let value,
                let fingerprint = try? SDPFingerprint(attributeValue: value)
            else { return }
            fingerprints.append(fingerprint)
        } else if field.caseInsensitiveEquals("setup") {
            if setup == nil, let value { setup = SDPSetupRole(name: value.trimmingSDPSpaces) }
        } else if field.caseInsensitiveEquals("rtcp-mux") {
            rtcpMux = true
        }
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    var trimmingSDPSpaces: Substring {
        var text = self[...]
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
