import CallHistory
import ControlProtocol
import ConversationKit
import Foundation
import SIPMessages
import SIPTransport
import Synchronization
import Testing

@testable import ParleyEngine

@Suite("Source rate guard: pike-style density check and ban")
struct SourceRateGuardTests {
    let flooder = SourceKey(host: "192.0.2.1")
    let other = SourceKey(host: "192.0.2.2")

    @Test("up to the limit in a second is admitted; the next is refused and begins a ban; the ban drops, then ends")
    func banCycle() {
        var guarded = SourceRateGuard(limit: 3, ban: .seconds(10))
        let first = (0..<3).map { guarded.check(flooder, at: .milliseconds(100 * $0)) }
        #expect(first == [.admit, .admit, .admit])
        #expect(guarded.check(flooder, at: .milliseconds(400)) == .refuse)
        #expect(guarded.bannedSources(at: .milliseconds(400)) == 1)
        // Banned: nothing, even in a later, quiet second.
        #expect(guarded.check(flooder, at: .seconds(2)) == .drop)
        #expect(guarded.check(other, at: .seconds(2)) == .admit, "another source is not touched")
        // The ban began at 0.4 s: over at 10.4 s, and counting starts afresh.
        #expect(guarded.check(flooder, at: .milliseconds(10_300)) == .drop)
        #expect(guarded.bannedSources(at: .milliseconds(10_400)) == 0)
        #expect(guarded.check(flooder, at: .milliseconds(10_500)) == .admit)
    }

    @Test("a source that keeps flooding while banned stays banned")
    func floodingExtendsTheBan() {
        var guarded = SourceRateGuard(limit: 2, ban: .seconds(5))
        for step in 0..<3 { _ = guarded.check(flooder, at: .milliseconds(step)) }
        // Every second for 20 s, five requests: over the limit each second.
        for second in 1...20 {
            for step in 0..<5 {
                #expect(guarded.check(flooder, at: .seconds(second) + .milliseconds(step)) == .drop, "second \(second)")
            }
        }
        // Quiet after 20 s: the last extension was at 20 s, so the ban ends at 25 s.
        #expect(guarded.check(flooder, at: .milliseconds(24_900)) == .drop)
        #expect(guarded.check(flooder, at: .seconds(26)) == .admit)
    }

    @Test("the count is per second: a steady rate at the limit is never refused")
    func steadyRate() {
        var guarded = SourceRateGuard(limit: 10, ban: .seconds(60))
        var verdicts: Set<SourceRateGuard.Verdict> = []
        for tick in 0..<600 { verdicts.insert(guarded.check(flooder, at: .milliseconds(100 * tick))) }
        #expect(verdicts == [.admit])
    }

    @Test("limit 0 admits everything")
    func noLimit() {
        var guarded = SourceRateGuard(limit: 0, ban: .seconds(60))
        #expect((0..<10_000).allSatisfy { _ in guarded.check(flooder, at: .zero) == .admit })
    }

    @Test("the table is bounded: beyond maxSources newcomers share one limit and one ban; quiet sources are swept away")
    func boundedTable() {
        var guarded = SourceRateGuard(limit: 2, ban: .seconds(60), maxSources: 2000)
        for index in 0..<2000 { _ = guarded.check(SourceKey(host: "10.0.\(index / 256).\(index % 256)"), at: .zero) }
        let late = SourceKey(host: "198.51.100.7"), later = SourceKey(host: "198.51.100.8")
        #expect(guarded.check(late, at: .milliseconds(10)) == .admit)
        #expect(guarded.check(later, at: .milliseconds(20)) == .admit, "newcomers count together while the table is full")
        #expect(guarded.check(late, at: .milliseconds(30)) == .refuse)
        #expect(guarded.check(SourceKey(host: "198.51.100.9"), at: .milliseconds(40)) == .drop, "and are banned together")
        #expect(guarded.check(SourceKey(host: "10.0.0.1"), at: .milliseconds(50)) == .admit, "tracked sources are not")
        // A second later the 2,000 are quiet: the sweep frees their entries and a newcomer is counted on its own.
        #expect(guarded.check(late, at: .seconds(2)) == .admit)
        #expect(guarded.check(late, at: .seconds(2) + .milliseconds(1)) == .admit)
        #expect(guarded.check(late, at: .seconds(2) + .milliseconds(2)) == .refuse)
    }

    @Test("IPv6 sources count by /64; IPv4 by address")
    func keys() {
        #expect(SourceKey(host: "2001:db8:1:2::1") == SourceKey(host: "2001:db8:1:2:ffff:1:2:3"))
        #expect(SourceKey(host: "2001:db8:1:2::1").description == "2001:db8:1:2::/64")
        #expect(SourceKey(host: "2001:db8:1:3::1") != SourceKey(host: "2001:db8:1:2::1"))
        #expect(SourceKey(host: "::1").description == "0:0:0:0::/64")
        #expect(SourceKey(host: "127.0.0.1") != SourceKey(host: "127.0.0.2"))
        #expect(SourceKey(host: "127.0.0.1").description == "127.0.0.1")
    }
}

