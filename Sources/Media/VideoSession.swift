import Foundation
import Synchronization

/// One call's video: a GStreamer pipeline of its own (``VideoPipelineDescription``) sending the configured source as
/// RTP from the video's reserved port pair and writing what arrives to the configured sink, beside the call's audio
/// session and never touching it: video starts and stops (an upgrade, a downgrade) without a glitch in the audio.
///
/// ```
///   init ──► running ──update(direction, awaitsPeer)──► running (valves; a keyframe when sending resumes)
///             │  ├──update(codec, address, port, keys, size)──► running (a new pipeline)
///             │  ├──change(source:)──► running (the source bin swapped while it plays)
///             │  └──the gate latched onto the peer's NAT (symmetric RTP)──► running, sending there
///             └──stop()──► stopped (end of stream: a file is completed; the pipeline released)
/// ```
/// With DTLS-SRTP each pipeline's valves stay shut until its own handshake's peer certificate matched the SDP's
/// fingerprint (``DTLSHandshakeCheck``); a failed check keeps them shut.
/// Every call returns at once: the pipeline is built, changed and torn down on the session's own serial queue (its
/// work counted in the audio sessions' group, so a stopping process waits for a video file to complete too).
public final class VideoSession: @unchecked Sendable {
    // @unchecked Sendable: the mutable state below is touched only on `queue`; `latest` is behind its mutex.

    /// The reserved local ports.
    public let reservation: RTPPortPool.Reservation
    /// What it sends (``change(source:)`` picks another; touched on the session's queue) and where what arrives goes.
    private var source: VideoSource
    public let sink: VideoSink
    /// The picture it sends when the peer takes it.
    public let format: VideoFormat
    /// The file it writes to (`sink` is `files`), named by the caller (a new pipeline's gets `-part2`, `-part3`…);
    /// read it on the session's queue (in `stop`'s completion).
    public private(set) var recordingPath: String?
    private let recordingBase: String?
    private let queue = DispatchQueue(label: "parley-video")
    private let report: @Sendable (String) -> Void
    private let notice: @Sendable (String) -> Void
    /// When the session began, and whether its first received frame was said.
    private let began = Date()
    private var firstFrameSaid = false
    private let statisticsReported: @Sendable (VideoStatistics) -> Void
    private var parameters: VideoStreamParameters
    private var pipeline: Pipeline?
    private var stopped = false
    private var rebuilds = 0
    private var poller: DispatchSourceTimer?
    private var polls = 0
    private var sockets: (rtp: Int32, rtcp: Int32)?
    /// The bitrate (kbit/s) of the picture the pipeline sends, the most the encoder is given, and what it is given
    /// now (lower while the peer's REMB or TMMBR asks for less).
    private var bitrateCap = 0
    private var givenKilobits = 0
    /// DTLS-SRTP: the check of the current pipeline's handshakes (the video's own, on its ports), and the clock it
    /// counts on. No picture passes either way until the peer's certificate matched its SDP's fingerprint.
    private var handshake: DTLSHandshakeCheck?
    private let clock = ContinuousClock()
    private let born = ContinuousClock.now
    /// The figures read last, and the counts they were computed from (per pipeline: a new one counts from zero).
    private let latest = Mutex<VideoStatistics?>(nil)
    private var previousCounts: (sent: Int, received: Int, sentBytes: Int, receivedBytes: Int) = (0, 0, 0, 0)
    private var countedBefore = VideoStatistics()

    /// Polls (of 100 ms) between two readings of the figures.
    static let statisticsInterval = 10
    /// The keys of the frame counters.
    private static let sentKey = "parley-video-sent", receivedKey = "parley-video-received"

    /// Starts sending and receiving; `report` is told of each failure, `notice` of the first frame received, and
    /// `statisticsReported` of the figures every second, on the session's queue.
    public init(
        reservation: RTPPortPool.Reservation, parameters: VideoStreamParameters, source: VideoSource, sink: VideoSink,
        format: VideoFormat = VideoFormat(), recordingName: String, report: @escaping @Sendable (String) -> Void = { _ in },
        notice: @escaping @Sendable (String) -> Void = { _ in },
        statisticsReported: @escaping @Sendable (VideoStatistics) -> Void = { _ in }
    ) {
        self.notice = notice
        self.reservation = reservation
        self.parameters = parameters
        self.source = source
        self.sink = sink
        self.format = format
        self.report = report
        self.statisticsReported = statisticsReported
        if case .files(let directory) = sink {
            recordingBase = URL(fileURLWithPath: directory).appendingPathComponent(recordingName).path
        } else {
            recordingBase = nil
        }
        sockets = reservation.duplicated()
        queue.async(group: MediaSession.work) { self.start() }
    }

