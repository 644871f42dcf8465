import Foundation

/// What a call's video sends: `--video-source test:PATTERN | camera[:DEVICE] | file:PATH`.
public enum VideoSource: Sendable, Hashable, CustomStringConvertible {
    /// GStreamer's test picture (`videotestsrc`) in one of its patterns (`smpte`, `ball`, `red`, `blue`…).
    case test(pattern: String)
    /// A V4L2 camera (`v4l2src`): this device, or the first one (nil).
    case camera(device: String?)
    /// A video file (any container and codec GStreamer decodes), played once.
    case file(path: String)

    /// The patterns `test:` takes (videotestsrc's nicks).
    public static let patterns = [
        "smpte", "snow", "black", "white", "red", "green", "blue", "checkers-1", "checkers-2", "checkers-4", "checkers-8",
        "circular", "blink", "smpte75", "zone-plate", "gamut", "chroma-zone-plate", "ball", "smpte100", "bar", "pinwheel",
        "spokes", "gradient", "colors",
    ]

    /// Reads the command-line form, or says what it takes.
    public init(parsing text: String) throws(MediaError) {
        if text == "camera" {
            self = .camera(device: nil)
        } else if text.hasPrefix("camera:"), text.count > 7 {
            self = .camera(device: String(text.dropFirst(7)))
        } else if text.hasPrefix("file:"), text.count > 5 {
            self = .file(path: String(text.dropFirst(5)))
        } else if text.hasPrefix("test:"), Self.patterns.contains(String(text.dropFirst(5))) {
            self = .test(pattern: String(text.dropFirst(5)))
        } else if text == "test" {
            self = .test(pattern: "smpte")
        } else {
            throw MediaError(
                "a video source is test:PATTERN (\(Self.patterns.prefix(8).joined(separator: ", "))…), camera, camera:/dev/videoN or "
                    + "file:PATH, not \(text)")
        }
    }

    /// The command-line form.
    public var description: String {
        switch self {
        case .test(let pattern): "test:\(pattern)"
        case .camera(let device): device.map { "camera:\($0)" } ?? "camera"
        case .file(let path): "file:\(path)"
        }
    }
}

/// Where a call's received video goes: `--video-sink window | file:DIR | null`.
public enum VideoSink: Sendable, Hashable, CustomStringConvertible {
    /// A window on the desktop (`autovideosink`).
    case window
    /// One file per call in this directory, as received (no decoding): WebM for VP8, Matroska for H.264.
    case files(directory: String)
    /// Decoded, then dropped.
    case null

    /// Reads the command-line form, or says what it takes.
    public init(parsing text: String) throws(MediaError) {
        switch text {
        case "window": self = .window
        case "null": self = .null
        default:
            guard text.hasPrefix("file:"), text.count > 5 else {
                throw MediaError("--video-sink takes window, file:DIR (a WebM or Matroska file per call) or null, not \(text)")
            }
            self = .files(directory: String(text.dropFirst(5)))
        }
    }

    /// The command-line form.
    public var description: String {
        switch self {
        case .window: "window"
        case .files(let directory): "file:\(directory)"
        case .null: "null"
        }
    }
}

/// The picture a call sends: its size and rate, and the encoder's bitrate.
public struct VideoFormat: Sendable, Hashable {
    /// Width and height in pixels.
    public var width: Int
    public var height: Int
    /// Frames per second.
    public var frameRate: Int
    /// The encoder's target, kbit/s.
    public var bitrate: Int

    /// A format; 640×480 at 30 fps, 800 kbit/s by default.
    public init(width: Int = 640, height: Int = 480, frameRate: Int = 30, bitrate: Int = 800) {
        (self.width, self.height, self.frameRate, self.bitrate) = (width, height, frameRate, bitrate)
    }

    /// Its size in 16×16 macroblocks (what VP8's `max-fs` counts).
    var macroblocks: Int { ((width + 15) / 16) * ((height + 15) / 16) }

