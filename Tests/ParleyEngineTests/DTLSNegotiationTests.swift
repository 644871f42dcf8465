import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

/// A media handler with a DTLS certificate (its fingerprint only: the engine never sees the key) that writes down the
/// DTLS setup of each audio handed over.
final class DTLSMedia: CallMediaHandler {
    let recording = RecordingMedia()
    /// Our certificate's fingerprint (empty: no DTLS here).
    var dtlsFingerprints = [DTLSNegotiationTests.ours]
    /// The DTLS keying of each audio handed over (nil entries: plain, or stopped).
    var keyings: [DTLSKeying?] = []

    func reserveEndpoint(for conversation: UUID) -> MediaEndpoint? { recording.reserveEndpoint(for: conversation) }
    func releaseEndpoint(_ endpoint: MediaEndpoint, of conversation: UUID) { recording.releaseEndpoint(endpoint, of: conversation) }
    func audioChanged(_ audio: NegotiatedAudio?, for conversation: UUID) {
        recording.audioChanged(audio, for: conversation)
        keyings.append(audio?.dtls)
    }
    func muteChanged(_ muted: Bool, for conversation: UUID) {}
    func sendTones(_ digits: String, for conversation: UUID) {}
}

/// DTLS-SRTP (RFC 5763/5764) in the engine's offers and answers: DTLS offers answered in kind with our fingerprint
/// and a role, our offers `actpass` with either answer handled, re-INVITEs keeping the association, the media layer
/// told the role and the peer's fingerprints, and a failed check ending the call as `mediaSecurityFailed`.
@Suite("Engine: SRTP keyed by DTLS", .timeLimit(.minutes(3)))
struct DTLSNegotiationTests {
    static let ours = SDPFingerprint(hashFunction: .sha256, digest: Array(repeating: 0xAB, count: 32))!
    static let theirs = SDPFingerprint(hashFunction: .sha256, digest: Array(0..<32))!

    /// linphone's `media_encryption=dtls` offer: UDP/TLS/RTP/SAVP, `actpass` (or `setup`), a SHA-256 fingerprint.
    static func offer(setup: String = "actpass", version: Int = 1, extra: String = "") -> String {
        PeerMessages.offer.replacingOccurrences(of: "RTP/AVP", with: "UDP/TLS/RTP/SAVP")
            .replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 \(version)")
            + "a=setup:\(setup)\na=fingerprint:\(theirs.attributeValue)\n" + extra
    }

    static func harness(policy: MediaEncryptionPolicy = MediaEncryptionPolicy(), dtls: Bool = true) throws -> (EngineHarness, DTLSMedia) {
        let media = DTLSMedia()
        if !dtls { media.dtlsFingerprints = [] }
        let harness = try EngineHarness(media: media) { $0.mediaEncryption = policy }
        return (harness, media)
    }

    /// An incoming call with `body`, answered; returns our 200's description and the dialog's tag (after the ACK).
    static func answer(_ harness: EngineHarness, _ body: String) throws -> (SDPSession, String) {
        harness.deliver(PeerMessages.invite(), body: body)
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        let ok = try #require(harness.sent().first { $0.statusCode == 200 })
        let tag = try #require(ok.toTag)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        return (try SDPSession.parse(ok.body), tag)
    }

    @Test("a DTLS offer (actpass) is answered UDP/TLS/RTP/SAVP, setup:passive, our fingerprint, no rtcp-mux; we are the server")
    func answersActive() throws {
        let (harness, media) = try Self.harness()
        let (answer, _) = try Self.answer(harness, Self.offer(extra: "a=rtcp-mux\n"))
        #expect(answer.audioProtocol == .udpTLSRTPSAVP && answer.setup == .passive && answer.fingerprints == [Self.ours])
        #expect(answer.crypto.isEmpty && !answer.rtcpMux, "no keys in the SDP, and RTCP on its own port")
        let keying = try #require(media.keyings.last ?? nil)
        #expect(!keying.isClient && keying.peerFingerprints == [Self.theirs])
        #expect(harness.conversation?.encryption == "dtls")
        let uuid = try #require(harness.conversation?.uuid)
        let audio = try #require(harness.engine.audio(of: uuid))
        #expect(audio.encryption == "dtls" && audio.peerFingerprint == Self.theirs.attributeValue && audio.srtp == nil)
    }

