import DNSResolver
import ParleyTestSupport
import Testing

/// An answer in a test's table: records, or why there are none.
private enum TestAnswer {
    case success(DNSRecords)
    case failure(DNSFailureReason)
}

/// Runs the procedure against a table of answers (a question missing from it is NXDOMAIN); returns the batches of
/// questions it asked and its result.
private func run(
    _ query: SIPServerQuery, options: SIPLocationOptions = SIPLocationOptions(),
    _ table: [DNSQuestion: TestAnswer], seed: UInt64 = 7
) -> (asked: [[DNSQuestion]], result: Result<[SIPServerTarget], SIPLocationError>) {
    var random = SeededGenerator(seed: seed)
    var location = SIPServerLocation(query, options: options)
    var asked: [[DNSQuestion]] = []
    var queue: [DNSQuestion] = []
    var step = location.start()
    while true {
        switch step {
        case .finished(let result):
            return (asked, result)
        case .ask(let questions):
            asked.append(questions)
            queue += questions
        case .wait:
            break
        }
        let question = queue.removeFirst()
        let answer: Result<DNSRecords, DNSLookupFailure>
        switch table[question] ?? .failure(.nameNotFound) {
        case .success(let records): answer = .success(records)
        case .failure(let reason): answer = .failure(DNSLookupFailure(question, reason))
        }
        step = location.receive(answer, for: question, random: &random)
    }
}

private func naptr(_ order: UInt16, _ preference: UInt16, _ service: String, _ replacement: String, flags: String = "s")
    -> NAPTRRecord
{
    NAPTRRecord(order: order, preference: preference, flags: flags, service: service, replacement: replacement)
}

private func srv(_ priority: UInt16, _ weight: UInt16, _ port: UInt16, _ target: String) -> SRVRecord {
    SRVRecord(priority: priority, weight: weight, port: port, target: target)
}

@Suite("RFC 3263 §4 server location, as a pure procedure")
struct SIPServerLocationTests {
    @Test("a numeric host is the target at once: the URI's port or the transport's default, no DNS")
    func numericHosts() {
        let cases: [(SIPServerQuery, SIPServerTarget)] = [
            (SIPServerQuery(host: "192.0.2.1"), SIPServerTarget(.udp, "192.0.2.1", 5060)),
            (SIPServerQuery(host: "192.0.2.1", secure: true), SIPServerTarget(.tls, "192.0.2.1", 5061)),
            (SIPServerQuery(host: "192.0.2.1", port: 5070, transport: .tcp), SIPServerTarget(.tcp, "192.0.2.1", 5070)),
            (SIPServerQuery(host: "[2001:db8::1]"), SIPServerTarget(.udp, "2001:db8::1", 5060)),
            (SIPServerQuery(host: "2001:DB8:0::1", port: 5080, secure: true), SIPServerTarget(.tls, "2001:db8::1", 5080)),
            (SIPServerQuery(host: "192.0.2.1", transport: .tcp, secure: true), SIPServerTarget(.tls, "192.0.2.1", 5061)),
        ]
        for (query, target) in cases {
            let (asked, result) = run(query, [:])
            #expect(asked.isEmpty, "\(query)")
            #expect(result == .success([target]), "\(query)")
        }
    }

