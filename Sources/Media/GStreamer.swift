import CGStreamer
import Foundation

/// GStreamer for this process: initialised once, on first use.
enum GStreamer {
    /// Nil when GStreamer is ready, else why not.
    static let failure: MediaError? = {
        var error: UnsafeMutablePointer<CChar>?
        guard parley_gst_init(&error) != 0 else { return nil }
        defer { parley_gst_free(error) }
        return MediaError("GStreamer did not start: \(error.map { String(cString: $0) } ?? "unknown error")")
    }()

    /// Whether an element is installed (the plugin that has it).
    static func has(_ factory: String) -> Bool {
        failure == nil && parley_gst_has_element(factory) != 0
    }

    /// Whether a desktop sound server is there for `device` sources and sinks (PulseAudio's socket; PipeWire serves
    /// the same socket through pipewire-pulse).
    static var hasSoundServer: Bool {
        let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        let server = ProcessInfo.processInfo.environment["PULSE_SERVER"]
        return server != nil || FileManager.default.fileExists(atPath: runtime + "/pulse/native")
    }
}

/// One GStreamer pipeline, owned: built from a description, started, finished once.
final class Pipeline {
    private var raw: UnsafeMutablePointer<GstElement>?

    init(_ description: String) throws(MediaError) {
        if let failure = GStreamer.failure { throw failure }
        var error: UnsafeMutablePointer<CChar>?
        guard let built = parley_gst_parse(description, &error) else {
            defer { parley_gst_free(error) }
            throw MediaError("the media pipeline did not build: \(error.map { String(cString: $0) } ?? "unknown error")")
        }
        raw = built
    }

    deinit { finish(waitingMilliseconds: 0) }

    /// The pipeline itself, for the C helpers that take it (nil once finished).
    var rawElement: UnsafeMutablePointer<GstElement>? { raw }

    /// The element `name` with a reference of its own (dropped with `parley_bridge_unref`), nil when absent.
    func element(_ name: String) -> UnsafeMutablePointer<GstElement>? {
        raw.flatMap { parley_bridge_element($0, name) }
    }

    /// Whether the pipeline has an element named `name`.
    func has(_ name: String) -> Bool {
        guard let found = element(name) else { return false }
        parley_bridge_unref(found)
        return true
    }

    /// The conference bridge's elements, attached to `tap` (each with a reference of its own).
    func attachBridge(to tap: BridgeTap) throws(MediaError) {
        guard let raw, let sink = parley_bridge_element(raw, PipelineDescription.bridgeOut) else {
            throw MediaError("the pipeline has no \(PipelineDescription.bridgeOut)")
        }
        guard let source = parley_bridge_element(raw, PipelineDescription.bridgeIn) else {
            parley_bridge_unref(sink)
            throw MediaError("the pipeline has no \(PipelineDescription.bridgeIn)")
        }
        guard let local = parley_bridge_element(raw, PipelineDescription.bridgeLocal) else {
            parley_bridge_unref(sink)
            parley_bridge_unref(source)
            throw MediaError("the pipeline has no \(PipelineDescription.bridgeLocal)")
        }
        tap.attach(appsink: sink, local: local, appsrc: source)
    }

    func setSocket(_ name: String, fd: Int32) throws(MediaError) {
        guard parley_gst_set_socket(raw, name, fd) == 0 else { throw MediaError("no socket for \(name)") }
    }

    func routeReceived(
        from rtpbin: String, into funnel: String, codec: AudioCodec, payloadType: Int, telephoneEvent: Int?
    ) throws(MediaError) {
        guard parley_gst_route_received(
            raw, rtpbin, funnel, Int32(payloadType), codec.encodingName, Int32(codec.clockRate), Int32(telephoneEvent ?? 0), "audio", 0) == 0
        else { throw MediaError("no \(rtpbin) to route") }
    }

    /// Routes the video stream of `payloadType` (`encodingName`, 90 kHz) that rtpbin `rtpbin` receives into the funnel
    /// `funnel`, the `feedback` the peer takes (NACK, PLI, FIR) in its caps; other payload types are drained.
    func routeReceivedVideo(
        from rtpbin: String, into funnel: String, encodingName: String, payloadType: Int, feedback: VideoFeedback
    ) throws(MediaError) {
        guard parley_gst_route_received(
            raw, rtpbin, funnel, Int32(payloadType), encodingName, 90_000, 0, "video", Int32(feedback.rawValue)) == 0
        else { throw MediaError("no \(rtpbin) to route") }
    }

