import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

@Suite("Engine: incoming calls")
struct IncomingCallTests {
    /// An INVITE arrives and is answered through a Join; returns our tag.
    static func answered(_ harness: EngineHarness) throws -> String {
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let ringing = harness.sent()
        #expect(ringing.map(\.statusCode) == [180])
        let tag = try #require(ringing.first?.toTag)
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        let ok = harness.sent()
        #expect(ok.map(\.statusCode) == [200])
        #expect(ok.first?.toTag == tag)
        #expect(ok.first?.bodyText.contains("a=sendrecv") == true)
        #expect(harness.conversation?.state == .joining)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        #expect(harness.conversation?.state == .joined)
        return tag
    }

    @Test("INVITE rings (180), Join answers (200 with SDP), ACK joins, BYE ends as remoteEnded")
    func answerAndRemoteHangUp() throws {
        let harness = try EngineHarness()
        let tag = try Self.answered(harness)
        harness.deliver(PeerMessages.inDialog("BYE", localTag: tag, cseq: 2, branch: "z9hG4bK-bye-1"))
        #expect(harness.sent().map(\.statusCode) == [200])
        #expect(harness.transitions.states == ["ringing", "joining", "joined", "left(remoteEnded)"])
        let transition = try #require(harness.transitions.all.first)
        #expect(transition.callID == "call-1@peer")
        #expect(transition.conversation.members.first?.value == "sip:alice@127.0.0.1:5062")
        #expect(transition.conversation.members.first?.displayName == "Alice")
    }

    @Test("incoming conversations are named in order by time-ordered UUIDs from the environment's clock")
    func timeOrderedUUIDs() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        harness.deliver(PeerMessages.invite(callID: "call-2@peer", branch: "z9hG4bK-inv-2"), body: PeerMessages.offer)
        let uuids = harness.transitions.all.map(\.conversation.uuid).reduce(into: [UUID]()) { seen, uuid in
            if !seen.contains(uuid) { seen.append(uuid) }
        }
        #expect(uuids.count == 2)
        let ticks = uuids.map { uuid in
            withUnsafeBytes(of: uuid.uuid) { raw in raw.prefix(4).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        }
        let clockTick = UInt64(harness.environment.now.timeIntervalSince1970 * TimeOrderedUUIDs.ticksPerSecond) & 0xFFFF_FFFF
        #expect(ticks == [clockTick, clockTick + 1])
        #expect(uuids.allSatisfy { uuid in uuid.uuid.6 >> 4 == 8 })
    }

    @Test("the last 256 conversations to end stay readable after the manager forgot them, the older ones do not")
    func endedTransitionsKept() throws {
        let harness = try EngineHarness { $0.exemptSources = ["127.0.0.1"] }
        var uuids: [UUID] = []
        for index in 0..<300 {
            harness.deliver(PeerMessages.invite(callID: "ended-\(index)@peer", branch: "z9hG4bK-ended-\(index)"),
                body: PeerMessages.offer)
            let uuid = try #require(harness.conversation?.uuid)
            try harness.manager.perform([.end(conversationUUID: uuid)])
            #expect(harness.manager.conversation(uuid) == nil)
            uuids.append(uuid)
        }
        #expect(uuids.prefix(44).allSatisfy { harness.engine.endedTransition(of: $0) == nil })
        #expect(uuids.suffix(256).allSatisfy { harness.engine.endedTransition(of: $0)?.conversation.state == .left })
    }

