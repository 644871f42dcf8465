/// What our RTP stream keeps when a call's pipeline is rebuilt mid-call (a merge taps it for the conference bridge, an
/// unmerge untaps it): its SSRC, its sequence numbers and its timeline go on, so the peer sees one stream with a gap,
/// not a new one (baresip 1.0.0 stops decoding a call whose SSRC changes). Set on the element that stamps what goes
/// out: the payloader, or the tones' mux when telephone-event is in the stream.
///
/// ```
///   made (random SSRC, sequence and timestamp offsets) ──pipeline built──► its offsets set, its start noted
///   rebuilt ──continue(after: the last sequence number)──► the next pipeline's offsets: one past it, and the
///   timestamp its clock got to (the old pipeline's time and the gap, at the clock rate)
/// ```
struct SendingStream {
    /// The stream's SSRC, for the call's life.
    let ssrc = UInt32.random(in: 1...UInt32.max)
    /// The next pipeline's first sequence number and RTP timestamp.
    private(set) var sequenceOffset = Int.random(in: 0..<32_768)
    private(set) var timestampOffset = Int.random(in: 0..<(1 << 30))
    /// When the current pipeline started, and its clock rate.
    private var started: (at: ContinuousClock.Instant, clockRate: Int)?

    /// The current pipeline starts now, at `clockRate`.
    mutating func started(clockRate: Int, at now: ContinuousClock.Instant = .now) {
        started = (now, clockRate)
    }

    /// The current pipeline goes; the next continues one past its last sequence number (nil: none was sent, the
    /// offset stands) and at the timestamp its clock reached by `now`. Offsets stay under 2^31: the tones' mux takes
    /// its timestamp offset as a signed integer.
    mutating func continueAfter(lastSequence: Int64?, now: ContinuousClock.Instant = .now) {
        if let lastSequence { sequenceOffset = Int((lastSequence + 1) & 0xFFFF) }
        guard let started else { return }
        let elapsed = started.at.duration(to: now)
        let samples = (elapsed.components.seconds * Int64(started.clockRate))
            + (elapsed.components.attoseconds / 1_000_000_000) * Int64(started.clockRate) / 1_000_000_000
        timestampOffset = Int((Int64(timestampOffset) + samples) % (1 << 31))
        self.started = nil
    }
}
