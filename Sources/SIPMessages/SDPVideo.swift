import Foundation

/// One video payload format of an `m=video` stream: its payload type and, from `a=rtpmap`, its encoding name.
public struct SDPVideoFormat: Sendable, Hashable {
    /// The payload type (dynamic, 96–127, for the formats Parley offers).
    public var payloadType: Int
    /// The encoding name (`VP8`, `H264`), empty when the stream gave no rtpmap for it.
    public var encodingName: String

    /// A format.
    public init(payloadType: Int, encodingName: String) {
        self.payloadType = payloadType
        self.encodingName = encodingName
    }

    /// What Parley offers and accepts, in order of preference: VP8 (RFC 7741) and H.264 (RFC 6184, constrained
    /// baseline, packetization-mode 1) at 90 kHz, each with its retransmission format (RFC 4588's `rtx`, answered
    /// only beside the format it repeats).
    public static let supported = [
        SDPVideoFormat(payloadType: 96, encodingName: "VP8"), SDPVideoFormat(payloadType: 97, encodingName: "H264"),
        SDPVideoFormat(payloadType: 98, encodingName: "rtx"), SDPVideoFormat(payloadType: 99, encodingName: "rtx"),
    ]

    /// The formats our RTX formats repeat, by their payload type.
    static let retransmitted = [98: 96, 99: 97]

    /// What an offer of ours lists for `codecs` (encoding names, in our order of preference; unknown ones skipped):
    /// each codec's format, then the retransmission formats of those.
    public static func offered(_ codecs: [String]) -> [SDPVideoFormat] {
        let media = codecs.compactMap { name in
            supported.first { !$0.isRetransmission && $0.encodingName.caseInsensitiveCompare(name) == .orderedSame }
        }
        let kept = Set(media.map(\.payloadType))
        return media + supported.filter { format in retransmitted[format.payloadType].map(kept.contains) == true }
    }

    /// Whether it is H.264.
    var isH264: Bool { encodingName.caseInsensitiveCompare("H264") == .orderedSame }

    /// Whether an H.264 `profile-level-id` (RFC 6184 §8.1) is one openh264 decodes and our constrained baseline
    /// answer may keep: absent (baseline), profile_idc 66 (baseline), or constraint_set1 (what main and high streams
    /// that are constrained baseline say).
    static func isBaseline(profileLevelID: String?) -> Bool {
        guard let id = profileLevelID, let profile = UInt8(id.prefix(2), radix: 16),
            let constraints = UInt8(id.dropFirst(2).prefix(2), radix: 16)
        else { return true }
        return profile == 0x42 || constraints & 0x40 != 0
    }

    /// Whether it is RFC 4588's retransmission format.
    public var isRetransmission: Bool { encodingName.caseInsensitiveCompare("rtx") == .orderedSame }

    /// What our descriptions say of this format: the RTCP feedback we take (RFC 4585, RFC 5104: generic NACK, the
    /// jitter buffer asking again for a lost packet; PLI and FIR, a keyframe), and for H.264 constrained baseline
    /// level 3.1 in packetization-mode 1 (what openh264 makes and rtph264pay sends: FU-A fragments).
    var ourParameters: SDPVideoParameters {
        var parameters = SDPVideoParameters()
        guard !isRetransmission else { return parameters }
        parameters.feedback = [.nack, .pli, .fir]
        if isH264 { (parameters.profileLevelID, parameters.packetizationMode) = ("42e01f", 1) }
        return parameters
    }
}

