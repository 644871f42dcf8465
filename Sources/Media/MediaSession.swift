import Foundation

/// One call's audio: a GStreamer pipeline sending the configured source as RTP from the call's reserved port pair
/// (symmetric RTP: the same socket sends and receives) and writing what arrives to the configured sink.
///
/// ```
///   init ──► running ──update(direction)──► running (valves: no new pipeline)
///                │  └──update(codec, address or port)──► running (a new pipeline)
///                └──stop()──► stopped (end of stream: a WAV file is completed; the pipeline released)
/// ```
/// Not thread-safe: the engine's loop owns it.
public final class MediaSession {
    /// The reserved local ports.
    public let reservation: RTPPortPool.Reservation
    /// What it sends.
    public let source: AudioSource
    /// Where what arrives goes.
    public let sink: AudioSink
    /// The file it records to (`sink` is `files`), named by the caller.
    public let recordingPath: String?
    /// What it carries now.
    public private(set) var parameters: MediaStreamParameters
    /// Whether the source is muted (silence is sent, RTP keeps flowing).
    public private(set) var isMuted = false
    private var pipeline: Pipeline?
    private var rebuilds = 0

    /// Starts sending and receiving at once.
    public init(
        reservation: RTPPortPool.Reservation, parameters: MediaStreamParameters, source: AudioSource, sink: AudioSink,
        recordingName: String
    ) throws(MediaError) {
        self.reservation = reservation
        self.parameters = parameters
        self.source = source
        self.sink = sink
        if case .files(let directory) = sink {
            recordingPath = URL(fileURLWithPath: directory).appendingPathComponent(recordingName + ".wav").path
        } else {
            recordingPath = nil
        }
        pipeline = try build()
    }

    deinit { stop() }

    /// Carries a renegotiated stream: a direction change flips valves; a new codec, address or port builds a new
    /// pipeline (GStreamer's payloaders and caps are fixed once linked).
    public func update(_ new: MediaStreamParameters) throws(MediaError) {
        guard pipeline != nil else { return }
        let old = parameters
        parameters = new
        if new.codec == old.codec, new.ptime == old.ptime, new.remoteHost == old.remoteHost,
            new.remotePort == old.remotePort, new.remoteRTCPPort == old.remoteRTCPPort
        {
            applyDirection()
            return
        }
        pipeline?.finish(waitingMilliseconds: 200)
        rebuilds += 1
        pipeline = try build()
    }

    /// Mutes or unmutes the source.
    public func setMuted(_ muted: Bool) {
        isMuted = muted
        pipeline?.set("mute", "mute", muted)
    }

    /// The first error GStreamer reported since the last look (the driver logs it), if any.
    public func takeError() -> String? { pipeline?.takeError() }

    /// Stops sending and receiving; a recording is completed. Idempotent.
    public func stop() {
        pipeline?.finish(waitingMilliseconds: 500)
        pipeline = nil
    }

    private func build() throws(MediaError) -> Pipeline {
        let description = PipelineDescription(codec: parameters.codec, ptime: parameters.ptime, source: source, sink: sink)
        let built = try Pipeline(description.text)
        try built.routeReceived(from: "rtp", into: "incoming", payloadType: parameters.codec.payloadType)
        try built.setSocket("rtpsrc", fd: reservation.rtp)
        try built.setSocket("rtpsink", fd: reservation.rtp)
        try built.setSocket("rtcpsrc", fd: reservation.rtcp)
        try built.setSocket("rtcpsink", fd: reservation.rtcp)
        built.set("rtpsink", "host", parameters.remoteHost)
        built.set("rtpsink", "port", parameters.remotePort)
        built.set("rtcpsink", "host", parameters.remoteHost)
        built.set("rtcpsink", "port", parameters.remoteRTCPPort)
        if case .file(let path) = source { built.set("file", "location", path) }
        if var path = recordingPath {
            if rebuilds > 0 { path = String(path.dropLast(4)) + "-\(rebuilds + 1).wav" }
            built.set("recording", "location", path)
        }
        pipeline = built
        applyDirection()
        setMuted(isMuted)
        try built.play()
        return built
    }

    private func applyDirection() {
        pipeline?.set("send", "drop", !parameters.sends)
        pipeline?.set("receive", "drop", !parameters.receives)
    }
}
