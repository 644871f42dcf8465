import CallHistory
import Foundation
import SIPMessages

/// A call's audio as the offer and the answer settled it: what a media layer needs to send and receive RTP.
public struct NegotiatedAudio: Sendable, Hashable {
    /// Our RTP address and port (from our description: the node's, or a frontend's with `--media external`).
    public var localAddress: String
    /// Our RTP port.
    public var localPort: Int
    /// Where the peer receives RTP: its `c=` address and port.
    public var remoteAddress: String
    /// The peer's RTP port.
    public var remotePort: Int
    /// The codec: the first the peer lists that we list too (the answer's first, whichever side answered: our
    /// answers keep the offer's order).
    public var codec: SDPCodec
    /// Its payload type in what we send (the peer's description's; opus has a dynamic one).
    public var payloadType: Int
    /// Its payload type in what the peer sends (ours).
    public var localPayloadType: Int
    /// Whether we send: both directions allow it and we do not hold the call.
    public var sends: Bool
    /// Whether we take what arrives: our direction receives and the peer's sends.
    public var receives: Bool
    /// The payload type of RFC 4733 telephone-event, when both descriptions list it: the peer's (our tones carry
    /// it) and ours (the peer's tones carry it).
    public var telephoneEvent: Int?
    /// Our telephone-event payload type, which the peer's tones carry.
    public var localTelephoneEvent: Int?
    /// The peer's RTCP port (`a=rtcp`), when it gave one.
    public var remoteRTCPPort: Int?
    /// Milliseconds of audio per packet the peer asked for (`a=ptime`, 10–60), when it did.
    public var ptime: Int?
    /// The SRTP keys both descriptions agree on (SDES: ours and the peer's for one tag and suite); nil for plain RTP.
    public var srtp: SRTPKeying?
    /// What both descriptions agree on for DTLS-SRTP: our role in the handshakes and the fingerprints the peer's
    /// certificate must match; nil unless both are UDP/TLS/RTP/SAVP(F).
    public var dtls: DTLSKeying?
    /// Whether the peer has shown it receives our description: we called it, or it acknowledged our answer (ACK).
    /// Until then a media layer sends nothing (packets from the peer's address prove nothing: they spoof as easily), so an INVITE
    /// whose source was spoofed to name a third party in `c=` draws no media to that party.
    public var peerConfirmed = true
    /// Our ICE (credentials, candidates) when our description has it: the call's media goes through its agent.
    public var localICE: SDPICE?
    /// The peer's ICE when its description has it; with ours, the agent checks the peer's candidates (without it, a
    /// peer without ICE: the agent sends to its c= address and port).
    public var remoteICE: SDPICE?
    /// Where ICE's checks stand and the RTP pair they selected, as the media layer last said (nil without ICE).
    public var icePath: ICEPath?

    /// The same audio as a frontend sees it (``peerConfirmed`` and ICE's credentials are the media layer's alone).
    var visible: NegotiatedAudio {
        var copy = self
        copy.peerConfirmed = true
        copy.localICE = nil
        copy.remoteICE = nil
        return copy
    }

    /// How the audio is protected, as the control API names it: `sdes`, `dtls`, or nil for plain RTP.
    public var encryption: String? { srtp != nil ? "sdes" : dtls != nil ? "dtls" : nil }

    /// With DTLS, the peer's fingerprint its certificate is checked against (the strongest hash function its SDP
    /// gave; `sha-256 AB:…`), else nil.
    public var peerFingerprint: String? {
        guard let fingerprints = dtls?.peerFingerprints,
            let function = SDPHashFunction.strongestFirst.first(where: { known in fingerprints.contains { $0.hashFunction == known } })
        else { return nil }
        return fingerprints.first { $0.hashFunction == function }?.attributeValue
    }

