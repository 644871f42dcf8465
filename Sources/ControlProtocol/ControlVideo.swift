import Foundation

/// A call's video session as offer and answer settled it (its own RTP stream beside the audio's).
public struct VideoInfo: Codable, Sendable, Equatable {
    /// Our video RTP port, and RTCP on the next.
    public var localPort: Int
    public var localRTCPPort: Int
    /// Where the peer takes video: address, RTP port, RTCP port.
    public var remoteAddress: String
    public var remotePort: Int
    public var remoteRTCPPort: Int
    /// The codec's encoding name (`VP8`, `H264`).
    public var codec: String
    /// Its payload type in what we send, and in what the peer sends.
    public var payloadType: Int
    public var receivedPayloadType: Int
    /// `sendrecv`, `sendonly`, `recvonly` or `inactive`, from our side (hold included).
    public var direction: String
    /// `sdes` (SRTP keyed by SDES, its own keys), `dtls` (SRTP keyed by its own DTLS handshake), or null for plain RTP.
    @Nullable public var encryption: String?
    /// The SRTP suite with SDES, else null.
    @Nullable public var encryptionSuite: String?

    /// A session.
    public init(
        localPort: Int, remoteAddress: String, remotePort: Int, codec: String, payloadType: Int, receivedPayloadType: Int,
        sends: Bool, receives: Bool, encryption: String? = nil, encryptionSuite: String? = nil
    ) {
        (self.localPort, self.localRTCPPort) = (localPort, localPort + 1)
        (self.remoteAddress, self.remotePort, self.remoteRTCPPort) = (remoteAddress, remotePort, remotePort + 1)
        (self.codec, self.payloadType, self.receivedPayloadType) = (codec, payloadType, receivedPayloadType)
        direction = MediaInfo.direction(sends: sends, receives: receives)
        (self.encryption, self.encryptionSuite) = (encryption, encryptionSuite)
    }
}

/// A call's video figures: frames each way, their rate and size, keyframes and the feedback asking for them.
public struct VideoStatsInfo: Codable, Sendable, Equatable {
    /// The codec measured.
    public var codec: String
    /// Frames sent and received since video began (all of the call's upgrades).
    public var framesSent: Int
    public var framesReceived: Int
    /// Frames per second each way over the last second.
    public var frameRateSent: Double
    public var frameRateReceived: Double
    /// The size of the pictures received (0 before the first).
    public var width: Int
    public var height: Int
    /// Keyframes sent and received.
    public var keyframesSent: Int
    public var keyframesReceived: Int
    /// Keyframes the peer asked us for (PLI, FIR), and we asked it for.
    public var keyframeRequestsReceived: Int
    public var keyframeRequestsSent: Int
    /// Generic NACKs the peer sent about our packets, and we about its.
    public var nacksReceived: Int
    public var nacksSent: Int
    /// Kilobits per second each way over the last second.
    public var kilobitsSent: Int
    public var kilobitsReceived: Int

    /// Figures.
    public init(
        codec: String, framesSent: Int, framesReceived: Int, frameRateSent: Double, frameRateReceived: Double, width: Int,
        height: Int, keyframesSent: Int, keyframesReceived: Int, keyframeRequestsReceived: Int, keyframeRequestsSent: Int,
        nacksReceived: Int, nacksSent: Int, kilobitsSent: Int, kilobitsReceived: Int
    ) {
        self.codec = codec
        (self.framesSent, self.framesReceived, self.frameRateSent, self.frameRateReceived) =
            (framesSent, framesReceived, frameRateSent, frameRateReceived)
        (self.width, self.height, self.keyframesSent, self.keyframesReceived) = (width, height, keyframesSent, keyframesReceived)
        (self.keyframeRequestsReceived, self.keyframeRequestsSent, self.nacksReceived, self.nacksSent) =
            (keyframeRequestsReceived, keyframeRequestsSent, nacksReceived, nacksSent)
        (self.kilobitsSent, self.kilobitsReceived) = (kilobitsSent, kilobitsReceived)
    }
}