/// The `m=video` stream of a session description (RFC 3264), carried by the media layer (docs/media.md): its port,
/// profile, formats and their parameters, its own SDES keys or DTLS fingerprint and role when the call's media is
/// SRTP, its direction.
public struct SDPVideo: Sendable, Hashable {
    /// The RTP port; 0 when the stream is refused or removed.
    public var port: Int
    /// The transport protocol (`RTP/AVP`, `RTP/SAVP`, `UDP/TLS/RTP/SAVP`, with or without F).
    public var transport: String
    /// The formats, in the order listed.
    public var formats: [SDPVideoFormat]
    /// The stream's own direction attribute, if it has one.
    public var direction: SDPDirection?
    /// Its `a=crypto` lines (SDES keys for this stream alone: RTP/SAVP(F)).
    public var crypto: [SDPCrypto] = []
    /// DTLS-SRTP (UDP/TLS/RTP/SAVP(F), RFC 5763/5764): the certificate fingerprints (the stream's `a=fingerprint`
    /// lines, else the session's) and the setup role (its `a=setup`, else the session's). The stream has a
    /// handshake of its own, on its own ports.
    public var fingerprints: [SDPFingerprint] = []
    public var setup: SDPSetupRole?
    /// What the description's `a=fmtp` and `a=rtcp-fb` lines say of each format, by payload type (a format they say
    /// nothing of has none): read from a peer's, ours for each named format of a stream we make with a port.
    public var parameters: [Int: SDPVideoParameters] = [:]

    /// A video stream.
    public init(
        port: Int, transport: String = "RTP/AVP", formats: [SDPVideoFormat] = SDPVideoFormat.supported, direction: SDPDirection? = nil,
        crypto: [SDPCrypto] = []
    ) {
        self.port = port
        self.transport = transport
        self.formats = formats
        self.direction = direction
        self.crypto = crypto
        if port != 0 {
            for format in formats where !format.encodingName.isEmpty { parameters[format.payloadType] = format.ourParameters }
            for format in formats where format.isRetransmission {
                parameters[format.payloadType]?.associatedPayloadType = SDPVideoFormat.retransmitted[format.payloadType]
            }
        }
    }

    /// Whether video is on: the stream has a port.
    public var isActive: Bool { port != 0 }

    /// Its profile.
    public var transportProtocol: SDPTransportProtocol { SDPTransportProtocol(transport) }

    /// This stream secured for an offer: DTLS-SRTP (UDP/TLS/RTP/SAVP) with our fingerprints and role.
    public func secured(fingerprints: [SDPFingerprint], setup: SDPSetupRole) -> SDPVideo {
        var copy = self
        (copy.crypto, copy.fingerprints, copy.setup) = ([], fingerprints, setup)
        copy.transport = SDPTransportProtocol.rtp(.dtls, feedback: transportProtocol.hasFeedback).text
        return copy
    }

    /// This stream secured for an offer: RTP/SAVP with `crypto` (its own keys), or RTP/AVP without.
    public func secured(_ crypto: [SDPCrypto]?) -> SDPVideo {
        var copy = self
        (copy.crypto, copy.fingerprints, copy.setup) = (crypto ?? [], [], nil)
        copy.transport = SDPTransportProtocol.rtp(crypto == nil ? .plain : .sdes, feedback: transportProtocol.hasFeedback).text
        return copy
    }

    /// The formats of this (offered) stream we carry, in its order: VP8, H.264 in packetization-mode 1 only (our
    /// payloader fragments; mode 0 allows single NAL units alone), and the retransmission formats of those.
    public var carriedFormats: [SDPVideoFormat] { carriedFormats(accepting: nil) }

    /// The same, of the codecs named in `accepting` only (nil: every codec Parley carries).
    func carriedFormats(accepting: [String]?) -> [SDPVideoFormat] {
        let media = formats.filter { offered in
            guard !offered.isRetransmission,
                SDPVideoFormat.supported.contains(where: { $0.encodingName.caseInsensitiveCompare(offered.encodingName) == .orderedSame }),
                accepting?.contains(where: { $0.caseInsensitiveCompare(offered.encodingName) == .orderedSame }) ?? true
            else { return false }
            guard offered.isH264 else { return true }
            return parameters[offered.payloadType]?.packetizationMode == 1
                && SDPVideoFormat.isBaseline(profileLevelID: parameters[offered.payloadType]?.profileLevelID)
        }
        let carried = Set(media.map(\.payloadType))
        return formats.filter { format in
            carried.contains(format.payloadType)
                || (format.isRetransmission && parameters[format.payloadType]?.associatedPayloadType.map(carried.contains) == true)
        }
    }

