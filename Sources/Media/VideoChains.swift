import Foundation

/// A video codec's two chains: what a call sends (raw video encoded and packetized) and what it receives
/// (depacketized, decoded), as gst-launch text ``VideoPipelineDescription`` splices between its source or sink and
/// the RTP session. VP8 (RFC 7741) first; H.264 (RFC 6184,
/// packetization-mode 1) through openh264, the only H.264 codec Debian's GStreamer here has.
///
/// ```
///   send:    raw video ─► vp8enc (real time) "encoder" ─► rtpvp8pay pt=PT "pay" ─► rtpbin
///   receive: rtpbin ─► rtpvp8depay "depay" ─► [vp8dec] ─► sink
/// ```
public enum VideoCodec: String, CaseIterable, Sendable {
    /// VP8 (vp8enc/vp8dec, libvpx).
    case vp8 = "VP8"
    /// H.264 constrained baseline, packetization-mode 1 (openh264enc/openh264dec).
    case h264 = "H264"

    /// The RTP clock rate of every video payload (RFC 3551).
    static let clockRate = 90_000

    /// The shortest time between two keyframes made on request (a PLI or FIR): a storm of requests costs at most
    /// two keyframes a second (each is many times a delta frame's size).
    static let keyframeRequestInterval = Duration.milliseconds(500)

    /// The encoder ("encoder") and payloader ("pay"), low latency: no lookahead, real-time deadline, keyframes at
    /// least every `keyframeEvery` frames (a receiver that lost one waits at most that long even without PLI), and
    /// on request at most every ``keyframeRequestInterval``; `bitrate` in kbit/s (``bitrateProperty`` changes it later).
    func sendChain(payloadType: Int, bitrate: Int = 800, keyframeEvery: Int = 60) -> String {
        let limit = " min-force-key-unit-interval=\(Self.keyframeRequestInterval.components.seconds * 1_000_000_000 + Self.keyframeRequestInterval.components.attoseconds / 1_000_000_000)"
        return switch self {
        case .vp8:
            "vp8enc name=encoder deadline=1 lag-in-frames=0 error-resilient=partitions keyframe-max-dist=\(keyframeEvery)"
                + " target-bitrate=\(bitrate * 1_000) end-usage=cbr buffer-size=1000 buffer-initial-size=500"
                + " buffer-optimal-size=600 overshoot=15 cpu-used=8\(limit) ! rtpvp8pay name=pay pt=\(payloadType) picture-id-mode=15-bit"
        case .h264:
            "openh264enc name=encoder complexity=low rate-control=bitrate bitrate=\(bitrate * 1_000) gop-size=\(keyframeEvery)\(limit)"
                + " ! video/x-h264,profile=constrained-baseline,stream-format=byte-stream"
                + " ! rtph264pay name=pay pt=\(payloadType) config-interval=-1 aggregate-mode=zero-latency"
        }
    }

    /// The encoder's property for its bitrate in bits per second (changed while it runs: libvpx and openh264 take a
    /// new target at the next frame).
    var bitrateProperty: String { self == .vp8 ? "target-bitrate" : "bitrate" }

    /// The depayloader ("depay"): whole frames out, a keyframe asked for (PLI or FIR, by the RTP session) when one
    /// is missing, nothing given out before the first keyframe.
    var depayloader: String {
        switch self {
        case .vp8: "rtpvp8depay name=depay request-keyframe=true wait-for-keyframe=true"
        case .h264: "rtph264depay name=depay request-keyframe=true wait-for-keyframe=true ! h264parse"
        }
    }

    /// The decoder ("decoder").
    var decoder: String {
        switch self {
        case .vp8: "vp8dec name=decoder"
        case .h264: "openh264dec name=decoder"
        }
    }

    /// The depayloader and decoder.
    var receiveChain: String { depayloader + " ! " + decoder }

    /// The container a received stream is written to as it came (no decoding, streamable: a file cut short plays up
    /// to its end), and its file name extension: WebM for VP8, Matroska for H.264.
    var container: (muxer: String, fileExtension: String) {
        switch self {
        case .vp8: ("webmmux streamable=true", "webm")
        case .h264: ("matroskamux streamable=true", "mkv")
        }
    }

    /// The codec an SDP encoding name names (`VP8`, `H264`, any case).
    public init?(encodingName: String) {
        guard let codec = Self.allCases.first(where: { $0.rawValue.caseInsensitiveCompare(encodingName) == .orderedSame }) else { return nil }
        self = codec
    }

    /// The caps of its RTP packets (what the receiving side's jitter buffer needs to know), with the `feedback` the
    /// peer takes: the RTP session caches these caps for the payload type and sends NACK, PLI and FIR only when they
    /// say so.
    func rtpCaps(payloadType: Int, feedback: VideoFeedback = []) -> String {
        "application/x-rtp,media=video,clock-rate=\(Self.clockRate),encoding-name=\(rawValue),payload=\(payloadType)"
            + (feedback.contains(.nack) ? ",rtcp-fb-nack=(boolean)true" : "")
            + (feedback.contains(.pli) ? ",rtcp-fb-nack-pli=(boolean)true" : "")
            + (feedback.contains(.fir) ? ",rtcp-fb-ccm-fir=(boolean)true" : "")
    }
}