    deinit {
        poller?.cancel()
        pipeline?.finish(waitingMilliseconds: 0)
        closeSockets()
    }

    private func closeSockets() {
        guard let open = sockets else { return }
        sockets = nil
        close(open.rtp)
        close(open.rtcp)
    }

    /// The bitrate (kbit/s) the encoder of the current pipeline has now, read from it (0 without one).
    public var encoderKilobits: Int {
        queue.sync { pipeline?.number("encoder", parameters.codec.bitrateProperty).map { Int($0 / 1_000) } ?? 0 }
    }

    /// The figures as last read (at most a second old; nil before the first reading).
    public var latestStatistics: VideoStatistics? { latest.withLock { $0 } }

    /// Carries a renegotiated stream: a direction change flips valves (a keyframe goes first when sending resumes);
    /// anything else builds a new pipeline.
    public func update(_ new: VideoStreamParameters) {
        queue.async(group: MediaSession.work) {
            guard !self.stopped else { return }
            let old = self.parameters
            var new = new
            if !new.hasRemoteAddress, old.hasRemoteAddress {
                (new.remoteHost, new.remotePort, new.remoteRTCPPort) = (old.remoteHost, old.remotePort, old.remoteRTCPPort)
            }
            self.parameters = new
            var sameStream = new, oldStream = old
            (sameStream.sends, sameStream.receives, sameStream.awaitsPeer) = (old.sends, old.receives, old.awaitsPeer)
            (oldStream.sends, oldStream.receives, oldStream.awaitsPeer) = (old.sends, old.receives, old.awaitsPeer)
            guard sameStream == oldStream, let pipeline = self.pipeline else { return self.rebuild() }
            if old.awaitsPeer, !new.awaitsPeer {
                pipeline.resumeSending()
                pipeline.holdGates(false)
                if new.hasRemoteAddress { self.handshake?.start(at: self.elapsed) }
            }
            let wasSending = Self.sends(old)
            self.applyDirection()
            if !wasSending, Self.sends(new) { pipeline.forceKeyframe(at: "encoder") }
        }
    }

    /// Sends `source` from now on, its bin swapped in place of the old one while the pipeline plays (the encoder, the
    /// RTP session, its DTLS association and what is received go on untouched); nothing when it is the source already.
    public func change(source: VideoSource) {
        queue.async(group: MediaSession.work) {
            guard !self.stopped, source != self.source else { return }
            let previous = self.source
            guard let pipeline = self.pipeline else {
                self.source = source
                return self.notice("video: will send \(source)")
            }
            do {
                try Self.attach(source, to: pipeline, offset: true)
                self.source = source
                self.notice("video: now sending \(source)")
            } catch {
                // The old source was taken out: it goes back in (a picture that cannot be decoded fails later, on the bus).
                self.report("video: \(source) could not be sent: \(error); \(previous) again")
                try? Self.attach(previous, to: pipeline, offset: true)
            }
        }
    }

    /// Puts `source`'s bin in front of the pipeline's send chain, in place of the one there. Mid-call (`offset`) a
    /// test picture's and a file's timestamps, which start at zero, go on from the running time (a camera's are the
    /// running time already): the pictures are paced by the clock, and the RTP timestamps keep going forward.
    private static func attach(_ source: VideoSource, to pipeline: Pipeline, offset: Bool) throws(MediaError) {
        let now = offset ? pipeline.runningTime : nil
        let nanoseconds = now.map { String($0.components.seconds * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000) }
        var isFile = false
        if case .file = source { isFile = true }
        // A file's pace is kept inside its bin (identity's ts-offset); its timestamps are moved as they leave it.
        let bin = VideoPipelineDescription.sourceText(source)
        try pipeline.replaceSource(bin.text, output: bin.output, into: VideoPipelineDescription.sourceInput, offset: isFile ? now : nil) { built in
            switch source {
            case .test(let pattern):
                _ = built.set(VideoPipelineDescription.source, "pattern", text: pattern)
                if let nanoseconds { built.set(VideoPipelineDescription.source, "timestamp-offset", text: nanoseconds) }
            case .camera(let device): if let device { built.set(VideoPipelineDescription.source, "device", device) }
            case .file(let path):
                built.set("file", "location", path)
                if let nanoseconds { built.set(VideoPipelineDescription.filePace, "ts-offset", text: nanoseconds) }
            }
        }
    }

