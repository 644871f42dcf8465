import Media
import Testing

/// The loss arithmetic on its own: sequence numbers in, RFC 3550's expected, received and lost out, per stretch in
/// which both sides send.
@Suite("Media: the peer's loss, counted while both send")
struct RTPLossCounterTests {
    /// A counter fed `sequences` of one source.
    static func counted(_ sequences: [UInt16], ssrc: UInt32 = 7, into counter: RTPLossCounter = RTPLossCounter(counting: true))
        -> RTPLossCounter
    {
        var counter = counter
        for sequence in sequences { counter.received(ssrc: ssrc, sequence: sequence) }
        return counter
    }

    @Test("a clean stream loses nothing; one missing packet is one lost")
    func cleanAndOneMissing() {
        let clean = Self.counted(Array(100...199))
        #expect((clean.expected, clean.received, clean.lost) == (100, 100, 0))
        let gap = Self.counted(Array(100...149) + Array(151...199))
        #expect((gap.expected, gap.received, gap.lost) == (100, 99, 1))
    }

    @Test("duplicates make expected − received negative: that is no loss, not −1")
    func duplicatesAreNotNegative() {
        let counter = Self.counted([10, 11, 11, 12, 13, 13, 13, 14])
        #expect((counter.expected, counter.received, counter.lost) == (5, 8, 0))
    }

    @Test("a hold's gap in the peer's numbering is not lost: the next stretch starts at its first packet")
    func holdGapIsNotLost() {
        var counter = Self.counted(Array(1_000..<1_050))
        counter.setCounting(false)
        // Held: the peer's packets (music on hold) count for nothing, and its numbering jumps by 100.
        counter = Self.counted(Array(1_050..<1_060), into: counter)
        #expect(counter.expected == 50 && counter.received == 50)
        counter.setCounting(true)
        counter = Self.counted(Array(1_150..<1_200).filter { !(1_160..<1_163).contains($0) }, into: counter)
        #expect((counter.expected, counter.received, counter.lost) == (100, 97, 3))
        // Without the stretches, RFC 3550 over the whole run charges the gap: 200 expected, 100 of them lost.
        let whole = Self.counted(Array(1_000..<1_050) + Array(1_150..<1_200))
        #expect(whole.lost == 100, "the arithmetic that a hold fooled")
    }

    @Test("duplicates in one stretch do not hide losses in another")
    func stretchesAreClampedOnTheirOwn() {
        var counter = Self.counted([1, 2, 2, 2, 3])
        counter.setCounting(false)
        counter.setCounting(true)
        counter = Self.counted([50, 53], into: counter)
        #expect((counter.expected, counter.received, counter.lost) == (7, 7, 2))
    }

    @Test("the sequence number wraps at 65,535 without a jump")
    func wrapAround() {
        let counter = Self.counted(Array(65_530...65_535) + Array(0...3) + [5])
        #expect((counter.expected, counter.received, counter.lost) == (12, 11, 1))
    }

    @Test("a late packet counts as received; one from before the stretch's first widens it")
    func reordered() {
        let late = Self.counted([10, 12, 11, 13])
        #expect((late.expected, late.lost) == (4, 0))
        let beforeFirst = Self.counted([21, 22, 20, 23])
        #expect((beforeFirst.expected, beforeFirst.received, beforeFirst.lost) == (4, 4, 0))
    }

    @Test("one wild sequence number is ignored; two in a row are a restart, and what came before stands")
    func jumps() {
        let stray = Self.counted([100, 101, 20_000, 102, 103])
        #expect((stray.expected, stray.received, stray.lost) == (4, 4, 0))
        let restart = Self.counted([100, 101, 102, 40_000, 40_001, 40_002, 40_004])
        #expect((restart.expected, restart.received, restart.lost) == (3 + 4, 3 + 3, 1))
    }

    @Test("sources count apart, up to rtpbin's four; a counter that starts held counts nothing until both send")
    func sourcesAndStart() {
        var counter = RTPLossCounter(counting: true)
        for ssrc in UInt32(1)...6 {
            for sequence in UInt16(0)..<10 where !(ssrc == 2 && sequence == 5) {
                counter.received(ssrc: ssrc, sequence: sequence &+ UInt16(ssrc) * 1_000)
            }
        }
        #expect((counter.expected, counter.received, counter.lost) == (40, 39, 1))
        var held = RTPLossCounter(counting: false)
        held = Self.counted([1, 2, 5], into: held)
        #expect((held.expected, held.received, held.lost) == (0, 0, 0))
        held.setCounting(true)
        held.setCounting(true)
        held = Self.counted([9, 10, 12], into: held)
        #expect((held.expected, held.received, held.lost) == (4, 3, 1))
    }
}