    /// Sets up RFC 4588 retransmission on the rtpbin `rtpbin` before its session's send and receive pads are made:
    /// ours in `payloadType` resent as `retransmission`, the peer's `receivedRetransmission` taken as `receivedPayloadType`.
    func retransmit(
        at rtpbin: String, payloadType: Int, retransmission: Int, receivedPayloadType: Int, receivedRetransmission: Int
    ) throws(MediaError) {
        guard parley_gst_retransmission(
            raw, rtpbin, Int32(payloadType), Int32(retransmission), Int32(receivedPayloadType), Int32(receivedRetransmission)) == 0
        else { throw MediaError("no \(rtpbin) to retransmit through") }
    }

    /// Tells session 0 of the rtpbin `rtpbin` its stream's bandwidth (its RTCP interval, and so how soon feedback goes).
    func setSessionBandwidth(at rtpbin: String, kilobits: Int) throws(MediaError) {
        guard parley_gst_session_bandwidth(raw, rtpbin, Double(kilobits * 1_000)) == 0 else { throw MediaError("no \(rtpbin) session") }
    }

    /// Starts keeping what the peer asks of our bitrate (REMB, TMMBR) on session 0 of the rtpbin `rtpbin`.
    func watchPeerBitrate(at rtpbin: String) throws(MediaError) {
        guard parley_gst_watch_peer_bitrate(raw, rtpbin) == 0 else { throw MediaError("no \(rtpbin) session") }
    }

    /// The lowest bitrate (kbit/s) the peer's last REMB and last TMMBR asked for; nil when it asked none.
    func peerBitrate(at rtpbin: String) -> Int? {
        let kilobits = parley_gst_peer_bitrate(raw, rtpbin)
        return kilobits > 0 ? Int(kilobits) : nil
    }

    /// Links the element `from` to the request pad `pad` of the element `to`.
    func link(_ from: String, to: String, pad: String) throws(MediaError) {
        guard parley_gst_link_request(raw, from, to, pad) == 0 else { throw MediaError("\(from) did not link to \(to).\(pad)") }
    }

    /// Counts the frames leaving the element `name`, kept under `key` (``frames(_:)``).
    func countFrames(at name: String, key: String) throws(MediaError) {
        guard parley_gst_count_frames(raw, name, key) == 0 else { throw MediaError("no \(name) to count frames at") }
    }

    /// Asks the encoder `name` for a keyframe now; false when it did not take the request.
    @discardableResult
    func forceKeyframe(at name: String) -> Bool { parley_gst_force_keyframe(raw, name) == 0 }

    /// The frames counted under `key` so far: how many, keyframes among them, bytes, the last size seen, and when
    /// the first passed (nil before).
    func frames(_ key: String) -> (frames: Int, keyframes: Int, bytes: Int, width: Int, height: Int, first: Date?)? {
        guard let raw else { return nil }
        var count = ParleyFrameCount()
        guard parley_gst_read_frames(raw, key, &count) == 0 else { return nil }
        let first = count.first_us > 0 ? Date(timeIntervalSince1970: Double(count.first_us) / 1e6) : nil
        return (Int(count.frames), Int(count.keyframes), Int(count.bytes), Int(count.width), Int(count.height), first)
    }

    /// Starts or ends an RFC 4733 event at the rtpdtmfsrc `name`; false when it was not taken.
    func dtmf(_ name: String, number: Int, start: Bool) -> Bool {
        parley_gst_dtmf(raw, name, Int32(number), start ? 1 : 0) == 0
    }

    func set(_ name: String, _ property: String, _ value: String) {
        _ = parley_gst_set_string(raw, name, property, value)
    }

    /// Sets a string property, throwing when the element is missing.
    func setChecked(_ name: String, _ property: String, _ value: String) throws(MediaError) {
        guard parley_gst_set_string(raw, name, property, value) == 0 else { throw MediaError("no \(name) to set up") }
    }

    /// A string property of the element `name`, nil when unset (or the element is missing).
    func string(_ name: String, _ property: String) -> String? {
        guard let raw, let value = parley_gst_get_string(raw, name, property) else { return nil }
        defer { parley_gst_free(value) }
        return String(cString: value)
    }

