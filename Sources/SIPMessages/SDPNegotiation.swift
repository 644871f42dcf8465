import Foundation

/// The SRTP keys of a call's audio after an SDES offer/answer, seen from our side. Each `a=crypto` carries the key its
/// writer encrypts with (RFC 4568 §6.1), so ours is the send key and the peer's the receive key, under one suite.
/// Its description redacts both keys.
public struct SRTPKeying: Sendable, Hashable, CustomStringConvertible {
    /// The suite both lines name.
    public let suite: SRTPSuite
    /// The tag of the accepted line (the offer's, echoed by the answer).
    public let tag: Int
    /// Ours: what `srtpenc` encrypts with (its `key`, with `suite`'s cipher and auth names).
    public let sendKey: SRTPKey
    /// The peer's: what `srtpdec` decrypts with (the `srtp-key` its `request-key` signal is answered with).
    public let receiveKey: SRTPKey

    /// Keys of one suite.
    public init(suite: SRTPSuite, tag: Int, sendKey: SRTPKey, receiveKey: SRTPKey) {
        self.suite = suite
        self.tag = tag
        self.sendKey = sendKey
        self.receiveKey = receiveKey
    }

    /// Suite and tag; the keys redacted.
    public var description: String { "SRTPKeying(\(tag) \(suite), keys redacted)" }
}

/// What a DTLS-SRTP offer/answer settled, seen from our side: our role in the handshake and the fingerprints the
/// peer's certificate must match (the media layer checks it: GStreamer's DTLS elements do not).
public struct DTLSKeying: Sendable, Hashable, CustomStringConvertible {
    /// Whether we start the handshake (`active`: `dtlssrtpenc`'s `is-client`), or wait for it (`passive`).
    public let isClient: Bool
    /// The peer's fingerprints (its media level's, else its session's); at least one of a known hash function.
    public let peerFingerprints: [SDPFingerprint]

    /// A role and the peer's fingerprints.
    public init(isClient: Bool, peerFingerprints: [SDPFingerprint]) {
        self.isClient = isClient
        self.peerFingerprints = peerFingerprints
    }

    /// Whether the peer's certificate is the one its SDP named (see `[SDPFingerprint].matchesCertificate`).
    public func matchesPeerCertificate(digest: (SDPHashFunction) -> [UInt8]?) -> Bool {
        peerFingerprints.matchesCertificate(digest: digest)
    }

    /// Role and fingerprints.
    public var description: String {
        "DTLSKeying(\(isClient ? "client" : "server"), peer \(peerFingerprints.map(\.description).joined(separator: ", ")))"
    }
}

/// What an offer and its answer agreed for the audio stream's protection.
public enum SDPNegotiatedSecurity: Sendable, Hashable, CustomStringConvertible {
    /// Plain RTP: both sides wrote RTP/AVP (or AVPF).
    case plain
    /// SRTP keyed by SDES.
    case sdes(SRTPKeying)
    /// SRTP keyed by DTLS.
    case dtls(DTLSKeying)

    /// The family.
    public var encryption: SDPEncryption {
        switch self {
        case .plain: .plain
        case .sdes: .sdes
        case .dtls: .dtls
        }
    }

    /// The family and its public parts; never a key.
    public var description: String {
        switch self {
        case .plain: "plain"
        case .sdes(let keying): keying.description
        case .dtls(let keying): keying.description
        }
    }
}

extension SDPSession {
    /// What `offer` and `answer` agreed for the audio stream, seen from our side (`localIsOfferer`: we wrote the offer;
    /// else we wrote the answer). Nil when the answer does not fit the offer, and the call must carry no media:
    /// - the two protocols are of different families (an encrypted offer answered plain, or the reverse), or either
    ///   is unknown — the F and non-F profiles of one family fit (RFC 5124);
    /// - SDES: no line of the answer has the tag and suite of a line of the offer (RFC 4568 §7.1.3);
    /// - DTLS: the roles do not complement each other (actpass → active or passive; active ↔ passive; a missing
    ///   `a=setup` reads as `active`, RFC 4145 §4), or the peer gave no fingerprint of a known hash function.
    ///
    /// Whether RTCP is multiplexed is not security: `offer.rtcpMux && answer.rtcpMux` (RFC 5761).
    public static func negotiatedSecurity(
        offer: SDPSession, answer: SDPSession, localIsOfferer: Bool
    ) -> SDPNegotiatedSecurity? {
        guard let family = offer.audioProtocol.encryption, answer.audioProtocol.encryption == family else { return nil }
        switch family {
        case .plain:
            return .plain
        case .sdes:
            for answered in answer.crypto {
                guard let offered = offer.crypto.first(where: { $0.tag == answered.tag }), offered.suite == answered.suite
                else { continue }
                let (ours, theirs) = localIsOfferer ? (offered, answered) : (answered, offered)
                return .sdes(SRTPKeying(suite: offered.suite, tag: offered.tag, sendKey: ours.key, receiveKey: theirs.key))
            }
            return nil
        case .dtls:
            let answerRole = answer.setup ?? .active
            guard let answererIsClient = answerRole.isClient,
                SDPSetupRole.answer(to: offer.setup, preferring: answerRole) == answerRole
            else { return nil }
            let peer = localIsOfferer ? answer.fingerprints : offer.fingerprints
            guard peer.hasKnownHashFunction else { return nil }
            return .dtls(DTLSKeying(isClient: localIsOfferer ? !answererIsClient : answererIsClient, peerFingerprints: peer))
        }
    }
}