    @Test("the 2xx is retransmitted until the ACK arrives, then not again")
    func successRetransmission() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let tag = try #require(harness.sent().first?.toTag)
        try harness.manager.perform([.join(conversationUUID: try #require(harness.conversation?.uuid))])
        #expect(harness.sent().map(\.statusCode) == [200])
        harness.environment.advance(by: .milliseconds(500))
        #expect(harness.sent().map(\.statusCode) == [200])
        harness.environment.advance(by: .milliseconds(1000))
        #expect(harness.sent().map(\.statusCode) == [200])
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        harness.environment.advance(by: .seconds(10))
        #expect(harness.sent().isEmpty)
        #expect(harness.conversation?.state == .joined)
    }

    @Test("no ACK within 64·T1: BYE and the conversation fails")
    func ackNeverCame() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        _ = harness.sent()
        try harness.manager.perform([.join(conversationUUID: try #require(harness.conversation?.uuid))])
        harness.environment.advance(by: .seconds(33))
        #expect(harness.sent().compactMap(\.method).contains("BYE"))
        #expect(harness.transitions.states.last == "left(failed)")
    }

    @Test("a retransmitted INVITE is absorbed: the 180 is sent again, no second conversation")
    func retransmittedInvite() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        #expect(harness.sent().map(\.statusCode) == [180, 180])
        #expect(harness.manager.conversations.count == 1)
    }

    @Test("CANCEL before the answer: 200 for the CANCEL, 487 for the INVITE, ended as cancelled")
    func remoteCancel() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        _ = harness.sent()
        harness.deliver("""
            CANCEL sip:parley@127.0.0.1:5070 SIP/2.0
            Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-in-1
            Max-Forwards: 70
            From: "Alice" <sip:alice@127.0.0.1:5062>;tag=peer-tag
            To: <sip:parley@127.0.0.1:5070>
            Call-ID: call-1@peer
            CSeq: 1 CANCEL
            """)
        let answers = harness.sent()
        #expect(answers.map(\.statusCode) == [200, 487])
        #expect(answers.map { $0.headers.cseq?.method.description } == ["CANCEL", "INVITE"])
        #expect(harness.transitions.states == ["ringing", "left(cancelled)"])
    }

    @Test("a CANCEL for no INVITE gets 481")
    func strayCancel() throws {
        let harness = try EngineHarness()
        harness.deliver("""
            CANCEL sip:parley@127.0.0.1:5070 SIP/2.0
            Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-nothing
            Max-Forwards: 70
            From: <sip:alice@127.0.0.1:5062>;tag=x
            To: <sip:parley@127.0.0.1:5070>
            Call-ID: nothing@peer
            CSeq: 1 CANCEL
            """)
        #expect(harness.sent().map(\.statusCode) == [481])
    }

    @Test("nobody answers within the ring timeout: 480 and ended as unanswered")
    func ringTimeout() throws {
        let harness = try EngineHarness { $0.ringTimeout = .seconds(5) }
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        _ = harness.sent()
        harness.environment.advance(by: .seconds(5))
        #expect(harness.sent().map(\.statusCode) == [480])
        #expect(harness.transitions.states == ["ringing", "left(unanswered)"])
    }

    @Test("End while ringing refuses with the configured status", arguments: [486, 603])
    func refuse(status: Int) throws {
        let harness = try EngineHarness { $0.declineStatus = status }
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        _ = harness.sent()
        try harness.manager.perform([.end(conversationUUID: try #require(harness.conversation?.uuid))])
        #expect(harness.sent().map(\.statusCode) == [status])
        #expect(harness.transitions.states == ["ringing", "leaving", "left(localEnded)"])
    }

    @Test("auto-answer joins after the configured delay")
    func autoAnswer() throws {
        let harness = try EngineHarness { $0.autoAnswerDelay = .milliseconds(300) }
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let tag = try #require(harness.sent().first?.toTag)
        harness.environment.advance(by: .milliseconds(299))
        #expect(harness.sent().isEmpty)
        harness.environment.advance(by: .milliseconds(1))
        #expect(harness.sent().map(\.statusCode) == [200])
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack"))
        #expect(harness.conversation?.state == .joined)
    }

    @Test("local End on a joined call: BYE, then left(localEnded) when it is answered")
    func localHangUp() throws {
        let harness = try EngineHarness()
        _ = try Self.answered(harness)
        try harness.manager.perform([.end(conversationUUID: try #require(harness.conversation?.uuid))])
        let bye = try #require(harness.sent().first?.request)
        #expect(bye.method == .bye)
        #expect(bye.uri.description == "sip:alice@127.0.0.1:5062")
        #expect(bye.headers.cseq?.method == .bye)
        harness.deliver(PeerMessages.response(200, "OK", to: bye, toTag: nil))
        #expect(harness.transitions.states == ["ringing", "joining", "joined", "leaving", "left(localEnded)"])
    }

    @Test("an offer with no common codec gets 488 and no conversation")
    func noCommonCodec() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer.replacingOccurrences(of: "RTP/AVP 0 8", with: "RTP/AVP 18"))
        #expect(harness.sent().map(\.statusCode) == [488])
        #expect(harness.manager.conversations.isEmpty)
    }
}

@Suite("Engine: retransmissions after the answer")
struct AcceptedInviteTests {
    @Test("an INVITE retransmitted after our 200 gets the 200 again, not a second call or a 482")
    func inviteAfterAnswer() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let tag = try #require(harness.sent().first?.toTag)
        try harness.manager.perform([.join(conversationUUID: try #require(harness.conversation?.uuid))])
        #expect(harness.sent().map(\.statusCode) == [200])
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let again = harness.sent()
        #expect(again.map(\.statusCode) == [200])
        #expect(again.first?.toTag == tag)
        #expect(harness.manager.conversations.count == 1)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        #expect(harness.sent().isEmpty, "acknowledged: nothing more to send")
        #expect(harness.conversation?.state == .joined)
    }
}