    /// Sets an object property (a GObject of another wrapper's, as a raw pointer), throwing when the element is missing.
    func set(_ name: String, _ property: String, object: UnsafeMutableRawPointer) throws(MediaError) {
        guard parley_gst_set_object(raw, name, property, object) == 0 else { throw MediaError("no \(name) to set up") }
    }

    /// Sets a property of any type from its text (a guint SSRC); false when the element or property is missing.
    @discardableResult
    func set(_ name: String, _ property: String, text: String) -> Bool {
        parley_gst_set_from_text(raw, name, property, text) == 0
    }

    /// A numeric property of the element `name`, nil when it is missing.
    func number(_ name: String, _ property: String) -> Int64? {
        guard let raw else { return nil }
        let value = parley_gst_get_number(raw, name, property)
        return value < 0 ? nil : Int64(value)
    }

    func set(_ name: String, _ property: String, _ value: Int) {
        _ = parley_gst_set_int(raw, name, property, Int32(clamping: value))
    }

    /// Sets an enum property by its nick.
    func set(_ name: String, _ property: String, nick: String) {
        _ = parley_gst_set_nick(raw, name, property, nick)
    }

    /// Sets a buffer property (a copy of `bytes`).
    func set(_ name: String, _ property: String, bytes: [UInt8]) throws(MediaError) {
        guard bytes.withUnsafeBufferPointer({ parley_gst_set_bytes(raw, name, property, $0.baseAddress, $0.count) }) == 0
        else { throw MediaError("no \(name) to key") }
    }

    /// Keys the srtpdec `name` for every stream it meets.
    func keySRTPDecoder(_ name: String, with key: SRTPStreamKey) throws(MediaError) {
        let keyed = key.material.withUnsafeBufferPointer {
            parley_gst_srtp_receive_key(raw, name, $0.baseAddress, $0.count, key.cipher, key.auth, key.rtcpCipher, key.rtcpAuth)
        }
        guard keyed == 0 else { throw MediaError("no \(name) to key") }
    }

    func set(_ name: String, _ property: String, _ value: Bool) {
        _ = parley_gst_set_bool(raw, name, property, value ? 1 : 0)
    }

    /// Sends an end of stream into the element `name` from this thread: what follows it finishes before this returns
    /// (a muxer and its file sink); false when it did not take it.
    @discardableResult
    func endStream(at name: String) -> Bool {
        guard let raw else { return false }
        return parley_gst_end_stream_at(raw, name) == 0
    }

    /// The pipeline's running time now, nil when it has none (not playing).
    var runningTime: Duration? {
        let nanoseconds = parley_gst_running_time(raw)
        return nanoseconds >= 0 ? .nanoseconds(nanoseconds) : nil
    }

    /// Puts a source (gst-launch text; its pictures leave from the element `output`) in front of the element `into`,
    /// in place of the one there, before the pipeline plays or while it does; `configure` sets its elements up before
    /// it starts. `offset`: what its timestamps are moved by as they leave it.
    func replaceSource(
        _ description: String, output: String, into: String, offset: Duration?, configure: (Pipeline) -> Void
    ) throws(MediaError) {
        var error: UnsafeMutablePointer<CChar>?
        guard parley_gst_add_source(raw, description, output, &error) == 0 else {
            defer { parley_gst_free(error) }
            throw MediaError("the video source did not build: \(error.map { String(cString: $0) } ?? "unknown error")")
        }
        configure(self)
        let nanoseconds = offset.map { $0.components.seconds * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000 } ?? -1
        guard parley_gst_start_source(raw, into, gint64(nanoseconds)) == 0 else {
            throw MediaError("the video source did not start: \(poll().error ?? "it did not link to \(into)")")
        }
    }

    func play() throws(MediaError) {
        guard parley_gst_play(raw) == 0 else {
            throw MediaError("the media pipeline did not start: \(poll().error ?? "state change failed")")
        }
    }

    /// Empties the bus: the telephone-event numbers received since the last look, the first error, if any, and the
    /// last RMS (dB) each of the `level` elements named `levels` posted (nil for one that posted nothing).
    func poll(levels: [String] = []) -> (events: [Int], error: String?, levels: [Double?]) {
        guard let raw else { return ([], nil, levels.map { _ in nil }) }
        var numbers = [Int32](repeating: 0, count: 32)
        var error: UnsafeMutablePointer<CChar>?
        var measured = [Double](repeating: 1, count: levels.count)
        let names = levels.map { strdup($0) }
        defer { names.forEach { free($0) } }
        let count = names.map { UnsafePointer($0) }.withUnsafeBufferPointer { names in
            Int(parley_gst_poll(raw, &numbers, Int32(numbers.count), &error, names.baseAddress, &measured, Int32(levels.count)))
        }
        defer { parley_gst_free(error) }
        return (numbers.prefix(count).map(Int.init), error.map { String(cString: $0) }, measured.map { $0 <= 0 ? $0 : nil })
    }

