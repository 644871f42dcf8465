import Foundation

/// The two components of an RTP session: the RTP packets and their RTCP (on the next port, until rtcp-mux).
enum RTPComponent: CaseIterable {
    /// The media packets.
    case rtp
    /// The control packets (reports, BYE).
    case rtcp

    /// `rtp` or `rtcp`, as GStreamer's pad names spell it.
    var name: String { self == .rtp ? "rtp" : "rtcp" }

    /// The rtpbin pad a received packet of this component enters.
    var receivePad: String { self == .rtp ? "recv_rtp_sink_0" : "recv_rtcp_sink_0" }
    /// The rtpbin pad a packet of this component to send leaves.
    var sendPad: String { self == .rtp ? "send_rtp_src_0" : "send_rtcp_src_0" }
}

/// The bottom layer of a call's media: how packets of each component reach the network and come from it. UDP (a
/// socket per component, shared by the receiving and the sending element: symmetric RTP, and the port a DTLS peer
/// answers to), or ICE (libnice's nicesrc/nicesink on the call's agent: each component through the pair its checks
/// selected; nothing is sent before one is).
///
/// ```
///   network ─► receiver(component) ─► security ─► rtpbin          rtpbin ─► security ─► sender(component) ─► network
///   udp: udpsrc "rtpsrc" / udpsink "rtpsink"        ice: nicesrc "rtpsrc" (component 1) / nicesink "rtpsink"
/// ```
enum MediaTransport {
    /// A UDP socket per component (the call's reserved port pair).
    case udp
    /// The components of stream `stream` of the call's ICE agent (RTP 1, RTCP 2).
    case ice(stream: Int)

    /// The ICE component number of `component`.
    static func iceComponent(_ component: RTPComponent) -> Int { component == .rtp ? 1 : 2 }

    /// The element receiving `component`'s packets, named so that its socket can be set; `caps` are those of what
    /// it hands up (RTP, or SRTP before decryption).
    func receiver(_ component: RTPComponent, caps: String?) -> String {
        switch self {
        case .udp: "udpsrc name=\(component.name)src" + (caps.map { " caps=\"\($0)\"" } ?? "")
        case .ice(let stream):
            "nicesrc name=\(component.name)src stream=\(stream) component=\(Self.iceComponent(component))"
                + (caps.map { " ! \($0)" } ?? "")
        }
    }

    /// The element sending `component`'s packets; `paced` plays them out at their timestamps (a file source).
    func sender(_ component: RTPComponent, paced: Bool) -> String {
        let sync = component == .rtp && paced
        return switch self {
        case .udp: "udpsink name=\(component.name)sink sync=\(sync) async=false"
        case .ice(let stream):
            "nicesink name=\(component.name)sink stream=\(stream) component=\(Self.iceComponent(component)) sync=\(sync) async=false"
        }
    }

    /// The names of its elements whose sockets are the call's reserved ones: (receiving, sending) per component.
    static let socketElements: [(component: RTPComponent, receiver: String, sender: String)] = [
        (.rtp, "rtpsrc", "rtpsink"), (.rtcp, "rtcpsrc", "rtcpsink"),
    ]
}

/// The layer between the transport and the RTP session: what protects the packets, spliced into both directions of
/// each component. Plain packets pass as they are; SDES-keyed SRTP goes through one srtpenc (both components, our
/// key) and one srtpdec (both components, the peer's key, given to it whenever it asks for a new SSRC's); DTLS-SRTP
/// through a dtlssrtpenc and a dtlssrtpdec per component, paired by a connection id (one handshake per component:
/// no rtcp-mux), each decoder holding our certificate and reporting the peer's (`peer-pem`, checked by the session).
///
/// ```
///  none:  transport ──────────────────────────► rtpbin        rtpbin ──────────────────────────► transport
///  sdes:  transport ─► srtpdec "srtpdec" ─────► rtpbin        rtpbin ─► srtpenc "srtpenc" ─────► transport
///         (rtp_sink → rtp_src, rtcp_sink → rtcp_src)          (rtp_sink_0 → rtp_src_0, rtcp_sink_0 → rtcp_src_0)
///  dtls:  transport ─► dtlssrtpdec "dtlsdec_rtp" ─► rtpbin    rtpbin ─► dtlssrtpenc "dtlsenc_rtp" ─► transport
///         (sink → rtp_src; rtcp_src drained)                  (rtp_sink_0 → src: SRTP and the handshake's records)
///         and the same for RTCP ("dtlsdec_rtcp", "dtlsenc_rtcp": rtcp_src and rtcp_sink_0)
/// ```
extension MediaEncryption {
    /// The SDES encoder's and decoder's names in the pipeline.
    static let encoder = "srtpenc", decoder = "srtpdec"

    /// The DTLS-SRTP encoder of `component` (its handshake's packets and its SRTP leave through it).
    static func dtlsEncoder(_ component: RTPComponent) -> String { "dtlsenc_\(component.name)" }
    /// The DTLS-SRTP decoder of `component` (the handshake's packets and the SRTP arrive at it).
    static func dtlsDecoder(_ component: RTPComponent) -> String { "dtlsdec_\(component.name)" }

