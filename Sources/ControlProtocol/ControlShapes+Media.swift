import Foundation

extension MediaInfo: ControlShape {
    /// `a media session`.
    public static let noun = ControlNoun("a media session", plural: "media sessions")

    /// The members.
    public static let fields = [
        ControlField("localAddress", .string, "our RTP address: the frontend's with `--media external`, else parleyd's"),
        ControlField("localPort", .integer, "our RTP port"),
        ControlField("localRTCPPort", .integer, "our RTCP port (the next)"),
        ControlField("remoteAddress", .string, "where the peer takes RTP"),
        ControlField("remotePort", .integer, "the peer's RTP port"),
        ControlField("remoteRTCPPort", .integer, "the peer's RTCP port (its `a=rtcp`, else the next)"),
        ControlField("codec", .oneOf(["PCMU", "PCMA", "opus"]), "the codec both sides agreed on"),
        ControlField("payloadType", .integer, "the codec's RTP payload type"),
        ControlField("clockRate", .integer, "the codec's RTP clock rate in Hz"),
        ControlField(
            "direction", .oneOf(["sendrecv", "sendonly", "recvonly", "inactive"]),
            "what we do, from our side (either side's hold included)"),
        ControlField("ptime", .nullable(.integer), "milliseconds of audio per packet the peer asked for"),
        ControlField("telephoneEvent", .nullable(.integer), "the RFC 4733 payload type our tones carry"),
        ControlField("receivedTelephoneEvent", .nullable(.integer), "the RFC 4733 payload type in what the peer sends"),
        ControlField(
            "encryption", .nullable(.oneOf(["sdes", "dtls"])),
            "how the packets are protected: `sdes` (SRTP keyed by SDES) or `dtls` (SRTP keyed by DTLS, docs/media.md); null for plain RTP"),
        ControlField(
            "encryptionSuite", .nullable(.string),
            "the SRTP suite both sides use with SDES (`AES_CM_128_HMAC_SHA1_80`); null for plain RTP and DTLS (its handshake picks the suite). Keys are never shown"),
        ControlField(
            "peerFingerprint", .nullable(.string),
            "with DTLS, the fingerprint of the peer's SDP its certificate is checked against (`sha-256 AB:CD:…`, the strongest it gave; a mismatch ends the call as `mediaSecurityFailed`); else null"),
        ControlField(
            "iceState", .nullable(.oneOf(["gathering", "checking", "connected", "ready", "failed"])),
            "with ICE (docs/nat.md), where its checks stand: `failed` ends the call as `iceFailed`; null without ICE"),
        ControlField(
            "iceLocalType", .nullable(.oneOf(["host", "srflx", "prflx", "relay"])),
            "with ICE, the kind of our candidate the RTP leaves from, once the checks selected it: an address of ours, the NAT's mapping (STUN), one learnt in the checks, or a TURN relay"),
        ControlField("iceLocal", .nullable(.string), "that candidate's address and port (`203.0.113.11:50000`)"),
        ControlField("iceRemoteType", .nullable(.oneOf(["host", "srflx", "prflx", "relay"])), "the kind of the peer's candidate the RTP goes to"),
        ControlField("iceRemote", .nullable(.string), "that candidate's address and port"),
    ]

    /// An encrypted PCMU session with tones, a held plain opus one without, a DTLS one, and one through ICE.
    public static let examples = [
        MediaInfo(
            localAddress: "127.0.0.1", localPort: 40_000, remoteAddress: "127.0.0.1", remotePort: 40_100, remoteRTCPPort: nil,
            codec: "PCMU", payloadType: 0, clockRate: 8000, sends: true, receives: true, ptime: 20, telephoneEvent: 101,
            receivedTelephoneEvent: 101, encryption: "sdes", encryptionSuite: "AES_CM_128_HMAC_SHA1_80"),
        MediaInfo(
            localAddress: "::1", localPort: 40_002, remoteAddress: "::1", remotePort: 6000, remoteRTCPPort: 6009,
            codec: "opus", payloadType: 111, clockRate: 48_000, sends: true, receives: false, ptime: nil, telephoneEvent: nil,
            receivedTelephoneEvent: nil),
        MediaInfo(
            localAddress: "127.0.0.1", localPort: 40_004, remoteAddress: "127.0.0.1", remotePort: 40_104, remoteRTCPPort: nil,
            codec: "PCMU", payloadType: 0, clockRate: 8000, sends: true, receives: true, ptime: 20, telephoneEvent: 101,
            receivedTelephoneEvent: 101, encryption: "dtls",
            peerFingerprint: "sha-256 9A:3C:71:0E:5B:D2:48:F6:1C:07:E9:A4:33:6D:B8:02:5F:C1:90:7A:2E:44:D8:16:BB:03:6F:E5:91:CA:28:7D"),
        MediaInfo(
            localAddress: "203.0.113.11", localPort: 49_170, remoteAddress: "203.0.113.1", remotePort: 49_152, remoteRTCPPort: 49_153,
            codec: "PCMU", payloadType: 0, clockRate: 8000, sends: true, receives: true, ptime: 20, telephoneEvent: 101,
            receivedTelephoneEvent: 101, iceState: "ready", iceLocalType: "srflx", iceLocal: "203.0.113.11:49170",
            iceRemoteType: "relay", iceRemote: "203.0.113.1:49152"),
    ]
}

extension MediaStatsInfo: ControlShape {
    /// `media figures`.
    public static let noun = ControlNoun("media figures", plural: "media figures")