    /// Whether the pipeline's `level` elements post their measurements now.
    private(set) var levelsPosting = false

    /// Starts or stops the `level` elements named `names` posting.
    func postLevels(_ on: Bool, at names: [String]) {
        for name in names { set(name, "post-messages", text: on ? "true" : "false") }
        levelsPosting = on
    }

    /// The RTP figures of the rtpbin `name` so far with the loss `loss` counted, nil when it has none.
    func rtpStatistics(of name: String, loss: RTPLossCounter, codec: AudioCodec) -> RTPStatistics? {
        guard let raw else { return nil }
        var figures = ParleyRTPStats()
        guard parley_gst_rtp_stats(raw, name, &figures) == 0 else { return nil }
        return RTPStatistics(figures, loss: loss, codec: codec)
    }

    /// The RTCP feedback of the rtpbin `name` so far: keyframe requests (PLI and FIR) and NACKs the peer sent about
    /// our stream, and those we sent about its; nil when it has no session.
    func feedbackCounts(of name: String) -> (keyframesAsked: Int, nacksReceived: Int, keyframesRequested: Int, nacksSent: Int)? {
        guard let raw else { return nil }
        var figures = ParleyRTPStats()
        guard parley_gst_rtp_stats(raw, name, &figures) == 0 else { return nil }
        return (Int(figures.pli_received + figures.fir_received), Int(figures.nack_received),
                Int(figures.pli_sent + figures.fir_sent), Int(figures.nack_sent))
    }

    /// Keeps the SSRC and sequence number of every RTP packet passing the pad `pad` of the element `name` (rtpbin's
    /// RTP sink: what enters the session), and counts them (``arrivalsTotal``).
    func watchArrivals(at name: String, pad: String) throws(MediaError) {
        guard parley_gst_watch_arrivals(raw, name, pad) == 0 else { throw MediaError("no \(name).\(pad) to watch") }
    }

    /// Hands each packet kept since the last call to `body`, oldest first; how many there were.
    @discardableResult
    func takeArrivals(_ body: (_ ssrc: UInt32, _ sequence: UInt16) -> Void) -> Int {
        guard let raw else { return 0 }
        return withUnsafeTemporaryAllocation(of: ParleyRTPArrival.self, capacity: 256) { buffer in
            var count = 0, total = 0
            repeat {
                count = Int(parley_gst_take_arrivals(raw, buffer.baseAddress, Int32(buffer.count)))
                total += count
                for arrival in buffer.prefix(count) { body(arrival.ssrc, arrival.sequence) }
            } while count == buffer.count
            return total
        }
    }

    /// Every RTP packet the arrivals watch saw.
    var arrivalsTotal: Int {
        guard let raw else { return 0 }
        return Int(parley_gst_arrivals_total(raw))
    }

    /// Puts `gate` in front of the element `name` (a component's udpsrc), keyed `key`.
    func gate(_ name: String, key: String, _ gate: ReceiveGate) throws(MediaError) {
        let made = parley_gst_gate(
            raw, name, key, gate.host, Int32(gate.port), gate.anyPort ? 1 : 0, Int32(gate.latchSeconds),
            Int32(gate.latchPayloadType ?? -1), gate.dtlsLatches ? 1 : 0)
        guard made == 0 else { throw MediaError("no \(name) to gate") }
        gateKeys.append(key)
    }

    /// The keys of the gates put in, released before the pipeline stops.
    private var gateKeys: [String] = []

    /// Drops everything that reaches the elements `names` (the udpsinks) until ``resumeSending()``.
    func stopSending(at names: [String]) throws(MediaError) {
        for name in names {
            guard parley_gst_stop_sending(raw, name, Self.sendStopKey + name) == 0 else { throw MediaError("no \(name) to stop") }
            sendStops.append(Self.sendStopKey + name)
        }
    }

