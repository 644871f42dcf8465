import CGStreamer
import Foundation

/// The local user's audio carried by a browser (issue 45, docs/web-softphone.md "Audio in the browser"): a pipeline of
/// its own around GStreamer's webrtcbin (opus both ways, DTLS-SRTP over ICE, rtcp-mux and BUNDLE), answering the
/// page's offer. Handed to a call (``MediaSession/handOver(to:)``), it is that call's microphone and speaker: the
/// call's decoded audio goes to the page, the page's microphone is what the call sends.
///
/// ```
///   call pipeline: … decoder ─ appsink "localout" ══► appsrc "tobrowser" ─┬ audiomixer ─ opusenc ─ rtpopuspay ─► webrtcbin ─► page
///                                                 silence (steady stream) ─┘
///   page ─► webrtcbin ─ rtpopusdepay ─ opusdec ─ appsink "frombrowser" ══► appsrc "localin" ─ encoder … call pipeline
///                                      (══► samples forwarded across the two pipelines, restamped on arrival)
///   answer(offer) ──► connecting ──► connected ──► (disconnected ⇄ connected) ──► failed | closed ──► stop()
/// ```
public final class BrowserAudio: @unchecked Sendable {
    // @unchecked Sendable: `pipeline` is set once in `init` and finished once under `lock`; GStreamer's calls on it
    // are thread-safe.

    /// Where webrtcbin stands with the page (GstWebRTCPeerConnectionState).
    public enum ConnectionState: Int, Sendable, Hashable, CustomStringConvertible {
        case new = 0, connecting, connected, disconnected, failed, closed

        public var description: String {
            switch self {
            case .new: "new"
            case .connecting: "connecting"
            case .connected: "connected"
            case .disconnected: "disconnected"
            case .failed: "failed"
            case .closed: "closed"
            }
        }
    }

    /// The format the two pipelines hand each other: 48 kHz mono 16-bit samples.
    static let localCaps = "audio/x-raw,format=S16LE,rate=48000,channels=1,layout=interleaved"
    /// The most candidates an offer may list.
    static let maxCandidates = 64
    static let web = "web", toBrowser = "tobrowser", fromBrowser = "frombrowser", depayloader = "webdepay"

    private let lock = NSLock()
    private var pipeline: Pipeline?
    /// The answer parleyd gave the page (SDP, every candidate in it).
    public let answer: String

    /// Answers the page's `offer` (SDP with an opus audio stream): builds the pipeline, plays it, negotiates (blocking
    /// for at most `timeout`: call off any loop) and waits for ICE gathering to complete, or to give a candidate of
    /// each kind the servers bring (server-reflexive, relayed), so the answer carries the candidates that matter.
    /// `stunServer` (`stun://host:port`) and `turnServer` (`turn://user:password@host:port`) reach a page farther
    /// away; nil for a page on this machine or LAN.
    public init(offer: String, stunServer: String? = nil, turnServer: String? = nil, timeout: Duration = .seconds(5)) throws(MediaError) {
        guard offer.utf8.count <= 64 * 1_024 else { throw MediaError("the offer is too long (at most 64 KiB)") }
        // Each candidate is a path webrtcbin checks (a packet every few milliseconds): a page lists a handful.
        let candidates = offer.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("a=candidate:") }.count
        guard candidates <= Self.maxCandidates else {
            throw MediaError("the offer lists \(candidates) candidates (at most \(Self.maxCandidates))")
        }
        guard offer.hasPrefix("v=0"), offer.split(whereSeparator: \.isNewline).contains(where: { $0.hasPrefix("m=audio ") }),
            let payloadType = Self.opusPayloadType(in: offer)
        else { throw MediaError("the offer carries no opus audio") }
        let pipeline = try Pipeline(Self.description(payloadType: payloadType))
        if let stunServer { _ = pipeline.set(Self.web, "stun-server", text: stunServer) }
        if let turnServer { _ = pipeline.set(Self.web, "turn-server", text: turnServer) }
        guard pipeline.linkWebRTCIncoming(from: Self.web, into: Self.depayloader),
            let raw = pipeline.rawElement, parley_gst_count_buffers(raw, Self.fromBrowser, Self.receivedKey) == 0
        else { throw MediaError("the browser's pipeline has no webrtcbin") }
        try pipeline.play()
        let milliseconds = Int32(clamping: timeout.components.seconds * 1_000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        switch pipeline.answerWebRTC(
            at: Self.web, offer: offer, timeoutMilliseconds: milliseconds, wantsServerReflexive: stunServer != nil,
            wantsRelay: turnServer != nil)
        {
        case .success(let answer) where answer.split(whereSeparator: \.isNewline).contains(where: { $0.hasPrefix("m=audio ") && !$0.hasPrefix("m=audio 0 ") }):
            self.answer = answer
        case .success:
            pipeline.finish(waitingMilliseconds: 0)
            throw MediaError("the offer's audio could not be taken (the answer refuses it)")
        case .failure(let error):
            pipeline.finish(waitingMilliseconds: 0)
            throw error
        }
        self.pipeline = pipeline
    }

    deinit { stop() }