    /// Stops sending and receiving; a file is completed. Returns at once; `then` runs on the session's queue after.
    public func stop(then done: (@Sendable () -> Void)? = nil) {
        queue.async(group: MediaSession.work) {
            self.tearDown()
            done?()
        }
    }

    /// Stops, and waits until the pipeline is gone and a file complete.
    public func finish() { queue.sync { self.tearDown() } }

    private func tearDown() {
        guard !stopped else { return }
        stopped = true
        poller?.cancel()
        poller = nil
        poll()
        finishPipeline()
        closeSockets()
    }

    private func finishPipeline() {
        guard let pipeline else { return }
        countedBefore = latestStatistics ?? countedBefore
        // A file is completed here: its end of stream goes straight into the depayloader, not through the jitter
        // buffer, which may hold it back for hundreds of milliseconds (waiting for retransmissions) — long enough
        // for the pipeline's stop to close the file under the sink's last write (the file was left empty).
        if recordingBase != nil { pipeline.endStream(at: "depay") }
        pipeline.finish(waitingMilliseconds: 0)
        self.pipeline = nil
    }

    private func rebuild() {
        finishPipeline()
        rebuilds += 1
        start()
    }

    private func start() {
        do {
            pipeline = try build()
        } catch {
            pipeline = nil
            report("no video: \(error)")
        }
        guard poller == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        timer.setEventHandler { [weak self] in self?.poll() }
        timer.resume()
        poller = timer
    }

    private func build() throws(MediaError) -> Pipeline {
        let sent = format.fitting(maxFrameSize: parameters.maxFrameSize, maxFrameRate: parameters.maxFrameRate)
        let description = VideoPipelineDescription(
            codec: parameters.codec, payloadType: parameters.payloadType, receivedPayloadType: parameters.receivedPayloadType,
            sink: sink, format: sent, security: parameters.encryption, peerFeedback: parameters.peerFeedback)
        guard let sockets else { throw MediaError("the call's video sockets could not be duplicated") }
        let built = try Pipeline(description.text)
        for (component, gate) in ReceiveGate.gates(
            host: parameters.hasRemoteAddress ? parameters.remoteHost : nil, port: parameters.remotePort,
            rtcpPort: parameters.remoteRTCPPort, receives: parameters.receives, payloadType: parameters.receivedPayloadType,
            encryption: parameters.encryption)
        {
            try built.gate(component == .rtp ? "rtpsrc" : "rtcpsrc", key: ReceiveGate.key(component), gate)
        }
        if let retransmission = parameters.retransmissionPayloadType, let received = parameters.receivedRetransmissionPayloadType {
            try built.retransmit(
                at: PipelineDescription.rtpbin, payloadType: parameters.payloadType, retransmission: retransmission,
                receivedPayloadType: parameters.receivedPayloadType, receivedRetransmission: received)
        }
        try VideoPipelineDescription.linkSession(built)
        try built.setSessionBandwidth(at: PipelineDescription.rtpbin, kilobits: sent.bitrate)
        try built.watchPeerBitrate(at: PipelineDescription.rtpbin)
        (bitrateCap, givenKilobits) = (sent.bitrate, sent.bitrate)
        try built.routeReceivedVideo(
            from: PipelineDescription.rtpbin, into: "incoming", encodingName: parameters.codec.rawValue,
            payloadType: parameters.receivedPayloadType, feedback: parameters.peerFeedback)
        try built.useSockets(rtp: sockets.rtp, rtcp: sockets.rtcp)
        built.send(to: parameters.remoteHost, port: parameters.remotePort, rtcpPort: parameters.remoteRTCPPort)
        try Self.attach(source, to: built, offset: false)
        if let recordingBase {
            let path = recordingBase + (rebuilds > 0 ? "-part\(rebuilds + 1)" : "") + "." + parameters.codec.container.fileExtension
            recordingPath = path
            built.set("recording", "location", path)
        }
        try built.countFrames(at: "encoder", key: Self.sentKey)
        try built.countFrames(at: "depay", key: Self.receivedKey)
        previousCounts = (0, 0, 0, 0)
        try parameters.encryption.key(built, connection: "parley-video-" + UUID().uuidString)
        handshake = nil
        if case .dtls = parameters.encryption {
            handshake = DTLSHandshakeCheck(startingAt: parameters.hasRemoteAddress && !parameters.awaitsPeer ? elapsed : nil)
            // As audio's: nothing of the handshake is read before the ACK of our answer (issue 48).
            if parameters.awaitsPeer { built.holdGates(true) }
        }
        if parameters.awaitsPeer { try built.stopSending(at: MediaTransport.socketElements.map(\.sender)) }
        Self.applyDirection(parameters, to: built, secured: isSecured)
        try built.play()
        return built
    }

