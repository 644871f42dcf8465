import ControlProtocol
import ConversationKit
import Foundation
import ParleyEngine
import ParleyTestSupport
import SIPMessages
import Testing

@Suite("Engine: video signalling")
struct VideoTests {
    @Test("an incoming video offer rings as a video call and is answered with video; without --video, as audio with video refused")
    func incomingVideo() throws {
        for supported in [true, false] {
            let harness = try EngineHarness(video: supported)
            harness.deliver(PeerMessages.invite(), body: PeerMessages.videoOffer)
            _ = harness.sent()
            let conversation = try #require(harness.conversation)
            #expect(conversation.isVideo == supported)
            try harness.manager.perform([.join(conversationUUID: conversation.uuid)])
            let ok = try #require(harness.sent().first)
            let answer = try SDPSession.parse(ok.body)
            #expect(answer.isVideo == supported && answer.video != nil, "every offered m-line is answered: \(ok.bodyText)")
        }
    }

    @Test("a video offer with no format we take rings as audio, its m=video answered with port 0")
    func unusableVideo() throws {
        let harness = try EngineHarness(video: true)
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer + "m=video 6002 RTP/AVP 34\n")
        _ = harness.sent()
        #expect(harness.conversation?.isVideo == false)
        try harness.manager.perform([.join(conversationUUID: try #require(harness.conversation?.uuid))])
        let answer = try SDPSession.parse(try #require(harness.sent().first).body)
        #expect(answer.video?.port == 0)
    }

    @Test("the peer upgrades an audio call to video by re-INVITE, and back: capability changes, seen as events")
    func remoteUpgrade() throws {
        let harness = try EngineHarness(video: true)
        let probe = ServiceProbe(harness)
        let tag = try IncomingCallTests.answered(harness)
        let uuid = try #require(harness.conversation?.uuid)
        #expect(harness.conversation?.isVideo == false)
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-up", contentType: "application/sdp"),
            body: PeerMessages.videoOffer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 2"))
        #expect(try SDPSession.parse(try #require(harness.sent().first).body).isVideo)
        #expect(harness.conversation?.isVideo == true)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 2, branch: "z9hG4bK-ack-up"))
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 3, branch: "z9hG4bK-down", contentType: "application/sdp"),
            body: PeerMessages.offer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 3"))
        #expect(harness.conversation?.isVideo == false)
        #expect(probe.events.wait(until: { _ in probe.changes(of: uuid).filter { $0.contains("isVideo") }.count == 2 }),
            "\(probe.changes(of: uuid))")
    }

    @Test("a video start offers m=video; an answer without video leaves an audio call; hold keeps video in the offer")
    func outgoingVideo() throws {
        let harness = try EngineHarness(video: true)
        try harness.manager.perform([.start(handles: [Handle(kind: .generic, value: "sip:bob@127.0.0.1:5062")], isVideo: true)])
        let invite = try #require(harness.sent().first?.request)
        #expect(try SDPSession.parse(invite.body).isVideo)
        #expect(harness.conversation?.isVideo == true)
        harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: true), body: PeerMessages.videoOffer)
        #expect(harness.conversation?.state == .joined && harness.conversation?.isVideo == true)
        _ = harness.sent()
        try harness.manager.perform([.pause(conversationUUID: try #require(harness.conversation?.uuid), isPaused: true)])
        let reinvite = try #require(harness.sent().first?.request)
        #expect(try SDPSession.parse(reinvite.body).isVideo, "hold keeps the video stream")
        harness.deliver(PeerMessages.response(200, "OK", to: reinvite, toTag: nil, sdp: true), body: PeerMessages.offer)
        #expect(harness.conversation?.isVideo == false, "the peer answered the hold without video")

        let audioOnly = try EngineHarness(video: true)
        try audioOnly.manager.perform([.start(handles: [Handle(kind: .generic, value: "sip:bob@127.0.0.1:5062")], isVideo: true)])
        let second = try #require(audioOnly.sent().first?.request)
        audioOnly.deliver(PeerMessages.response(200, "OK", to: second, sdp: true), body: PeerMessages.offer)
        #expect(audioOnly.conversation?.state == .joined && audioOnly.conversation?.isVideo == false)
        _ = audioOnly.sent()
        try audioOnly.manager.perform([.pause(conversationUUID: try #require(audioOnly.conversation?.uuid), isPaused: true)])
        let hold = try SDPSession.parse(try #require(audioOnly.sent().first?.request).body)
        #expect(hold.video?.port == 0, "the refused video line stays, at port 0, and is not offered again")
    }

    @Test("the frontend turns video on and off by re-INVITE (the video method); a peer answering without video refuses it")
    func localUpgrade() throws {
        let harness = try EngineHarness(video: true)
        let probe = ServiceProbe(harness)
        _ = try IncomingCallTests.answered(harness)
        let uuid = try #require(harness.conversation?.uuid)
        func video(_ enabled: Bool, answer: String) throws -> [String: Any] {
            let replies = EventRecorder<Data>()
            probe.service.handle(Data(#"{"v":1,"id":1,"method":"video","params":{"conversation":"\#(uuid)","enabled":\#(enabled)}}"#.utf8)) {
                replies.record($0)
            }
            let reinvite = try #require(harness.sent().first?.request)
            #expect(try SDPSession.parse(reinvite.body).isVideo == enabled)
            harness.deliver(PeerMessages.response(200, "OK", to: reinvite, toTag: nil, sdp: true), body: answer)
            #expect(harness.sent().map(\.method) == ["ACK"])
            let reply = try #require(replies.first())
            return try #require(try JSONSerialization.jsonObject(with: reply) as? [String: Any])
        }
        let on = try video(true, answer: PeerMessages.videoOffer)
        #expect(((on["result"] as? [String: Any])?["conversation"] as? [String: Any])?["isVideo"] as? Bool == true, "\(on)")
        let off = try video(false, answer: PeerMessages.offer + "m=video 0 RTP/AVP 96\n")
        #expect(((off["result"] as? [String: Any])?["conversation"] as? [String: Any])?["isVideo"] as? Bool == false, "\(off)")
        let refused = try video(true, answer: PeerMessages.offer)
        #expect((refused["error"] as? [String: Any])?["message"] as? String == "The other side did not take video.", "\(refused)")
        #expect(harness.conversation?.isVideo == false)
        #expect(probe.events.wait(until: { _ in probe.changes(of: uuid).filter { $0.contains("isVideo") }.count == 2 }))
        let audioHarness = try EngineHarness()
        let noVideo = ServiceProbe(audioHarness)
        _ = try IncomingCallTests.answered(audioHarness)
        let audioCall = try #require(audioHarness.conversation?.uuid)
        let refusal = try noVideo.call(#"{"v":1,"id":2,"method":"video","params":{"conversation":"\#(audioCall)","enabled":true}}"#)
        #expect((refusal["error"] as? [String: Any])?["code"] as? String == "refused", "\(refusal)")
        #expect(audioHarness.sent().isEmpty, "nothing was sent")
    }
}
