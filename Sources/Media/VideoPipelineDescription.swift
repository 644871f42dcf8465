import Foundation

/// The gst-launch description of one call's video pipeline: its own RTP session (rtpbin, AVPF: PLI, FIR and NACK
/// sent as soon as they are asked) on the video's own port pair, through the same layers as audio's
/// (``MediaTransport``, ``MediaEncryption``). Nothing from the network goes into the text: addresses, ports, devices,
/// file names and keys are set as properties afterwards.
///
/// ```
///  [bin "source"] ─ videoconvert "sourcein" ─ videoscale ─ videorate ─ I420 W×H at F fps ─ valve(send) ─ encoder
///      ─ payloader "pay" ─┐
///      ─► rtpbin.send_rtp [rtprtxsend] ─► [security] ─► transport "rtpsink"                                      ◄┘
///         rtpbin.send_rtcp ─► valve(sendrtcp) ─► [security] ─► transport "rtcpsink"
///  transport "rtpsrc" ─► [security] ─► identity "rtpin" ─► rtpbin.recv_rtp [rtprtxreceive] ─ (jitter buffer: NACK)
///     ─► funnel ─ valve(receive) ─ depayloader ─┐
///     ┌─────────────────────────────────────────┘
///     └► window: decoder ─ videoconvert ─ autovideosink     null: decoder ─ fakesink     file: muxer ─ filesink
///  transport "rtcpsrc" ─► [security] ─► rtpbin.recv_rtcp
///  bin "source": videotestsrc "camera" (a pattern) | v4l2src "camera" | filesrc "file" ─ decodebin ─ videoconvert
///      (added after parsing, and replaced while the pipeline plays: ``sourceText(_:)``)
/// ```
struct VideoPipelineDescription {
    let codec: VideoCodec
    /// The payload type in what we send and in what we receive.
    let payloadType: Int
    let receivedPayloadType: Int
    let sink: VideoSink
    /// The picture sent.
    let format: VideoFormat
    /// What protects the packets.
    let security: MediaEncryption
    /// The feedback the peer takes (what our session may send it).
    var peerFeedback: VideoFeedback = [.nack, .pli, .fir]
    /// How packets reach the network.
    var transport = MediaTransport.udp

    /// The source element's name (the test pattern and the camera's device are set on it).
    static let source = "camera"
    /// The element the source bin feeds.
    static let sourceInput = "sourcein"

    /// The element that plays a file at its own pace (its pictures would otherwise go as fast as they decode).
    static let filePace = "pace"

    /// The source bin's text for `source` (its properties are set afterwards: a test picture's and a file's
    /// timestamps start at zero, and one that replaces another mid-call is moved to the pipeline's running time), and
    /// the element its pictures leave from.
    static func sourceText(_ source: VideoSource) -> (text: String, output: String) {
        switch source {
        case .test: ("videotestsrc name=\(Self.source) is-live=true", Self.source)
        case .camera: ("v4l2src name=\(Self.source)", Self.source)
        case .file: ("filesrc name=file ! decodebin ! videoconvert ! identity name=\(filePace) sync=true", filePace)
        }
    }
    /// The elements whose links into the session are made after the pipeline is parsed (``linkSession(_:)``): the
    /// payloader's, and the received RTP's. rtpbin asks for its retransmission elements as those pads are made.
    static let sessionInput = "rtpin"

    /// Links the payloader and the received RTP into the session (once retransmission is set up, when it is).
    static func linkSession(_ pipeline: Pipeline) throws(MediaError) {
        try pipeline.link("pay", to: PipelineDescription.rtpbin, pad: "send_rtp_sink_0")
        try pipeline.link(sessionInput, to: PipelineDescription.rtpbin, pad: RTPComponent.rtp.receivePad)
    }

    /// The text for gst_parse_launch.
    var text: String {
        let caps = security.receivedMediaType(.rtp).map { media in
            media + "," + codec.rtpCaps(payloadType: receivedPayloadType, feedback: peerFeedback).split(separator: ",").dropFirst()
                .joined(separator: ",")
        }
        return [
            // Two streams at most: the peer's, and one that replaces it (a new SSRC after the peer's own restart).
            // 200 ms of jitter buffer: room for a lost packet's NACK and its retransmission to come back in time.
            "rtpbin name=\(PipelineDescription.rtpbin) latency=200 max-streams=2 rtp-profile=avpf",
            security.elements,
            sendChain,
            security.sending(
                .rtp, from: "\(PipelineDescription.rtpbin).\(RTPComponent.rtp.sendPad)", to: transport.sender(.rtp, paced: false)),
            security.sending(
                .rtcp, from: "\(PipelineDescription.rtpbin).\(RTPComponent.rtcp.sendPad) ! valve name=sendrtcp",
                to: transport.sender(.rtcp, paced: false)),
            security.receiving(.rtp, from: transport.receiver(.rtp, caps: caps), into: "identity name=\(Self.sessionInput) silent=true"),
            security.receiving(.rtcp, from: transport.receiver(.rtcp, caps: security.receivedMediaType(.rtcp))),
            receiveChain,
        ].compactMap { $0 }.joined(separator: " ")
    }

    /// What the source bin gives, made the format we send, through the send valve, encoded and payloaded into the
    /// session.
    private var sendChain: String {
        // The valve stops the pictures before the encoder: while we do not send, nothing is encoded.
        "videoconvert name=\(Self.sourceInput) ! videoscale ! videorate"
            + " ! video/x-raw,format=I420,width=\(format.width),height=\(format.height),framerate=\(format.frameRate)/1"
            + " ! valve name=send drop-mode=forward-sticky-events"
            + " ! \(codec.sendChain(payloadType: payloadType, bitrate: format.bitrate, keyframeEvery: format.frameRate * 2))"
    }

    /// What the session's jitter buffer gives out, through the receive valve, depayloaded, to the sink.
    private var receiveChain: String {
        let sinkText =
            switch sink {
            case .window: "\(codec.decoder) ! videoconvert ! autovideosink sync=false"
            case .null: "\(codec.decoder) ! fakesink sync=false async=false"
            case .files: "\(codec.container.muxer) ! filesink name=recording async=false"
            }
        return "funnel name=incoming ! valve name=receive drop-mode=transform-to-gap ! \(codec.depayloader) ! \(sinkText)"
    }
}