    /// Whether video goes out: we send, to an address, to a peer that acknowledged our answer.
    private static func sends(_ parameters: VideoStreamParameters) -> Bool {
        parameters.sends && parameters.hasRemoteAddress && !parameters.awaitsPeer
    }

    /// Time since the session began.
    private var elapsed: Duration { clock.now - born }

    /// Whether pictures may pass: not DTLS-SRTP, or its check found the peer's certificate the one its SDP named.
    private var isSecured: Bool { handshake.map { $0.verdict == .secured } ?? true }

    private func applyDirection() {
        if let pipeline { Self.applyDirection(parameters, to: pipeline, secured: isSecured) }
    }

    private static func applyDirection(_ parameters: VideoStreamParameters, to pipeline: Pipeline, secured: Bool) {
        pipeline.set("send", "drop", !secured || !sends(parameters))
        pipeline.set("receive", "drop", !secured || !parameters.receives)
        pipeline.set("sendrtcp", "drop", !parameters.hasRemoteAddress || parameters.awaitsPeer)
    }

    /// Empties the bus (errors reported), checks DTLS handshakes, follows a latch, and every second reads the frame
    /// counts.
    private func poll() {
        guard let pipeline else { return }
        if let error = pipeline.poll().error { report("video: \(error)") }
        checkHandshakes(of: pipeline)
        followPeerBitrate(of: pipeline)
        // Symmetric RTP, as the audio session's `follow`: a peer whose RTP comes from another address (a NAT) is sent
        // to there; from another port of its SDP's address (asymmetric RTP) it is taken, and still sent to its SDP's.
        // Back to the SDP's address and ports when its RTP comes after all (a stranger's had raced it).
        if let moved = pipeline.readGate(ReceiveGate.key(.rtp))?.latchedTo {
            if moved.host == parameters.remoteHost, moved.port == parameters.remotePort {
                pipeline.send(to: moved.host, port: moved.port, rtcpPort: parameters.remoteRTCPPort)
                pipeline.gateAccept(ReceiveGate.key(.rtcp), host: moved.host, port: parameters.remoteRTCPPort)
            } else if moved.host != parameters.remoteHost {
                pipeline.send(to: moved.host, port: moved.port, rtcpPort: moved.port + 1)
                pipeline.gateAccept(ReceiveGate.key(.rtcp), host: moved.host, port: nil)
            }
        }
        if !firstFrameSaid, let received = pipeline.frames(Self.receivedKey), let first = received.first {
            firstFrameSaid = true
            notice("video: the first frame arrived \(Int(first.timeIntervalSince(began) * 1_000)) ms after the video started "
                + "(\(received.width)x\(received.height), at \(first.timeIntervalSince1970))")
        }
        polls += 1
        guard polls % Self.statisticsInterval == 0 else { return }
        let figures = readStatistics(of: pipeline)
        latest.withLock { $0 = figures }
        statisticsReported(figures)
    }

