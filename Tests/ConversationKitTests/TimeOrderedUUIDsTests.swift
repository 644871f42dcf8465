import ConversationKit
import Foundation
import Testing

/// The time-ordered identifiers the engine names incoming conversations with.
@Suite("Time-ordered UUIDs")
struct TimeOrderedUUIDsTests {
    private let start = Date(timeIntervalSince1970: 1_767_225_600)

    private func bytes(_ uuid: UUID) -> [UInt8] { withUnsafeBytes(of: uuid.uuid) { Array($0) } }

    /// The first 32 bits, big-endian: the tick.
    private func tick(_ uuid: UUID) -> UInt64 { bytes(uuid).prefix(4).reduce(0) { $0 << 8 | UInt64($1) } }

    @Test("version 8 with the RFC 9562 variant, the clock's 10-µs tick (mod 2³²) first")
    func layout() {
        var generator = TimeOrderedUUIDs()
        let date = start.addingTimeInterval(0.123_455)
        let uuid = generator.next(at: date)
        #expect(bytes(uuid)[6] >> 4 == 8)
        #expect(bytes(uuid)[8] >> 6 == 0b10)
        #expect(tick(uuid) == 176_722_560_012_345 & 0xFFFF_FFFF)
    }

    @Test("at one date the tick still moves on: short names differ and the order is the order made")
    func sameDate() {
        var generator = TimeOrderedUUIDs()
        let made = (0..<1000).map { _ in generator.next(at: start) }
        #expect(Set(made.map { $0.uuidString.prefix(8) }).count == 1000)
        #expect(made.map(\.uuidString) == made.map(\.uuidString).sorted())
        let lowercased = made.map { $0.uuidString.lowercased() }
        #expect(lowercased == lowercased.sorted())
    }

    @Test("later dates sort later; a clock that goes back does not repeat a tick")
    func clockOrder() {
        var generator = TimeOrderedUUIDs()
        let first = generator.next(at: start.addingTimeInterval(1))
        let second = generator.next(at: start.addingTimeInterval(2))
        let backwards = generator.next(at: start)
        #expect(tick(second) == tick(first) + 100_000)
        #expect(tick(backwards) == tick(second) + 1)
        #expect(first.uuidString < second.uuidString && second.uuidString < backwards.uuidString)
    }

    @Test("two generators at one date share the tick but not the UUID (90 random bits)")
    func separateGenerators() {
        var one = TimeOrderedUUIDs(), other = TimeOrderedUUIDs()
        let a = one.next(at: start), b = other.next(at: start)
        #expect(tick(a) == tick(b))
        #expect(a != b)
    }

    @Test("dates before 1970 count as 1970")
    func earlyDates() {
        var generator = TimeOrderedUUIDs()
        #expect(tick(generator.next(at: Date(timeIntervalSince1970: -86_400))) == 1)
        #expect(tick(generator.next(at: Date(timeIntervalSince1970: -1))) == 2)
    }
}
