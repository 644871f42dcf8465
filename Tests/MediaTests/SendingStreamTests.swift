@testable import Media
import Testing

/// Our RTP stream's identity across pipeline rebuilds: the SSRC stays, sequence numbers go on, timestamps follow the
/// clock.
@Suite("Media: the sending stream across rebuilds")
struct SendingStreamTests {
    @Test("a rebuild continues one past the last sequence number (wrapping at 65,536) and at the timestamp the clock reached")
    func continues() {
        var stream = SendingStream()
        let ssrc = stream.ssrc, start = ContinuousClock.now
        let firstTimestamp = stream.timestampOffset
        stream.started(clockRate: 8_000, at: start)
        stream.continueAfter(lastSequence: 65_535, now: start + .milliseconds(2_500))
        #expect(stream.ssrc == ssrc)
        #expect(stream.sequenceOffset == 0, "wrapped")
        #expect(stream.timestampOffset == firstTimestamp + 20_000, "2.5 s at 8 kHz")
        stream.started(clockRate: 48_000, at: start)
        stream.continueAfter(lastSequence: nil, now: start + .milliseconds(1_000))
        #expect(stream.sequenceOffset == 0, "nothing sent: the offset stands")
        #expect(stream.timestampOffset == firstTimestamp + 20_000 + 48_000)
        #expect(stream.timestampOffset < 1 << 31)
    }
}