    /// The figures of the stream so far (pipelines before this one included), rates over the last interval.
    private func readStatistics(of pipeline: Pipeline) -> VideoStatistics {
        let seconds = Double(Self.statisticsInterval) / 10
        var figures = countedBefore
        if let sent = pipeline.frames(Self.sentKey) {
            figures.framesSent = countedBefore.framesSent + sent.frames
            figures.keyframesSent = countedBefore.keyframesSent + sent.keyframes
            figures.sentFrameRate = Double(sent.frames - previousCounts.sent) / seconds
            figures.sentKilobits = (sent.bytes - previousCounts.sentBytes) * 8 / 1_000 / Int(seconds)
            (figures.sentWidth, figures.sentHeight) = (sent.width, sent.height)
            (previousCounts.sent, previousCounts.sentBytes) = (sent.frames, sent.bytes)
        }
        if let received = pipeline.frames(Self.receivedKey) {
            figures.framesReceived = countedBefore.framesReceived + received.frames
            figures.keyframesReceived = countedBefore.keyframesReceived + received.keyframes
            figures.receivedFrameRate = Double(received.frames - previousCounts.received) / seconds
            figures.receivedKilobits = (received.bytes - previousCounts.receivedBytes) * 8 / 1_000 / Int(seconds)
            if received.width > 0 { (figures.receivedWidth, figures.receivedHeight) = (received.width, received.height) }
            (previousCounts.received, previousCounts.receivedBytes) = (received.frames, received.bytes)
        }
        if let feedback = pipeline.feedbackCounts(of: PipelineDescription.rtpbin) {
            figures.keyframeRequestsReceived = countedBefore.keyframeRequestsReceived + feedback.keyframesAsked
            figures.keyframeRequestsSent = countedBefore.keyframeRequestsSent + feedback.keyframesRequested
            figures.nacksReceived = countedBefore.nacksReceived + feedback.nacksReceived
            figures.nacksSent = countedBefore.nacksSent + feedback.nacksSent
        }
        return figures
    }
}

extension VideoSession {
    /// Gives the encoder what the peer's last REMB and TMMBR ask for (never above the picture's bitrate): Parley has no
    /// congestion controller of its own; the peer measures the path. Said when it changes by a quarter or more.
    fileprivate func followPeerBitrate(of pipeline: Pipeline) {
        let target = Self.encoderBitrate(asked: pipeline.peerBitrate(at: PipelineDescription.rtpbin), cap: bitrateCap)
        guard target != givenKilobits, bitrateCap > 0 else { return }
        pipeline.set("encoder", parameters.codec.bitrateProperty, text: String(target * 1_000))
        if abs(target - givenKilobits) * 4 >= givenKilobits || target == bitrateCap {
            notice("video: sending at \(target) kbit/s (\(target == bitrateCap ? "the picture's own" : "the peer's REMB/TMMBR"))")
        }
        givenKilobits = target
    }

    /// DTLS-SRTP: the peer certificate each component's decoder saw, checked against the fingerprints of the peer's
    /// SDP (GStreamer does not check it). Secured: pictures pass, a keyframe first. Failed (a certificate that does
    /// not match, no handshake within 10 s): the video stays shut, and the failure is reported (the audio's own
    /// handshake decides the call).
    fileprivate func checkHandshakes(of pipeline: Pipeline) {
        guard var check = handshake, check.isWaiting, case .dtls(let setup) = parameters.encryption else { return }
        let outcomes = pipeline.checkHandshakes(&check, setup: setup, now: elapsed)
        handshake = check
        for outcome in outcomes {
            switch outcome {
            case .secured:
                notice("video: secured (DTLS-SRTP, the peer's certificate matches its fingerprint)")
                applyDirection()
                pipeline.forceKeyframe(at: "encoder")
            case .failed(let why):
                applyDirection()
                report("video not secured, none sent or taken: \(why)")
            }
        }
    }
}

extension VideoSession {
    /// The least the encoder is given, whatever the peer asks: below it a picture is not worth sending.
    static let minimumKilobits = 30

    /// The encoder's bitrate for what the peer asked (kbit/s, nil: nothing): 95 % of it (the rest for RTP's
    /// headers), between ``minimumKilobits`` and the picture's own `cap` (pure).
    static func encoderBitrate(asked: Int?, cap: Int) -> Int {
        guard let asked else { return cap }
        return min(cap, max(minimumKilobits, asked * 95 / 100))
    }
}