    @Test("a DTLS offer that says active is answered passive (we are the server), one that says passive active")
    func answersTheOtherRole() throws {
        for (offered, answered, client) in [("active", SDPSetupRole.passive, false), ("passive", .active, true)] {
            let (harness, media) = try Self.harness()
            let (answer, _) = try Self.answer(harness, Self.offer(setup: offered))
            #expect(answer.setup == answered, "\(offered)")
            #expect((media.keyings.last ?? nil)?.isClient == client, "\(offered)")
        }
    }

    @Test("refused with 488: a DTLS offer without DTLS in the media layer, one without a fingerprint, one with holdconn")
    func refusals() throws {
        let noFingerprint = PeerMessages.offer.replacingOccurrences(of: "RTP/AVP", with: "UDP/TLS/RTP/SAVP") + "a=setup:actpass\n"
        for (dtls, body) in [(false, Self.offer()), (true, noFingerprint), (true, Self.offer(setup: "holdconn"))] {
            let (harness, _) = try Self.harness(dtls: dtls)
            harness.deliver(PeerMessages.invite(), body: body)
            #expect(harness.sent().contains { $0.statusCode == 488 }, "dtls \(dtls): \(body)")
            #expect(harness.conversation == nil)
        }
    }

    @Test("our offer with --media-encryption dtls: UDP/TLS/RTP/SAVP, actpass, our fingerprint; an active answer makes us the server, a passive one the client")
    func offersActpass() throws {
        for (role, client) in [(SDPSetupRole.active, false), (.passive, true)] {
            let (harness, media) = try Self.harness(policy: MediaEncryptionPolicy(offer: .dtls))
            let invite = try CallMediaTests.start(harness)
            let offered = try SDPSession.parse(invite.body)
            #expect(offered.audioProtocol == .udpTLSRTPSAVP && offered.setup == .actpass && offered.fingerprints == [Self.ours])
            #expect(offered.crypto.isEmpty)
            let answer = Self.offer(setup: role.rawValue)
            harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: true), body: answer)
            let keying = try #require(media.keyings.last ?? nil, "\(role)")
            #expect(keying.isClient == client && keying.peerFingerprints == [Self.theirs], "\(role)")
            #expect(harness.conversation?.encryption == "dtls")
        }
    }

    @Test("an answer to our DTLS offer that is plain, has no fingerprint or says actpass carries no audio: the call ends (failed)")
    func unusableAnswers() throws {
        let noFingerprint = PeerMessages.offer.replacingOccurrences(of: "RTP/AVP", with: "UDP/TLS/RTP/SAVP") + "a=setup:active\n"
        for answer in [PeerMessages.offer, noFingerprint, Self.offer(setup: "actpass")] {
            let (harness, media) = try Self.harness(policy: MediaEncryptionPolicy(offer: .dtls))
            let invite = try CallMediaTests.start(harness)
            harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: true), body: answer)
            #expect(media.recording.events.allSatisfy { !$0.hasPrefix("PCMU") }, "no audio for \(answer)")
            #expect(harness.conversation?.encryption == nil)
            harness.environment.advance(by: .milliseconds(10))
            #expect(harness.sent().contains { $0.method == "BYE" }, "\(answer)")
            #expect(harness.transitions.states.last == "left(failed)", "\(harness.transitions.states)")
        }
    }

    @Test("re-INVITEs keep the association: our hold offers actpass with the same fingerprint, the peer's re-offer gets our role again")
    func reinvites() throws {
        // A call where we took the active role (the peer offered passive) keeps it when the peer re-offers actpass.
        let (active, _) = try Self.harness()
        let (first, activeTag) = try Self.answer(active, Self.offer(setup: "passive"))
        #expect(first.setup == .active)
        active.deliver(
            PeerMessages.inDialog("INVITE", localTag: activeTag, cseq: 2, branch: "z9hG4bK-re-0", contentType: "application/sdp"),
            body: Self.offer(version: 2, extra: "a=sendonly\n"))
        #expect(try SDPSession.parse(try #require(active.sent().first { $0.statusCode == 200 }).body).setup == .active)

        let (harness, media) = try Self.harness()
        let (answer, tag) = try Self.answer(harness, Self.offer())
        #expect(answer.setup == .passive)
        // The peer's hold: actpass again; we stay passive, the media layer's setup is the same (no new handshake).
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-re-1", contentType: "application/sdp"),
            body: Self.offer(version: 2, extra: "a=sendonly\n"))
        let ok = try #require(harness.sent().first { $0.statusCode == 200 })
        let reanswer = try SDPSession.parse(ok.body)
        #expect(reanswer.audioProtocol == .udpTLSRTPSAVP && reanswer.setup == .passive && reanswer.fingerprints == [Self.ours])
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 2, branch: "z9hG4bK-ack-2"))
        #expect(Set(media.keyings.compactMap { $0 }).count == 1, "one DTLS setup throughout: \(media.keyings)")
        // Our hold: actpass, the same fingerprint, the same profile.
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.pause(conversationUUID: uuid, isPaused: true)])
        let hold = try #require(harness.sent().first { $0.request?.method == .invite }?.request)
        let held = try SDPSession.parse(hold.body)
        #expect(held.audioProtocol == .udpTLSRTPSAVP && held.setup == .actpass && held.fingerprints == [Self.ours])
    }

    @Test("after our offer, the peer's re-INVITE (actpass, the same fingerprint) is answered in the role we have: active when its answer was passive; a new fingerprint (a new association) is answered passive")
    func peerReofferKeepsOurRole() throws {
        let other = SDPFingerprint(hashFunction: .sha256, digest: Array(repeating: 0x11, count: 32))!
        for (fingerprint, expected) in [(Self.theirs, SDPSetupRole.active), (other, .passive)] {
            let (harness, media) = try Self.harness(policy: MediaEncryptionPolicy(offer: .dtls))
            let invite = try CallMediaTests.start(harness)
            harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: true), body: Self.offer(setup: "passive"))
            #expect((media.keyings.last ?? nil)?.isClient == true, "its passive answer makes us the client")
            let reoffer = Self.offer(version: 2).replacingOccurrences(of: Self.theirs.attributeValue, with: fingerprint.attributeValue)
            harness.deliver(
                """
                INVITE sip:parley@127.0.0.1:5070 SIP/2.0
                Via: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK-re-peer
                Max-Forwards: 70
                From: \(invite.headers["To"]!);tag=callee-tag
                To: \(invite.headers["From"]!)
                Call-ID: \(invite.headers.callID!)
                CSeq: 2 INVITE
                Contact: <sip:bob@127.0.0.1:5062>
                Content-Type: application/sdp
                """, body: reoffer)
            let ok = try #require(harness.sent().first { $0.statusCode == 200 })
            #expect(try SDPSession.parse(ok.body).setup == expected, "\(fingerprint)")
        }
    }

    @Test("the media layer's security failure ends a confirmed call with BYE as mediaSecurityFailed")
    func securityFailureEndsTheCall() throws {
        let (harness, media) = try Self.harness()
        _ = try Self.answer(harness, Self.offer())
        let uuid = try #require(harness.conversation?.uuid)
        harness.engine.mediaSecurityFailed("the peer's DTLS certificate on RTP does not match", for: uuid)
        #expect(harness.sent().first?.method == "BYE")
        #expect(harness.transitions.states.last == "left(mediaSecurityFailed)")
        #expect(media.recording.events.last == "release 50000" && media.recording.events.contains("stop"))
    }

    @Test("a failure reported before the ACK ends the call as soon as the ACK confirms it")
    func failureBeforeTheACK() throws {
        let (harness, _) = try Self.harness()
        harness.deliver(PeerMessages.invite(), body: Self.offer())
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        let tag = try #require(harness.sent().first { $0.statusCode == 200 }?.toTag)
        harness.engine.mediaSecurityFailed("the DTLS handshake did not complete within 10 s", for: uuid)
        #expect(harness.sent().isEmpty && harness.conversation?.state == .joining, "nothing until the call is confirmed")
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        #expect(harness.sent().first?.method == "BYE")
        #expect(harness.transitions.states.last == "left(mediaSecurityFailed)")
    }
}