    @Test("a port in the URI: A and AAAA of the host only, at that port")
    func explicitPort() {
        let (asked, result) = run(
            SIPServerQuery(host: "Proxy.Example.com", port: 5070),
            [
                DNSQuestion("proxy.example.com", .a): .success(.addresses(["192.0.2.7", "192.0.2.8"])),
                DNSQuestion("proxy.example.com", .aaaa): .success(.addresses(["2001:db8::7"])),
            ])
        #expect(asked == [[DNSQuestion("proxy.example.com", .a), DNSQuestion("proxy.example.com", .aaaa)]])
        #expect(result == .success([
            SIPServerTarget(.udp, "192.0.2.7", 5070), SIPServerTarget(.udp, "192.0.2.8", 5070),
            SIPServerTarget(.udp, "2001:db8::7", 5070),
        ]))
    }

    @Test("NAPTR by order then preference, only transports we run and flag s, then SRV, then addresses")
    func naptrThenSRV() {
        let (asked, result) = run(
            SIPServerQuery(host: "example.com"),
            [
                DNSQuestion("example.com", .naptr): .success(.naptr([
                    naptr(100, 10, "SIP+D2U", "_sip._udp.example.com"),
                    naptr(90, 50, "SIP+D2T", "_sip._tcp.example.com"),
                    naptr(50, 50, "SIPS+D2T", "_sips._tcp.example.com"),
                    naptr(90, 10, "SIP+D2S", "_sip._sctp.example.com"),  // SCTP: not ours
                    naptr(10, 10, "SIP+D2U", "_other._udp.example.com", flags: "a"),  // not an SRV pointer
                ])),
                DNSQuestion("_sips._tcp.example.com", .srv): .success(.srv([srv(0, 0, 5061, "tls.example.com")])),
                DNSQuestion("_sip._tcp.example.com", .srv): .success(.srv([srv(0, 0, 5060, "tcp.example.com")])),
                DNSQuestion("_sip._udp.example.com", .srv): .success(.srv([srv(0, 0, 5060, "udp.example.com")])),
                DNSQuestion("tls.example.com", .a): .success(.addresses(["192.0.2.1"])),
                DNSQuestion("tcp.example.com", .a): .success(.addresses(["192.0.2.2"])),
                DNSQuestion("udp.example.com", .a): .success(.addresses(["192.0.2.3"])),
            ])
        #expect(asked.count == 3)
        #expect(asked[0] == [DNSQuestion("example.com", .naptr)])
        #expect(asked[1] == ["_sips._tcp.example.com", "_sip._tcp.example.com", "_sip._udp.example.com"].map { DNSQuestion($0, .srv) })
        #expect(result == .success([
            SIPServerTarget(.tls, "192.0.2.1", 5061), SIPServerTarget(.tcp, "192.0.2.2", 5060),
            SIPServerTarget(.udp, "192.0.2.3", 5060),
        ]))
    }

    @Test("a transport we do not run here is discarded from NAPTR; a sips URI keeps only SIPS+D2T")
    func naptrFiltering() {
        let table: [DNSQuestion: TestAnswer] = [
            DNSQuestion("example.com", .naptr): .success(.naptr([
                naptr(50, 50, "SIPS+D2T", "_sips._tcp.example.com"), naptr(90, 50, "SIP+D2U", "_sip._udp.example.com"),
            ])),
            DNSQuestion("_sips._tcp.example.com", .srv): .success(.srv([srv(0, 0, 5061, "tls.example.com")])),
            DNSQuestion("_sip._udp.example.com", .srv): .success(.srv([srv(0, 0, 5060, "udp.example.com")])),
            DNSQuestion("tls.example.com", .a): .success(.addresses(["192.0.2.1"])),
            DNSQuestion("udp.example.com", .a): .success(.addresses(["192.0.2.3"])),
        ]
        let noTLS = run(SIPServerQuery(host: "example.com"), options: SIPLocationOptions(transports: [.udp, .tcp]), table)
        #expect(noTLS.result == .success([SIPServerTarget(.udp, "192.0.2.3", 5060)]))
        let secure = run(SIPServerQuery(host: "example.com", secure: true), table)
        #expect(secure.result == .success([SIPServerTarget(.tls, "192.0.2.1", 5061)]))
    }

    @Test("no NAPTR: SRV for each transport in the options' order (only _sips for sips:)")
    func srvFallback() {
        let table: [DNSQuestion: TestAnswer] = [
            DNSQuestion("example.com", .naptr): .failure(.noRecords),
            DNSQuestion("_sip._udp.example.com", .srv): .success(.srv([srv(0, 0, 5062, "sip.example.com")])),
            DNSQuestion("sip.example.com", .a): .success(.addresses(["192.0.2.9"])),
        ]
        let plain = run(SIPServerQuery(host: "example.com"), table)
        #expect(plain.asked[1] == ["_sips._tcp.example.com", "_sip._tcp.example.com", "_sip._udp.example.com"].map { DNSQuestion($0, .srv) })
        #expect(plain.result == .success([SIPServerTarget(.udp, "192.0.2.9", 5062)]))
        let secure = run(SIPServerQuery(host: "example.com", secure: true), table)
        #expect(secure.asked[1] == [DNSQuestion("_sips._tcp.example.com", .srv)])
    }

    @Test("no SRV anywhere: the domain's own addresses at the default port (UDP for sip:, TLS for sips:)")
    func addressFallback() {
        let table: [DNSQuestion: TestAnswer] = [
            DNSQuestion("example.com", .a): .success(.addresses(["192.0.2.5"])),
            DNSQuestion("example.com", .aaaa): .failure(.noRecords),
        ]
        #expect(run(SIPServerQuery(host: "example.com"), table).result == .success([SIPServerTarget(.udp, "192.0.2.5", 5060)]))
        #expect(run(SIPServerQuery(host: "example.com", secure: true), table).result == .success([SIPServerTarget(.tls, "192.0.2.5", 5061)]))
        // A transport parameter: SRV for that transport only, then the default port of that transport.
        let tcp = run(SIPServerQuery(host: "example.com", transport: .tcp), table)
        #expect(tcp.asked[0] == [DNSQuestion("_sip._tcp.example.com", .srv)])
        #expect(tcp.result == .success([SIPServerTarget(.tcp, "192.0.2.5", 5060)]))
    }

    @Test("SRV: lower priority first; a target of . means no service; numeric targets need no lookup")
    func srvPriorities() {
        let (_, result) = run(
            SIPServerQuery(host: "example.com", transport: .udp),
            [
                DNSQuestion("_sip._udp.example.com", .srv): .success(.srv([
                    srv(20, 0, 5060, "backup.example.com"), srv(10, 0, 5060, "192.0.2.1"), srv(30, 0, 5060, "."),
                ])),
                DNSQuestion("backup.example.com", .a): .success(.addresses(["192.0.2.2"])),
            ])
        #expect(result == .success([SIPServerTarget(.udp, "192.0.2.1", 5060), SIPServerTarget(.udp, "192.0.2.2", 5060)]))
    }

    @Test("SRV weights: a seed gives one order; over many seeds the first pick follows the weights (RFC 2782)")
    func srvWeights() {
        let records = [srv(10, 60, 5060, "a.example.com"), srv(10, 30, 5060, "b.example.com"), srv(10, 10, 5060, "c.example.com")]
        var table: [DNSQuestion: TestAnswer] = [
            DNSQuestion("_sip._udp.example.com", .srv): .success(.srv(records)),
        ]
        for (index, host) in ["a", "b", "c"].enumerated() {
            table[DNSQuestion("\(host).example.com", .a)] = .success(.addresses(["192.0.2.\(index + 1)"]))
        }
        let query = SIPServerQuery(host: "example.com", transport: .udp)
        #expect(run(query, table, seed: 42).result == run(query, table, seed: 42).result)
        var firsts: [String: Int] = [:]
        for seed in 0..<3000 {
            guard case .success(let targets) = run(query, table, seed: UInt64(seed)).result else {
                Issue.record("no targets")
                return
            }
            #expect(targets.count == 3)
            firsts[targets[0].address, default: 0] += 1
        }
        // Expected 1800, 900, 300 of 3000.
        #expect((1650...1950).contains(firsts["192.0.2.1"] ?? 0), "\(firsts)")
        #expect((780...1020).contains(firsts["192.0.2.2"] ?? 0), "\(firsts)")
        #expect((220...380).contains(firsts["192.0.2.3"] ?? 0), "\(firsts)")
    }

    @Test("IPv6: AAAA first when asked, IPv6 only, and IPv6 targets from SRV hosts")
    func ipv6() {
        let table: [DNSQuestion: TestAnswer] = [
            DNSQuestion("example.com", .a): .success(.addresses(["192.0.2.5"])),
            DNSQuestion("example.com", .aaaa): .success(.addresses(["2001:db8::5"])),
        ]
        let query = SIPServerQuery(host: "example.com", port: 5060)
        #expect(run(query, options: SIPLocationOptions(addressFamilies: .ipv6First), table).result == .success([
            SIPServerTarget(.udp, "2001:db8::5", 5060), SIPServerTarget(.udp, "192.0.2.5", 5060),
        ]))
        let only = run(query, options: SIPLocationOptions(addressFamilies: .ipv6Only), table)
        #expect(only.asked == [[DNSQuestion("example.com", .aaaa)]])
        #expect(only.result == .success([SIPServerTarget(.udp, "2001:db8::5", 5060)]))
    }

    @Test("a failure that is not 'nothing there' ends the location, naming every failed name and type")
    func failures() {
        let query = SIPServerQuery(host: "example.com")
        let timedOut = run(query, [DNSQuestion("example.com", .naptr): .failure(.timedOut)])
        #expect(timedOut.asked.count == 1)
        #expect(timedOut.result == .failure(.lookupsFailed(query, [DNSLookupFailure(DNSQuestion("example.com", .naptr), .timedOut)])))
        let nothing = run(query, [:])
        guard case .failure(let error) = nothing.result, case .lookupsFailed(_, let failures) = error else {
            Issue.record("expected a failure, got \(nothing.result)")
            return
        }
        #expect(failures.map(\.question) == [
            DNSQuestion("example.com", .naptr), DNSQuestion("_sips._tcp.example.com", .srv),
            DNSQuestion("_sip._tcp.example.com", .srv), DNSQuestion("_sip._udp.example.com", .srv),
            DNSQuestion("example.com", .a), DNSQuestion("example.com", .aaaa),
        ])
        #expect(error.description.contains("SRV _sip._udp.example.com: no such name (NXDOMAIN)"))
        // A hard failure of one SRV name with nothing found elsewhere: no A fallback (we could not find out).
        let srvFailed = run(query, [DNSQuestion("_sip._tcp.example.com", .srv): .failure(.serverError("SERVFAIL"))])
        #expect(srvFailed.asked.count == 2)
    }

    @Test("transports the URI demands that cannot be had are refused without DNS")
    func unsupported() {
        let sipsOverUDP = SIPServerQuery(host: "example.com", transport: .udp, secure: true)
        #expect(run(sipsOverUDP, [:]).result == .failure(.unsupportedTransport(sipsOverUDP)))
        let tlsNotRun = SIPServerQuery(host: "192.0.2.1", transport: .tls)
        #expect(run(tlsNotRun, options: SIPLocationOptions(transports: [.udp]), [:]).result == .failure(.unsupportedTransport(tlsNotRun)))
    }

    @Test("at most maxHosts distinct SRV hosts are looked up; duplicate targets appear once")
    func hostCap() {
        let records = (0..<10).map { srv(UInt16($0), 0, 5060, "h\($0).example.com") } + [srv(99, 0, 5060, "h0.example.com")]
        var table: [DNSQuestion: TestAnswer] = [
            DNSQuestion("_sip._udp.example.com", .srv): .success(.srv(records)),
        ]
        for index in 0..<10 { table[DNSQuestion("h\(index).example.com", .a)] = .success(.addresses(["192.0.2.\(index)"])) }
        let (asked, result) = run(
            SIPServerQuery(host: "example.com", transport: .udp),
            options: SIPLocationOptions(addressFamilies: .ipv4Only, maxHosts: 3), table)
        #expect(asked[1] == ["h0", "h1", "h2"].map { DNSQuestion("\($0).example.com", .a) })
        #expect(result == .success((0..<3).map { SIPServerTarget(.udp, "192.0.2.\($0)", 5060) }))
    }
}
