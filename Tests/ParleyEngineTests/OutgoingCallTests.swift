import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

@Suite("Engine: outgoing calls")
struct OutgoingCallTests {
    static let bob = Handle(kind: .generic, value: "sip:bob@127.0.0.1:5062", displayName: "Bob")

    /// Starts a call to Bob; returns the INVITE sent.
    static func started(_ harness: EngineHarness) throws -> SIPRequest {
        try harness.manager.perform([.start(handles: [bob])])
        let sent = harness.environment.takeSent()
        let invite = try #require(sent.first?.message.request)
        #expect(sent.count == 1)
        #expect(invite.method == .invite)
        #expect(invite.uri.description == "sip:bob@127.0.0.1:5062")
        #expect(sent.first?.destination.address.port == 5062)
        #expect(String(decoding: invite.body, as: UTF8.self).contains("m=audio 40000 RTP/AVP 0 8"))
        return invite
    }

    /// A call to Bob that he answers; returns the INVITE.
    static func connected(_ harness: EngineHarness) throws -> SIPRequest {
        let invite = try started(harness)
        harness.deliver(PeerMessages.response(180, "Ringing", to: invite))
        harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: true), body: PeerMessages.offer)
        let ack = try #require(harness.sent().first?.request)
        #expect(ack.method == .ack)
        #expect(ack.headers.cseq?.number == 1)
        #expect(ack.headers.to?.tag == "callee-tag")
        #expect(ack.uri.description == "sip:bob@127.0.0.1:5062")
        return invite
    }

    @Test("Start sends an INVITE; 180 rings; 200 is acknowledged and joins; remote BYE ends it")
    func answeredCall() throws {
        let harness = try EngineHarness()
        let invite = try Self.connected(harness)
        harness.deliver("""
            BYE sip:parley@127.0.0.1:5070 SIP/2.0
            Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-bye-b
            Max-Forwards: 70
            From: \(invite.headers["To"]!);tag=callee-tag
            To: \(invite.headers["From"]!)
            Call-ID: \(invite.headers.callID!)
            CSeq: 1 BYE
            """)
        #expect(harness.sent().map(\.statusCode) == [200])
        #expect(harness.transitions.states == ["idle", "ringing", "joined", "left(remoteEnded)"])
    }

    @Test("a retransmitted 200 gets the same ACK again")
    func successRetransmitted() throws {
        let harness = try EngineHarness()
        let invite = try Self.connected(harness)
        harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: true), body: PeerMessages.offer)
        let again = harness.sent()
        #expect(again.map(\.method) == ["ACK"])
    }

    @Test("refusals end the conversation with their reason", arguments: [
        (486, "left(busy)"), (600, "left(busy)"), (603, "left(declined)"), (480, "left(unanswered)"),
        (404, "left(failed)"), (500, "left(failed)"),
    ])
    func refused(status: Int, expected: String) throws {
        let harness = try EngineHarness()
        let invite = try Self.started(harness)
        harness.deliver(PeerMessages.response(180, "Ringing", to: invite))
        harness.deliver(PeerMessages.response(status, "No", to: invite))
        #expect(harness.sent().map(\.method) == ["ACK"], "the transaction acknowledges the refusal")
        #expect(harness.transitions.states.last == expected)
        #expect(harness.engine.statistics.liveCalls == 0)
    }

    @Test("End before the answer sends CANCEL; the 487 closes the INVITE; left(localEnded)")
    func cancelBeforeAnswer() throws {
        let harness = try EngineHarness()
        let invite = try Self.started(harness)
        harness.deliver(PeerMessages.response(180, "Ringing", to: invite))
        try harness.manager.perform([.end(conversationUUID: try #require(harness.conversation?.uuid))])
        let cancel = try #require(harness.sent().first?.request)
        #expect(cancel.method == .cancel)
        #expect(cancel.headers.topVia?.branch == invite.headers.topVia?.branch)
        harness.deliver(PeerMessages.response(200, "OK", to: cancel))
        harness.deliver(PeerMessages.response(487, "Request Terminated", to: invite))
        #expect(harness.sent().map(\.method) == ["ACK"])
        #expect(harness.transitions.states == ["idle", "ringing", "leaving", "left(localEnded)"])
        #expect(harness.engine.statistics.liveCalls == 0)
    }

    @Test("End before any provisional response waits for one, then cancels")
    func cancelAfterFirstProvisional() throws {
        let harness = try EngineHarness()
        let invite = try Self.started(harness)
        try harness.manager.perform([.end(conversationUUID: try #require(harness.conversation?.uuid))])
        #expect(harness.sent().isEmpty, "no CANCEL before a provisional response (RFC 3261 §9.1)")
        harness.deliver(PeerMessages.response(180, "Ringing", to: invite))
        #expect(harness.sent().map(\.method) == ["CANCEL"])
    }

    @Test("a phone number without a phone domain cannot be dialled: the Start fails with the reason")
    func undialable() throws {
        let harness = try EngineHarness()
        try harness.manager.perform([.start(handles: [Handle(kind: .phoneNumber, value: "+14155550100")])])
        #expect(harness.sent().isEmpty)
        #expect(harness.transitions.states.last == "left(failed)")
    }

    @Test("no answer at all: the INVITE is retransmitted, then timer B fails the call")
    func timerB() throws {
        let harness = try EngineHarness()
        _ = try Self.started(harness)
        harness.environment.advance(by: .milliseconds(500))
        #expect(harness.sent().map(\.method) == ["INVITE"])
        harness.environment.advance(by: .seconds(32))
        #expect(harness.transitions.states.last == "left(failed)")
    }
}