@Suite("Engine: admission of new requests (stateless refusals, bans, limits)")
struct AdmissionTests {
    static let flooder = SIPPeerAddress(host: "192.0.2.66", port: 5062)

    /// A new INVITE from `source` with its own Call-ID and branch.
    static func invite(_ index: Int) -> String {
        PeerMessages.invite(callID: "flood-\(index)@peer", branch: "z9hG4bK-flood-\(index)")
    }

    @Test("beyond --max-requests-per-source: one stateless 503 (no 100 Trying, no transaction), then silence")
    func densityBan() throws {
        let harness = try EngineHarness { $0.maxRequestsPerSource = 5; $0.sourceBan = .seconds(30) }
        for index in 0..<5 { harness.deliver(Self.invite(index), body: PeerMessages.offer, from: Self.flooder) }
        #expect(harness.manager.conversations.count == 5)
        _ = harness.sent()
        harness.deliver(Self.invite(5), body: PeerMessages.offer, from: Self.flooder)
        let refusal = harness.environment.takeSent()
        #expect(refusal.count == 1)
        guard case .response(let response)? = refusal.first?.message else {
            Issue.record("expected one response, got \(refusal.map(\.message))")
            return
        }
        #expect(response.statusCode == 503)
        #expect(response.headers["Retry-After"] == "30")
        #expect(refusal.first?.destination.address == Self.flooder)
        #expect(harness.manager.conversations.count == 5)
        let transactions = harness.engine.statistics.liveTransactions
        // Banned: nothing answers, nothing is kept, retransmissions included.
        for index in 6..<50 { harness.deliver(Self.invite(index), body: PeerMessages.offer, from: Self.flooder) }
        harness.deliver(Self.invite(5), body: PeerMessages.offer, from: Self.flooder)
        harness.deliver("INVITE nonsense\nVia: garbage", from: Self.flooder)  // not even a 400 for it
        #expect(harness.sent().isEmpty)
        #expect(harness.engine.statistics.liveTransactions == transactions)
        #expect(harness.manager.conversations.count == 5)
        let statistics = harness.engine.statistics
        #expect(statistics.requestsRefusedPerSource == 1)
        #expect(statistics.requestsDropped == 46)
        #expect(statistics.sourcesBanned == 1)
        // Another source still rings at once.
        harness.deliver(PeerMessages.invite(callID: "legit@peer", branch: "z9hG4bK-legit"), body: PeerMessages.offer)
        #expect(harness.sent().compactMap(\.response?.statusCode).contains(180))
        // The ban runs out: the flooder is heard again.
        harness.environment.advance(by: .seconds(31))
        _ = harness.sent()
        harness.deliver(Self.invite(100), body: PeerMessages.offer, from: Self.flooder)
        #expect(harness.sent().compactMap(\.response?.statusCode).contains(180))
        #expect(harness.engine.statistics.sourcesBanned == 0)
    }

    @Test("over --max-ringing-per-source: a stateless 503, sent again for a retransmission, and no transaction")
    func ringingLimitIsStateless() throws {
        let harness = try EngineHarness { $0.maxRingingPerSource = 2 }
        for index in 0..<2 { harness.deliver(Self.invite(index), body: PeerMessages.offer, from: Self.flooder) }
        _ = harness.sent()
        let before = harness.engine.statistics.liveTransactions
        harness.deliver(Self.invite(2), body: PeerMessages.offer, from: Self.flooder)
        harness.deliver(Self.invite(2), body: PeerMessages.offer, from: Self.flooder)
        #expect(harness.sent().compactMap(\.response?.statusCode) == [503, 503])
        #expect(harness.engine.statistics.liveTransactions == before)
        // The ACK of that 503 finds nothing to do and sends nothing.
        harness.deliver("""
            ACK sip:parley@127.0.0.1:5070 SIP/2.0
            Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-flood-2
            Max-Forwards: 70
            From: "Alice" <sip:alice@127.0.0.1:5062>;tag=peer-tag
            To: <sip:parley@127.0.0.1:5070>;tag=any
            Call-ID: flood-2@peer
            CSeq: 1 ACK
            """, from: Self.flooder)
        #expect(harness.sent().isEmpty)
        // Nothing waits for a timer H of a refused INVITE, and it never became a conversation.
        harness.environment.advance(by: .seconds(40))
        #expect(!harness.sent().contains { $0.response?.statusCode == 503 })
        #expect(harness.manager.conversations.count == 2)
    }

    @Test("over --max-calls: a stateless 503 with Retry-After 5")
    func callLimitIsStateless() throws {
        let harness = try EngineHarness { $0.maxCalls = 1 }
        harness.deliver(Self.invite(0), body: PeerMessages.offer)
        _ = harness.sent()
        harness.deliver(Self.invite(1), body: PeerMessages.offer, from: Self.flooder)
        let sent = harness.sent()
        #expect(sent.compactMap(\.response?.statusCode) == [503])
        #expect(sent.first?.response?.headers["Retry-After"] == "5")
        #expect(harness.engine.statistics.callsRefusedOverLimit == 1)
    }