extension VideoInfo: ControlShape {
    /// `a video session`.
    public static let noun = ControlNoun("a video session", plural: "video sessions")

    /// The members.
    public static let fields = [
        ControlField("localPort", .integer, "our video RTP port"),
        ControlField("localRTCPPort", .integer, "our video RTCP port (the next)"),
        ControlField("remoteAddress", .string, "where the peer takes video"),
        ControlField("remotePort", .integer, "the peer's video RTP port"),
        ControlField("remoteRTCPPort", .integer, "the peer's video RTCP port (the next)"),
        ControlField("codec", .oneOf(["VP8", "H264"]), "the codec both sides agreed on (docs/media.md \"Video\")"),
        ControlField("payloadType", .integer, "its payload type in what we send"),
        ControlField("receivedPayloadType", .integer, "its payload type in what the peer sends"),
        ControlField(
            "direction", .oneOf(["sendrecv", "sendonly", "recvonly", "inactive"]),
            "what we do, from our side (either side's hold included: a held call sends and takes no video)"),
        ControlField(
            "encryption", .nullable(.oneOf(["sdes", "dtls"])),
            "`sdes`: SRTP keyed by SDES with keys of its own; `dtls`: SRTP keyed by a DTLS handshake of its own on the video's ports (video is never plain beside encrypted audio); null for plain RTP"),
        ControlField("encryptionSuite", .nullable(.string), "the SRTP suite with SDES; keys are never shown"),
    ]

    /// A plain VP8 session, and an encrypted held one.
    public static let examples = [
        VideoInfo(
            localPort: 40_002, remoteAddress: "127.0.0.1", remotePort: 40_102, codec: "VP8", payloadType: 96, receivedPayloadType: 96,
            sends: true, receives: true),
        VideoInfo(
            localPort: 40_006, remoteAddress: "192.0.2.7", remotePort: 9078, codec: "H264", payloadType: 102, receivedPayloadType: 97,
            sends: false, receives: false, encryption: "sdes", encryptionSuite: "AES_CM_128_HMAC_SHA1_80"),
    ]
}

extension VideoStatsInfo: ControlShape {
    /// `video figures`.
    public static let noun = ControlNoun("video figures", plural: "video figures")

    /// The members.
    public static let fields = [
        ControlField("codec", .string, "the codec measured"),
        ControlField("framesSent", .integer, "frames encoded and sent since video began (every upgrade of the call)"),
        ControlField("framesReceived", .integer, "whole frames received"),
        ControlField("frameRateSent", .number, "frames per second sent over the last second"),
        ControlField("frameRateReceived", .number, "frames per second received over the last second"),
        ControlField("width", .integer, "the width of the pictures received (0 before the first)"),
        ControlField("height", .integer, "their height"),
        ControlField("keyframesSent", .integer, "keyframes sent"),
        ControlField("keyframesReceived", .integer, "keyframes received"),
        ControlField("keyframeRequestsReceived", .integer, "keyframes the peer asked for (RTCP PLI and FIR)"),
        ControlField("keyframeRequestsSent", .integer, "keyframes we asked the peer for (a picture lost)"),
        ControlField("nacksReceived", .integer, "generic NACKs the peer sent about our packets"),
        ControlField("nacksSent", .integer, "generic NACKs we sent about the peer's"),
        ControlField("kilobitsSent", .integer, "kbit/s of video sent over the last second"),
        ControlField("kilobitsReceived", .integer, "kbit/s received"),
    ]

    /// A VP8 call in flow.
    public static let examples = [
        VideoStatsInfo(
            codec: "VP8", framesSent: 900, framesReceived: 897, frameRateSent: 30, frameRateReceived: 29.9, width: 640, height: 480,
            keyframesSent: 16, keyframesReceived: 15, keyframeRequestsReceived: 1, keyframeRequestsSent: 0, nacksReceived: 0,
            nacksSent: 2, kilobitsSent: 790, kilobitsReceived: 805),
    ]
}
