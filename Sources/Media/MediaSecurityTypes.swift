import Foundation

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

    /// `none` or `sdes`, without keys.
    public var description: String {
        switch self {
        case .none: "none"
        case .sdes(let send, _): "sdes (\(send))"
        }
    }
}