    @Test("the call limit logs a warning when refusals begin and one when live calls fall a tenth under it, not one per call at the edge")
    func callLimitLogsEpisodes() throws {
        let lines = Mutex<[String]>([])
        let harness = try EngineHarness(log: EngineLog(level: .warning) { _, line in lines.withLock { $0.append(line) } }) {
            $0.maxCalls = 10
            $0.autoAnswerDelay = .zero
        }
        func call(_ index: Int) -> Int? {
            harness.deliver(Self.invite(index), body: PeerMessages.offer)
            harness.environment.advance(by: .zero)
            return harness.sent().compactMap(\.response?.statusCode).first { $0 >= 200 }
        }
        func hangUp(_ index: Int) throws {
            let callID = "flood-\(index)@peer"
            let tag = try #require(harness.engine.localTag(ofCallID: callID))
            harness.deliver(PeerMessages.inDialog("BYE", localTag: tag, cseq: 2, branch: "z9hG4bK-bye-\(index)", callID: callID))
            harness.environment.advance(by: .zero)
        }
        for index in 0..<10 { #expect(call(index) == 200) }
        #expect(call(10) == 503)
        try hangUp(0)
        #expect(call(11) == 200, "under the limit: taken")
        #expect(call(12) == 503, "at it again: refused, in the same episode")
        try hangUp(1)
        try hangUp(2)
        #expect(call(13) == 200)
        let logged = lines.withLock { $0 }.filter { $0.contains("live calls") }
        #expect(logged.count == 2)
        #expect(logged.first?.contains("the limit (--max-calls)") == true && logged.last?.contains("below the limit again") == true)
        #expect(harness.engine.statistics.callsRefusedOverLimit == 2)
    }

    @Test("an exempt source is under neither the density check nor the ringing limit")
    func exemptSource() throws {
        let harness = try EngineHarness {
            $0.maxRequestsPerSource = 3
            $0.maxRingingPerSource = 3
            $0.exemptSources = [Self.flooder.host]
        }
        for index in 0..<20 { harness.deliver(Self.invite(index), body: PeerMessages.offer, from: Self.flooder) }
        #expect(harness.manager.conversations.count == 20)
        #expect(!harness.sent().contains { $0.response?.statusCode == 503 })
    }

    @Test("a caller --accept-from refuses: one stateless 403, no transaction; blocked records at most 30 a minute")
    func strangersAreRefusedStatelessly() throws {
        let history = try TemporaryHistory("blocked")
        let store = history.store
        let harness = try EngineHarness(history: history.recorder) {
            $0.callers = .only([Handle(kind: .generic, value: "sip:bob@127.0.0.1")], .northAmerica)
            $0.recordsBlockedCalls = true
        }
        let probe = ServiceProbe(harness, history: store)  // to hear the history's events
        let before = harness.engine.statistics.liveTransactions
        for index in 0..<40 { harness.deliver(Self.invite(index), body: PeerMessages.offer, from: Self.flooder) }
        harness.deliver(Self.invite(0), body: PeerMessages.offer, from: Self.flooder)  // a retransmission: 403 again
        let statuses = harness.sent().compactMap(\.response?.statusCode)
        #expect(statuses == Array(repeating: 403, count: 41), "\(statuses)")
        #expect(harness.engine.statistics.liveTransactions == before)
        #expect(harness.manager.conversations.isEmpty)
        #expect(harness.engine.statistics.callersRefused == 41)
        func inserted(_ events: [ControlEventMessage]) -> Int {
            events.filter { if case .historyChanged(let change) = $0 { change.change == "inserted" } else { false } }.count
        }
        #expect(probe.events.wait(until: { inserted($0) >= 30 }), "30 blocked records written")
        var query = HistoryQuery()
        query.statuses = [.blocked]
        #expect(try store.count(query) == 30, "at most 30 blocked records a minute")
        query.statuses = []
        query.unreadOnly = true
        #expect(try store.count(query) == 0, "none of them unread")
    }

    @Test("a malformed request whose Via does not parse is dropped, not answered with a response nobody can read")
    func garbageVia() throws {
        // sip-engine's first find (Fuzz/Corpus/sip-engine/regression-garbage-via): the 400 echoed `Via: x` and had
        // nothing else, not even a Call-ID.
        let harness = try EngineHarness()
        harness.engine.receive(InboundSIPMessage(
            bytes: Data("InVx SIP/2.0\r\nVia: x\r\n\r\n".utf8), kind: .udp, source: Self.flooder, connection: nil,
            local: harness.local))
        #expect(harness.environment.takeSent().isEmpty)
        #expect(harness.environment.unparsedErrorResponses == 0)
        #expect(harness.engine.statistics.malformedMessages == 1)
    }

    @Test("a bad exempt source is a configuration problem")
    func badExemptSource() {
        var configuration = EngineConfiguration(listenAddresses: [ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070)])
        configuration.exemptSources = ["proxy.example.com"]
        #expect(configuration.problems == ["exempt source 'proxy.example.com' is not a numeric IP address"])
    }
}

extension SIPMessage {
    /// The message as a response, if it is one.
    var response: SIPResponse? {
        guard case .response(let response) = self else { return nil }
        return response
    }
}
