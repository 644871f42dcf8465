@testable import Media
import Testing

/// The conference bridge's arithmetic: N-1 mixing in 32 bits, saturated, and each member's queue with its drift rule.
@Suite("Media: mix-minus and member queues")
struct MixMinusTests {
    @Test("each member gets the others' sum, never its own frame; a member alone gets silence")
    func everyoneButItself() {
        let mixed = MixMinus.mix([[100, -200, 3], [10, 20, 30], [1, 2, 3]])
        #expect(mixed == [[11, 22, 33], [101, -198, 6], [110, -180, 33]])
        #expect(MixMinus.mix([[5, 6]]) == [[0, 0]])
        // The local source, as each member's call has it, is added to what that member hears.
        #expect(MixMinus.mix([[100, -200, 3], [10, 20, 30]], adding: [[1, 1, 1], [7, 7, 7]]) == [[11, 21, 31], [107, -193, 10]])
        #expect(MixMinus.mix([[5, 6]], adding: [[9, 9]]) == [[9, 9]], "alone: the local source only")
        #expect(MixMinus.mix([]).isEmpty)
    }

    @Test("the sum is taken in 32 bits and saturated to 16: loud members clip, they do not wrap around")
    func saturates() {
        let loud: [Int16] = [30_000, -30_000]
        let mixed = MixMinus.mix([loud, loud, loud, [0, 0]])
        #expect(mixed[3] == [Int16.max, Int16.min], "three loud members for the quiet one: clipped")
        #expect(mixed[0] == [Int16.max, Int16.min], "two loud others: 60,000 clipped")
    }

    @Test("the group's recording is everyone's sum, saturated; nobody in the mix is silence")
    func groupSum() {
        #expect(MixMinus.sum([[100, -200, 3], [10, 20, 30], [1, 2, 3]], length: 3) == [111, -178, 36])
        #expect(MixMinus.sum([[30_000, -30_000], [30_000, -30_000]], length: 2) == [Int16.max, Int16.min])
        #expect(MixMinus.sum([], length: 2) == [0, 0])
    }

    @Test("levels in -dBov, RFC 6464's scale: the RMS's magnitude rounded, digital silence 127, full scale 0")
    func levels() {
        #expect(AudioLevels.dBov(-9.03) == 9)
        #expect(AudioLevels.dBov(-0.2) == 0)
        #expect(AudioLevels.dBov(-126.6) == 127)
        #expect(AudioLevels.dBov(-300) == 127)
        #expect(AudioLevels.dBov(-.infinity) == 127)
        #expect(AudioLevels.dBov(.nan) == 127)
    }

    @Test("a queue gives a tick's frame, padding with silence when too little came, and keeps at most five frames")
    func framesAndPadding() {
        var queue = MemberQueue()
        queue.append([Int16](repeating: 7, count: MixMinus.frame / 2))
        let frame = queue.take()
        #expect(frame.count == MixMinus.frame)
        #expect(frame.prefix(MixMinus.frame / 2).allSatisfy { $0 == 7 } && frame.suffix(MixMinus.frame / 2).allSatisfy { $0 == 0 })
        queue.append([Int16](repeating: 1, count: MixMinus.frame * 7))
        #expect(queue.samples.count == MemberQueue.capacity && queue.dropped == MixMinus.frame * 2)
    }

    @Test("drift: a queue left with two frames or more at every tick for 5 s is trimmed to one frame; one that dips below is not")
    func driftRule() {
        var fast = MemberQueue()
        fast.append([Int16](repeating: 1, count: MixMinus.frame * 3))
        for tick in 1...MemberQueue.patience {
            // A sender whose clock runs fast: a frame per tick and then some.
            fast.append([Int16](repeating: 1, count: MixMinus.frame))
            _ = fast.take()
            if tick < MemberQueue.patience { #expect(fast.samples.count == MixMinus.frame * 3) }
        }
        #expect(fast.samples.count == MixMinus.frame, "trimmed to one frame after \(MemberQueue.patience) ticks")
        #expect(fast.dropped == MixMinus.frame * 2)

        var settled = MemberQueue()
        settled.append([Int16](repeating: 1, count: MixMinus.frame * 2))
        for _ in 1...MemberQueue.patience {
            // A burst left two frames, and a frame a tick comes in and goes out: they would stay for ever.
            settled.append([Int16](repeating: 1, count: MixMinus.frame))
            _ = settled.take()
        }
        #expect(settled.samples.count == MixMinus.frame && settled.dropped == MixMinus.frame, "two frames kept 5 s: one goes")

        var steady = MemberQueue()
        steady.append([Int16](repeating: 1, count: MixMinus.frame * 2))
        for tick in 1...MemberQueue.patience * 2 {
            // Every hundredth tick the sender is late: the queue dips to one frame, the count starts again.
            if tick % 100 != 0 { steady.append([Int16](repeating: 1, count: MixMinus.frame)) }
            _ = steady.take()
            if tick % 100 == 0 { steady.append([Int16](repeating: 1, count: MixMinus.frame)) }
        }
        #expect(steady.dropped == 0, "a queue that does not stay above the mark keeps its samples")
    }
}
