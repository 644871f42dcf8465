import DNSResolver
import Foundation
import ParleyIO
import ParleyTestSupport
import Testing

@Suite("DNSResolver: configuration, loop shutdown, latency", .serialized)
struct ResolverLifecycleTests {
    @Test("servers are numeric addresses with optional ports; anything else, and bounds out of range, are refused")
    func configuration() throws {
        for good in ["127.0.0.1", "127.0.0.1:5353", "[::1]:5353", "::1", "[2001:db8::53]"] {
            let harness = try ResolverHarness(DNSResolverConfiguration(servers: [good]))
            harness.shutdown()
        }
        for bad in ["dns.example.com", "127.0.0.1:0", "127.0.0.1:99999", "[::1", "[::1]x", ""] {
            #expect(throws: DNSResolverError.badServer(bad)) { try ResolverHarness(DNSResolverConfiguration(servers: [bad])) }
        }
        #expect(throws: DNSResolverError.badSetting("tries must be at least 1")) {
            try ResolverHarness(DNSResolverConfiguration(servers: ["127.0.0.1"], tries: 0))
        }
        #expect(DNSResolverError.badServer("x").description.hasPrefix("DNS server \"x\" is not a numeric address"))
    }

    @Test("a name that cannot be asked fails at once, without a query")
    func badName() throws {
        let harness = try ResolverHarness(DNSResolverConfiguration(servers: ["127.0.0.1:9"]))
        defer { harness.shutdown() }
        let long = String(repeating: "a", count: 64) + ".example.test"
        for name in ["", long, "two..dots.example.test", "sp ace.example.test"] {
            #expect(try harness.lookup(DNSQuestion(name, .a)).failureText.hasSuffix("not a valid DNS name"), "\(name)")
        }
        #expect(harness.statistics.queriesSent == 0)
    }

    @Test("the loop shutting down with a lookup in flight destroys c-ares quietly: no completion, no crash")
    func loopShutdown() throws {
        let server = try DNSServerProcess.badServer()
        defer { server.stop() }
        let harness = try ResolverHarness(DNSResolverConfiguration(servers: [server.address], timeout: .seconds(2)))
        let pending = harness.startLookup(DNSQuestion("silent.example.test", .a))
        #expect(harness.onLoop { $0.lookupsInFlight } == 1)
        harness.loop.shutdown()
        #expect(pending.first(within: .milliseconds(200)) == nil)
        harness.shutdown()
    }

    @Test("latency against dnsmasq: one A lookup, uncached and cached (printed; loose bounds)")
    func latency() throws {
        let dnsmasq = try DNSServerProcess.dnsmasq(["--host-record=primary.example.test,192.0.2.1"])
        defer { dnsmasq.stop() }
        let harness = try ResolverHarness(DNSResolverConfiguration(servers: [dnsmasq.address]))
        defer { harness.shutdown() }
        let question = DNSQuestion("primary.example.test", .a)
        // Timed on the loop itself, from the call to the completion, so the test thread's hand-overs are not counted.
        func measure(flushing: Bool, rounds: Int) -> [Duration] {
            (0..<rounds).map { _ in
                let recorder = EventRecorder<Duration>()
                _ = harness.onLoop { resolver in
                    if flushing { resolver.flushCache() }
                    let started = ContinuousClock.now
                    resolver.lookup(question) { _ in recorder.record(ContinuousClock.now - started) }
                }
                return recorder.first() ?? .seconds(5)
            }.sorted()
        }
        let uncached = measure(flushing: true, rounds: 200)
        let cached = measure(flushing: false, rounds: 200)
        let text = { (values: [Duration]) in
            "median \(values[values.count / 2].formatted(.units(allowed: [.microseconds]))), "
                + "p99 \(values[values.count * 99 / 100].formatted(.units(allowed: [.microseconds])))"
        }
        print("A lookup through c-ares to dnsmasq: \(text(uncached)); from the cache: \(text(cached))")
        #expect(uncached[uncached.count / 2] < .milliseconds(50))
        #expect(cached[cached.count / 2] < uncached[uncached.count / 2])
    }
}