    /// This format within what the peer takes (VP8's `max-fs` and `max-fr`): the largest of 640×480, 320×240 and
    /// 176×144 not above this one that fits, the rate capped; the bitrate scaled with the picture.
    func fitting(maxFrameSize: Int?, maxFrameRate: Int?) -> VideoFormat {
        var fitted = self
        if let maxFrameSize, macroblocks > maxFrameSize {
            let ladder = [(640, 480), (320, 240), (176, 144)].map { VideoFormat(width: $0.0, height: $0.1) }
            let size = ladder.first { $0.macroblocks <= maxFrameSize && $0.width <= width } ?? ladder[ladder.count - 1]
            fitted.bitrate = max(100, bitrate * size.macroblocks / max(1, macroblocks))
            (fitted.width, fitted.height) = (size.width, size.height)
        }
        if let maxFrameRate { fitted.frameRate = min(frameRate, max(1, maxFrameRate)) }
        return fitted
    }
}

/// The RTCP feedback the peer takes (its `a=rtcp-fb`): what our RTP session may send it (RFC 4585 §4.2, RFC 5104 §7).
public struct VideoFeedback: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    /// A feedback set.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Generic NACK: lost packets asked for again.
    public static let nack = VideoFeedback(rawValue: 1)
    /// Picture Loss Indication: a keyframe asked for.
    public static let pli = VideoFeedback(rawValue: 2)
    /// Full Intra Request: a keyframe asked for.
    public static let fir = VideoFeedback(rawValue: 4)
}

/// The negotiated video stream a video session carries.
public struct VideoStreamParameters: Sendable, Hashable {
    /// The codec and its payload types: in what we send (the peer's) and in what we receive (ours).
    public var codec: VideoCodec
    public var payloadType: Int
    public var receivedPayloadType: Int
    /// Where the peer receives: address, RTP port, RTCP port.
    public var remoteHost: String
    public var remotePort: Int
    public var remoteRTCPPort: Int
    /// Whether we send and receive.
    public var sends: Bool
    public var receives: Bool
    /// The retransmission payload types (RFC 4588) in what we send and in what we receive, when both sides take
    /// NACKs and list RTX; nil: a loss costs a keyframe request.
    public var retransmissionPayloadType: Int?
    public var receivedRetransmissionPayloadType: Int?
    /// What protects the stream.
    public var encryption = MediaEncryption.none
    /// The feedback the peer takes.
    public var peerFeedback: VideoFeedback = [.nack, .pli, .fir]
    /// Nothing is sent until the peer acknowledged our answer.
    public var awaitsPeer = false
    /// What the peer takes: the largest frame (macroblocks) and highest frame rate, if it said.
    public var maxFrameSize: Int?
    public var maxFrameRate: Int?

    /// A stream.
    public init(
        codec: VideoCodec, payloadType: Int, receivedPayloadType: Int, remoteHost: String, remotePort: Int, remoteRTCPPort: Int? = nil,
        sends: Bool = true, receives: Bool = true
    ) {
        (self.codec, self.payloadType, self.receivedPayloadType) = (codec, payloadType, receivedPayloadType)
        (self.remoteHost, self.remotePort, self.remoteRTCPPort) = (remoteHost, remotePort, remoteRTCPPort ?? remotePort + 1)
        (self.sends, self.receives) = (sends, receives)
    }

    /// Whether `remoteHost` is an address (not an old-style hold's `0.0.0.0`).
    public var hasRemoteAddress: Bool { remoteHost != "0.0.0.0" && remoteHost != "::" }
}

/// A call's video figures (`mediaStats`): frames sent and received, their rate over the last interval, the size
/// received, keyframes, bitrates.
public struct VideoStatistics: Sendable, Hashable {
    /// Frames encoded and sent, and received (whole frames out of the depayloader), since the stream began.
    public var framesSent = 0
    public var framesReceived = 0
    /// Frames per second over the last interval, each way.
    public var sentFrameRate = 0.0
    public var receivedFrameRate = 0.0
    /// The size of the pictures received and sent (0 before the first).
    public var receivedWidth = 0
    public var receivedHeight = 0
    public var sentWidth = 0
    public var sentHeight = 0
    /// Keyframes sent and received.
    public var keyframesSent = 0
    public var keyframesReceived = 0
    /// Kilobits per second over the last interval, each way (the codec's payload).
    public var sentKilobits = 0
    public var receivedKilobits = 0
    /// Keyframes the peer asked us for (PLI and FIR), and we asked it for.
    public var keyframeRequestsReceived = 0
    public var keyframeRequestsSent = 0
    /// Generic NACKs the peer sent about our packets, and we sent about its.
    public var nacksReceived = 0
    public var nacksSent = 0
}
