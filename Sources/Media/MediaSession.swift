import Foundation
import Synchronization

/// One call's audio: a GStreamer pipeline sending the configured source as RTP from the call's reserved port pair
/// (symmetric RTP: the same socket sends and receives) and writing what arrives to the configured sink.
///
/// ```
///   init ──► running ──update(direction, awaitsPeer)──► running (valves: no new pipeline)
///             │  │  └──update(codec, address or port)──► running (a new pipeline, a new receive gate)
///             │  └──the gate latched onto the peer's NAT (symmetric RTP)──► running, sending there
///             └──stop()──► stopped (end of stream: a WAV file is completed; the pipeline released)
///   Nothing is sent while `awaitsPeer` (an answer not yet acknowledged) or while DTLS-SRTP's check is pending.
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
    /// How its device source and sink meet the desktop.
    public let device: DeviceAudio
    /// The file it records to (`sink` is `files`), named by the caller.
    public let recordingPath: String?
    let queue = DispatchQueue(label: "parley-media")
    /// Every session's queued work (audio and video), so a process can wait for recordings to complete before it exits.
    static let work = DispatchGroup()
    private let report: @Sendable (String) -> Void
    private let notice: @Sendable (String) -> Void
    private let tonesReceived: @Sendable (Character) -> Void
    private let statisticsReported: @Sendable (RTPStatistics) -> Void
    private let securityReported: @Sendable (MediaSecurityOutcome) -> Void
    private let levels: AudioLevelReporting?
    /// The last level each `level` element measured, and the poll it came in; the poll of the last report.
    private var measuredLevels: [(value: Double, poll: Int)?] = [nil, nil]
    private var levelsReportedAt = Int.min / 2
    /// The figures read last (every ``statisticsInterval`` polls), for readers on any thread.
    private let latest = Mutex<RTPStatistics?>(nil)
    /// The conference bridge state asked last (``setBridged(_:)``).
    private let bridgeRequest = Mutex(false)
    private var polls = 0
    private var poller: DispatchSourceTimer?
    /// Keypad tones waiting to be sent in the stream, and whether one is being sent.
    private var pendingTones: [Character] = []
    private var sendingTone = false
    private var parameters: MediaStreamParameters
    /// The peer's lost packets, counted while both sides send (the pipeline's arrivals are taken ten times a second).
    private var loss = RTPLossCounter(counting: false)
    /// RTP and RTCP packets that arrived in the session's life (every pipeline's), for readers on any thread.
    private let arrived = Atomic<Int>(0)
    /// The RTCP packets the current pipeline's gate had let through at the last poll.
    private var rtcpCounted = 0
    /// Packets dropped before the RTP session by the pipelines before this one (from strangers, failing SRTP's
    /// authentication or replayed), and by this one at the last poll.
    private var droppedBefore = 0
    private var droppedNow = 0

    private var isMuted = false
    var pipeline: Pipeline?
    /// The longest a recording runs, over the call's timeline (nil: no cap), and whether it was said to be reached.
    private let maxRecording: Duration?
    private var recordingCapSaid = false
    private var rebuilds = 0
    /// Whether the last pipeline left the echo to the sound server's canceller (said when it changes).
    private var echoLeftToServer = false
    /// The file the current pipeline records to (the first pipeline's is `recordingPath`; a rebuilt one's `-N`).
    private var pipelineRecording: String?
    var stopped = false
    /// Whether the conference bridge taps the call, and where it meets the current pipeline.
    private var bridged = false
    /// The browser carrying the local audio, when one was handed the call (``handOver(to:)``).
    var browser: BrowserAudio?
    /// The microphone and speaker chosen for this call (sound-server names; nil: the default, followed as it moves).
    var chosenDevices: (source: String?, sink: String?) = (nil, nil)
    /// Where the conference bridge meets this call (attached while a bridged pipeline runs).
    public let bridgeTap = BridgeTap()
    /// Our stream's SSRC, sequence numbers and timeline, kept across rebuilds.
    private var stream = SendingStream()
    /// The element of the current pipeline that stamps what we send.
    private var stamper = "pay"
    /// The session's own duplicates of the reserved sockets: the pool closes its descriptors when the call's port
    /// is released, which may be before queued work here has run; these close when the session is torn down.
    private var sockets: (rtp: Int32, rtcp: Int32)?
    /// The check of the current pipeline's DTLS handshakes (nil unless DTLS-SRTP), and the timer that polls its
    /// decoders while it waits.
    private var handshake: DTLSHandshakeCheck?
    private var handshakePoller: DispatchSourceTimer?
    /// The session's clock (the handshake's deadline).
    private let clock = ContinuousClock()
    private let born = ContinuousClock.now

    /// Starts sending and receiving (the pipeline is built on the session's queue); `report` is told of each failure,
    /// `tonesReceived` of each RFC 4733 keypad tone the peer sends, `statisticsReported` of the RTP figures every
    /// two seconds and `securityReported` of what DTLS-SRTP's check of the peer found (secured, or failed: the call
    /// should end), on that queue.
    public init(
        reservation: RTPPortPool.Reservation, parameters: MediaStreamParameters, source: AudioSource, sink: AudioSink,
        recordingName: String, report: @escaping @Sendable (String) -> Void = { _ in },
        tonesReceived: @escaping @Sendable (Character) -> Void = { _ in },
        statisticsReported: @escaping @Sendable (RTPStatistics) -> Void = { _ in },
        securityReported: @escaping @Sendable (MediaSecurityOutcome) -> Void = { _ in },
        notice: @escaping @Sendable (String) -> Void = { _ in }, maxRecording: Duration? = nil,
        levels: AudioLevelReporting? = nil, device: DeviceAudio = DeviceAudio(pulse: false, echoCancellation: .off)
    ) {
        self.device = device
        self.levels = levels
        self.notice = notice
        self.maxRecording = maxRecording
        self.tonesReceived = tonesReceived
        self.statisticsReported = statisticsReported
        self.securityReported = securityReported
        self.reservation = reservation
        self.parameters = parameters
        self.source = source
        self.sink = sink
        self.report = report
        sockets = reservation.duplicated()
        if case .files(let directory) = sink {
            recordingPath = URL(fileURLWithPath: directory).appendingPathComponent(recordingName + ".wav").path
        } else {
            recordingPath = nil
        }
        queue.async(group: Self.work) { self.start() }
    }

    deinit {
        // Queued work holds the session, so deinit runs only once none is left: the pipeline and sockets, if a
        // teardown never ran.
        poller?.cancel()
        handshakePoller?.cancel()
        pipeline?.finish(waitingMilliseconds: 0)
        closeSockets()
    }

    private func closeSockets() {
        guard let open = sockets else { return }
        sockets = nil
        close(open.rtp)
        close(open.rtcp)
    }

    /// Carries a renegotiated stream: a direction change flips valves; a new codec, address or port builds a new
    /// pipeline (GStreamer's payloaders and caps are fixed once linked). A peer's old-style hold (`c=0.0.0.0`)
    /// keeps the address it had: RTCP goes on there (RFC 3550), RTP stops (the peer takes none).
    public func update(_ new: MediaStreamParameters) {
        queue.async(group: Self.work) {
            guard !self.stopped else { return }
            let old = self.parameters
            var new = new
            if !new.hasRemoteAddress, old.hasRemoteAddress {
                (new.remoteHost, new.remotePort, new.remoteRTCPPort) = (old.remoteHost, old.remotePort, old.remoteRTCPPort)
            }
            self.parameters = new
            if new.codec == old.codec, new.payloadType == old.payloadType, new.receivedPayloadType == old.receivedPayloadType,
                new.ptime == old.ptime, new.telephoneEvent == old.telephoneEvent,
                new.receivedTelephoneEvent == old.receivedTelephoneEvent, new.encryption == old.encryption, new.ice == old.ice,
                // Over ICE the agent's pair is the path: a re-offer naming the selected pair in c=/m= (RFC 8839) moves
                // nothing.
                new.ice != nil || (new.remoteHost == old.remoteHost && new.remotePort == old.remotePort
                    && new.remoteRTCPPort == old.remoteRTCPPort), self.pipeline != nil
            {
                if old.awaitsPeer, !new.awaitsPeer {
                    // The ACK came: we may send, and the DTLS handshake may begin, its deadline from now.
                    self.pipeline?.resumeSending()
                    self.pipeline?.holdGates(false)
                    if new.hasRemoteAddress { self.handshake?.start(at: self.elapsed) }
                }
                // What arrived before the change belongs to the stretch it ends.
                self.takeArrivals()
                self.loss.setCounting(Self.bothSend(new))
                self.applyDirection()
                return
            }
            self.rebuild()
        }
    }

    /// A new pipeline in place of the current one (what arrived before belongs to the old one's stretch).
    func rebuild() {
        stream.continueAfter(lastSequence: pipeline?.number(stamper, "seqnum"))
        // The stream goes on in the next pipeline under the same SSRC: no RTCP BYE for it (a peer's rtpbin would
        // drop what comes from an SSRC that said goodbye until the source times out, seconds later).
        pipeline?.set("sendrtcp", "drop", true)
        takeArrivals()
        finishPipeline(waitingMilliseconds: 200)
        // A new rtpbin counts from zero: the old one's figures are not this stream's.
        latest.withLock { $0 = nil }
        rebuilds += 1
        start()
    }

    /// Taps the call for the conference bridge, or stops: a new pipeline (with or without the bridge's elements) at
    /// once when it changes. A tapped call sends the local source mixed with what the bridge pushes. Requests that
    /// come faster than pipelines are rebuilt fold into the latest: each queued turn builds for the state asked last,
    /// so merges and unmerges in a burst cost one rebuild, not one each (a churn of 80 on one call had queued 16 s
    /// of rebuilds, and its end waited behind them).
    public func setBridged(_ on: Bool) {
        bridgeRequest.withLock { $0 = on }
        queue.async(group: Self.work) {
            let wanted = self.bridgeRequest.withLock { $0 }
            guard !self.stopped, self.bridged != wanted else { return }
            self.bridged = wanted
            guard self.pipeline != nil else { return }
            self.rebuild()
        }
    }

    /// Mutes or unmutes the source (silence is sent, RTP keeps flowing).
    public func setMuted(_ muted: Bool) {
        queue.async(group: Self.work) {
            self.isMuted = muted
            self.pipeline?.set("mute", "mute", muted)
        }
    }

    /// How long one tone takes in the stream, its event and the pause after it.
    public static let toneTime = Duration.milliseconds(360)

    /// Sends keypad tones (0–9, *, #, A–D, a–d; others are skipped) as RFC 4733 events in the stream, one after the
    /// other (each held 250 ms, rtpdtmfsrc's shortest, then 110 ms apart, over its 100 ms gap: ``toneTime`` a tone).
    /// The stream must carry telephone-event (the engine sends SIP INFO otherwise);
    /// if it does not, that is reported.
    public func sendTones(_ digits: String) {
        let events = digits.filter { Self.eventNumber(of: $0) != nil }
        queue.async(group: Self.work) {
            guard self.parameters.telephoneEvent != nil else { return self.report("tones \(events): the stream has no telephone-event") }
            self.pendingTones += events
            self.nextTone()
        }
    }

    /// The RFC 4733 event of a keypad character.
    static func eventNumber(of digit: Character) -> Int? {
        guard let index = keypad.firstIndex(of: Character(digit.uppercased())) else { return nil }
        return index
    }

    private static let keypad: [Character] = Array("0123456789*#ABCD")

    private func nextTone() {
        guard !sendingTone, !stopped, !pendingTones.isEmpty, let pipeline else { return }
        let digit = pendingTones.removeFirst()
        guard let number = Self.eventNumber(of: digit), pipeline.dtmf("dtmf", number: number, start: true) else {
            report("tone \(digit) was not sent")
            return nextTone()
        }
        sendingTone = true
        queue.asyncAfter(deadline: .now() + .milliseconds(250)) {
            _ = self.pipeline?.dtmf("dtmf", number: number, start: false)
            self.queue.asyncAfter(deadline: .now() + .milliseconds(110)) {
                self.sendingTone = false
                self.nextTone()
            }
        }
    }

    /// Stops sending and receiving; a recording is completed. Returns at once; idempotent. `then` runs on the
    /// session's queue once the pipeline is gone and a recording complete.
    public func stop(then done: (@Sendable () -> Void)? = nil) {
        queue.async(group: Self.work) {
            self.tearDown()
            done?()
        }
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
        poller?.cancel()
        poller = nil
        pollBus()
        finishPipeline(waitingMilliseconds: 500)
        closeSockets()
    }

    /// Ends the pipeline; a recording is first filled with silence up to now (the call's last stretch may have had
    /// no audio: a hold, a peer that stopped sending) and then completed, waiting at most `waitingMilliseconds`.
    private func finishPipeline(waitingMilliseconds: Int) {
        handshakePoller?.cancel()
        handshakePoller = nil
        handshake = nil
        bridgeTap.detach()
        guard let pipeline else { return }
        if recordingPath != nil { pipeline.fillWithSilenceUntilNow(PipelineDescription.timeline) }
        pipeline.finish(waitingMilliseconds: recordingPath == nil ? 0 : waitingMilliseconds)
        self.pipeline = nil
        // A pipeline that ended before any audio reached its file (a rebuild just before the call ended) leaves
        // no empty file behind.
        if let file = pipelineRecording, rebuilds > 0,
            (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) == 0
        {
            try? FileManager.default.removeItem(atPath: file)
        }
        pipelineRecording = nil
        // The pipeline's nicesrc took the agent's components away as it stopped: checks and consent are answered on.
        parameters.ice?.agent.reattach()
    }

    private func start() {
        do {
            pipeline = try build()
        } catch {
            pipeline = nil
            report("no audio: \(error)")
        }
        guard poller == nil else { return }
        // Nothing else reads the bus: it is emptied ten times a second (tones received, errors), so it never grows.
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        timer.setEventHandler { [weak self] in self?.pollBus() }
        timer.resume()
        poller = timer
    }

    /// Polls (of 100 ms) between two readings of the RTP figures.
    static let statisticsInterval = 20

    /// The RTP figures as last read (at most two seconds old; nil before the first reading).
    public var latestStatistics: RTPStatistics? { latest.withLock { $0 } }

    private func pollBus() {
        guard let pipeline else { return }
        let (events, error, measured) = pipeline.poll(levels: Self.levelElements)
        if let error { report("media: \(error)") }
        for number in events { tonesReceived(Self.keypad[number]) }
        reportLevels(measured, of: pipeline)
        takeArrivals()
        MediaLoad.note(pipeline.takeSendLag())
        if !recordingCapSaid, pipeline.recordingCapped == true, let maxRecording {
            recordingCapSaid = true
            notice("the recording reached its cap of \(maxRecording.components.seconds) s (--max-recording): completed; the call goes on unrecorded")
        }
        polls += 1
        guard polls % Self.statisticsInterval == 0,
            var figures = pipeline.rtpStatistics(of: PipelineDescription.rtpbin, loss: loss, codec: parameters.codec)
        else { return }
        figures.packetsDropped = packetsDropped
        latest.withLock { $0 = figures }
        statisticsReported(figures)
    }

    /// The `level` elements, in the order ``reportLevels(_:of:)`` reads them.
    private static let levelElements = [PipelineDescription.heardLevel, PipelineDescription.saidLevel]

    /// Reports what the `level` elements measured, and starts or stops them posting as listeners come and go. The
    /// two elements post on their own phases, so a report (at most one every two polls, when something new came)
    /// carries each one's latest measurement that is at most half a second old.
    private func reportLevels(_ measured: [Double?], of pipeline: Pipeline) {
        guard let levels else { return }
        let wanted = levels.wanted()
        if wanted != pipeline.levelsPosting { pipeline.postLevels(wanted, at: Self.levelElements) }
        guard wanted else { return }
        for (index, value) in measured.enumerated() { if let value { measuredLevels[index] = (value, polls) } }
        guard measured.contains(where: { $0 != nil }), polls - levelsReportedAt >= 2 else { return }
        levelsReportedAt = polls
        let fresh = measuredLevels.map { $0.flatMap { polls - $0.poll <= 5 ? AudioLevels.dBov($0.value) : nil } }
        levels.reported(AudioLevels(heard: fresh[0], said: fresh[1]))
    }

    /// RTP and RTCP packets that arrived from anyone in the session's life, at most a tenth of a second old: a count
    /// that stops moving says the peer stopped sending (the engine's media timeout reads it).
    public var packetsArrived: Int { arrived.load(ordering: .relaxed) }

    /// Packets that reached the call's ports and were dropped before the RTP session, in the session's life.
    var packetsDropped: Int { droppedBefore + droppedNow }

    /// Takes the RTP packets that entered the RTP session (their loss is counted), the RTCP packets the gate let
    /// through, and what was dropped: by the gates, and by the security layer (RTP the gate passed that never
    /// entered the session; read after the gate, so a packet still in flight is not counted as dropped). A latch
    /// of the RTP gate moves where we send.
    private func takeArrivals() {
        guard let pipeline else { return }
        let rtpGate = pipeline.readGate(ReceiveGate.key(.rtp)), rtcpGate = pipeline.readGate(ReceiveGate.key(.rtcp))
        let rtp = pipeline.takeArrivals { loss.received(ssrc: $0, sequence: $1) }
        let undecrypted = max(0, (rtpGate?.passedMedia ?? 0) - pipeline.arrivalsTotal)
        let rtcp = rtcpGate?.passed ?? 0
        arrived.add(rtp + max(0, rtcp - rtcpCounted), ordering: .relaxed)
        rtcpCounted = rtcp
        droppedNow = (rtpGate?.dropped ?? 0) + (rtcpGate?.dropped ?? 0) + undecrypted
        if let moved = rtpGate?.latchedTo { follow(moved, on: pipeline) }
    }

    /// The peer's RTP comes from `source`, not from where its SDP said (a NAT): our RTP goes there, RTCP to its
    /// next port, and the RTCP gate takes that address on any port (symmetric RTP, RFC 4961; a NAT picks RTCP's). Or it comes from where the SDP
    /// said after all (a stranger's packets had raced the peer's first): everything goes back there.
    private func follow(_ source: (host: String, port: Int), on pipeline: Pipeline) {
        let negotiated = source.host == parameters.remoteHost && source.port == parameters.remotePort
        // Same address, another port: a peer that sends from one port and receives on the one it named (asymmetric
        // RTP) is taken from there, and still sent to where it said.
        if !negotiated, source.host == parameters.remoteHost {
            return notice("the peer's RTP comes from port \(source.port), not \(parameters.remotePort): taken, and sent on to its SDP's port")
        }
        let rtcpPort = negotiated ? parameters.remoteRTCPPort : source.port + 1
        pipeline.send(to: source.host, port: source.port, rtcpPort: rtcpPort)
        pipeline.gateAccept(ReceiveGate.key(.rtcp), host: source.host, port: negotiated ? rtcpPort : nil)
        notice(
            negotiated
                ? "the peer's RTP comes from \(source.host):\(source.port) as its SDP said, after another source's: "
                    + "only the SDP's is taken now"
                : "the peer's RTP comes from \(source.host):\(source.port), not \(parameters.remoteHost):\(parameters.remotePort) "
                    + "as its SDP said: sending there (symmetric RTP)")
    }

    private func build() throws(MediaError) -> Pipeline {
        let description = PipelineDescription(
            codec: parameters.codec, payloadType: parameters.payloadType, receivedPayloadType: parameters.receivedPayloadType,
            ptime: parameters.ptime, source: source, sink: sink,
            telephoneEvent: parameters.telephoneEvent, security: parameters.encryption,
            transport: parameters.ice.map { .ice(stream: $0.agent.stream) } ?? .udp, bridged: bridged,
            handedOver: browser != nil, device: device,
            serverCancelsEcho: browser == nil && device.leavesEchoToServer(source: source, sink: sink, chosen: chosenDevices.source))
        if description.serverCancelsEcho != echoLeftToServer {
            echoLeftToServer = description.serverCancelsEcho
            notice(echoLeftToServer
                ? "echo cancellation: the capture is the sound server's echo canceller; parleyd runs none (--echo-cancel auto)"
                : "echo cancellation: parleyd's own again (the capture is no longer the sound server's canceller)")
        }
        // Over ICE the agent holds the call's ports (the pool lent them: no sockets here).
        guard sockets != nil || parameters.ice != nil else { throw MediaError("the call's sockets could not be duplicated") }
        let built = try Pipeline(description.text)
        stamper = description.stamper
        for (property, value) in [
            ("ssrc", String(stream.ssrc)), ("seqnum-offset", String(stream.sequenceOffset)),
            ("timestamp-offset", String(stream.timestampOffset)),
        ] where !built.set(stamper, property, text: value) {
            throw MediaError("the pipeline's \(stamper) has no \(property)")
        }
        stream.started(clockRate: parameters.codec.clockRate)
        // A new pipeline's figures start from zero, its loss too.
        loss = RTPLossCounter(counting: Self.bothSend(parameters))
        try built.watchArrivals(at: PipelineDescription.rtpbin, pad: RTPComponent.rtp.receivePad)
        try built.watchSendLag(at: "send")
        // Over ICE the agent takes only what passes its checks' pairs (nicesrc tags no source address to gate on).
        for (component, gate) in parameters.ice == nil ? ReceiveGate.gates(for: parameters) : [] {
            try built.gate(component == .rtp ? "rtpsrc" : "rtcpsrc", key: ReceiveGate.key(component), gate)
        }
        rtcpCounted = 0
        droppedBefore += droppedNow
        droppedNow = 0
        try built.routeReceived(
            from: PipelineDescription.rtpbin, into: "incoming", codec: parameters.codec,
            payloadType: parameters.receivedPayloadType,
            telephoneEvent: parameters.receivedTelephoneEvent ?? parameters.telephoneEvent)
        if let ice = parameters.ice {
            for (_, receiver, sender) in MediaTransport.socketElements {
                try built.set(receiver, "agent", object: ice.agent.object)
                try built.set(sender, "agent", object: ice.agent.object)
            }
        } else if let sockets {
            try built.useSockets(rtp: sockets.rtp, rtcp: sockets.rtcp)
            built.send(to: parameters.remoteHost, port: parameters.remotePort, rtcpPort: parameters.remoteRTCPPort)
        }
        if bridged { try built.attachBridge(to: bridgeTap) }
        if let browser { try browser.link(built) } else if case .file(let path) = source { built.set("file", "location", path) }
        if browser == nil, device.pulse {
            if case .device = source, let chosen = chosenDevices.source { built.set(DeviceAudio.capture, "device", chosen) }
            if case .device = sink, let chosen = chosenDevices.sink { built.set(DeviceAudio.playback, "device", chosen) }
        }
        if var path = recordingPath {
            if rebuilds > 0 { path = String(path.dropLast(4)) + "-\(rebuilds + 1).wav" }
            // The cap spans the call: a pipeline rebuilt mid-call (a new codec) records only what is left of it, and
            // nothing (no empty file) once it is spent.
            let left = maxRecording.map { $0 - elapsed }
            pipelineRecording = (left.map { $0 > .zero } ?? true) ? path : nil
            built.set("recording", "location", pipelineRecording ?? "/dev/null")
            if let left { try built.capRecording(after: PipelineDescription.timeline, at: max(.zero, left)) }
        }
        try parameters.encryption.key(built, connection: "parley-" + UUID().uuidString)
        if case .dtls = parameters.encryption {
            handshake = DTLSHandshakeCheck(startingAt: parameters.hasRemoteAddress && !parameters.awaitsPeer ? elapsed : nil)
            // Until the caller acknowledges our answer nothing of the handshake is read, so no flight of ours answers
            // a ClientHello that a spoofed INVITE's victim never sent (issue 48); the caller's waits in the socket.
            if parameters.awaitsPeer { built.holdGates(true) }
        }
        // And nothing at all leaves for the peer's address before the ACK (the valves stop our audio and RTCP; this
        // stops what comes after them too: a DTLS client's flights, when an offer made us the client).
        if parameters.awaitsPeer { try built.stopSending(at: MediaTransport.socketElements.map(\.sender)) }
        Self.applyDirection(parameters, to: built, secured: isSecured)
        built.set("mute", "mute", isMuted)
        // A valve opening before pulsesrc first negotiated would leave the call's capture stopped (capture.h).
        built.dropReconfigure(at: DeviceAudio.capture)
        try built.play()
        if handshake != nil { pollHandshakes() }
        return built
    }

    /// Time since the session began.
    private var elapsed: Duration { clock.now - born }

    /// Whether audio may flow: not DTLS-SRTP, or its check found the peer's certificate the one its SDP named.
    private var isSecured: Bool { handshake.map { $0.verdict == .secured } ?? true }

    /// Polls the DTLS decoders every 20 ms until each component's peer certificate has been checked (or the check
    /// failed): GStreamer sets `peer-pem` during the handshake, before the keys are used, and the valves stay shut
    /// until RTP's matched, so no audio reaches an unchecked peer.
    private func pollHandshakes() {
        guard handshakePoller == nil else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now(), repeating: .milliseconds(20))
        timer.setEventHandler { [weak self] in self?.checkHandshakes() }
        timer.resume()
        handshakePoller = timer
    }

    private func checkHandshakes() {
        guard var check = handshake, let pipeline, case .dtls(let setup) = parameters.encryption else { return }
        let outcomes = pipeline.checkHandshakes(&check, setup: setup, now: elapsed)
        handshake = check
        if !check.isWaiting {
            handshakePoller?.cancel()
            handshakePoller = nil
        }
        guard !outcomes.isEmpty else { return }
        applyDirection()
        outcomes.forEach(securityReported)
    }

    /// Whether both sides send: the peer's packets count towards loss only then (not while either side holds).
    static func bothSend(_ parameters: MediaStreamParameters) -> Bool {
        parameters.sends && parameters.receives && parameters.hasRemoteAddress
    }

    private func applyDirection() {
        if let pipeline { Self.applyDirection(parameters, to: pipeline, secured: isSecured) }
    }

    /// Opens and closes the valves for what the stream does now; nothing passes either way until the security
    /// layer is `secured` (DTLS-SRTP: the peer's certificate checked), and nothing is sent to a peer that has not
    /// acknowledged our answer (`awaitsPeer`: packets from its address could be spoofed as easily as the INVITE).
    private static func applyDirection(_ parameters: MediaStreamParameters, to pipeline: Pipeline, secured: Bool) {
        let mayReach = parameters.hasRemoteAddress && !parameters.awaitsPeer
        pipeline.set("send", "drop", !secured || !parameters.sends || !mayReach)
        pipeline.set("receive", "drop", !secured || !parameters.receives)
        // With no address yet (a call that began on an old-style hold) RTCP has nowhere to go: 0.0.0.0 is this host.
        pipeline.set("sendrtcp", "drop", !mayReach)
    }
}
