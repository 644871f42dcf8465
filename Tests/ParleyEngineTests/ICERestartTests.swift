import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

/// A media handler with an ICE agent of sorts: credentials numbered by restart (`ours1`, `ours2`…), one host candidate.
final class ICEMedia: CallMediaHandler {
    let recording = RecordingMedia()
    /// The agent's credentials' number: a restart takes the next.
    var generation = 1
    /// How many times the engine asked for a restart (the peer restarted).
    var restartsAsked = 0

    /// Our ICE as the agent has it now.
    var ice: SDPICE {
        SDPICE(
            ufrag: "ours\(generation)", pwd: "passwordofoursnumberxx\(generation)",
            candidates: [SDPCandidate(attributeValue: "1 1 UDP 2130706431 127.0.0.1 50000 typ host")!])!
    }

    func offersICE(through account: String?) -> Bool { true }
    func reserveEndpoint(for conversation: UUID) -> MediaEndpoint? { recording.reserveEndpoint(for: conversation) }
    func reserveEndpoint(for conversation: UUID, through account: String?, ice role: ICERole?) -> MediaEndpoint? {
        guard var endpoint = recording.reserveEndpoint(for: conversation) else { return nil }
        if role != nil { endpoint.ice = ice }
        return endpoint
    }
    func restartICE(for conversation: UUID) -> SDPICE? {
        restartsAsked += 1
        generation += 1
        return ice
    }
    func currentICE(for conversation: UUID) -> SDPICE? { ice }
    func releaseEndpoint(_ endpoint: MediaEndpoint, of conversation: UUID) { recording.releaseEndpoint(endpoint, of: conversation) }
    func audioChanged(_ audio: NegotiatedAudio?, for conversation: UUID) { recording.audioChanged(audio, for: conversation) }
    func muteChanged(_ muted: Bool, for conversation: UUID) {}
    func sendTones(_ digits: String, for conversation: UUID) {}
}

/// ICE restart in the engine (RFC 8445 §9, RFC 8839 §4.4.1.1.1): a re-offer with new credentials restarts ours and
/// the answer carries the new ones; the media layer's restart goes out as a re-INVITE with its new credentials; a
/// proxy's 408 to that re-INVITE does not end the dialog.
@Suite("Engine: ICE restart", .timeLimit(.minutes(1)))
struct ICERestartTests {
    /// The peer's offer with ICE credentials `ufrag` (its pwd derived from it), version `version`.
    static func offer(ufrag: String, version: Int, extra: String = "") -> String {
        PeerMessages.offer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 \(version)")
            + "a=ice-ufrag:\(ufrag)\na=ice-pwd:passwordofthepeerxxxxx\(ufrag)\n"
            + "a=candidate:1 1 UDP 2130706431 127.0.0.1 6000 typ host\n" + extra
    }

    /// An incoming call with ICE, answered and acknowledged: the harness, its media, our answer, the dialog's tag.
    static func answeredCall() throws -> (EngineHarness, ICEMedia, SDPSession, String) {
        let media = ICEMedia()
        let harness = try EngineHarness(media: media)
        harness.deliver(PeerMessages.invite(), body: offer(ufrag: "peer1", version: 1))
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        let ok = try #require(harness.sent().first { $0.statusCode == 200 })
        let tag = try #require(ok.toTag)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        return (harness, media, try SDPSession.parse(ok.body), tag)
    }

    /// The peer's re-INVITE with `body`; our 200's description (the re-INVITE acknowledged).
    static func reoffer(_ harness: EngineHarness, tag: String, cseq: Int, body: String) throws -> SDPSession {
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: cseq, branch: "z9hG4bK-re-\(cseq)", contentType: "application/sdp"),
            body: body)
        let ok = try #require(harness.sent().first { $0.statusCode == 200 })
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: cseq, branch: "z9hG4bK-ack-\(cseq)"))
        return try SDPSession.parse(ok.body)
    }

    @Test("the peer's re-offer with new credentials restarts our ICE: the answer carries our new ones; a re-offer with the same credentials (its hold) does not")
    func peerRestarts() throws {
        let (harness, media, answer, tag) = try Self.answeredCall()
        #expect(answer.ice?.ufrag == "ours1")
        let hold = try Self.reoffer(harness, tag: tag, cseq: 2, body: Self.offer(ufrag: "peer1", version: 2, extra: "a=sendonly\n"))
        #expect(hold.ice?.ufrag == "ours1" && media.restartsAsked == 0, "no restart for a hold: \(String(describing: hold.ice))")
        let restarted = try Self.reoffer(harness, tag: tag, cseq: 3, body: Self.offer(ufrag: "peer2", version: 3))
        #expect(restarted.ice?.ufrag == "ours2" && restarted.ice?.pwd == "passwordofoursnumberxx2")
        #expect(media.restartsAsked == 1)
        #expect(harness.conversation?.state == .joined)
    }

    @Test("the media layer's restart goes out as a re-INVITE with its new credentials; a proxy's 408 to it leaves the call up (a later hold still goes), and later offers keep the new credentials")
    func ourRestart() throws {
        let (harness, media, _, _) = try Self.answeredCall()
        let uuid = try #require(harness.conversation?.uuid)
        media.generation = 2  // the agent restarted: new credentials
        harness.engine.iceRestarted("the path lost consent", for: uuid)
        let invite = try #require(harness.sent().first { $0.method == "INVITE" }?.request)
        #expect(try SDPSession.parse(invite.body).ice?.ufrag == "ours2")
        harness.deliver(PeerMessages.response(408, "Request Timeout", to: invite))
        #expect(!harness.sent().contains { $0.method == "BYE" }, "the call goes on")
        #expect(harness.conversation?.state == .joined)
        try harness.manager.perform([.pause(conversationUUID: uuid, isPaused: true)])
        let hold = try #require(harness.sent().first { $0.method == "INVITE" }?.request, "the dialog is still up")
        #expect(try SDPSession.parse(hold.body).ice?.ufrag == "ours2")
        #expect(media.restartsAsked == 0)
    }

    @Test("a 408 to any other re-INVITE still ends the dialog (RFC 3261 §12.2.1.2)")
    func otherTimeoutsEndTheDialog() throws {
        let (harness, _, _, _) = try Self.answeredCall()
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.pause(conversationUUID: uuid, isPaused: true)])
        let hold = try #require(harness.sent().first { $0.method == "INVITE" }?.request)
        harness.deliver(PeerMessages.response(408, "Request Timeout", to: hold))
        #expect(harness.transitions.states.last?.hasPrefix("left") == true, "\(harness.transitions.states)")
    }
}
