import Foundation

/// A call's audio session as offer and answer settled it: what a frontend that carries the RTP itself
/// (`parleyd --media external`) sends to and listens on, and what any frontend may show.
public struct MediaInfo: Codable, Sendable, Equatable {
    /// Our RTP address (the frontend's with `--media external`, else parleyd's).
    public var localAddress: String
    /// Our RTP port.
    public var localPort: Int
    /// Our RTCP port (the next).
    public var localRTCPPort: Int
    /// Where the peer takes RTP.
    public var remoteAddress: String
    /// The peer's RTP port.
    public var remotePort: Int
    /// The peer's RTCP port (its `a=rtcp`, else the next after its RTP port).
    public var remoteRTCPPort: Int
    /// The codec's encoding name (`PCMU`, `PCMA`, `opus`).
    public var codec: String
    /// Its RTP payload type.
    public var payloadType: Int
    /// Its RTP clock rate in Hz.
    public var clockRate: Int
    /// `sendrecv`, `sendonly`, `recvonly` or `inactive`, from our side (hold included).
    public var direction: String
    /// Milliseconds of audio per packet the peer asked for, else null (20 is usual).
    @Nullable public var ptime: Int?
    /// The payload type of RFC 4733 telephone-event our tones carry, when both sides list it, else null.
    @Nullable public var telephoneEvent: Int?
    /// The payload type of telephone-event in what the peer sends, when both sides list it, else null.
    @Nullable public var receivedTelephoneEvent: Int?
    /// How the packets are protected: `sdes` (SRTP keyed by SDES), `dtls` (SRTP keyed by DTLS), or null for plain RTP.
    @Nullable public var encryption: String?
    /// The SRTP suite both sides use (`AES_CM_128_HMAC_SHA1_80`) with SDES, or null (with DTLS the handshake picks it).
    @Nullable public var encryptionSuite: String?
    /// With DTLS, the fingerprint the peer's certificate is checked against (`sha-256 AB:…`, the strongest its SDP
    /// gave), else null.
    @Nullable public var peerFingerprint: String?
    /// With ICE, where its checks stand (`checking`, `connected`, `ready`, `failed`…), else null.
    @Nullable public var iceState: String?
    /// With ICE, the kind (`host`, `srflx`, `prflx`, `relay`) of our candidate the RTP leaves from, once the checks
    /// selected it; else null.
    @Nullable public var iceLocalType: String?
    /// That candidate's address and port (`203.0.113.11:50000`).
    @Nullable public var iceLocal: String?
    /// The kind of the peer's candidate the RTP goes to.
    @Nullable public var iceRemoteType: String?
    /// That candidate's address and port.
    @Nullable public var iceRemote: String?

    /// A session.
    public init(
        localAddress: String, localPort: Int, remoteAddress: String, remotePort: Int, remoteRTCPPort: Int?,
        codec: String, payloadType: Int, clockRate: Int, sends: Bool, receives: Bool, ptime: Int?,
        telephoneEvent: Int?, receivedTelephoneEvent: Int?, encryption: String? = nil, encryptionSuite: String? = nil,
        peerFingerprint: String? = nil, iceState: String? = nil, iceLocalType: String? = nil, iceLocal: String? = nil,
        iceRemoteType: String? = nil, iceRemote: String? = nil
    ) {
        (self.iceState, self.iceLocalType, self.iceLocal, self.iceRemoteType, self.iceRemote) =
            (iceState, iceLocalType, iceLocal, iceRemoteType, iceRemote)
        self.encryption = encryption
        self.encryptionSuite = encryptionSuite
        self.peerFingerprint = peerFingerprint
        self.localAddress = localAddress
        self.localPort = localPort
        self.localRTCPPort = localPort + 1
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.remoteRTCPPort = remoteRTCPPort ?? remotePort + 1
        self.codec = codec
        self.payloadType = payloadType
        self.clockRate = clockRate
        self.direction = Self.direction(sends: sends, receives: receives)
        self.ptime = ptime
        self.telephoneEvent = telephoneEvent
        self.receivedTelephoneEvent = receivedTelephoneEvent
    }

    /// SDP's word for what a side does.
    static func direction(sends: Bool, receives: Bool) -> String {
        switch (sends, receives) {
        case (true, true): "sendrecv"
        case (true, false): "sendonly"
        case (false, true): "recvonly"
        case (false, false): "inactive"
        }
    }
}

/// `mediaChanged`: a call's negotiated audio changed (an answer, a re-INVITE, either side's hold, the end).
public struct MediaChanged: Codable, Sendable, Equatable {
    /// The conversation's uuid.
    public var conversation: String
    /// The session now, or null: the call carries no audio now (it ended, or an offer refused the stream).
    @Nullable public var media: MediaInfo?
    /// The video session now, or null: no video now.
    @Nullable public var video: VideoInfo?

