import Foundation
import SIPTransport

/// Whether calls' media is encrypted (issue 42, docs/media.md): what our offers use, and whether plain media is
/// refused. An offer that arrives encrypted is always answered in kind (when the media layer has the elements).
public struct MediaEncryptionPolicy: Sendable, Hashable {
    /// What our offers use.
    public enum Offer: String, Sendable, Hashable, CaseIterable {
        /// SRTP keyed by SDES when the call's signalling is TLS, else plain RTP: SDES keys travel in the SDP, which
        /// anyone on the path reads over UDP or TCP (RFC 4568 §8.3; GNOME Calls' rule).
        case auto
        /// Plain RTP.
        case none
        /// SRTP keyed by SDES on every transport (the keys are readable on the path unless signalling is TLS; the
        /// log says so once per call).
        case sdes
        /// SRTP keyed by DTLS on the media path (RFC 5763/5764): `UDP/TLS/RTP/SAVP`, `a=setup:actpass` and our
        /// certificate's fingerprint; no key travels in the SDP, and the peer's certificate is checked against its.
        case dtls
    }

    /// What our offers use.
    public var offer: Offer
    /// Whether a description without encryption is refused (488), so that a call never carries plain audio.
    public var required: Bool

    /// A policy; by default our offers are plain (a peer without SRTP refuses an RTP/SAVP offer with 488, and
    /// Parley does not retry it plain yet), and encrypted offers are answered in kind.
    public init(offer: Offer = .none, required: Bool = false) {
        self.offer = offer
        self.required = required
    }

    /// Whether our offer on signalling of `kind` carries SDES keys: required (unless DTLS is asked for), asked for,
    /// or `auto` over TLS.
    public func offersSDES(over kind: SIPTransportKind) -> Bool {
        switch offer {
        case .sdes: true
        case .none: required
        case .auto: required || kind == .tls
        case .dtls: false
        }
    }

    /// Whether our offers are DTLS-SRTP.
    public var offersDTLS: Bool { offer == .dtls }
}
