import Foundation

/// The video stream's two chains (issue 47, groundwork): what a call sends (a raw video source encoded and
/// packetized) and what it receives (depacketized, decoded, converted for a sink), as gst-launch text the pipeline
/// description will splice between its source/sink and rtpbin's second session. VP8 (RFC 7741) first; H.264 (RFC 6184,
/// packetization-mode 1) through openh264, the only H.264 codec Debian's GStreamer here has.
///
/// ```
///   send:    source ─► videoconvert ─► CAPS ─► vp8enc (realtime) ─► rtpvp8pay pt=PT ─► rtpbin send_rtp_sink_1
///   receive: rtpbin recv_rtp_src_1_* ─► rtpvp8depay ─► vp8dec ─► videoconvert ─► sink
/// ```
enum VideoCodec: String, CaseIterable, Sendable {
    /// VP8 (vp8enc/vp8dec, libvpx).
    case vp8 = "VP8"
    /// H.264 constrained baseline, packetization-mode 1 (openh264enc/openh264dec).
    case h264 = "H264"

    /// The RTP clock rate of every video payload (RFC 3551).
    static let clockRate = 90_000

    /// The encoder and payloader, low latency: no lookahead, real-time deadline, keyframes at least every `keyframeEvery`
    /// frames (a receiver that lost one waits at most that long even without PLI), `bitrate` in kbit/s.
    func sendChain(payloadType: Int, bitrate: Int = 800, keyframeEvery: Int = 60) -> String {
        switch self {
        case .vp8:
            "vp8enc deadline=1 lag-in-frames=0 error-resilient=partitions keyframe-max-dist=\(keyframeEvery)"
                + " target-bitrate=\(bitrate * 1_000) cpu-used=8 ! rtpvp8pay pt=\(payloadType) picture-id-mode=15-bit"
        case .h264:
            "openh264enc complexity=low rate-control=bitrate bitrate=\(bitrate * 1_000) gop-size=\(keyframeEvery)"
                + " ! video/x-h264,profile=constrained-baseline,stream-format=byte-stream"
                + " ! rtph264pay pt=\(payloadType) config-interval=-1 aggregate-mode=zero-latency"
        }
    }

    /// The depayloader and decoder.
    var receiveChain: String {
        switch self {
        case .vp8: "rtpvp8depay request-keyframe=true wait-for-keyframe=true ! vp8dec"
        case .h264: "rtph264depay request-keyframe=true wait-for-keyframe=true ! h264parse ! openh264dec"
        }
    }

    /// The caps of its RTP packets (what the receiving side's jitter buffer needs to know).
    func rtpCaps(payloadType: Int) -> String {
        "application/x-rtp,media=video,clock-rate=\(Self.clockRate),encoding-name=\(rawValue),payload=\(payloadType)"
    }
}
