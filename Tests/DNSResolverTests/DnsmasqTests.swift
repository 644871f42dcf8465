import DNSResolver
import Foundation
import Testing

/// The records of example.test that dnsmasq serves: NAPTR (TCP before UDP) → SRV (two priorities over UDP) → A.
private let zone = [
    "--naptr-record=example.test,10,10,s,SIP+D2T,,_sip._tcp.example.test",
    "--naptr-record=example.test,20,10,s,SIP+D2U,,_sip._udp.example.test",
    "--naptr-record=example.test,5,10,s,SIP+D2S,,_sip._sctp.example.test",
    "--srv-host=_sip._tcp.example.test,proxy-tcp.example.test,5070,10,10",
    "--srv-host=_sip._udp.example.test,primary.example.test,5060,10,10",
    "--srv-host=_sip._udp.example.test,backup.example.test,5062,20,10",
    "--host-record=proxy-tcp.example.test,192.0.2.20",
    "--host-record=primary.example.test,192.0.2.1,2001:db8::1",
    "--host-record=backup.example.test,192.0.2.2",
    // Only addresses: the A fallback.
    "--host-record=plain.example.test,192.0.2.30",
    // SRV without NAPTR.
    "--srv-host=_sip._udp.srvonly.example.test,primary.example.test,5080,10,10",
    // An alias c-ares follows inside one answer.
    "--cname=alias.example.test,plain.example.test",
]

@Suite("DNSResolver against dnsmasq on loopback", .serialized)
struct DnsmasqTests {
    private func harness(_ server: DNSServerProcess, timeout: Duration = .seconds(1)) throws -> ResolverHarness {
        try ResolverHarness(DNSResolverConfiguration(servers: [server.address], timeout: timeout, tries: 2))
    }

    @Test("NAPTR → SRV → A: TCP before UDP by NAPTR order, SCTP discarded, UDP targets by SRV priority")
    func naptrToAddresses() throws {
        let dnsmasq = try DNSServerProcess.dnsmasq(zone)
        defer { dnsmasq.stop() }
        let resolver = try harness(dnsmasq)
        defer { resolver.shutdown() }
        let started = ContinuousClock.now
        let result = try resolver.locate(SIPServerQuery(host: "example.test"))
        let elapsed = ContinuousClock.now - started
        #expect(result == .success([
            SIPServerTarget(.tcp, "192.0.2.20", 5070),
            SIPServerTarget(.udp, "192.0.2.1", 5060), SIPServerTarget(.udp, "2001:db8::1", 5060),
            SIPServerTarget(.udp, "192.0.2.2", 5062),
        ]), "\(dnsmasq.output)")
        print("locate example.test through dnsmasq (NAPTR, 3 SRV, 6 A/AAAA): \(elapsed)")
        // The same again: every record from the cache. Only the two empty AAAA answers are asked again: dnsmasq
        // sends them without an SOA, and RFC 2308 §5 says such a negative answer is not cached.
        let sent = resolver.statistics.queriesSent
        let again = ContinuousClock.now
        #expect(try resolver.locate(SIPServerQuery(host: "example.test")) == result)
        print("the same with the cache: \(ContinuousClock.now - again)")
        #expect(resolver.statistics.queriesSent == sent + 2)
        #expect(resolver.statistics.cacheHits == 7)
    }

    @Test("SRV without NAPTR, an explicit transport, and the A fallback with the default port; a CNAME followed")
    func fallbacks() throws {
        let dnsmasq = try DNSServerProcess.dnsmasq(zone)
        defer { dnsmasq.stop() }
        let resolver = try harness(dnsmasq)
        defer { resolver.shutdown() }
        let options = SIPLocationOptions(addressFamilies: .ipv4Only)
        #expect(try resolver.locate(SIPServerQuery(host: "srvonly.example.test"), options: options)
            == .success([SIPServerTarget(.udp, "192.0.2.1", 5080)]))
        #expect(try resolver.locate(SIPServerQuery(host: "plain.example.test"), options: options)
            == .success([SIPServerTarget(.udp, "192.0.2.30", 5060)]))
        #expect(try resolver.locate(SIPServerQuery(host: "plain.example.test", transport: .tcp), options: options)
            == .success([SIPServerTarget(.tcp, "192.0.2.30", 5060)]))
        #expect(try resolver.locate(SIPServerQuery(host: "alias.example.test", port: 5090), options: options)
            == .success([SIPServerTarget(.udp, "192.0.2.30", 5090)]))
    }

    @Test("a name that does not exist: the error names every name and type asked, NXDOMAIN each")
    func nxdomain() throws {
        let dnsmasq = try DNSServerProcess.dnsmasq(zone)
        defer { dnsmasq.stop() }
        let resolver = try harness(dnsmasq)
        defer { resolver.shutdown() }
        let result = try resolver.locate(SIPServerQuery(host: "nosuch.example.test"))
        guard case .failure(let error) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        let text = error.description
        print(text)
        #expect(text.hasPrefix("cannot locate a SIP server for sip:nosuch.example.test: "))
        for part in [
            "NAPTR nosuch.example.test: no such name (NXDOMAIN)",
            "SRV _sip._udp.nosuch.example.test: no such name (NXDOMAIN)",
            "A nosuch.example.test: no such name (NXDOMAIN)", "AAAA nosuch.example.test: no such name (NXDOMAIN)",
        ] {
            #expect(text.contains(part), "\(part)")
        }
    }

    @Test("answers are kept for their TTL: with dnsmasq stopped the same location comes from the cache; after the TTL it is asked again")
    func ttlCache() throws {
        let dnsmasq = try DNSServerProcess.dnsmasq(zone)
        let resolver = try harness(dnsmasq, timeout: .milliseconds(200))
        defer { resolver.shutdown() }
        let query = SIPServerQuery(host: "primary.example.test", port: 5060)
        let first = try resolver.locate(query)
        #expect(first == .success([SIPServerTarget(.udp, "192.0.2.1", 5060), SIPServerTarget(.udp, "2001:db8::1", 5060)]))
        #expect(resolver.statistics.queriesSent == 2)  // A and AAAA
        dnsmasq.stop()
        resolver.clock.advance(by: .seconds(59))
        #expect(try resolver.locate(query) == first)
        #expect(resolver.statistics.queriesSent == 2)
        #expect(resolver.statistics.cacheHits == 2)
        // dnsmasq gave a TTL of 60 s: two seconds later the cache is stale and the (dead) server is asked.
        resolver.clock.advance(by: .seconds(2))
        let stale = try resolver.locate(query)
        #expect(resolver.statistics.queriesSent == 4)
        guard case .failure(.lookupsFailed(_, let failures)) = stale else {
            Issue.record("expected a failure, got \(stale)")
            return
        }
        #expect(failures.allSatisfy { $0.reason == .connectionRefused || $0.reason == .timedOut }, "\(failures)")
    }
}
