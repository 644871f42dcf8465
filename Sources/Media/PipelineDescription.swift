import Foundation

/// The gst-launch description of one call's pipeline, composed of its layers (docs/media.md): the transport
/// (``MediaTransport``), the security layer (``MediaEncryption``), the RTP session (rtpbin: RTCP, the jitter buffer per
/// SSRC) and the audio stream (source, encoder and payloader; depayloader, decoder and sink). Nothing from the
/// network goes into the text: addresses, ports, file names and keys are set as properties afterwards.
///
/// ```
///  source ─ audioconvert ─ audioresample ─ 8 kHz mono ─ volume(mute) ─ level ─ valve(send) ─ encoder ─ payloader ─┐
///                                 rtpdtmfsrc "dtmf" (telephone-event, when both list it) ─┴ rtpdtmfmux
///      ─► rtpbin.send_rtp ─► [security] ─► transport "rtpsink"
///         rtpbin.send_rtcp ─► valve(sendrtcp) ─► [security] ─► transport "rtcpsink"
///  transport "rtpsrc" ─► [security] ─► rtpbin.recv_rtp ─ (jitter buffer, per SSRC) ─► funnel ─ depayloader ─ decoder
///     (probe: SSRC and sequence of each packet, for the loss)                    ─ level ─ valve(receive) ─ sink
///                     (telephone-event ─► rtpdtmfdepay: "dtmf-event" on the bus; any other type ─► fakesink)
///  transport "rtcpsrc" ─► [security] ─► rtpbin.recv_rtcp
///
///  a recording's sink: audiorate "timeline" (silence in the gaps) ─ wavenc ─ filesink "recording"
///
///  handed over (a browser carries the local audio, BrowserAudio): appsrc "localin" is the source, appsink
///  "localout" the sink
///
///  bridged (a merged call, ConferenceBridge): the source (after mute) goes to appsink "bridgelocal", and the
///  encoder takes appsrc "bridgein" (the bridge's mix: the source and the others); the decoded audio goes to a tee
///  whose second branch is appsink "bridgeout" (16 kHz mono)
/// ```
struct PipelineDescription {
    let codec: AudioCodec
    /// The codec's payload type in what we send and in what we receive (opus has a dynamic one).
    let payloadType: Int
    let receivedPayloadType: Int
    let ptime: Int
    let source: AudioSource
    let sink: AudioSink
    /// The telephone-event payload type: keypad tones are sent in the stream (rtpdtmfsrc, muxed in).
    let telephoneEvent: Int?
    /// What protects them.
    let security: MediaEncryption
    /// How packets reach the network.
    var transport = MediaTransport.udp
    /// Whether the conference bridge taps the call (its decoded audio out, the others' mix in).
    var bridged = false
    /// Whether a browser carries the local audio (``BrowserAudio``): appsrc "localin" is the source and appsink
    /// "localout" the sink, in place of the configured ones.
    var handedOver = false
    /// How the device source and sink meet the desktop (PulseAudio's phone role, echo cancellation).
    var device = DeviceAudio(pulse: false, echoCancellation: .off)

    /// Whether the call's capture is the sound server's echo canceller (``DeviceAudio/leavesEchoToServer``).
    var serverCancelsEcho = false

    /// Whether the call runs the echo canceller (webrtcdsp on the capture, its probe before the playback).
    private var cancelsEcho: Bool { !handedOver && device.cancelsEcho(source: source, sink: sink, serverCancels: serverCancelsEcho) }

    /// The element that stamps what we send (SSRC, sequence numbers, timestamps): the tones' mux when telephone-event
    /// is in the stream, else the payloader.
    var stamper: String { telephoneEvent == nil ? "pay" : "mux" }

    /// The browser's appsrc and appsink in a handed-over call.
    static let localIn = "localin", localOut = "localout"

    /// The bridge's appsink and appsrc, and the format they carry.
    static let bridgeOut = "bridgeout", bridgeIn = "bridgein", bridgeLocal = "bridgelocal"
    static let bridgeCaps = "audio/x-raw,format=S16LE,rate=\(MixMinus.rate),channels=1,layout=interleaved"

    /// The `level` elements measuring what we hear (after decoding) and what we say (after mute), and how often
    /// they post while asked to (``AudioLevelReporting``).
    static let heardLevel = "heardlevel", saidLevel = "saidlevel"
    static let levelIntervalMilliseconds = 250
    private static func level(_ name: String) -> String {
        "level name=\(name) interval=\(levelIntervalMilliseconds * 1_000_000) post-messages=false"
    }

    /// The rtpbin's name (RTP figures are read from it).
    static let rtpbin = "rtp"

    /// The recording's audiorate (filled up to the end of the call when it stops).
    static let timeline = "timeline"

    /// Samples of one packet's audio at the codec's rate.
    private var samplesPerPacket: Int { ptime * codec.clockRate / 1_000 }

    /// The text for gst_parse_launch: the session, the audio stream's two chains, and each component's way in and
    /// out through the security layer and the transport.
    var text: String {
        let paced = if case .file = source { true } else { false }
        let caps = security.receivedMediaType(.rtp).map {
            "\($0),media=audio,clock-rate=\(codec.clockRate),encoding-name=\(codec.encodingName),payload=\(receivedPayloadType)"
        }
        return [
            // A new SSRC at the port makes a jitter buffer (and a thread): at most four streams a call, whoever sends.
            "rtpbin name=\(Self.rtpbin) latency=60 max-streams=4",
            security.elements,
            sendChain,
            security.sending(.rtp, from: "\(Self.rtpbin).\(RTPComponent.rtp.sendPad)", to: transport.sender(.rtp, paced: paced)),
            security.sending(
                .rtcp, from: "\(Self.rtpbin).\(RTPComponent.rtcp.sendPad) ! valve name=sendrtcp",
                to: transport.sender(.rtcp, paced: false)),
            security.receiving(.rtp, from: transport.receiver(.rtp, caps: caps)),
            security.receiving(.rtcp, from: transport.receiver(.rtcp, caps: security.receivedMediaType(.rtcp))),
            receiveChain,
        ].compactMap { $0 }.joined(separator: " ")
    }