    /// The retransmission format (RFC 4588) of the format `payloadType` in this stream, if it lists one.
    public func retransmission(of payloadType: Int) -> Int? {
        formats.first { $0.isRetransmission && parameters[$0.payloadType]?.associatedPayloadType == payloadType }?.payloadType
    }

    /// The answer to this offered stream (RFC 3264 §6): the offered formats we carry, at `port`, in the offer's
    /// profile; port 0 — the stream refused, but still answered so the m-lines line up — when we take no video
    /// (`port` nil), the offer refused it, no format is common, or its profile is not one we answer: RTP/AVP(F), or
    /// RTP/SAVP(F) when `keys` (ours, a line per suite) share a suite with its `a=crypto` (the offer's tag, our key),
    /// UDP/TLS/RTP/SAVP(F) when we have `dtls` (our fingerprints, the role we prefer) and the offer a fingerprint of a
    /// known hash function and a role we can answer. `accepting` names the codecs we take (nil: every one Parley carries).
    public func answer(
        port: Int?, direction answerDirection: SDPDirection? = nil, keys: [SDPCrypto] = [], accepting: [String]? = nil,
        dtls: (fingerprints: [SDPFingerprint], preferring: SDPSetupRole)? = nil
    ) -> SDPVideo {
        let refused = SDPVideo(port: 0, transport: transport, formats: Array(formats.prefix(1)))
        let common = carriedFormats(accepting: accepting)
        guard let port, isActive, !common.isEmpty else { return refused }
        var answer = SDPVideo(port: port, transport: transport, formats: common, direction: answerDirection)
        // A retransmission format repeats the offer's payload type, whatever numbers the offer chose.
        for format in common where format.isRetransmission {
            answer.parameters[format.payloadType] = parameters[format.payloadType]
        }
        switch transportProtocol.encryption {
        case .plain?: return answer
        case .sdes?:
            guard let chosen = answerCrypto(from: keys) else { return refused }
            answer.crypto = [chosen]
            return answer
        case .dtls?:
            guard let dtls, !dtls.fingerprints.isEmpty, fingerprints.hasKnownHashFunction,
                let role = SDPSetupRole.answer(to: setup, preferring: dtls.preferring)
            else { return refused }
            (answer.fingerprints, answer.setup) = (dtls.fingerprints, role)
            return answer
        case nil: return refused
        }
    }

    /// The offer's first `a=crypto` line whose suite one of `ours` has, with its tag and our key.
    func answerCrypto(from ours: [SDPCrypto]) -> SDPCrypto? {
        for offered in crypto {
            if let mine = ours.first(where: { $0.suite == offered.suite }),
                let answer = SDPCrypto(tag: offered.tag, suite: offered.suite, key: mine.key)
            {
                return answer
            }
        }
        return nil
    }

    /// The stream's SDP lines (`m=`, one `a=rtpmap` per named format, each format's `a=fmtp` and `a=rtcp-fb`, the
    /// keys, the direction).
    func lines(direction sessionDirection: SDPDirection) -> [String] {
        var lines = ["m=video \(port) \(transport)" + formats.map { " \($0.payloadType)" }.joined()]
        lines += formats.filter { !$0.encodingName.isEmpty }.map { "a=rtpmap:\($0.payloadType) \($0.encodingName)/90000" }
        for format in formats { lines += parameters[format.payloadType]?.lines(payloadType: format.payloadType) ?? [] }
        lines += crypto.map { "a=crypto:\($0.attributeValue)" }
        if transportProtocol.encryption == .dtls {
            if let setup { lines.append("a=setup:\(setup.rawValue)") }
            lines += fingerprints.map { "a=fingerprint:\($0.attributeValue)" }
        }
        lines.append("a=\((direction ?? sessionDirection).rawValue)")
        return lines
    }
}
