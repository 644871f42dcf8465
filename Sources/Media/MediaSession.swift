import Foundation

/// One call's audio: a GStreamer pipeline sending the configured source as RTP from the call's reserved port pair
/// (symmetric RTP: the same socket sends and receives) and writing what arrives to the configured sink.
///
/// ```
///   init ──► running ──update(direction)──► running (valves: no new pipeline)
///                │  └──update(codec, address or port)──► running (a new pipeline)
///                └──stop()──► stopped (end of stream: a WAV file is completed; the pipeline released)
/// ```
/// Every call returns at once: the pipeline is built, changed and torn down on the session's own serial queue, so
/// the SIP loop that drives it never waits for GStreamer (a teardown may wait up to half a second for a recording's
/// end of stream). `finish()` waits for all of it (tests, and a node shutting down).
public final class MediaSession: @unchecked Sendable {
    // @unchecked Sendable: the mutable state below is touched only on `queue` (the public methods enqueue work and
    // read nothing else); the `let`s are immutable values.

    /// The reserved local ports.
    public let reservation: RTPPortPool.Reservation
    /// What it sends.
    public let source: AudioSource
    /// Where what arrives goes.
    public let sink: AudioSink
    /// The file it records to (`sink` is `files`), named by the caller.
    public let recordingPath: String?
    private let queue = DispatchQueue(label: "parley-media")
    /// Every session's queued work, so a process can wait for recordings to complete before it exits.
    private static let work = DispatchGroup()
    private let report: @Sendable (String) -> Void
    private var parameters: MediaStreamParameters
    private var isMuted = false
    private var pipeline: Pipeline?
    private var rebuilds = 0
    private var stopped = false

    /// Starts sending and receiving (the pipeline is built on the session's queue); `report` is told of each failure,
    /// on that queue.
    public init(
        reservation: RTPPortPool.Reservation, parameters: MediaStreamParameters, source: AudioSource, sink: AudioSink,
        recordingName: String, report: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.reservation = reservation
        self.parameters = parameters
        self.source = source
        self.sink = sink
        self.report = report
        if case .files(let directory) = sink {
            recordingPath = URL(fileURLWithPath: directory).appendingPathComponent(recordingName + ".wav").path
        } else {
            recordingPath = nil
        }
        queue.async(group: Self.work) { self.start() }
    }

    deinit {
        // The last reference may go on any thread; the queue's work holds none, so only the pipeline is left.
        pipeline?.finish(waitingMilliseconds: 0)
    }

    /// Carries a renegotiated stream: a direction change flips valves; a new codec, address or port builds a new
    /// pipeline (GStreamer's payloaders and caps are fixed once linked).
    public func update(_ new: MediaStreamParameters) {
        queue.async(group: Self.work) {
            guard !self.stopped else { return }
            let old = self.parameters
            self.parameters = new
            if new.codec == old.codec, new.ptime == old.ptime, new.remoteHost == old.remoteHost,
                new.remotePort == old.remotePort, new.remoteRTCPPort == old.remoteRTCPPort, self.pipeline != nil
            {
                self.applyDirection()
                return
            }
            self.pipeline?.finish(waitingMilliseconds: self.recordingPath == nil ? 0 : 200)
            self.pipeline = nil
            self.rebuilds += 1
            self.start()
        }
    }

    /// Mutes or unmutes the source (silence is sent, RTP keeps flowing).
    public func setMuted(_ muted: Bool) {
        queue.async(group: Self.work) {
            self.isMuted = muted
            self.pipeline?.set("mute", "mute", muted)
        }
    }

    /// Stops sending and receiving; a recording is completed. Returns at once; idempotent.
    public func stop() {
        queue.async(group: Self.work) { self.tearDown() }
    }

    /// Stops, and waits until the pipeline is gone and a recording complete.
    public func finish() {
        queue.sync { self.tearDown() }
    }

    /// Waits until the work every session has queued is done (a stopping process: recordings complete); false when
    /// `timeout` passed first.
    public static func waitForAll(timeout: Duration) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        return work.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success
    }

    private func tearDown() {
        guard !stopped else { return }
        stopped = true
        if let error = pipeline?.takeError() { report("media: \(error)") }
        pipeline?.finish(waitingMilliseconds: recordingPath == nil ? 0 : 500)
        pipeline = nil
    }

    private func start() {
        do {
            pipeline = try build()
        } catch {
            pipeline = nil
            report("no audio: \(error)")
        }
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
        built.set("send", "drop", !parameters.sends)
        built.set("receive", "drop", !parameters.receives)
        built.set("mute", "mute", isMuted)
        try built.play()
        return built
    }

    private func applyDirection() {
        pipeline?.set("send", "drop", !parameters.sends)
        pipeline?.set("receive", "drop", !parameters.receives)
    }
}
