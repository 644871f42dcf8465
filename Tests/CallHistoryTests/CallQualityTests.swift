import CallHistory
import Foundation
import Testing

/// The figures a record keeps, as frontends read them: never a negative count, the loss a share of what was expected.
@Suite("Call quality figures")
struct CallQualityTests {
    @Test("the loss is a share of the packets expected while both sides sent")
    func lossOfExpected() {
        // 400 received in all, 8 of 200 expected while both sent lost (the rest arrived on hold).
        let figures = CallQuality(
            codec: "PCMU", packetsSent: 500, packetsReceived: 400, packetsLost: 8, packetsExpected: 200, jitterMs: 1)
        #expect(figures.lossFraction == 0.04 && figures.lostPackets == 8)
        let none = CallQuality(codec: "PCMU", packetsSent: 0, packetsReceived: 0, packetsLost: 0, packetsExpected: 0, jitterMs: 0)
        #expect(none.lossFraction == 0)
    }

    @Test("a negative count (RFC 3550's expected − received with duplicates, an old record's −1) reads as 0")
    func negativeIsZero() {
        let old = CallQuality(
            codec: "PCMU", packetsSent: 250, packetsReceived: 251, packetsLost: -1, jitterMs: 0.2, peerPacketsLost: -1)
        #expect(old.lostPackets == 0 && old.peerLostPackets == 0 && old.lossFraction == 0)
        let peerless = CallQuality(codec: "PCMU", packetsSent: 1, packetsReceived: 1, packetsLost: 0, jitterMs: 0)
        #expect(peerless.peerLostPackets == nil)
    }

    @Test("a record written before packetsExpected was kept reads back, its loss a share of received + lost")
    func olderRecords() throws {
        let json = #"{"codec":"PCMA","packetsSent":100,"packetsReceived":90,"packetsLost":10,"jitterMs":1.5}"#
        let figures = try JSONDecoder().decode(CallQuality.self, from: Data(json.utf8))
        #expect(figures.packetsExpected == nil && figures.lossFraction == 0.1)
        let kept = CallQuality(codec: "PCMU", packetsSent: 5, packetsReceived: 5, packetsLost: 0, packetsExpected: 5, jitterMs: 0)
        #expect(try JSONDecoder().decode(CallQuality.self, from: JSONEncoder().encode(kept)) == kept)
    }
}
