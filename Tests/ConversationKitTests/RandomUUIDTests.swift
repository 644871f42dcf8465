import ConversationKit
import Foundation
import Testing

/// The identifiers the engine makes for conversations and actions.
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
}
