/// N-1 ("mix-minus") mixing of one tick of a conference (mediastreamer2's conference mode): every member's frame is
/// summed in 32 bits once, and each member is given the sum less its own frame, saturated to 16 bits — it hears
/// everyone but itself, with one pass over the frames whatever the number of members.
public enum MixMinus {
    /// The bridge's rate: wideband, common to every leg (G.711's 8 kHz and opus's 48 kHz resampled to it).
    public static let rate = 16_000
    /// Samples of one tick (20 ms at ``rate``).
    public static let frame = rate / 50

    /// What each member hears: `frames[i]` is member i's audio of this tick (all ``frame`` long), the result's i-th
    /// the others' sum, plus `adding[i]` when given (the local source as member i's call has it). A member alone
    /// hears silence, or what is added for it.
    public static func mix(_ frames: [[Int16]], adding: [[Int16]]? = nil) -> [[Int16]] {
        guard let length = frames.first?.count else { return [] }
        precondition(adding.map { $0.count == frames.count && $0.allSatisfy { $0.count == length } } ?? true, "one added frame a member")
        let sum = total(frames, length: length)
        return frames.enumerated().map { member, own in
            // One pass a member, into an array made once (this runs 50 times a second for every member).
            [Int16](unsafeUninitializedCapacity: length) { out, count in
                own.withUnsafeBufferPointer { own in
                    if let added = adding?[member] {
                        added.withUnsafeBufferPointer { added in
                            for index in 0..<length {
                                out[index] = Int16(clamping: sum[index] &- Int32(own[index]) &+ Int32(added[index]))
                            }
                        }
                    } else {
                        for index in 0..<length { out[index] = Int16(clamping: sum[index] &- Int32(own[index])) }
                    }
                }
                count = length
            }
        }
    }

    /// Everyone's frames summed, saturated to 16 bits: what the local user hears of the group (its recording).
    public static func sum(_ frames: [[Int16]], length: Int = frame) -> [Int16] {
        total(frames, length: length).map { Int16(clamping: $0) }
    }

    private static func total(_ frames: [[Int16]], length: Int) -> [Int32] {
        precondition(frames.allSatisfy { $0.count == length }, "every member's frame has the tick's length")
        var sum = [Int32](repeating: 0, count: length)
        for frame in frames {
            for index in 0..<length { sum[index] &+= Int32(frame[index]) }
        }
        return sum
    }
}

/// One member's audio waiting to be mixed: what its call decoded since the last tick, taken a frame a tick.
///
/// ```
///   append(samples) ──► queued ──take(frame)──► a frame (silence where too little came: a late or silent leg)
///   2 frames or more left at every tick for 5 s (a burst that never drained, or a clock faster than the
///       bridge's) ──► trimmed to 1 frame
/// ```
/// The drift rule is mediastreamer2's: a leg whose sender's clock runs a little fast fills its queue slowly; the
/// excess is dropped once it has stayed for a while, so the added latency stays under two frames. Two frames left
/// count as too many: in and out at one frame a tick, a queue a burst left at two never drains by itself
/// (`Scripts/bench-conference` found 40 ms of latency kept that way for good).
public struct MemberQueue: Sendable {
    /// The samples waiting, oldest first.
    public private(set) var samples: [Int16] = []
    /// Ticks in a row the queue held ``highWater`` or more after its frame was taken.
    private var ticksAbove = 0
    /// Samples dropped so far by the drift rule (or because too many came at once).
    public private(set) var dropped = 0

    /// The most a queue holds: five frames (more is a burst after a stall; the oldest go).
    public static let capacity = MixMinus.frame * 5
    /// What counts as too full: two frames left after a tick.
    public static let highWater = MixMinus.frame * 2
    /// How long too full must last before the excess goes: 5 s of ticks.
    public static let patience = 250

    /// An empty queue.
    public init() {}

    /// Adds what the member's call decoded; beyond ``capacity`` the oldest samples go.
    public mutating func append(_ new: [Int16]) {
        samples += new
        if samples.count > Self.capacity {
            let excess = samples.count - Self.capacity
            samples.removeFirst(excess)
            dropped += excess
        }
    }

    /// This tick's frame of `count` samples (padded with silence when fewer are queued); the drift rule runs after.
    public mutating func take(_ count: Int = MixMinus.frame) -> [Int16] {
        let available = min(count, samples.count)
        var frame = Array(samples.prefix(available))
        samples.removeFirst(available)
        if available < count { frame += [Int16](repeating: 0, count: count - available) }
        if samples.count >= Self.highWater {
            ticksAbove += 1
            if ticksAbove >= Self.patience {
                let excess = samples.count - MixMinus.frame
                samples.removeFirst(excess)
                dropped += excess
                ticksAbove = 0
            }
        } else {
            ticksAbove = 0
        }
        return frame
    }
}
