import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

@Suite("Engine: inside a dialog")
struct InDialogTests {
    @Test("Pause sends a re-INVITE with sendonly; resume with sendrecv; each 200 is acknowledged")
    func pauseAndResume() throws {
        let harness = try EngineHarness()
        _ = try IncomingCallTests.answered(harness)
        let uuid = try #require(harness.conversation?.uuid)
        for (paused, direction, state) in [(true, "a=sendonly", Conversation.State.paused), (false, "a=sendrecv", .joined)] {
            try harness.manager.perform([.pause(conversationUUID: uuid, isPaused: paused)])
            let reinvite = try #require(harness.sent().first?.request)
            #expect(reinvite.method == .invite)
            #expect(String(decoding: reinvite.body, as: UTF8.self).contains(direction))
            #expect(reinvite.headers.from?.tag != nil && reinvite.headers.to?.tag == "peer-tag")
            harness.deliver(PeerMessages.response(200, "OK", to: reinvite, toTag: nil, sdp: true), body: PeerMessages.offer)
            #expect(harness.sent().map(\.method) == ["ACK"])
            #expect(harness.conversation?.state == state)
        }
    }

    @Test("the remote side holds us: answered recvonly, reported as an update, not as our pause")
    func remoteHold() throws {
        let harness = try EngineHarness()
        let tag = try IncomingCallTests.answered(harness)
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-re-1", contentType: "application/sdp"),
            body: PeerMessages.holdOffer(version: 2))
        let ok = try #require(harness.sent().first)
        #expect(ok.statusCode == 200)
        #expect(ok.bodyText.contains("a=recvonly"))
        #expect(harness.conversation?.state == .joined)
        #expect(harness.conversation?.activeRemoteMembers.isEmpty == true)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 2, branch: "z9hG4bK-ack-2"))
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 3, branch: "z9hG4bK-re-2", contentType: "application/sdp"),
            body: PeerMessages.offer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 3"))
        #expect(harness.sent().first?.bodyText.contains("a=sendrecv") == true)
        #expect(harness.conversation?.activeRemoteMembers.count == 1)
    }

    @Test("glare: a remote re-INVITE while ours is pending gets 491")
    func glare() throws {
        let harness = try EngineHarness()
        let tag = try IncomingCallTests.answered(harness)
        try harness.manager.perform([.pause(conversationUUID: try #require(harness.conversation?.uuid), isPaused: true)])
        _ = harness.sent()
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-re-g", contentType: "application/sdp"),
            body: PeerMessages.holdOffer(version: 2))
        #expect(harness.sent().map(\.statusCode) == [491])
    }

    @Test("491 on our re-INVITE: it is sent again after the RFC 3261 §14.1 delay and the pause completes")
    func glareRetry() throws {
        let harness = try EngineHarness()
        _ = try IncomingCallTests.answered(harness)
        try harness.manager.perform([.pause(conversationUUID: try #require(harness.conversation?.uuid), isPaused: true)])
        let first = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(491, "Request Pending", to: first, toTag: nil))
        #expect(harness.sent().map(\.method) == ["ACK"])
        harness.environment.advance(by: .seconds(4))
        let second = try #require(harness.sent().first?.request)
        #expect(second.method == .invite)
        #expect(second.headers.cseq!.number > first.headers.cseq!.number)
        harness.deliver(PeerMessages.response(200, "OK", to: second, toTag: nil, sdp: true), body: PeerMessages.offer)
        #expect(harness.conversation?.state == .paused)
    }

    @Test("PlayTone sends one INFO per digit, each after the previous is answered")
    func tones() throws {
        let harness = try EngineHarness()
        _ = try IncomingCallTests.answered(harness)
        let action = ConversationAction.playTone(conversationUUID: try #require(harness.conversation?.uuid), digits: "1#")
        try harness.manager.perform([action])
        for expected in ["Signal=1", "Signal=#"] {
            let info = try #require(harness.sent().first?.request)
            #expect(info.method == .info)
            #expect(info.headers.contentType?.mediaType == "application/dtmf-relay")
            #expect(String(decoding: info.body, as: UTF8.self).contains(expected))
            harness.deliver(PeerMessages.response(200, "OK", to: info, toTag: nil))
        }
        #expect(harness.sent().isEmpty)
        #expect(action.state == .complete)
    }

    @Test("INFO from the peer is answered 200")
    func infoReceived() throws {
        let harness = try EngineHarness()
        let tag = try IncomingCallTests.answered(harness)
        harness.deliver(
            PeerMessages.inDialog("INFO", localTag: tag, cseq: 2, branch: "z9hG4bK-info", contentType: "application/dtmf-relay"),
            body: "Signal=5\nDuration=160\n")
        #expect(harness.sent().map(\.statusCode) == [200])
    }

    @Test("requests for unknown dialogs get 481; OPTIONS 200 with Allow; unknown methods 501; garbage is dropped")
    func outOfDialog() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.inDialog("BYE", localTag: "nope", cseq: 2, branch: "z9hG4bK-b", callID: "x@y"))
        #expect(harness.sent().map(\.statusCode) == [481])
        harness.deliver(PeerMessages.inDialog("OPTIONS", localTag: "nope", cseq: 2, branch: "z9hG4bK-o", callID: "x@y"))
        let options = try #require(harness.sent().first)
        #expect(options.statusCode == 200)
        #expect(options.headers["Allow"]?.contains("INVITE") == true)
        harness.deliver(PeerMessages.inDialog("FROB", localTag: "nope", cseq: 2, branch: "z9hG4bK-f", callID: "x@y"))
        #expect(harness.sent().map(\.statusCode) == [501])
        harness.engine.receive(.init(bytes: Data("\u{1}\u{2}garbage".utf8), kind: .udp, source: harness.peer, connection: nil, local: harness.local))
        #expect(harness.sent().isEmpty)
        #expect(harness.engine.statistics.malformedMessages == 1)
    }
}

@Suite("Engine: responses")
struct ResponseHeaderTests {
    @Test("RFC 3581: a Via with rport gets received and rport filled in on the response")
    func rport() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.inDialog("OPTIONS", localTag: "x", cseq: 1, branch: "z9hG4bK-o;rport", callID: "o@y"))
        let response = try #require(harness.sent().first)
        #expect(response.headers["Via"] == "SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-o;rport=5062;received=127.0.0.1")
    }
}