    /// The audio of `local` and `remote`, nil when either refused the stream, no codec is shared, or the
    /// descriptions do not agree on keys where either is encrypted (or on any, with `requiresEncryption`): a call
    /// whose encryption failed carries no audio rather than plain audio.
    init?(local: SDPSession, remote: SDPSession, localHold: Bool, requiresEncryption: Bool = false) {
        guard local.audioPort > 0, remote.audioPort > 0,
            let codec = remote.codecs.first(where: local.codecs.contains)
        else { return nil }
        srtp = Self.agreedKeys(local: local, remote: remote)
        dtls = Self.agreedDTLS(local: local, remote: remote)
        let encrypted = local.audioProtocol.isSecure || remote.audioProtocol.isSecure || requiresEncryption
        guard !encrypted || srtp != nil || dtls != nil else { return nil }
        let theirs = remote.effectiveDirection
        localAddress = local.connectionAddress
        localPort = local.audioPort
        remoteAddress = remote.connectionAddress
        remotePort = remote.audioPort
        self.codec = codec
        payloadType = remote.payloadType(of: codec)
        localPayloadType = local.payloadType(of: codec)
        sends = !localHold && local.direction.sends && theirs.receives
        receives = !localHold && local.direction.receives && theirs.sends
        // telephone-event/8000 goes with G.711 only: beside opus (48 kHz) tones go as INFO.
        let eventsFit = codec.clockRate == 8_000
        telephoneEvent = !eventsFit || local.telephoneEvent == nil ? nil : remote.telephoneEvent
        localTelephoneEvent = !eventsFit || remote.telephoneEvent == nil ? nil : local.telephoneEvent
        remoteRTCPPort = remote.rtcpPort
        localICE = local.ice
        remoteICE = remote.ice
        ptime = remote.ptime.map { min(max($0, 10), 60) }
    }
}

extension NegotiatedAudio {
    /// Whether two descriptions that would otherwise carry audio (ports, a shared codec) do not agree on keys where
    /// either is encrypted, or where encryption is `required`.
    static func lacksAgreedKeys(local: SDPSession, remote: SDPSession, required: Bool) -> Bool {
        guard local.audioPort > 0, remote.audioPort > 0, remote.codecs.contains(where: local.codecs.contains) else { return false }
        let encrypted = local.audioProtocol.isSecure || remote.audioProtocol.isSecure || required
        return encrypted && agreedKeys(local: local, remote: remote) == nil && agreedDTLS(local: local, remote: remote) == nil
    }

    /// The SDES keys of `local` and `remote`: the peer's first line whose tag and suite one of ours has (the
    /// answer's one line against the offer's, whichever side offered); nil unless both are SRTP with SDES keys.
    static func agreedKeys(local: SDPSession, remote: SDPSession) -> SRTPKeying? {
        guard local.audioProtocol.encryption == .sdes, remote.audioProtocol.encryption == .sdes else { return nil }
        for theirs in remote.crypto {
            if let mine = local.crypto.first(where: { $0.tag == theirs.tag && $0.suite == theirs.suite }) {
                return SRTPKeying(suite: theirs.suite, tag: theirs.tag, sendKey: mine.key, receiveKey: theirs.key)
            }
        }
        return nil
    }
}

extension NegotiatedAudio {
    /// The DTLS-SRTP role and the peer's fingerprints `local` and `remote` agree on: whoever wrote `actpass` offered
    /// (RFC 5763 §5; an offer of `active` or `passive` pairs the same either way round); nil unless both are
    /// UDP/TLS/RTP/SAVP(F) with complementary roles and a peer fingerprint of a known hash function.
    static func agreedDTLS(local: SDPSession, remote: SDPSession) -> DTLSKeying? {
        guard local.audioProtocol.isDTLS, remote.audioProtocol.isDTLS else { return nil }
        let localIsOfferer = local.setup == .actpass
        let (offer, answer) = localIsOfferer ? (local, remote) : (remote, local)
        guard case .dtls(let keying)? = SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: localIsOfferer)
        else { return nil }
        return keying
    }
}

/// Where a call's ICE stands: its state and the pair of candidates its RTP goes between (RFC 8445).
public struct ICEPath: Sendable, Hashable {
    /// `gathering`, `checking`, `connected`, `ready` or `failed`.
    public var state: String
    /// Our candidate's kind (`host`, `srflx`, `prflx`, `relay`), once selected.
    public var localType: String?
    /// Our candidate's address and port (`203.0.113.11:50000`).
    public var local: String?
    /// The peer's candidate's kind, once selected.
    public var remoteType: String?
    /// The peer's candidate's address and port.
    public var remote: String?

    /// A path.
    public init(state: String, localType: String? = nil, local: String? = nil, remoteType: String? = nil, remote: String? = nil) {
        (self.state, self.localType, self.local, self.remoteType, self.remote) = (state, localType, local, remoteType, remote)
    }
}