    /// The gst-launch text: the sending chain into webrtcbin (its caps name the page's opus payload type, so the
    /// answer keeps it) and the receiving chain webrtcbin's pad is linked to once the page's audio arrives.
    static func description(payloadType: Int) -> String {
        // The page's audio waits 60 ms in the jitter buffer (webrtcbin's default is 200), as a call's does (rtpbin).
        "webrtcbin name=\(web) bundle-policy=max-bundle latency=60"
            // Silence under the call's audio: the page hears a steady stream (silence on hold, or while the peer sends
            // nothing), not its own concealment of packets that stopped.
            + " audiotestsrc is-live=true wave=silence samplesperbuffer=960 ! \(localCaps) ! mix."
            + " appsrc name=\(toBrowser) is-live=true format=time do-timestamp=true caps=\(localCaps) ! mix."
            + " audiomixer name=mix latency=20000000"
            + " ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=1 ! opusenc ! rtpopuspay pt=\(payloadType)"
            // webrtcbin holds what we send until DTLS is up (half a second after the answer): without this queue the
            // page got that half second in one burst and its jitter buffer took some 10 s to drain it. The queue
            // keeps the newest 40 ms and drops the rest while webrtcbin holds.
            + " ! queue leaky=downstream max-size-buffers=0 max-size-bytes=0 max-size-time=40000000"
            + " ! application/x-rtp,media=audio,encoding-name=OPUS,payload=\(payloadType),clock-rate=48000 ! \(web)."
            + " rtpopusdepay name=\(depayloader) ! opusdec ! audioconvert ! audioresample ! \(localCaps)"
            + " ! appsink name=\(fromBrowser) sync=false async=false max-buffers=10 drop=true emit-signals=false"
    }

    /// The payload type of the offer's opus (`a=rtpmap:PT opus/48000…`), or nil.
    static func opusPayloadType(in offer: String) -> Int? {
        for line in offer.split(whereSeparator: \.isNewline) where line.hasPrefix("a=rtpmap:") {
            let fields = line.dropFirst("a=rtpmap:".count).split(separator: " ", maxSplits: 1)
            guard fields.count == 2, let number = Int(fields[0]), (0...127).contains(number) else { continue }
            if fields[1].lowercased().hasPrefix("opus/48000") { return number }
        }
        return nil
    }

    /// The key of the count of the page's audio buffers.
    static let receivedKey = "parley-browser-received"

    /// How many buffers of the page's audio arrived so far (a page that vanished sends none: libnice's connection
    /// state may stay `connected` without consent checks).
    public var buffersReceived: Int {
        lock.withLock { pipeline?.rawElement.map { Int(parley_gst_buffers_counted($0, Self.receivedKey)) } ?? -1 }
    }

    /// Where the connection with the page stands now.
    public var connectionState: ConnectionState {
        lock.withLock { pipeline.flatMap { ConnectionState(rawValue: Int($0.webRTCConnectionState(at: Self.web))) } ?? .closed }
    }

    /// Ends the connection and the pipeline (idempotent).
    public func stop() {
        let finishing = lock.withLock { () -> Pipeline? in
            defer { pipeline = nil }
            return pipeline
        }
        finishing?.stopForwarding(from: Self.fromBrowser)
        finishing?.finish(waitingMilliseconds: 0)
    }

    /// Links a call's pipeline to this one: its `localout` to our `tobrowser`, our `frombrowser` to its `localin`.
    func link(_ call: Pipeline) throws(MediaError) {
        let ours = lock.withLock { pipeline }
        guard let ours else { throw MediaError("the browser's audio has ended") }
        guard call.forward(from: PipelineDescription.localOut, to: ours, into: Self.toBrowser),
            ours.forward(from: Self.fromBrowser, to: call, into: PipelineDescription.localIn)
        else { throw MediaError("the call and the browser's audio could not be linked") }
    }

    /// Stops handing the page's audio to a call (the call's own pipeline goes with its forwarding).
    func unlink() {
        lock.withLock { pipeline }?.stopForwarding(from: Self.fromBrowser)
    }
}

extension Pipeline {
    /// Links webrtcbin `web`'s source pads, as they come, to the element `into`.
    func linkWebRTCIncoming(from web: String, into: String) -> Bool {
        guard let raw = rawElement else { return false }
        return parley_webrtc_link_incoming(raw, web, into) == 0
    }

    /// Answers `offer` on webrtcbin `web` (blocking) once gathering completes or the answer holds a candidate of each
    /// kind asked for.
    func answerWebRTC(
        at web: String, offer: String, timeoutMilliseconds: Int32, wantsServerReflexive: Bool, wantsRelay: Bool
    ) -> Result<String, MediaError> {
        guard let raw = rawElement else { return .failure(MediaError("the pipeline is gone")) }
        var answer: UnsafeMutablePointer<CChar>?
        var error: UnsafeMutablePointer<CChar>?
        defer {
            parley_gst_free(answer)
            parley_gst_free(error)
        }
        guard parley_webrtc_answer(
            raw, web, offer, timeoutMilliseconds, wantsServerReflexive ? 1 : 0, wantsRelay ? 1 : 0, &answer, &error) == 0, let answer else {
            return .failure(MediaError(error.map { String(cString: $0) } ?? "no answer"))
        }
        return .success(String(cString: answer))
    }

    /// webrtcbin `web`'s connection state (-1 without one).
    func webRTCConnectionState(at web: String) -> Int32 {
        guard let raw = rawElement else { return -1 }
        return parley_webrtc_connection_state(raw, web)
    }

    /// Forwards what the appsink `from` takes to the appsrc `into` of `other`.
    func forward(from: String, to other: Pipeline, into: String) -> Bool {
        guard let raw = rawElement, let destination = other.rawElement else { return false }
        return parley_forward_samples(raw, from, destination, into) == 0
    }

    /// Stops forwarding from the appsink `from`.
    func stopForwarding(from: String) {
        guard let raw = rawElement else { return }
        parley_forward_stop(raw, from)
    }
}
