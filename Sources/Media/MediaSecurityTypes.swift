import Foundation
import ParleyIO

/// An SRTP master key and salt with the suite it is used with, named as GStreamer's srtpenc and srtpdec name them.
/// The key is never written out: its description names the suite only.
public struct SRTPStreamKey: Sendable, Hashable, CustomStringConvertible {
    /// The RTP cipher (`aes-128-icm`, `aes-256-icm`, `aes-128-gcm`, `aes-256-gcm`).
    public var cipher: String
    /// The RTP authentication (`hmac-sha1-80`, `hmac-sha1-32`, `null` for the GCM suites).
    public var auth: String
    /// The RTCP cipher.
    public var rtcpCipher: String
    /// The RTCP authentication (RFC 4568 §6.2.2: the 32-bit suites keep an 80-bit tag on SRTCP).
    public var rtcpAuth: String
    /// The master key followed by the master salt (30, 46, 28 or 44 bytes).
    public var material: [UInt8]

    /// A key for a suite.
    public init(cipher: String, auth: String, rtcpCipher: String? = nil, rtcpAuth: String? = nil, material: [UInt8]) {
        self.cipher = cipher
        self.auth = auth
        self.rtcpCipher = rtcpCipher ?? cipher
        self.rtcpAuth = rtcpAuth ?? auth
        self.material = material
    }

    /// The suite, without the key.
    public var description: String { "\(cipher)/\(auth) (key not shown)" }
}

/// How a call's packets are protected: the media layer's view of what was negotiated.
public enum MediaEncryption: Sendable, Hashable, CustomStringConvertible {
    /// Plain RTP.
    case none
    /// SRTP keyed by SDES (RFC 4568): our key for what we send, the peer's for what we receive.
    case sdes(send: SRTPStreamKey, receive: SRTPStreamKey)
    /// SRTP keyed by a DTLS handshake on each component (RFC 5763/5764), the peer's certificate checked against the
    /// fingerprints its SDP gave.
    case dtls(DTLSSetup)

    /// `none`, `sdes` or `dtls`, without keys.
    public var description: String {
        switch self {
        case .none: "none"
        case .sdes(let send, _): "sdes (\(send))"
        case .dtls(let setup): "dtls (\(setup))"
        }
    }
}

/// What a DTLS-SRTP call's security layer needs: our role in the handshakes, our certificate, and what the peer's
/// must be. Its description never shows the private key.
public struct DTLSSetup: Sendable, Hashable, CustomStringConvertible {
    /// Whether we start each handshake (`a=setup:active`: the DTLS client, `dtlssrtpenc is-client`), or wait for the
    /// peer's (`passive`: the server).
    public var isClient: Bool
    /// Our certificate and its key (`dtlssrtpdec pem`), the one our SDP's fingerprint names.
    public var certificate: DTLSCertificate
    /// The fingerprints the peer's SDP gave: the certificate it presents in each handshake must match them (GStreamer
    /// does not check it; the session does, and reports a mismatch).
    public var peerFingerprints: [CertificateFingerprint]

    /// A setup.
    public init(isClient: Bool, certificate: DTLSCertificate, peerFingerprints: [CertificateFingerprint]) {
        self.isClient = isClient
        self.certificate = certificate
        self.peerFingerprints = peerFingerprints
    }

    /// Equal roles, certificates (by their PEM) and fingerprints.
    public static func == (lhs: DTLSSetup, rhs: DTLSSetup) -> Bool {
        lhs.isClient == rhs.isClient && lhs.certificate.pem == rhs.certificate.pem && lhs.peerFingerprints == rhs.peerFingerprints
    }

    /// Hashes what equality compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(isClient)
        hasher.combine(certificate.pem)
        hasher.combine(peerFingerprints)
    }

    /// Role, our fingerprint and the peer's; no key.
    public var description: String {
        "\(isClient ? "client" : "server"), ours \(certificate.fingerprint), peer's \(peerFingerprints.map(\.description).joined(separator: ", "))"
    }
}

/// What a session's security layer found out about the peer (DTLS-SRTP), told to whoever runs the session.
public enum MediaSecurityOutcome: Sendable, Hashable, CustomStringConvertible {
    /// The RTP component's handshake completed with the certificate the peer's SDP named: audio flows.
    case secured
    /// The peer presented another certificate than its SDP named, or the handshake did not complete in time: no
    /// audio flows, and the call should end.
    case failed(String)

    /// A sentence.
    public var description: String {
        switch self {
        case .secured: "DTLS-SRTP established, the peer's certificate matches its fingerprint"
        case .failed(let why): why
        }
    }
}