/// Our side's role in a call's ICE checks (RFC 8445 §6.1.1): the offerer controls them.
public enum ICERole: Sendable, Hashable {
    /// We offered: we nominate the pair.
    case controlling
    /// We answer.
    case controlled
}

/// Where our side of a call's RTP is: the address and port our descriptions give.
public struct MediaEndpoint: Sendable, Hashable {
    /// The address (`c=`); nil for the node's own (its first listen address).
    public var address: String?
    /// The RTP port (RTCP on the next, unless ``rtcpPort`` says otherwise).
    public var port: Int
    /// The RTCP port (`a=rtcp`) when it is not the next (ICE's default candidate for RTCP).
    public var rtcpPort: Int?
    /// Our ICE credentials and candidates, when the call's media goes through an ICE agent: `address` and `port`
    /// are then its default candidate's (what a peer without ICE sends to).
    public var ice: SDPICE?
    /// A frontend's video RTP port (`--media external` with video), at the same address.
    public var videoPort: Int?

    /// An endpoint.
    public init(address: String? = nil, port: Int, rtcpPort: Int? = nil, ice: SDPICE? = nil) {
        self.address = address
        self.port = port
        self.rtcpPort = rtcpPort
        self.ice = ice
    }
}

/// What carries calls' audio for the engine (Media's GStreamer pipelines in a node, ``ExternalMedia`` for a frontend
/// that does its own, a recorder in tests). The engine calls it on its loop: an endpoint for each new call's first
/// description, the negotiated audio whenever it changes (nil: the call has none now), mute, and the endpoint back
/// when the call is over. Without one, calls carry signalling only and every description offers
/// `EngineConfiguration.mediaPort`.
public protocol CallMediaHandler: AnyObject {
    /// Where a new call's RTP goes on our side (the RTCP port is the next), nil when there is nowhere (no free port).
    func reserveEndpoint(for conversation: UUID) -> MediaEndpoint?
    /// The same for a call through `account`, through an ICE agent in `ice`'s role (controlling for our offer,
    /// controlled for an answer to an offer that has ICE): it starts gathering with the servers the handler has for
    /// that account, and the endpoint holds the candidates gathered so far. A call that has one already gets it
    /// again, with the candidates gathered since.
    ///
    /// `account` is the address of record of the account the call goes through, as ``Conversation/account`` names
    /// it (nil: a call through none). The engine says which account and nothing more: whether a call has ICE and
    /// which STUN and TURN servers it asks are the media layer's settings (a node's per-account ICE), so the engine
    /// keeps none of ICE's types, and ``Account`` carries no media value of its own (an address of record names one
    /// account: the engine refuses two with the same).
    func reserveEndpoint(for conversation: UUID, through account: String?, ice: ICERole?) -> MediaEndpoint?
    /// Whether the media of calls through `account` (an address of record; nil: a call through none) may go through
    /// ICE (our offers carry candidates).
    func offersICE(through account: String?) -> Bool
    /// Runs `ready` on the loop with the call's endpoint once its candidates are gathered (at once when nothing is
    /// gathered; at most the gathering timeout later), nil when the call has none any more.
    func whenEndpointReady(for conversation: UUID, _ ready: @escaping (MediaEndpoint?) -> Void)
    /// Whether it can carry one more call's audio (a new incoming call beyond that gets 503); calls with audio now
    /// and the most it carries, for the log.
    var mediaLoad: (calls: Int, capacity: Int?) { get }
    /// Whether its media threads keep up, and the last second's worst lag of a call's audio (nil: it cannot tell):
    /// a new incoming call is refused while they do not.
    var mediaHealth: (keepsUp: Bool, lag: Duration)? { get }
    /// The call's endpoint is free again (the call is over).
    func releaseEndpoint(_ endpoint: MediaEndpoint, of conversation: UUID)
    /// Whether the engine puts keypad tones in the stream itself (RFC 4733): false when someone else sends the RTP.
    var sendsTonesInStream: Bool { get }
    /// The codecs calls may use, in our order of preference (G.711 unless the media layer carries more).
    var codecs: [SDPCodec] { get }
    /// Whether it carries SRTP (keyed by the engine's SDES negotiation).
    var carriesSRTP: Bool { get }
    /// Our DTLS certificate's fingerprints when it carries DTLS-SRTP (keyed on the media path, the peer's certificate
    /// checked against ``NegotiatedAudio/dtls``); empty when it cannot.
    var dtlsFingerprints: [SDPFingerprint] { get }
    /// The peer restarted ICE (its offer has new credentials): the call's agent restarts too (new credentials, the
    /// peer's candidates forgotten until the offer's are given); our new ICE, nil when the call has no agent.
    func restartICE(for conversation: UUID) -> SDPICE?
    /// The call's ICE as our next description gives it (new credentials after a restart); nil without an agent.
    func currentICE(for conversation: UUID) -> SDPICE?
    /// The call's negotiated audio changed; nil stops it.
    func audioChanged(_ audio: NegotiatedAudio?, for conversation: UUID)
    /// The user muted or unmuted the call (silence is sent while muted).
    func muteChanged(_ muted: Bool, for conversation: UUID)
    /// Send keypad tones in the call's stream (RFC 4733; the audio lists telephone-event).
    func sendTones(_ digits: String, for conversation: UUID)
    /// The call's audio figures as they stand (read just before its audio stops, for its history record).
    func statistics(for conversation: UUID) -> CallQuality?
    /// How many RTP and RTCP packets arrived for the call so far (a count that only grows), nil when this handler
    /// cannot see them: the engine's media timeout ends a call whose count stops moving while the peer should send.
    func packetsArrived(for conversation: UUID) -> Int?
    /// Whether it carries calls' video (a port pair of its own per call, ``videoChanged(_:for:)``).
    var carriesVideo: Bool { get }
    /// The call's video RTP port (RTCP on the next): reserved on the first ask, the same one after; nil when there is
    /// none free.
    func videoPort(for conversation: UUID) -> Int?
    /// The call's negotiated video changed; nil stops it.
    func videoChanged(_ video: NegotiatedVideo?, for conversation: UUID)
    /// The call is over: its video port is free again (nothing when it had none).
    func releaseVideo(of conversation: UUID)
}