    /// The members.
    public static let fields = [
        ControlField("codec", .string, "the codec measured"),
        ControlField("packetsSent", .integer, "RTP packets we sent"),
        ControlField("packetsReceived", .integer, "RTP packets we received"),
        ControlField(
            "packetsLost", .integer,
            "packets of the peer's stream that never arrived, counted only while both sides send (never negative)"),
        ControlField("lossPercent", .number, "those as a percentage of the packets expected while both sides sent, to two decimals"),
        ControlField("jitterMs", .integer, "the interarrival jitter of what we receive"),
        ControlField(
            "packetsDropped", .integer,
            "packets that reached the call's ports and were dropped before its RTP session: from anyone but the peer's "
                + "accepted source, failing SRTP's authentication, replayed, or before DTLS completed"),
        ControlField("peerPacketsLost", .nullable(.integer), "our packets the peer reported lost (RTCP; never negative), null until it reports"),
        ControlField("peerJitterMs", .nullable(.integer), "the jitter the peer measured on our stream (RTCP)"),
        ControlField("roundTripMs", .nullable(.integer), "the round trip from the peer's receiver report (RTCP)"),
        ControlField(
            "iceLocalType", .nullable(.oneOf(["host", "srflx", "prflx", "relay"])),
            "with ICE, the kind of our candidate the RTP goes between (kept in the call's history record too); null without ICE"),
        ControlField("iceRemoteType", .nullable(.oneOf(["host", "srflx", "prflx", "relay"])), "with ICE, the kind of the peer's candidate"),
        ControlField("video", .nullable(.object(VideoStatsInfo.self)), "the call's video figures since video began; null: it never had video"),
    ]

    /// Before and after the peer's first receiver report.
    public static let examples = [
        MediaStatsInfo(
            codec: "PCMU", packetsSent: 2900, packetsReceived: 2897, packetsLost: 3, lossPercent: 0.1, jitterMs: 2,
            peerPacketsLost: 0, peerJitterMs: 1, roundTripMs: 12, packetsDropped: 40, video: VideoStatsInfo.examples[0]),
        MediaStatsInfo(
            codec: "PCMU", packetsSent: 1500, packetsReceived: 1498, packetsLost: 0, lossPercent: 0, jitterMs: 3,
            peerPacketsLost: 0, peerJitterMs: 2, roundTripMs: 31, iceLocalType: "srflx", iceRemoteType: "relay"),
        MediaStatsInfo(
            codec: "PCMA", packetsSent: 100, packetsReceived: 100, packetsLost: 0, lossPercent: 0, jitterMs: 0,
            peerPacketsLost: nil, peerJitterMs: nil, roundTripMs: nil),
    ]
}

extension MediaChanged: ControlShape {
    /// The `mediaChanged` event's data.
    public static let noun = ControlNoun("a media change", plural: "media changes")

    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("media", .nullable(.object(MediaInfo.self)), "the session now; null: no audio now (it ended, or an offer refused the stream)"),
        ControlField(
            "video", .nullable(.object(VideoInfo.self)),
            "the video session now (an upgrade, a downgrade, a hold change it); null: no video now"),
    ]

    /// A session with video, one without, and none.
    public static let examples = [
        MediaChanged(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", media: MediaInfo.examples[0], video: VideoInfo.examples[0]),
        MediaChanged(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", media: MediaInfo.examples[0]),
        MediaChanged(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", media: nil),
    ]
}

extension MediaStats: ControlShape {
    /// The `mediaStats` event's data.
    public static let noun = ControlNoun("a media reading", plural: "media readings")

    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("stats", .object(MediaStatsInfo.self), "its figures so far"),
    ]

    /// A reading.
    public static let examples = [MediaStats(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", stats: MediaStatsInfo.examples[0])]
}

extension AudioLevelsEvent: ControlShape {
    /// The `audioLevels` event's data.
    public static let noun = ControlNoun("an audio level reading", plural: "audio level readings")

    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField(
            "heard", .nullable(.integer),
            "the level of what the peer sends us over the last quarter second, in -dBov (RFC 6464's scale: 0 is full "
                + "scale, 127 silence; speech is usually 20–50); null when nothing arrived"),
        ControlField("said", .nullable(.integer), "the level of what we send (the local source after mute), likewise"),
    ]

    /// A peer speaking while we are silent; a held call, nothing heard and nothing said.
    public static let examples = [
        AudioLevelsEvent(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", heard: 31, said: 127),
        AudioLevelsEvent(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", heard: nil, said: nil),
    ]
}

extension MediaStatsResult: ControlShape {
    /// The `mediaStats` method's result.
    public static let noun = ControlNoun("a media report", plural: "media reports")

    /// The members.
    public static let fields = [
        ControlField("conversation", .string, "the conversation's uuid"),
        ControlField("media", .nullable(.object(MediaInfo.self)), "the negotiated session; null: no audio now"),
        ControlField(
            "stats", .nullable(.object(MediaStatsInfo.self)),
            "its figures; null before the first reading, or when a frontend carries the audio (`--media external`)"),
        ControlField("video", .nullable(.object(VideoInfo.self)), "the negotiated video session; null: no video now"),
    ]

    /// A live call, and a call without audio.
    public static let examples = [
        MediaStatsResult(
            conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", media: MediaInfo.examples[0], stats: MediaStatsInfo.examples[0],
            video: VideoInfo.examples[0]),
        MediaStatsResult(conversation: "8C1F0E4B-2A53-4C2B-9E0A-6D1F3B7A9C21", media: nil, stats: nil),
    ]
}
