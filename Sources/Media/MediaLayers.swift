import Foundation

/// The two components of an RTP session: the RTP packets and their RTCP (on the next port, until rtcp-mux).
enum RTPComponent: CaseIterable {
    /// The media packets.
    case rtp
    /// The control packets (reports, BYE).
    case rtcp

    /// The rtpbin pad a received packet of this component enters.
    var receivePad: String { self == .rtp ? "recv_rtp_sink_0" : "recv_rtcp_sink_0" }
    /// The rtpbin pad a packet of this component to send leaves.
    var sendPad: String { self == .rtp ? "send_rtp_src_0" : "send_rtcp_src_0" }
}

/// The bottom layer of a call's media: how packets of each component reach the network and come from it. UDP today
/// (a socket per component, shared by the receiving and the sending element: symmetric RTP, and the port a DTLS
/// peer answers to); ICE (libnice's nicesrc/nicesink, one agent per call) comes next.
///
/// ```
///   network ─► receiver(component) ─► security ─► rtpbin          rtpbin ─► security ─► sender(component) ─► network
/// ```
enum MediaTransport {
    /// A UDP socket per component (the call's reserved port pair).
    case udp

    /// The element receiving `component`'s packets, named so that its socket can be set; `caps` are those of what
    /// it hands up (RTP, or SRTP before decryption).
    func receiver(_ component: RTPComponent, caps: String?) -> String {
        switch (self, component) {
        case (.udp, .rtp): "udpsrc name=rtpsrc" + (caps.map { " caps=\"\($0)\"" } ?? "")
        case (.udp, .rtcp): "udpsrc name=rtcpsrc" + (caps.map { " caps=\"\($0)\"" } ?? "")
        }
    }

    /// The element sending `component`'s packets; `paced` plays them out at their timestamps (a file source).
    func sender(_ component: RTPComponent, paced: Bool) -> String {
        switch (self, component) {
        case (.udp, .rtp): "udpsink name=rtpsink sync=\(paced) async=false"
        case (.udp, .rtcp): "udpsink name=rtcpsink sync=false async=false"
        }
    }

    /// The names of its elements whose sockets are the call's reserved ones: (receiving, sending) per component.
    static let socketElements: [(component: RTPComponent, receiver: String, sender: String)] = [
        (.rtp, "rtpsrc", "rtpsink"), (.rtcp, "rtcpsrc", "rtcpsink"),
    ]
}

/// The layer between the transport and the RTP session: what protects the packets, spliced into both directions of
/// each component. Plain packets pass as they are; SDES-keyed SRTP goes through one srtpenc (both components, our
/// key) and one srtpdec (both components, the peer's key, given to it whenever it asks for a new SSRC's).
/// DTLS-SRTP (dtlssrtpenc/dtlssrtpdec) is the next case.
///
/// ```
///  none:  transport ──────────────────────────► rtpbin        rtpbin ──────────────────────────► transport
///  sdes:  transport ─► srtpdec "srtpdec" ─────► rtpbin        rtpbin ─► srtpenc "srtpenc" ─────► transport
///         (rtp_sink → rtp_src, rtcp_sink → rtcp_src)          (rtp_sink_0 → rtp_src_0, rtcp_sink_0 → rtcp_src_0)
/// ```
extension MediaEncryption {
    /// The encoder's and the decoder's names in the pipeline.
    static let encoder = "srtpenc", decoder = "srtpdec"

    /// The elements the layer declares on their own (their pads are linked by name below).
    var elements: String? {
        switch self {
        case .none: nil
        case .sdes: "srtpenc name=\(Self.encoder) srtpdec name=\(Self.decoder)"
        }
    }

    /// The media type of what the transport hands up for `component`, if it needs one said.
    func receivedMediaType(_ component: RTPComponent) -> String? {
        switch (self, component) {
        case (.none, .rtp): "application/x-rtp"
        case (.none, .rtcp): nil
        case (.sdes, .rtp): "application/x-srtp"
        case (.sdes, .rtcp): "application/x-srtcp"
        }
    }

    /// The text that takes `component`'s packets from `receiver` (the transport's element) into the session's pad.
    func receiving(_ component: RTPComponent, from receiver: String) -> String {
        let session = "\(PipelineDescription.rtpbin).\(component.receivePad)"
        switch self {
        case .none: return "\(receiver) ! \(session)"
        case .sdes:
            let pad = component == .rtp ? "rtp" : "rtcp"
            return "\(receiver) ! \(Self.decoder).\(pad)_sink \(Self.decoder).\(pad)_src ! \(session)"
        }
    }

    /// The text that takes `component`'s packets from `origin` (the session's pad, or what follows it) to
    /// `sender` (the transport's element).
    func sending(_ component: RTPComponent, from origin: String, to sender: String) -> String {
        switch self {
        case .none: return "\(origin) ! \(sender)"
        case .sdes:
            let pad = component == .rtp ? "rtp" : "rtcp"
            return "\(origin) ! \(Self.encoder).\(pad)_sink_0 \(Self.encoder).\(pad)_src_0 ! \(sender)"
        }
    }

    /// Keys the pipeline's elements (after it is parsed, before it plays).
    func key(_ pipeline: Pipeline) throws(MediaError) {
        guard case .sdes(let send, let receive) = self else { return }
        try pipeline.set(Self.encoder, "key", bytes: send.material)
        pipeline.set(Self.encoder, "rtp-cipher", nick: send.cipher)
        pipeline.set(Self.encoder, "rtp-auth", nick: send.auth)
        pipeline.set(Self.encoder, "rtcp-cipher", nick: send.rtcpCipher)
        pipeline.set(Self.encoder, "rtcp-auth", nick: send.rtcpAuth)
        try pipeline.keySRTPDecoder(Self.decoder, with: receive)
    }
}
