import SystemdSupport
import Testing

@testable import ParleyDBus

/// The pure parts of the D-Bus service: how often a client may call, and the values' signatures.
@Suite("D-Bus: rate limits and values")
struct ParleyDBusTests {
    @Test("a client gets its burst (5 Dials), then one Dial per 8 calls' worth of time; another client is unaffected")
    func rateLimit() {
        var limit = ClientRateLimit()
        let dials = (0..<10).map { _ in limit.allow(":1.7", method: "Dial", at: 0) }
        #expect(dials == Array(repeating: true, count: 5) + Array(repeating: false, count: 5))
        let other = limit.allow(":1.8", method: "Dial", at: 0)
        let early = limit.allow(":1.7", method: "Dial", at: 0.2)
        let later = limit.allow(":1.7", method: "Dial", at: 0.5)
        let cheaper = limit.allow(":1.7", method: "Hangup", at: 0.5)
        #expect(other, "another sender has a bucket of its own")
        #expect(!early, "0.2 s refills 4 calls' worth: half a Dial")
        #expect(later, "0.5 s: 10, a Dial")
        #expect(cheaper, "cheaper methods still fit")
    }

    @Test("other methods: 40 at once, 20 a second after; at most maxClients senders remembered")
    func otherMethodsAndClients() {
        var limit = ClientRateLimit(maxClients: 3)
        let burst = (0..<41).filter { _ in limit.allow("a", method: "Hold", at: 0) }.count
        let second = (0..<21).filter { _ in limit.allow("a", method: "Hold", at: 1) }.count
        #expect(burst == 40 && second == 20)
        let others = ["b", "c", "d"].map { limit.allow($0, method: "Hold", at: 2) }
        #expect(others == [true, true, true])
        // "a" was heard from least recently and is forgotten: it starts with a full bucket again.
        let again = (0..<40).filter { _ in limit.allow("a", method: "Hold", at: 2) }.count
        #expect(again == 40)
    }

    @Test("signatures of values and the interfaces' shapes")
    func signatures() {
        #expect(BusValue.strings([]).signature == "as")
        let line = BusValue.structure([.string("u"), .int64(1), .uint32(2), .bool(true)])
        #expect(line.signature == "(sxub)")
        #expect(BusValue.array(elementSignature: "(sxub)", [line]).signature == "a(sxub)")
        #expect(ParleyBus.call.properties.map(\.name).count == 11)
        #expect(ParleyBus.calls.method(named: "Recents")?.outputs.first?.signature == ParleyBus.recentsSignature)
    }
}
