/// Who may send a call's media (issue 48): one per component, in front of the security layer (the C side's
/// `gate.h`, a pad probe on the component's udpsrc). Only the accepted source's packets go on; a stranger's are
/// dropped and counted before they cost a decryption, a jitter buffer or a thread.
///
/// ```
///   negotiated source ──(its first packet)──► accepted for good
///        │ silent so far, within latchSeconds: valid RTP of the peer's payload type (or a DTLS handshake record) from S
///        ▼
///   S accepted (latched: symmetric RTP, once; we send there too) ──► never moves again without a new offer
/// ```
struct ReceiveGate: Sendable, Hashable {
    /// The accepted source's numeric address; nil: none known yet (only a latch can accept one).
    var host: String?
    /// Its port.
    var port: Int
    /// Whether any port of that address is accepted (RTCP after RTP latched: a NAT picks its port).
    var anyPort: Bool
    /// How long after the pipeline starts a silent negotiated source may be replaced by a latch (0: never).
    var latchSeconds: Int
    /// The payload type a latching RTP packet must carry; nil: RTP never latches.
    var latchPayloadType: Int?
    /// Whether a DTLS handshake record latches (a DTLS-SRTP call's handshake comes before any RTP).
    var dtlsLatches: Bool

    /// How long a silent negotiated source may be latched away from: a NAT's mapping shows at the peer's first
    /// packet, which a softphone sends within a second of the answer.
    static let latchWindowSeconds = 10

    /// The keys of the two gates on a pipeline.
    static func key(_ component: RTPComponent) -> String { "parley-gate-\(component.name)" }

    /// What a gate counted, and where its source moved if it latched since the last reading.
    struct Reading: Sendable {
        /// Packets let through.
        var passed: Int
        /// Of those, the ones that look like RTP (not RTCP, not DTLS).
        var passedMedia: Int
        /// Packets from anyone else, dropped.
        var dropped: Int
        /// The source it latched onto since the last reading.
        var latchedTo: (host: String, port: Int)?
    }

    /// The gates of a call's components for `parameters`: RTP from the peer's RTP address and port, latching on its
    /// payload type (or DTLS); RTCP from its RTCP address and port, latching only on DTLS (else it follows RTP's
    /// latch, then from that address on any port).
    static func gates(for parameters: MediaStreamParameters) -> [(component: RTPComponent, gate: ReceiveGate)] {
        gates(
            host: parameters.hasRemoteAddress ? parameters.remoteHost : nil, port: parameters.remotePort,
            rtcpPort: parameters.remoteRTCPPort, receives: parameters.receives, payloadType: parameters.receivedPayloadType,
            encryption: parameters.encryption)
    }

    /// The same for a stream from `host` (nil: none known) at `port` and `rtcpPort`, whose RTP carries `payloadType`.
    static func gates(
        host: String?, port: Int, rtcpPort: Int, receives: Bool, payloadType: Int, encryption: MediaEncryption
    ) -> [(component: RTPComponent, gate: ReceiveGate)] {
        let dtls = if case .dtls = encryption { true } else { false }
        return [
            // A peer that does not send (recvonly, inactive, held) cannot be latched onto: a stranger would be.
            (.rtp, ReceiveGate(
                host: host, port: port, anyPort: false, latchSeconds: receives ? latchWindowSeconds : 0,
                latchPayloadType: payloadType, dtlsLatches: dtls)),
            (.rtcp, ReceiveGate(
                host: host, port: rtcpPort, anyPort: false, latchSeconds: dtls ? latchWindowSeconds : 0,
                latchPayloadType: nil, dtlsLatches: dtls)),
        ]
    }
}