    /// The elements the layer declares on their own (their pads are linked by name below). A DTLS decoder's pad of
    /// the other component is drained: a packet of that kind arriving at the port must not stop the source.
    var elements: String? {
        switch self {
        case .none: return nil
        case .sdes: return "srtpenc name=\(Self.encoder) srtpdec name=\(Self.decoder)"
        case .dtls:
            return RTPComponent.allCases.map { component in
                let other = component == .rtp ? "rtcp" : "rtp"
                return "dtlssrtpenc name=\(Self.dtlsEncoder(component)) dtlssrtpdec name=\(Self.dtlsDecoder(component))"
                    + " \(Self.dtlsDecoder(component)).\(other)_src ! fakesink sync=false async=false"
            }.joined(separator: " ")
        }
    }

    /// The media type of what the transport hands up for `component`, if it needs one said.
    func receivedMediaType(_ component: RTPComponent) -> String? {
        switch (self, component) {
        case (.none, .rtp): "application/x-rtp"
        case (.none, .rtcp): nil
        case (.sdes, .rtp), (.dtls, .rtp): "application/x-srtp"
        case (.sdes, .rtcp), (.dtls, .rtcp): "application/x-srtcp"
        }
    }

    /// The text that takes `component`'s packets from `receiver` (the transport's element) into the session's pad, or
    /// into `into` (an element linked to the session later).
    func receiving(_ component: RTPComponent, from receiver: String, into: String? = nil) -> String {
        let session = into ?? "\(PipelineDescription.rtpbin).\(component.receivePad)"
        switch self {
        case .none: return "\(receiver) ! \(session)"
        case .sdes:
            return "\(receiver) ! \(Self.decoder).\(component.name)_sink \(Self.decoder).\(component.name)_src ! \(session)"
        case .dtls:
            let decoder = Self.dtlsDecoder(component)
            return "\(receiver) ! \(decoder).sink \(decoder).\(component.name)_src ! \(session)"
        }
    }

    /// The text that takes `component`'s packets from `origin` (the session's pad, or what follows it) to
    /// `sender` (the transport's element).
    func sending(_ component: RTPComponent, from origin: String, to sender: String) -> String {
        switch self {
        case .none: return "\(origin) ! \(sender)"
        case .sdes:
            return "\(origin) ! \(Self.encoder).\(component.name)_sink_0 \(Self.encoder).\(component.name)_src_0 ! \(sender)"
        case .dtls:
            let encoder = Self.dtlsEncoder(component)
            return "\(origin) ! \(encoder).\(component.name)_sink_0 \(encoder).src ! \(sender)"
        }
    }

    /// Keys the pipeline's elements (after it is parsed, before it plays). DTLS: each decoder gets our certificate
    /// and then its connection id (`connection` and the component's name: unique in the process, since GStreamer
    /// pairs encoders and decoders by it process-wide), each encoder the same id and our role.
    func key(_ pipeline: Pipeline, connection: String) throws(MediaError) {
        switch self {
        case .none: return
        case .sdes(let send, let receive):
            try pipeline.set(Self.encoder, "key", bytes: send.material)
            pipeline.set(Self.encoder, "rtp-cipher", nick: send.cipher)
            pipeline.set(Self.encoder, "rtp-auth", nick: send.auth)
            pipeline.set(Self.encoder, "rtcp-cipher", nick: send.rtcpCipher)
            pipeline.set(Self.encoder, "rtcp-auth", nick: send.rtcpAuth)
            try pipeline.keySRTPDecoder(Self.decoder, with: receive)
        case .dtls(let setup):
            for component in RTPComponent.allCases {
                let id = "\(connection)-\(component.name)"
                // The certificate first: setting it makes the decoder's connection anew when it already has an id.
                try pipeline.setChecked(Self.dtlsDecoder(component), "pem", setup.certificate.pem)
                try pipeline.setChecked(Self.dtlsDecoder(component), "connection-id", id)
                try pipeline.setChecked(Self.dtlsEncoder(component), "connection-id", id)
                pipeline.set(Self.dtlsEncoder(component), "is-client", setup.isClient)
            }
        }
    }
}

extension Pipeline {
    /// Gives the UDP transport's elements the call's reserved sockets: each component's receiving and sending element
    /// share its socket (symmetric RTP).
    func useSockets(rtp: Int32, rtcp: Int32) throws(MediaError) {
        for (component, receiver, sender) in MediaTransport.socketElements {
            let socket = component == .rtp ? rtp : rtcp
            try setSocket(receiver, fd: socket)
            try setSocket(sender, fd: socket)
        }
    }

    /// Points the UDP transport's sending elements at `host`: RTP to `port`, RTCP to `rtcpPort`.
    func send(to host: String, port: Int, rtcpPort: Int) {
        set("rtpsink", "host", host)
        set("rtpsink", "port", port)
        set("rtcpsink", "host", host)
        set("rtcpsink", "port", rtcpPort)
    }
}

extension Pipeline {
    /// Feeds `check` the peer certificate each awaited component's DTLS decoder has seen (matched against `setup`'s
    /// fingerprints) and the time `now`: the outcomes to tell.
    func checkHandshakes(_ check: inout DTLSHandshakeCheck, setup: DTLSSetup, now: Duration) -> [MediaSecurityOutcome] {
        var outcomes: [MediaSecurityOutcome] = []
        for component in RTPComponent.allCases where check.awaits(component) {
            guard let pem = string(MediaEncryption.dtlsDecoder(component), "peer-pem") else { continue }
            if let outcome = check.certificate(on: component, matches: setup.peerFingerprints.match(certificatePEM: pem)) {
                outcomes.append(outcome)
            }
        }
        if let outcome = check.time(now) { outcomes.append(outcome) }
        return outcomes
    }
}
