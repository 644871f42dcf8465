/// The peer's lost RTP packets, counted as RFC 3550 counts them (§6.4.1, appendix A.1: expected, from the extended
/// highest sequence number less the first, minus received) but only over the stretches in which both sides send.
///
/// rtpbin's own count runs over the whole call: a hold leaves a gap in the peer's sequence numbers (a sender that
/// stops its packets after numbering them), and the first packet after the hold charges the whole gap as lost, so a
/// 2 s hold in a 10 s call read 20 % lost. Here a stretch ends when either side stops sending (sendonly, recvonly,
/// inactive) and the next one starts from the first packet that arrives after both send again, so no gap between
/// stretches is ever expected. Duplicates can make a stretch's "expected − received" negative; that is no loss, and
/// each stretch's loss is at least zero.
///
/// A pure value: ``MediaSession`` feeds it the SSRC and sequence number of each packet that arrives and says when a
/// stretch begins and ends.
///
/// ```
///   counting ──setCounting(false)──► not counting (the stretch's figures are kept)
///       ▲                                  │
///       └────────setCounting(true)─────────┘ (a new stretch: each source starts again at its next packet)
/// ```
public struct RTPLossCounter: Sendable, Hashable {
    /// A jump forward of more than this many sequence numbers is not taken as loss until the next packet follows it
    /// (RFC 3550 A.1's MAX_DROPOUT): then the source restarted its numbering, and a new stretch starts.
    public static let maximumDropout = 3_000
    /// A packet this many sequence numbers behind the highest, or fewer, is a late or duplicate one (A.1's
    /// MAX_MISORDER); further behind, it is treated like a large jump.
    public static let maximumMisorder = 100
    /// Sources (SSRCs) counted at once, as many as the pipeline's rtpbin takes (`max-streams`); others are ignored.
    public static let maximumSources = 4

    /// One source's packets within one stretch, in extended sequence numbers.
    struct Stretch: Sendable, Hashable {
        var lowest: Int
        var highest: Int
        var received = 1
        /// The sequence number that would confirm a restart after a jump too large to take (A.1's bad_seq).
        var restartAt: UInt16?

        init(_ sequence: UInt16) {
            lowest = Int(sequence)
            highest = Int(sequence)
        }

        var expected: Int { highest - lowest + 1 }
        var lost: Int { max(0, expected - received) }
    }

    /// Whether a stretch is open: packets that arrive now count.
    public private(set) var isCounting: Bool
    private var open: [UInt32: Stretch] = [:]
    private var closedExpected = 0
    private var closedReceived = 0
    private var closedLost = 0

    /// A counter; `counting` when both sides send from the start.
    public init(counting: Bool) {
        isCounting = counting
    }

    /// Packets of the peer's stream expected in the stretches so far (the open one included).
    public var expected: Int { closedExpected + open.values.reduce(0) { $0 + $1.expected } }
    /// Packets that arrived in them (duplicates included, as RFC 3550 counts them).
    public var received: Int { closedReceived + open.values.reduce(0) { $0 + $1.received } }
    /// Packets expected in them that never arrived; never negative.
    public var lost: Int { closedLost + open.values.reduce(0) { $0 + $1.lost } }

    /// Starts a stretch (both sides send now) or ends one (either side stopped); the same state again changes nothing.
    public mutating func setCounting(_ counting: Bool) {
        guard counting != isCounting else { return }
        isCounting = counting
        if !counting {
            for stretch in open.values { close(stretch) }
            open = [:]
        }
    }

    /// An RTP packet of source `ssrc` with sequence number `sequence` arrived; it counts while a stretch is open.
    public mutating func received(ssrc: UInt32, sequence: UInt16) {
        guard isCounting else { return }
        guard var stretch = open[ssrc] else {
            if open.count < Self.maximumSources { open[ssrc] = Stretch(sequence) }
            return
        }
        // The distance from the highest so far, modulo 2^16 (A.1's udelta, signed): wrap-arounds extend the number.
        let delta = Int(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: stretch.highest)))
        if delta > 0, delta <= Self.maximumDropout {
            stretch.highest += delta
            stretch.received += 1
            stretch.restartAt = nil
        } else if delta <= 0, delta >= -Self.maximumMisorder {
            // Late, reordered or duplicate: it counts as received; one from before the stretch's first widens it.
            stretch.lowest = min(stretch.lowest, stretch.highest + delta)
            stretch.received += 1
            stretch.restartAt = nil
        } else if sequence == stretch.restartAt {
            // Two packets in a row after a large jump: the source restarted its numbering. What came before stands.
            close(stretch)
            stretch = Stretch(sequence)
        } else {
            stretch.restartAt = sequence &+ 1
        }
        open[ssrc] = stretch
    }

    private mutating func close(_ stretch: Stretch) {
        closedExpected += stretch.expected
        closedReceived += stretch.received
        closedLost += stretch.lost
    }
}
