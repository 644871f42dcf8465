import ConversationKit
import Foundation
import Testing

/// Identifiers the engine makes: random ones, and time-ordered ones for conversations the history indexes.
@Suite("Random UUIDs")
struct RandomUUIDTests {
    /// The UUID's bytes, in order.
    private func bytes(_ uuid: UUID) -> [UInt8] { withUnsafeBytes(of: uuid.uuid) { Array($0) } }

    @Test("random UUIDs are version 4 with the RFC 9562 variant")
    func versionFour() {
        for _ in 0..<100 {
            let raw = bytes(RandomUUID.make())
            #expect(raw[6] >> 4 == 4)
            #expect(raw[8] >> 6 == 0b10)
        }
    }

    @Test("a time-ordered UUID is version 7 and carries its Unix time in milliseconds, big-endian, in its first 48 bits")
    func versionSevenLayout() {
        let date = Date(timeIntervalSince1970: 1_796_256_000.123)  // 2026-12-03 00:00:00.123 UTC
        let raw = bytes(RandomUUID.timeOrdered(at: date))
        let milliseconds = raw[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(milliseconds == 1_796_256_000_123)
        #expect(raw[6] >> 4 == 7)
        #expect(raw[8] >> 6 == 0b10)
    }

    @Test("time-ordered UUIDs sort by their time, and those of one millisecond still differ")
    func ordering() {
        let start = Date(timeIntervalSince1970: 1_796_342_400)
        // Two milliseconds apart: a date's milliseconds are rounded down, and 1 ms steps in binary floating point can
        // land twice on one.
        let strings = (0..<1_000).map { RandomUUID.timeOrdered(at: start.addingTimeInterval(Double($0) * 0.002)).uuidString }
        #expect(zip(strings, strings.dropFirst()).allSatisfy { $0 < $1 })
        let sameMillisecond = (0..<1_000).map { _ in RandomUUID.timeOrdered(at: start) }
        #expect(Set(sameMillisecond).count == 1_000)
    }

    @Test("a date before 1970 gives time zero rather than trapping")
    func beforeEpoch() {
        let raw = bytes(RandomUUID.timeOrdered(at: Date(timeIntervalSince1970: -5)))
        #expect(raw[0..<6].allSatisfy { $0 == 0 })
        #expect(raw[6] >> 4 == 7)
    }
}