extension CallMediaHandler {
    /// No ICE: the endpoint of ``reserveEndpoint(for:)``.
    public func reserveEndpoint(for conversation: UUID, through account: String?, ice: ICERole?) -> MediaEndpoint? {
        reserveEndpoint(for: conversation)
    }
    /// No ICE, whatever the account.
    public func offersICE(through account: String?) -> Bool { false }
    /// Nothing is gathered: never called (no endpoint waits).
    public func whenEndpointReady(for conversation: UUID, _ ready: @escaping (MediaEndpoint?) -> Void) { ready(nil) }
    /// No agent: nothing to restart.
    public func restartICE(for conversation: UUID) -> SDPICE? { nil }
    /// No agent.
    public func currentICE(for conversation: UUID) -> SDPICE? { nil }
    /// No limit of its own: someone else carries the audio.
    public var mediaLoad: (calls: Int, capacity: Int?) { (0, nil) }
    /// Nothing measured.
    public var mediaHealth: (keepsUp: Bool, lag: Duration)? { nil }
    /// The engine sends the RTP (a media layer of its own).
    public var sendsTonesInStream: Bool { true }
    /// G.711 only.
    public var codecs: [SDPCodec] { [.pcmu, .pcma] }
    /// No SRTP: someone else carries the RTP, without our keys.
    public var carriesSRTP: Bool { false }
    /// No DTLS-SRTP: someone else carries the RTP.
    public var dtlsFingerprints: [SDPFingerprint] { [] }
    /// No figures: someone else carries the RTP.
    public func statistics(for conversation: UUID) -> CallQuality? { nil }
    /// Unknown: someone else receives the RTP (no media timeout).
    public func packetsArrived(for conversation: UUID) -> Int? { nil }
    /// No video of its own: descriptions offer video at the fallback port (signalling only).
    public var carriesVideo: Bool { false }
    /// No video port of its own.
    public func videoPort(for conversation: UUID) -> Int? { nil }
    /// Nothing carries the video.
    public func videoChanged(_ video: NegotiatedVideo?, for conversation: UUID) {}
    /// Nothing reserved.
    public func releaseVideo(of conversation: UUID) {}
}
