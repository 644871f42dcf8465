import ConversationKit
import Foundation
import ParleyEngine
import SIPTransport
import Testing

@Suite("Engine: why a call could not be placed, in words")
struct FailureReasonTests {
    @Test("no answer to the INVITE: the failure names the callee and timer B")
    func noAnswer() throws {
        let harness = try EngineHarness()
        try harness.manager.perform([.start(handles: [OutgoingCallTests.bob])])
        _ = harness.sent()
        harness.environment.advance(by: .seconds(32))
        let ended = try #require(harness.transitions.all.last)
        #expect(ended.conversation.endedReason == .failed)
        #expect(ended.failure == "no answer from sip:bob@127.0.0.1:5062 within 32 s (SIP timer B)")
    }

    @Test("the transport's failure (an ICMP port unreachable) fails the INVITE at once, with the transport's words")
    func transportFailure() throws {
        let harness = try EngineHarness()
        try harness.manager.perform([.start(handles: [OutgoingCallTests.bob])])
        let invite = try #require(harness.environment.takeSent().first)
        let why = "nobody is listening at udp 127.0.0.1:5062 (ICMP port unreachable)"
        harness.engine.transportFailed(towards: invite.destination, reason: why)
        let ended = try #require(harness.transitions.all.last)
        #expect(ended.conversation.endedReason == .failed)
        #expect(ended.failure == why)
        #expect(harness.engine.failure(of: ended.conversation.uuid) == nil, "forgotten once the conversation left")
    }

    @Test("a refusal with a SIP status is not a failure in words (the status says it); a transport we do not listen on is")
    func statusOrWords() throws {
        let harness = try EngineHarness()
        try harness.manager.perform([.start(handles: [OutgoingCallTests.bob])])
        let invite = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(404, "Not Found", to: invite))
        #expect(harness.transitions.all.last?.finalStatus?.code == 404)
        #expect(harness.transitions.all.last?.failure == nil)
        try harness.manager.perform([
            .start(handles: [Handle(kind: .generic, value: "sip:bob@127.0.0.1:5062;transport=tcp", displayName: "Bob")]),
        ])
        let refused = try #require(harness.transitions.all.last { $0.conversation.state == .left })
        #expect(refused.failure == "no tcp listener to send from (add --listen tcp://…)")
    }
}