    /// Lets what the stopped elements get through again.
    func resumeSending() {
        guard let raw else { return }
        for key in sendStops { _ = parley_gst_resume_sending(raw, key) }
    }

    private var sendStops: [String] = []
    private static let sendStopKey = "parley-send-stop-"

    /// Holds what every gate lets through until released (the packets wait in their sockets' buffers).
    func holdGates(_ hold: Bool) {
        guard let raw else { return }
        for key in gateKeys { _ = parley_gst_gate_hold(raw, key, hold ? 1 : 0) }
    }

    /// What the gate keyed `key` counted, and where its source moved if it latched since the last reading.
    func readGate(_ key: String) -> ReceiveGate.Reading? {
        guard let raw else { return nil }
        var reading = ParleyGateReading()
        guard parley_gst_read_gate(raw, key, &reading) == 0 else { return nil }
        let latchedTo: (host: String, port: Int)? =
            reading.latched == 0
            ? nil
            : (withUnsafeBytes(of: reading.host) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }, Int(reading.port))
        return ReceiveGate.Reading(
            passed: Int(reading.passed), passedMedia: Int(reading.passed_media), dropped: Int(reading.dropped), latchedTo: latchedTo)
    }

    /// Makes the gate keyed `key` accept `host` and `port` (nil: any port) from now on.
    func gateAccept(_ key: String, host: String, port: Int?) {
        guard let raw else { return }
        _ = parley_gst_gate_accept(raw, key, host, Int32(port ?? 0), port == nil ? 1 : 0)
    }

    /// Watches how late buffers reach the element `name` (the send valve) against the pipeline's running time.
    func watchSendLag(at name: String) throws(MediaError) {
        guard parley_gst_watch_send_lag(raw, name, Self.sendLagKey) == 0 else { throw MediaError("no \(name) to watch") }
    }

    /// The worst send lag since the last reading (zero when nothing is watched).
    func takeSendLag() -> Duration {
        guard let raw else { return .zero }
        return .microseconds(Int64(parley_gst_take_send_lag(raw, Self.sendLagKey)))
    }

    private static let sendLagKey = "parley-send-lag"

    /// Ends the recording after the audiorate `name` once it spans `limit` of the call's timeline (the call goes on).
    func capRecording(after name: String, at limit: Duration) throws(MediaError) {
        let milliseconds = limit.components.seconds * 1_000 + limit.components.attoseconds / 1_000_000_000_000_000
        guard parley_gst_cap_recording(raw, name, Self.recordingCapKey, Int(milliseconds)) == 0 else {
            throw MediaError("no \(name) to cap")
        }
    }

    /// Whether the recording reached its cap (nil: it has none, or the pipeline is gone).
    var recordingCapped: Bool? {
        guard let raw else { return nil }
        let capped = parley_gst_recording_capped(raw, Self.recordingCapKey)
        return capped < 0 ? nil : capped == 1
    }

    private static let recordingCapKey = "parley-recording-cap"

    /// Has the audiorate `name` fill its recording with silence up to now (the stretch since the last audio).
    func fillWithSilenceUntilNow(_ name: String) {
        guard let raw else { return }
        _ = parley_gst_gap_until_now(raw, name)
    }

    /// Ends it (an end of stream first, so a WAV file is completed, waiting at most this long); idempotent.
    func finish(waitingMilliseconds: Int) {
        // A held gate keeps its streaming thread waiting, and stopping waits for every streaming thread.
        holdGates(false)
        guard let pipeline = raw else { return }
        raw = nil
        parley_gst_finish(pipeline, Int32(waitingMilliseconds))
    }
}

extension Pipeline {
    /// Keeps RECONFIGURE events from reaching the element `name` (the device capture, CGStreamer's capture.h says why);
    /// false without such an element.
    @discardableResult
    func dropReconfigure(at name: String) -> Bool {
        guard let raw else { return false }
        return parley_gst_drop_reconfigure(raw, name) == 0
    }

    /// Empties the bus of a looped sound's pipeline, starting it again at its end; throws its first error.
    @discardableResult
    func loopAtEnd() throws(MediaError) -> Bool {
        guard let raw else { return false }
        var error: UnsafeMutablePointer<CChar>?
        let outcome = parley_gst_loop_at_end(raw, &error)
        defer { parley_gst_free(error) }
        guard outcome >= 0 else { throw MediaError(error.map { String(cString: $0) } ?? "the sound stopped") }
        return outcome == 1
    }
}
