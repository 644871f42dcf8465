import Foundation
import SIPMessages

/// A call's video as the offer and the answer settled it: what a media layer needs to send and receive the video
/// stream (RTP on its own port pair, beside the audio's).
public struct NegotiatedVideo: Sendable, Hashable {
    /// Our video RTP port (RTCP on the next).
    public var localPort: Int
    /// Where the peer receives video: its `c=` address and its video port (RTCP on the next).
    public var remoteAddress: String
    /// The peer's video RTP port.
    public var remotePort: Int
    /// The format's encoding name, as our side spells it: `VP8` or `H264`.
    public var encodingName: String
    /// Its payload type in what we send (the peer's description's).
    public var payloadType: Int
    /// Its payload type in what the peer sends (ours).
    public var localPayloadType: Int
    /// Whether we send video: both directions allow it and we do not hold the call.
    public var sends: Bool
    /// Whether we take what arrives.
    public var receives: Bool
    /// The RTCP feedback the peer takes for the format (`a=rtcp-fb`): NACK, PLI, FIR…
    public var peerFeedback: Set<RTCPFeedback>
    /// The largest frame (16×16 macroblocks) and highest rate the peer takes (VP8's `max-fs`, `max-fr`), if it said.
    public var maxFrameSize: Int?
    public var maxFrameRate: Int?
    /// The retransmission format (RFC 4588) both sides list for the codec, when the peer takes NACKs: its payload
    /// type in what we send (the peer's) and in what the peer sends (ours). Lost packets are then asked for again
    /// and resent; without it, a loss costs a keyframe (PLI).
    public var retransmission: (payloadType: Int, localPayloadType: Int)? {
        guard let payloadType = retransmissionPayloadType, let local = localRetransmissionPayloadType else { return nil }
        return (payloadType, local)
    }
    var retransmissionPayloadType: Int?
    var localRetransmissionPayloadType: Int?
    /// The stream's own SDES keys when it is SRTP keyed by SDES (never the audio's).
    public var srtp: SRTPKeying?
    /// Our role in the stream's own DTLS handshake and the peer's fingerprints, when it is DTLS-SRTP.
    public var dtls: DTLSKeying?
    /// Whether the peer has shown it receives our description (as ``NegotiatedAudio/peerConfirmed``).
    public var peerConfirmed = true

    /// How the video is protected, as the control API names it: `sdes`, `dtls`, or nil for plain RTP.
    public var encryption: String? { srtp != nil ? "sdes" : dtls != nil ? "dtls" : nil }

    /// The video of `local` and `remote`: nil when either has no active video stream, no format is common, or the
    /// streams do not agree on keys where either is encrypted. Video never goes plain beside encrypted audio: a call
    /// whose audio is SRTP carries video only as SRTP with its own keys.
    init?(local: SDPSession, remote: SDPSession, localHold: Bool) {
        guard let ours = local.video, let theirs = remote.video, ours.isActive, theirs.isActive, local.audioPort > 0 else {
            return nil
        }
        // The peer's first format we carry (H.264 only in packetization-mode 1 and a baseline profile) that ours
        // lists: at the same payload type when it can be (an answer repeats the offer's numbers), else by name.
        let candidates = theirs.carriedFormats.filter { !$0.isRetransmission }
        func sameName(_ a: SDPVideoFormat, _ b: SDPVideoFormat) -> Bool {
            a.encodingName.caseInsensitiveCompare(b.encodingName) == .orderedSame
        }
        guard let format = candidates.first(where: { format in ours.formats.contains { $0.payloadType == format.payloadType && sameName($0, format) } })
                ?? candidates.first(where: { format in ours.formats.contains { !$0.isRetransmission && sameName($0, format) } }),
            let localFormat = ours.formats.first(where: { $0.payloadType == format.payloadType && sameName($0, format) })
                ?? ours.formats.first(where: { !$0.isRetransmission && sameName($0, format) })
        else { return nil }
        let encrypted = ours.transportProtocol.isSecure || theirs.transportProtocol.isSecure || local.audioProtocol.isSecure
        if encrypted {
            switch (ours.transportProtocol.encryption, theirs.transportProtocol.encryption) {
            case (.sdes?, .sdes?):
                guard let keys = Self.agreedKeys(ours.crypto, theirs.crypto) else { return nil }
                srtp = keys
            case (.dtls?, .dtls?):
                guard let keying = Self.dtlsKeying(ours: ours, theirs: theirs) else { return nil }
                dtls = keying
            default: return nil
            }
        }
        localPort = ours.port
        remoteAddress = remote.connectionAddress
        remotePort = theirs.port
        encodingName = localFormat.encodingName.uppercased()
        payloadType = format.payloadType
        localPayloadType = localFormat.payloadType
        let ourDirection = ours.direction ?? local.direction
        let theirDirection = theirs.direction ?? remote.effectiveDirection
        sends = !localHold && ourDirection.sends && theirDirection.receives
        receives = !localHold && ourDirection.receives && theirDirection.sends
        let said = theirs.parameters[format.payloadType] ?? SDPVideoParameters()
        peerFeedback = said.feedback
        maxFrameSize = said.maxFrameSize
        maxFrameRate = said.maxFrameRate
        if said.feedback.contains(.nack), let theirRTX = theirs.retransmission(of: format.payloadType),
            let ourRTX = ours.retransmission(of: localFormat.payloadType)
        {
            (retransmissionPayloadType, localRetransmissionPayloadType) = (theirRTX, ourRTX)
        }
    }

    /// Our role in the stream's handshake and what the peer's certificate must match: from the two `a=setup` (the
    /// offer's `actpass` takes the answer's choice; otherwise one active, one passive; a missing one reads `active`,
    /// RFC 4145 §4); nil when they do not complement each other or the peer gave no fingerprint of a known hash.
    static func dtlsKeying(ours: SDPVideo, theirs: SDPVideo) -> DTLSKeying? {
        guard theirs.fingerprints.hasKnownHashFunction else { return nil }
        let (mine, peer) = (ours.setup ?? .active, theirs.setup ?? .active)
        let isClient: Bool
        switch (mine, peer) {
        case (.actpass, let answered):
            guard let answererIsClient = answered.isClient else { return nil }
            isClient = !answererIsClient
        case (let answered, .actpass):
            guard let answered = answered.isClient else { return nil }
            isClient = answered
        default:
            guard let client = mine.isClient, let peerIsClient = peer.isClient, client != peerIsClient else { return nil }
            isClient = client
        }
        return DTLSKeying(isClient: isClient, peerFingerprints: theirs.fingerprints)
    }

    /// The peer's first line whose tag and suite one of ours has.
    static func agreedKeys(_ ours: [SDPCrypto], _ theirs: [SDPCrypto]) -> SRTPKeying? {
        for line in theirs {
            if let mine = ours.first(where: { $0.tag == line.tag && $0.suite == line.suite }) {
                return SRTPKeying(suite: line.suite, tag: line.tag, sendKey: mine.key, receiveKey: line.key)
            }
        }
        return nil
    }
}
