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

/// The layer between the transport and the RTP session: what protects the packets. None today: packets pass as
/// they are; SRTP keyed by SDES (srtpenc/srtpdec) and by DTLS-SRTP (dtlssrtpenc/dtlssrtpdec) come with issue 42,
/// each one a pair of elements spliced into both directions of each component.
enum MediaSecurity: Equatable {
    /// Plain RTP and RTCP.
    case none

    /// The media type of what the transport hands up for this layer to take.
    var receivedMediaType: String {
        switch self {
        case .none: "application/x-rtp"
        }
    }

    /// The text that takes `component`'s packets from `receiver` (the transport's element) into the session's pad.
    func receiving(_ component: RTPComponent, from receiver: String) -> String {
        switch self {
        case .none: "\(receiver) ! \(PipelineDescription.rtpbin).\(component.receivePad)"
        }
    }

    /// The text that takes `component`'s packets from `origin` (the session's pad, or what follows it) to
    /// `sender` (the transport's element).
    func sending(_ component: RTPComponent, from origin: String, to sender: String) -> String {
        switch self {
        case .none: "\(origin) ! \(sender)"
        }
    }
}