@Suite("Engine: peers that misbehave")
struct MisbehavingPeerTests {
    @Test("a 491 with changed tags does not trap: the pause fails and the call ends as failed")
    func glareWithForeignTags() throws {
        let harness = try EngineHarness()
        _ = try IncomingCallTests.answered(harness)
        let pause = ConversationAction.pause(conversationUUID: try #require(harness.conversation?.uuid), isPaused: true)
        try harness.manager.perform([pause])
        let reinvite = try #require(harness.sent().first?.request)
        let text = PeerMessages.response(491, "Request Pending", to: reinvite, toTag: nil)
            .replacingOccurrences(of: "tag=peer-tag", with: "tag=someone-else")
        harness.deliver(text)
        harness.environment.advance(by: .seconds(5))
        if case .failed = pause.state {} else { Issue.record("the pause should fail, it is \(pause.state)") }
        #expect(harness.transitions.states.last == "left(failed)")
    }

    @Test("End after only 100 Trying sends CANCEL (RFC 3261 §9.1)")
    func cancelAfterTrying() throws {
        let harness = try EngineHarness()
        let invite = try OutgoingCallTests.started(harness)
        harness.deliver(PeerMessages.response(100, "Trying", to: invite, toTag: nil))
        try harness.manager.perform([.end(conversationUUID: try #require(harness.conversation?.uuid))])
        #expect(harness.sent().map(\.method) == ["CANCEL"])
    }

    @Test("a CANCEL never followed by the INVITE's final response: the call is given up after 64·T1, nothing leaks")
    func cancelIgnored() throws {
        let harness = try EngineHarness()
        let invite = try OutgoingCallTests.started(harness)
        harness.deliver(PeerMessages.response(180, "Ringing", to: invite))
        try harness.manager.perform([.end(conversationUUID: try #require(harness.conversation?.uuid))])
        let cancel = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(200, "OK", to: cancel))
        harness.environment.advance(by: .seconds(33))
        #expect(harness.transitions.states.last == "left(localEnded)")
        #expect(harness.engine.statistics.liveCalls == 0)
        #expect(harness.engine.statistics.pendingRequests == 0)
    }

    @Test("our re-INVITE answered only provisionally: given up 64·T1 after the last provisional, the call ends, nothing leaks")
    func reinviteLeftProceeding() throws {
        let harness = try EngineHarness()
        _ = try IncomingCallTests.answered(harness)
        let pause = ConversationAction.pause(conversationUUID: try #require(harness.conversation?.uuid), isPaused: true)
        try harness.manager.perform([pause])
        let reinvite = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(100, "Trying", to: reinvite, toTag: nil))
        harness.environment.advance(by: .seconds(20))
        harness.deliver(PeerMessages.response(180, "Ringing", to: reinvite, toTag: nil))
        harness.environment.advance(by: .seconds(20))
        #expect(harness.sent().isEmpty, "the guard counts from the last provisional")
        #expect(harness.conversation?.state == .joined)
        harness.environment.advance(by: .seconds(13))
        if case .failed = pause.state {} else { Issue.record("the pause should fail, it is \(pause.state)") }
        let bye = try #require(harness.sent().first?.request)
        #expect(bye.method == .bye)
        #expect(harness.transitions.states.last == "left(failed)")
        harness.deliver(PeerMessages.response(200, "OK", to: bye, toTag: nil))
        harness.environment.advance(by: .seconds(5))  // timer K of the BYE's transaction
        #expect(harness.engine.statistics.liveCalls == 0)
        #expect(harness.engine.statistics.pendingRequests == 0, "the re-INVITE's client transaction is gone")
    }

    @Test("End while our re-INVITE is answered only provisionally: the BYE ends the call and the re-INVITE's transaction goes with the leg")
    func endDuringProceedingReinvite() throws {
        let harness = try EngineHarness()
        _ = try IncomingCallTests.answered(harness)
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.pause(conversationUUID: uuid, isPaused: true)])
        let reinvite = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(100, "Trying", to: reinvite, toTag: nil))
        try harness.manager.perform([.end(conversationUUID: uuid)])
        let bye = try #require(harness.sent().first?.request)
        #expect(bye.method == .bye)
        harness.deliver(PeerMessages.response(200, "OK", to: bye, toTag: nil))
        #expect(harness.transitions.states.last == "left(localEnded)")
        harness.environment.advance(by: .seconds(600))
        #expect(harness.engine.statistics.liveCalls == 0)
        #expect(harness.engine.statistics.liveTransactions == 0, "no timer of RFC 3261 ends Proceeding: none is left in it")
    }

    @Test("a final answer after a provisional one stops the re-INVITE's guard")
    func reinviteAnsweredAfterProvisional() throws {
        let harness = try EngineHarness()
        _ = try IncomingCallTests.answered(harness)
        try harness.manager.perform([.pause(conversationUUID: try #require(harness.conversation?.uuid), isPaused: true)])
        let reinvite = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(100, "Trying", to: reinvite, toTag: nil))
        harness.deliver(PeerMessages.response(200, "OK", to: reinvite, toTag: nil, sdp: true), body: PeerMessages.offer)
        #expect(harness.sent().map(\.method) == ["ACK"])
        harness.environment.advance(by: .seconds(60))
        #expect(harness.sent().compactMap(\.method).allSatisfy { $0 != "BYE" })
        #expect(harness.conversation?.state == .paused)
    }

    @Test("End while our 200 waits for its ACK: the BYE waits for the ACK (RFC 3261 §15)")
    func byeAfterAck() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let tag = try #require(harness.sent().first?.toTag)
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        _ = harness.sent()
        try harness.manager.perform([.end(conversationUUID: uuid)])
        #expect(harness.sent().compactMap(\.method).isEmpty, "no BYE before the ACK")
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack"))
        #expect(harness.sent().compactMap(\.method) == ["BYE"])
        #expect(harness.engine.statistics.liveCalls == 0)
    }
}
