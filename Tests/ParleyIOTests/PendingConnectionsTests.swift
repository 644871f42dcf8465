import Testing

@testable import ParleyIO

@Suite("The pending budget: connections still saying hello")
struct PendingConnectionsTests {
    private let one = StreamSource(IPAddress("127.0.0.1")!.socketAddress(port: 1))
    private let two = StreamSource(IPAddress("127.0.0.2")!.socketAddress(port: 1))
    private let three = StreamSource(IPAddress("127.0.0.3")!.socketAddress(port: 1))

    @Test func sourcesAreAddressesIPv6PrefixesOrLocal() {
        #expect(one == StreamSource(IPAddress("127.0.0.1")!.socketAddress(port: 9)))
        #expect(one != two)
        #expect(StreamSource(IPAddress("2001:db8:1:2::1")!.socketAddress(port: 1))
            == StreamSource(IPAddress("2001:db8:1:2:ffff::9")!.socketAddress(port: 2)))
        #expect(StreamSource(IPAddress("2001:db8:1:2::1")!.socketAddress(port: 1)).description == "2001:db8:1:2::/64")
        #expect(StreamSource(nil) == .local)
        #expect(one.description == "127.0.0.1")
    }

    @Test("under both bounds nobody is displaced; at the per-source bound the source's oldest silent one is")
    func perSourceBound() {
        var pending = PendingConnections(maxTotal: 10, maxPerSource: 3)
        for id in StreamClientID(1)...3 {
            #expect(pending.displacedForNewcomer(from: one) == nil)
            pending.add(id, from: one)
        }
        #expect(pending.displacedForNewcomer(from: two) == nil)
        #expect(pending.displacedForNewcomer(from: one) == 1)
        pending.heard(1)
        #expect(pending.isHeard(1))
        #expect(pending.displacedForNewcomer(from: one) == 2)  // 1 spoke: the oldest silent one goes first
        pending.heard(2)
        pending.heard(3)
        #expect(pending.displacedForNewcomer(from: one) == 1)  // all spoke: the oldest
        pending.remove(1)
        #expect(pending.count == 2)
        #expect(pending.count(from: one) == 2)
        #expect(pending.displacedForNewcomer(from: one) == nil)
    }

    @Test("at the total bound the newcomer displaces from the source holding the most, silent ones first")
    func totalBound() {
        var pending = PendingConnections(maxTotal: 5, maxPerSource: 4)
        pending.add(1, from: two)
        for id in StreamClientID(2)...3 { pending.add(id, from: three) }
        for id in StreamClientID(4)...5 { pending.add(id, from: one) }
        // 127.0.0.3 and 127.0.0.1 hold two each; 127.0.0.2's one is never taken while they hold more.
        #expect(pending.displacedForNewcomer(from: two) == 2)
        pending.heard(2)
        pending.heard(3)
        #expect(pending.displacedForNewcomer(from: two) == 4)
        pending.remove(4)
        pending.add(6, from: one)
        pending.remove(5)
        pending.remove(6)
        #expect(pending.displacedForNewcomer(from: one) == nil)
        pending.removeAll()
        #expect(pending.count == 0)
        #expect(!pending.contains(1))
    }
}
