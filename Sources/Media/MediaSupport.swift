import Foundation

/// Whether this machine can carry call audio: GStreamer and the plugins Parley's pipelines use.
public enum MediaSupport {
    /// The elements every pipeline needs (gstreamer1.0-plugins-base and -good).
    static let requiredElements = [
        "rtpbin", "udpsrc", "udpsink", "audiotestsrc", "audioconvert", "audioresample", "volume", "valve", "funnel",
        "mulawenc", "mulawdec", "alawenc", "alawdec", "rtppcmupay", "rtppcmudepay", "rtppcmapay", "rtppcmadepay",
        "wavenc", "wavparse", "filesrc", "filesink", "fakesink", "rtpdtmfsrc", "rtpdtmfmux", "rtpdtmfdepay",
    ]

    /// Nil when media works here, else what is missing.
    public static var problem: MediaError? {
        if let failure = GStreamer.failure { return failure }
        let missing = requiredElements.filter { !GStreamer.has($0) }
        guard missing.isEmpty else {
            return MediaError(
                "GStreamer lacks \(missing.joined(separator: ", ")) (install gstreamer1.0-plugins-base and gstreamer1.0-plugins-good)")
        }
        return nil
    }

    /// Whether opus can be carried (its encoder, decoder and RTP elements: gstreamer1.0-plugins-base and -good).
    public static var hasOpus: Bool {
        GStreamer.failure == nil && ["opusenc", "opusdec", "rtpopuspay", "rtpopusdepay"].allSatisfy(GStreamer.has)
    }

    /// Nil when SRTP can be carried (srtpenc and srtpdec, in gstreamer1.0-plugins-bad), else what is missing.
    public static var encryptionProblem: MediaError? {
        if let failure = GStreamer.failure { return failure }
        let missing = ["srtpenc", "srtpdec"].filter { !GStreamer.has($0) }
        return missing.isEmpty ? nil : MediaError("GStreamer lacks \(missing.joined(separator: ", ")) (install gstreamer1.0-plugins-bad)")
    }

    /// Nil when DTLS-SRTP can be carried (dtlssrtpenc and dtlssrtpdec besides SRTP's elements, in
    /// gstreamer1.0-plugins-bad), else what is missing.
    public static var dtlsProblem: MediaError? {
        if let problem = encryptionProblem { return problem }
        let missing = ["dtlssrtpenc", "dtlssrtpdec"].filter { !GStreamer.has($0) }
        return missing.isEmpty ? nil : MediaError("GStreamer lacks \(missing.joined(separator: ", ")) (install gstreamer1.0-plugins-bad)")
    }

    /// Nil when video can be carried (VP8 through libvpx, the test source, the scalers: gstreamer1.0-plugins-base and
    /// -good), else what is missing. H.264 is carried where openh264's elements are there too (``hasH264``).
    public static var videoProblem: MediaError? {
        if let failure = GStreamer.failure { return failure }
        let missing = [
            "vp8enc", "vp8dec", "rtpvp8pay", "rtpvp8depay", "videotestsrc", "videoconvert", "videoscale", "videorate", "webmmux",
        ].filter { !GStreamer.has($0) }
        return missing.isEmpty ? nil : MediaError("GStreamer lacks \(missing.joined(separator: ", ")) (install gstreamer1.0-plugins-good)")
    }

    /// Whether H.264 can be carried (openh264enc and openh264dec, gstreamer1.0-plugins-bad; the payloaders, -good).
    public static var hasH264: Bool {
        GStreamer.failure == nil && ["openh264enc", "openh264dec", "rtph264pay", "rtph264depay", "h264parse", "matroskamux"]
            .allSatisfy(GStreamer.has)
    }

    /// Whether a desktop sound server is reachable for `device` sources and sinks.
    public static var hasSoundServer: Bool { GStreamer.hasSoundServer }
}
