import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

/// Call forwarding (``CallForwarding``): 302 Moved Temporarily with the target as Contact, before a call rings
/// (always; busy: do-not-disturb or every line taken) or once it rang unanswered for the no-answer time.
@Suite("Engine: call forwarding")
struct ForwardingTests {
    static let carol = SIPURI("sip:carol@127.0.0.1:5064")!
    static let voicemail = SIPURI("sip:voicemail@127.0.0.1:5066")!

    @Test("always: every call gets 302 naming the target and never rings; no conversation is made")
    func always() throws {
        let harness = try EngineHarness { $0.forwarding = CallForwarding(always: Self.carol) }
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let sent = harness.sent()
        #expect(sent.map(\.statusCode) == [302])
        #expect(sent.first?.headers.contacts.first?.uri == Self.carol)
        #expect(harness.transitions.states.isEmpty)
        #expect(harness.engine.statistics.liveCalls == 0)
    }

    @Test("busy: with do-not-disturb on the call goes to the busy target; without it, 486; over the call limit, 302 instead of 503")
    func busy() throws {
        let harness = try EngineHarness { $0.forwarding = CallForwarding(busy: Self.voicemail) }
        harness.engine.setDoNotDisturb(true)
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let moved = harness.sent()
        #expect(moved.map(\.statusCode) == [302])
        #expect(moved.first?.headers.contacts.first?.uri == Self.voicemail)
        harness.engine.setForwarding(CallForwarding())
        harness.deliver(PeerMessages.invite(callID: "call-2@peer", branch: "z9hG4bK-inv-2"), body: PeerMessages.offer)
        #expect(harness.sent().map(\.statusCode) == [486])

        let full = try EngineHarness {
            $0.forwarding = CallForwarding(busy: Self.voicemail)
            $0.maxCalls = 1
        }
        full.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        #expect(full.sent().map(\.statusCode) == [180])
        full.deliver(PeerMessages.invite(callID: "call-2@peer", branch: "z9hG4bK-inv-2"), body: PeerMessages.offer)
        #expect(full.sent().map(\.statusCode) == [302])
    }

    @Test("no answer: the call rings, and after the no-answer time gets 302 naming the target; it ends forwarded")
    func noAnswer() throws {
        let harness = try EngineHarness {
            $0.ringTimeout = .seconds(60)
            $0.forwarding = CallForwarding(noAnswer: Self.voicemail, noAnswerAfter: .seconds(15))
        }
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        #expect(harness.sent().map(\.statusCode) == [180])
        harness.environment.advance(by: .seconds(14))
        #expect(harness.sent().isEmpty)
        harness.environment.advance(by: .seconds(1))
        let moved = harness.sent()
        #expect(moved.map(\.statusCode) == [302])
        #expect(moved.first?.headers.contacts.first?.uri == Self.voicemail)
        #expect(harness.transitions.states == ["ringing", "left(forwarded)"])
        harness.environment.advance(by: .seconds(60))
        #expect(harness.sent().allSatisfy { $0.statusCode == 302 }, "only the 302's retransmissions, no 480")
    }

    @Test("no answer, but forwarding turned off while it rang: it rings on to the ring timeout")
    func noAnswerTurnedOff() throws {
        let harness = try EngineHarness {
            $0.ringTimeout = .seconds(30)
            $0.forwarding = CallForwarding(noAnswer: Self.voicemail, noAnswerAfter: .seconds(10))
        }
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        _ = harness.sent()
        harness.engine.setForwarding(CallForwarding())
        harness.environment.advance(by: .seconds(10))
        #expect(harness.sent().isEmpty)
        harness.environment.advance(by: .seconds(20))
        #expect(harness.sent().map(\.statusCode) == [480])
    }

    @Test("targets as users type them: sip: and sips: URIs and user@host; numbers, tel: and junk are not")
    func targets() {
        #expect(CallForwarding.target("sip:carol@example.com")?.description == "sip:carol@example.com")
        #expect(CallForwarding.target(" carol@example.com ")?.description == "sip:carol@example.com")
        #expect(CallForwarding.target("sips:carol@example.com:5061")?.scheme == "sips")
        for bad in ["", "+14155550100", "tel:+14155550100", "carol", "sip:", "http://example.com", String(repeating: "a", count: 600) + "@x"] {
            #expect(CallForwarding.target(bad) == nil, "\(bad.prefix(30))")
        }
    }
}

/// Forwarding per account: an account's own rules for the calls made to it, the engine's for the others.
extension ForwardingTests {
    /// An INVITE to the address `to` (the account called), on call `index`.
    static func invite(to: String, index: Int) -> String {
        PeerMessages.invite(callID: "acct-\(index)@peer", branch: "z9hG4bK-acct-\(index)")
            .replacingOccurrences(of: "To: <sip:parley@127.0.0.1:5070>", with: "To: <\(to)>")
    }

    @Test("per account: work's own rule forwards calls to it, a call to another address rings; set over the engine for home at run time")
    func perAccount() throws {
        var work = AccountTests.work
        work.forwarding = CallForwarding(always: Self.carol)
        let harness = try EngineHarness { $0.accounts = [work, AccountTests.home] }
        harness.deliver(Self.invite(to: "sip:alice@work.test", index: 0), body: PeerMessages.offer)
        #expect(harness.sent().compactMap(\.statusCode) == [302])
        harness.deliver(Self.invite(to: "sip:alice@home.test", index: 1), body: PeerMessages.offer)
        #expect(harness.sent().compactMap(\.statusCode) == [180])
        #expect(harness.engine.setForwarding(CallForwarding(always: Self.voicemail), account: "home"))
        #expect(!harness.engine.setForwarding(CallForwarding(), account: "nosuch"))
        harness.deliver(Self.invite(to: "sip:alice@home.test", index: 2), body: PeerMessages.offer)
        let moved = harness.sent()
        #expect(moved.compactMap(\.statusCode) == [302] && moved.first?.headers.contacts.first?.uri == Self.voicemail)
        #expect(harness.engine.forwarding(account: "home").always == Self.voicemail)
        #expect(harness.engine.forwarding(account: "work").always == Self.carol)
        #expect(harness.engine.forwarding().isOff, "parleyd's own rules are untouched")
    }
}