    /// An event.
    public init(conversation: String, media: MediaInfo?, video: VideoInfo? = nil) {
        self.conversation = conversation
        self.media = media
        self.video = video
    }
}

/// A call's audio figures (RFC 3550 receiver statistics): what a call-quality indicator shows. The peer's figures
/// come from its RTCP receiver reports and are null until one arrives.
public struct MediaStatsInfo: Codable, Sendable, Equatable {
    /// The codec's encoding name.
    public var codec: String
    /// RTP packets we sent.
    public var packetsSent: Int
    /// RTP packets we received.
    public var packetsReceived: Int
    /// Packets of the peer's stream that never arrived while both sides sent (a hold is not loss); never negative.
    public var packetsLost: Int
    /// Those as a percentage of the packets expected while both sides sent.
    public var lossPercent: Double
    /// The interarrival jitter of what we receive, in whole milliseconds.
    public var jitterMs: Int
    /// Packets that reached the call's ports and were dropped before its RTP session: a stranger's, failing SRTP's
    /// authentication, replayed.
    public var packetsDropped: Int
    /// Our packets the peer reported lost; never negative.
    @Nullable public var peerPacketsLost: Int?
    /// The jitter the peer measured on our stream, in whole milliseconds.
    @Nullable public var peerJitterMs: Int?
    /// The round trip from the peer's receiver report, in whole milliseconds.
    @Nullable public var roundTripMs: Int?
    /// With ICE, the kind of our candidate the RTP goes between, else null.
    @Nullable public var iceLocalType: String?
    /// With ICE, the kind of the peer's candidate, else null.
    @Nullable public var iceRemoteType: String?
    /// The call's video figures since video began, or null: it never had video.
    @Nullable public var video: VideoStatsInfo?

    /// Figures.
    public init(
        codec: String, packetsSent: Int, packetsReceived: Int, packetsLost: Int, lossPercent: Double, jitterMs: Int,
        peerPacketsLost: Int?, peerJitterMs: Int?, roundTripMs: Int?, packetsDropped: Int = 0, iceLocalType: String? = nil,
        iceRemoteType: String? = nil, video: VideoStatsInfo? = nil
    ) {
        self.video = video
        self.iceLocalType = iceLocalType
        self.iceRemoteType = iceRemoteType
        self.packetsDropped = packetsDropped
        self.codec = codec
        self.packetsSent = packetsSent
        self.packetsReceived = packetsReceived
        self.packetsLost = packetsLost
        self.lossPercent = lossPercent
        self.jitterMs = jitterMs
        self.peerPacketsLost = peerPacketsLost
        self.peerJitterMs = peerJitterMs
        self.roundTripMs = roundTripMs
    }
}

/// `mediaStats`: a call's audio figures, every two seconds while parleyd carries its audio.
public struct MediaStats: Codable, Sendable, Equatable {
    /// The conversation's uuid.
    public var conversation: String
    /// The figures.
    public var stats: MediaStatsInfo

    /// An event.
    public init(conversation: String, stats: MediaStatsInfo) {
        self.conversation = conversation
        self.stats = stats
    }
}

/// `audioLevels`: how loud a call's audio is (RFC 6464's scale), a few times a second to the subscribers that asked.
public struct AudioLevelsEvent: Codable, Sendable, Equatable {
    /// The conversation's uuid.
    public var conversation: String
    /// What the peer sends us, in -dBov (0 loudest, 127 silence), or null when nothing arrived to measure.
    @Nullable public var heard: Int?
    /// What we send it (the local source after mute), in -dBov, or null.
    @Nullable public var said: Int?

    /// An event.
    public init(conversation: String, heard: Int?, said: Int?) {
        self.conversation = conversation
        self.heard = heard
        self.said = said
    }
}

/// The `mediaStats` method's result: a live call's negotiated audio and its figures so far.
public struct MediaStatsResult: Codable, Sendable, Equatable {
    /// The conversation's uuid.
    public var conversation: String
    /// The negotiated session, or null (no audio now).
    @Nullable public var media: MediaInfo?
    /// The figures, or null (no reading yet, or a frontend carries the audio).
    @Nullable public var stats: MediaStatsInfo?
    /// The negotiated video session, or null (no video now).
    @Nullable public var video: VideoInfo?

    /// A result.
    public init(conversation: String, media: MediaInfo?, stats: MediaStatsInfo?, video: VideoInfo? = nil) {
        self.conversation = conversation
        self.media = media
        self.stats = stats
        self.video = video
    }
}
