import DNSResolver
import Foundation
import ParleyIO
import ParleyTestSupport
import Testing

/// The resolver against Tests/Interop/dns/bad-dns-server.py, which misbehaves by the first label of the name.
@Suite("DNSResolver against a DNS server that misbehaves", .serialized)
struct BadServerTests {
    private func harness(_ server: DNSServerProcess, timeout: Duration = .milliseconds(300), tries: Int = 2,
                         inFlight: Int = 64) throws -> ResolverHarness {
        try ResolverHarness(DNSResolverConfiguration(
            servers: [server.address], timeout: timeout, tries: tries, maxLookupsInFlight: inFlight))
    }

    @Test("an answer 2 s late blocks nothing: a loop timer fires on time and another lookup is answered meanwhile")
    func slowServerDoesNotBlock() throws {
        let server = try DNSServerProcess.badServer()
        defer { server.stop() }
        let resolver = try harness(server, timeout: .seconds(4), tries: 1)
        defer { resolver.shutdown() }
        let started = ContinuousClock.now
        let slow = resolver.startLookup(DNSQuestion("slow.example.test", .a))
        let timer = EventRecorder<Duration>()
        let loop = resolver.loop
        loop.execute { loop.schedule(after: .milliseconds(100)) { timer.record(ContinuousClock.now - started) } }
        let fast = try resolver.lookup(DNSQuestion("good.example.test", .a))
        let fastElapsed = ContinuousClock.now - started
        #expect(fast == .success(DNSAnswer(records: .addresses(["192.0.2.10"]), ttl: 60)))
        let fired = try #require(timer.first())
        #expect(slow.all.isEmpty, "the slow answer is still pending")
        let slowAnswer = try #require(slow.first(within: .seconds(4)))
        let slowElapsed = ContinuousClock.now - started
        print("good answer after \(fastElapsed), 100 ms timer after \(fired), slow answer after \(slowElapsed)")
        // Bounds loose enough for a busy machine, and far below the 2 s a blocked loop would show.
        #expect(fastElapsed < .milliseconds(800))
        #expect(fired >= .milliseconds(100) && fired < .milliseconds(800))
        #expect(slowElapsed >= .milliseconds(1900))
        #expect(slowAnswer == .success(DNSAnswer(records: .addresses(["192.0.2.10"]), ttl: 60)))
    }

