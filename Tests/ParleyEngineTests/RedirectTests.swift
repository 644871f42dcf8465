import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

/// An outgoing call redirected (3xx, RFC 3261 §8.1.3.4): followed to the Contact it names, bounded in count and
/// never back to a target already tried.
@Suite("Engine: following redirections")
struct RedirectTests {
    /// A `status` to `request` whose Contact is `contact` (the last INVITE sent).
    static func redirect(_ status: Int, to request: SIPRequest, contact: String, toTag: String = "redirector") -> String {
        PeerMessages.response(status, "Moved", to: request, toTag: toTag)
            .replacingOccurrences(of: "Contact: <sip:bob@127.0.0.1:5062>", with: "Contact: \(contact)")
    }

    @Test("302 naming carol: the 302 is acknowledged, the INVITE goes to carol (CSeq 2, same Call-ID and tag), she answers: joined")
    func followed() throws {
        let harness = try EngineHarness()
        let invite = try OutgoingCallTests.started(harness)
        harness.deliver(Self.redirect(
            302, to: invite, contact: "<sip:carol@127.0.0.1:5064>;q=0.5, <sip:dave@127.0.0.1:5066;method=INVITE?Subject=hi>;q=0.9"))
        let sent = harness.sent()
        #expect(sent.map(\.method) == ["ACK", "INVITE"])
        let again = try #require(sent.last?.request)
        #expect(again.uri.description == "sip:dave@127.0.0.1:5066", "the highest q first, without headers or method")
        #expect(again.headers.cseq?.number == 2)
        #expect(again.headers.callID == invite.headers.callID)
        #expect(again.headers.from?.tag == invite.headers.from?.tag)
        #expect(again.headers["Via"] != invite.headers["Via"], "a new branch")
        #expect(again.body == invite.body, "the same offer")
        harness.deliver(PeerMessages.response(180, "Ringing", to: again))
        harness.deliver(PeerMessages.response(200, "OK", to: again, sdp: true), body: PeerMessages.offer)
        #expect(harness.sent().map(\.method) == ["ACK"])
        #expect(harness.transitions.states == ["idle", "ringing", "joined"])
    }

    @Test("a redirection back to a target tried already is not followed: the 3xx ends the call")
    func noLoops() throws {
        let harness = try EngineHarness()
        let invite = try OutgoingCallTests.started(harness)
        harness.deliver(Self.redirect(302, to: invite, contact: "<sip:carol@127.0.0.1:5064>"))
        let carol = try #require(harness.sent().last?.request)
        harness.deliver(Self.redirect(301, to: carol, contact: "<sip:bob@127.0.0.1:5062;transport=udp>"))
        #expect(harness.sent().map(\.method) == ["ACK"])
        #expect(harness.transitions.states.last == "left(failed)")
        #expect(harness.engine.statistics.liveCalls == 0)
    }

    @Test("at most 5 redirections; the sixth ends the call")
    func bounded() throws {
        let harness = try EngineHarness()
        var invite = try OutgoingCallTests.started(harness)
        for hop in 1...5 {
            harness.deliver(Self.redirect(302, to: invite, contact: "<sip:hop\(hop)@127.0.0.1:\(5100 + hop)>"))
            invite = try #require(harness.sent().last?.request, "hop \(hop)")
            #expect(invite.uri.user == "hop\(hop)")
        }
        harness.deliver(Self.redirect(302, to: invite, contact: "<sip:hop6@127.0.0.1:5106>"))
        #expect(harness.sent().map(\.method) == ["ACK"])
        #expect(harness.transitions.states.last == "left(failed)")
    }

    @Test("not followed: 305 Use Proxy, 380 Alternative Service, a tel: or no Contact, another scheme (sips: from a sip: call), another transport", arguments: [
        (305, "<sip:proxy@127.0.0.1:5064>"), (380, "<sip:ivr@127.0.0.1:5064>"), (302, "<tel:+14155550100>"), (302, ""),
        (302, "<sips:carol@127.0.0.1:5064>"), (302, "<sip:carol@127.0.0.1:5064;transport=tcp>"),
    ])
    func notFollowed(status: Int, contact: String) throws {
        let harness = try EngineHarness()
        let invite = try OutgoingCallTests.started(harness)
        let text = Self.redirect(status, to: invite, contact: contact)
        harness.deliver(contact.isEmpty ? text.replacingOccurrences(of: "\nContact: ", with: "") : text)
        #expect(harness.sent().map(\.method) == ["ACK"])
        #expect(harness.transitions.states.last == "left(failed)")
    }
}
