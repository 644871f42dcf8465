import Foundation

/// The check of one DTLS-SRTP pipeline's handshakes, as a pure value (the session feeds it what the decoders report
/// and the time; it says what to tell). GStreamer's DTLS elements accept any certificate: Parley compares each
/// component's peer certificate with the fingerprints of the peer's SDP (RFC 5763 §5) before any audio flows.
///
/// ```
///   pending ──RTP certificate matches──────────────► secured (audio flows)
///      │   ──a certificate does not match──────────► failed
///      └───no RTP certificate within the deadline──► failed
///   secured ──RTCP certificate does not match──────► failed
/// ```
/// RTCP's handshake may come later or not at all (a peer without RTCP): its SRTCP is then sent with GStreamer's
/// random key, readable by nobody, and RTP is not held up for it. Each outcome is told once.
struct DTLSHandshakeCheck: Equatable {
    /// Where it stands.
    enum Verdict: Equatable {
        /// No component's certificate checked yet (or only RTCP's).
        case pending
        /// RTP's certificate matched: audio may flow.
        case secured
        /// A certificate did not match, or the handshake did not complete in time: no audio, the call should end.
        case failed(String)
    }

    /// How long the RTP handshake may take, counted from when the pipeline can reach the peer.
    static let deadline = Duration.seconds(10)

    private(set) var verdict = Verdict.pending
    /// The components whose certificate was checked.
    private var checked: Set<RTPComponent> = []
    /// When the clock started (the pipeline reaches the peer); nil while it cannot (no address yet).
    private var startedAt: Duration?

    /// A check whose clock starts at `now`; nil: not yet (the pipeline has no address for the peer yet — the one that
    /// gets an address is a new pipeline with a new check — or waits for the ACK of its answer: ``start(at:)``).
    init(startingAt now: Duration?) { startedAt = now }

    /// Starts the clock at `now` if it has not started (the answer was acknowledged: the handshake may begin).
    mutating func start(at now: Duration) {
        if startedAt == nil { startedAt = now }
    }

    /// Whether it still waits for a component's certificate (the session keeps polling the decoders).
    var isWaiting: Bool {
        switch verdict {
        case .pending: true
        case .secured: checked.count < RTPComponent.allCases.count
        case .failed: false
        }
    }

    /// Whether `component`'s certificate is still to be checked.
    func awaits(_ component: RTPComponent) -> Bool { isWaiting && !checked.contains(component) }

    /// The peer's certificate on `component` arrived and did (or did not) match its fingerprints: the outcome to
    /// tell, if this changed the verdict.
    mutating func certificate(on component: RTPComponent, matches: Bool) -> MediaSecurityOutcome? {
        guard awaits(component) else { return nil }
        checked.insert(component)
        guard matches else {
            let why = "the peer's DTLS certificate on \(component.name.uppercased()) does not match the fingerprint of its SDP"
            verdict = .failed(why)
            return .failed(why)
        }
        guard component == .rtp, verdict == .pending else { return nil }
        verdict = .secured
        return .secured
    }

    /// The time now: the failure to tell when the RTP handshake is past its deadline.
    mutating func time(_ now: Duration) -> MediaSecurityOutcome? {
        guard verdict == .pending, let startedAt, now - startedAt >= Self.deadline else { return nil }
        let why = "the DTLS handshake did not complete within \(Self.deadline.components.seconds) s"
        verdict = .failed(why)
        return .failed(why)
    }
}