    @Test("a server that never answers: timedOut after tries × timeout (c-ares doubles the timeout each round)")
    func silentServer() throws {
        let server = try DNSServerProcess.badServer()
        defer { server.stop() }
        let resolver = try harness(server)
        defer { resolver.shutdown() }
        let started = ContinuousClock.now
        let result = try resolver.locate(SIPServerQuery(host: "silent.example.test"))
        let elapsed = ContinuousClock.now - started
        print("silent server: \(result) after \(elapsed)")
        #expect(result == .failure(.lookupsFailed(
            SIPServerQuery(host: "silent.example.test"),
            [DNSLookupFailure(DNSQuestion("silent.example.test", .naptr), .timedOut)])))
        #expect(elapsed >= .milliseconds(850) && elapsed < .seconds(3))
        #expect(resolver.onLoop { $0.lookupsInFlight } == 0)
    }

    @Test("beyond maxLookupsInFlight a lookup fails at once; an identical question shares the query in flight")
    func boundInFlight() throws {
        let server = try DNSServerProcess.badServer()
        defer { server.stop() }
        let resolver = try harness(server, inFlight: 2)
        defer { resolver.shutdown() }
        let first = resolver.startLookup(DNSQuestion("silent.example.test", .a))
        let second = resolver.startLookup(DNSQuestion("silent.example.test", .aaaa))
        let shared = resolver.startLookup(DNSQuestion("SILENT.example.test.", .a))
        let started = ContinuousClock.now
        let third = try resolver.lookup(DNSQuestion("good.example.test", .a))
        #expect(ContinuousClock.now - started < .milliseconds(100))
        #expect(third == .failure(DNSLookupFailure(DNSQuestion("good.example.test", .a), .tooManyLookupsInFlight(limit: 2))))
        #expect(third.failureText == "A good.example.test: not sent: 2 lookups already in flight")
        for recorder in [first, second, shared] {
            guard case .failure(let failure) = try #require(recorder.first(within: .seconds(3))) else {
                Issue.record("expected a timeout")
                continue
            }
            #expect(failure.reason == .timedOut)
        }
        let statistics = resolver.statistics
        #expect(statistics.sharedLookups == 1 && statistics.refusedLookups == 1 && statistics.queriesSent == 2)
        // Room again once they ended.
        #expect(try resolver.lookup(DNSQuestion("good.example.test", .a)).isSuccess)
    }

    @Test("a truncated answer and a malformed one are clear errors naming the record")
    func malformed() throws {
        let server = try DNSServerProcess.badServer()
        defer { server.stop() }
        let resolver = try harness(server)
        defer { resolver.shutdown() }
        let truncated = try resolver.lookup(DNSQuestion("truncated.example.test", .srv))
        print(truncated.failureText)
        #expect(truncated.failureText.hasPrefix("SRV truncated.example.test: malformed answer: answer record 2 of 2"))
        let garbage = try resolver.lookup(DNSQuestion("garbage.example.test", .srv))
        print(garbage.failureText)
        #expect(garbage.failureText == "SRV garbage.example.test: malformed answer: answer record 1 of 1 has a bad name")
    }

    @Test("1,000 SRV records (over TCP after a truncated UDP answer): refused whole, more than the 64 taken")
    func tooManyRecords() throws {
        let server = try DNSServerProcess.badServer()
        defer { server.stop() }
        let resolver = try harness(server, timeout: .seconds(1))
        defer { resolver.shutdown() }
        let started = ContinuousClock.now
        let result = try resolver.locate(SIPServerQuery(host: "many.example.test", transport: .udp))
        print("1,000 SRV records: \(result) after \(ContinuousClock.now - started)")
        #expect(result == .failure(.lookupsFailed(
            SIPServerQuery(host: "many.example.test", transport: .udp),
            [DNSLookupFailure(DNSQuestion("_sip._udp.many.example.test", .srv), .tooManyRecords(count: 1000, limit: 64))])))
    }

    @Test("a CNAME loop ends with an error that shows the loop")
    func cnameLoop() throws {
        let server = try DNSServerProcess.badServer()
        defer { server.stop() }
        let resolver = try harness(server)
        defer { resolver.shutdown() }
        let result = try resolver.lookup(DNSQuestion("loop.example.test", .a))
        #expect(result.failureText == "A loop.example.test: CNAME loop: loop.example.test → b.loop.example.test → loop.example.test")
        let located = try resolver.locate(SIPServerQuery(host: "loop.example.test", port: 5060))
        guard case .failure(let error) = located else {
            Issue.record("expected a failure, got \(located)")
            return
        }
        #expect(error.description.contains("CNAME loop"))
    }

    @Test("close() fails the lookups in flight with resolverClosed, and later ones too")
    func close() throws {
        let server = try DNSServerProcess.badServer()
        defer { server.stop() }
        let resolver = try harness(server, timeout: .seconds(2))
        defer { resolver.shutdown() }
        let pending = resolver.startLookup(DNSQuestion("silent.example.test", .a))
        resolver.onLoop { $0.close() }
        #expect(pending.first()?.failureText == "A silent.example.test: the resolver was closed")
        #expect(try resolver.lookup(DNSQuestion("good.example.test", .a)).failureText == "A good.example.test: the resolver was closed")
    }
}

extension Result where Success == DNSAnswer, Failure == DNSLookupFailure {
    /// The failure's sentence, or "success".
    var failureText: String {
        switch self {
        case .success: "success"
        case .failure(let failure): failure.description
        }
    }

    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