    /// The audio stream's sending chain: the source, encoded and payloaded (tones muxed in), into the session.
    private var sendChain: String {
        let (encoder, payloader, _, _) = codec.elements
        let ptimeNanoseconds = ptime * 1_000_000
        var sourceText: String
        switch source {
        // A live test source makes one buffer per packet: 1,024 samples a buffer (its default) would go out as
        // bursts of six packets every 128 ms, which the peer measures as 30 ms of jitter.
        case .tone(let hertz):
            sourceText = "audiotestsrc is-live=true wave=sine volume=0.5 freq=\(hertz) samplesperbuffer=\(samplesPerPacket)"
        case .silence: sourceText = "audiotestsrc is-live=true wave=silence samplesperbuffer=\(samplesPerPacket)"
        case .device: sourceText = device.capture(cancelling: cancelsEcho)
        // A file's audio in 20 ms buffers (wavparse gives far larger ones), so a bridged call's tick finds a frame a
        // tick rather than bursts its queue cannot hold.
        case .file: sourceText = bridged ? "filesrc name=file ! wavparse ! audiobuffersplit" : "filesrc name=file ! wavparse"
        }
        if handedOver {
            sourceText = "appsrc name=\(Self.localIn) is-live=true format=time do-timestamp=true caps=\(BrowserAudio.localCaps)"
        }
        // The send valve stops the audio before it is numbered: while we do not send, the payloader (or the mux)
        // gives out no sequence numbers, so our stream has no gap for the peer to count as loss.
        // Bridged, the bridge's tick drives what goes out: the local source is one more input of its mix.
        let isFile = if case .file = source, !handedOver { true } else { false }
        let local = bridged
            ? "\(sourceText) ! audioconvert ! audioresample ! \(Self.bridgeCaps) ! volume name=mute ! \(Self.level(Self.saidLevel))"
                // A file source is read at the pace of the clock (the appsink waits for each buffer's time); a live
                // one paces itself.
                + " ! appsink name=\(Self.bridgeLocal) max-buffers=5 drop=true sync=\(isFile) async=false emit-signals=false"
                + " appsrc name=\(Self.bridgeIn) is-live=true format=time caps=\(Self.bridgeCaps)"
                + " ! audioconvert ! audioresample ! audio/x-raw,rate=\(codec.clockRate),channels=1"
            : "\(sourceText) ! audioconvert ! audioresample ! audio/x-raw,rate=\(codec.clockRate),channels=1 ! volume name=mute"
                + " ! \(Self.level(Self.saidLevel))"
        return local + " ! valve name=send drop-mode=forward-sticky-events"
            + " ! \(encoder) ! \(payloader) name=pay pt=\(payloadType) min-ptime=\(ptimeNanoseconds) max-ptime=\(ptimeNanoseconds)"
            + (telephoneEvent == nil ? "" : " ! mux.sink_0 rtpdtmfmux name=mux")
            + " ! \(Self.rtpbin).send_rtp_sink_0"
            + (telephoneEvent.map { " rtpdtmfsrc name=dtmf pt=\($0) ! mux.priority_sink_0" } ?? "")
    }

    /// The audio stream's receiving chain: what the session's jitter buffers give out (routed into the funnel),
    /// depayloaded and decoded, to the sink.
    private var receiveChain: String {
        let (_, _, depayloader, decoder) = codec.elements
        var sinkText: String
        switch sink {
        // A recording follows the call's timeline, not just the packets: audiorate fills each gap in the received
        // audio's timestamps (either side's hold, a peer that stops sending) with silence of its length, and a gap
        // event at the end fills the stretch up to the moment the call stopped (docs/media.md). The file is written
        // every 16 KiB (a second of G.711's 16-bit samples), not filesink's 64 KiB: a crash loses at most that, and
        // the header's sizes are completed at the next start (WAVRepair).
        case .files: sinkText = "audiorate name=\(Self.timeline) ! wavenc ! filesink name=recording buffer-mode=full buffer-size=16384"
        case .device: sinkText = device.playback(cancelling: cancelsEcho)
        case .null: sinkText = "fakesink sync=false async=false"
        }
        if handedOver {
            sinkText = "audioconvert ! audioresample ! \(BrowserAudio.localCaps) ! appsink name=\(Self.localOut) sync=false async=false"
                + " max-buffers=10 drop=true emit-signals=false"
        }
        // A closed valve turns what it drops into gap events (silence in a recording) and still lets the end of
        // stream through, so a call that ends on hold completes its recording.
        // The tee's branches need no queue (a thread each): the appsink drops rather than blocks, and the live
        // pipeline's sink does not wait to preroll.
        let tap = bridged
            ? " ! tee name=heard heard. ! audioconvert ! audioresample ! \(Self.bridgeCaps)"
                + " ! appsink name=\(Self.bridgeOut) max-buffers=5 drop=true sync=false async=false emit-signals=false heard."
            : ""
        return "funnel name=incoming ! \(depayloader) ! \(decoder) ! audioconvert ! \(Self.level(Self.heardLevel))\(tap)"
            + " ! valve name=receive drop-mode=transform-to-gap ! \(sinkText)"
    }
}
