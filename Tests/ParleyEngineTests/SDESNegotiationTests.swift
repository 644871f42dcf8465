import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

/// SDES (RFC 4568) in the engine's offers and answers: encrypted offers answered in kind with a fresh key, our own
/// offers per policy, the keys handed to the media layer, and plain media refused when encryption is required.
@Suite("Engine: SRTP keyed by SDES")
struct SDESNegotiationTests {
    /// baresip's `mediaenc=srtp-mand` offer: RTP/SAVP with two suites (the 32-bit tag first).
    static let offer = PeerMessages.offer.replacingOccurrences(of: "RTP/AVP", with: "RTP/SAVP")
        + "a=crypto:1 AES_CM_128_HMAC_SHA1_32 inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd\n"
        + "a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:HR4fICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6\n"

    static func harness(policy: MediaEncryptionPolicy = MediaEncryptionPolicy(), srtp: Bool = true) throws -> (EngineHarness, RecordingMedia) {
        let media = RecordingMedia()
        media.carriesSRTP = srtp
        let harness = try EngineHarness(media: media) { $0.mediaEncryption = policy }
        return (harness, media)
    }

    @Test("an SDES offer is answered RTP/SAVP with the offer's first suite, its tag, and a key of ours; the media layer gets both keys")
    func answersInKind() throws {
        let (harness, media) = try Self.harness()
        harness.deliver(PeerMessages.invite(), body: Self.offer)
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        let ok = try #require(harness.sent().first { $0.statusCode == 200 })
        let answer = try SDPSession.parse(ok.body)
        #expect(answer.audioProtocol == .rtpSAVP)
        #expect(answer.crypto.count == 1 && answer.crypto.first?.tag == 1 && answer.crypto.first?.suite == .aesCM128SHA1_32)
        let keys = try #require(media.lastKeys)
        #expect(keys.suite == .aesCM128SHA1_32 && keys.sendKey == answer.crypto[0].key)
        #expect(keys.receiveKey.bytes == Array(0..<30), "the peer's key, from its tag-1 line")
    }

    @Test("our offer carries SDES keys per policy: sdes on any transport, auto only over TLS, none never")
    func offersPerPolicy() throws {
        for (offer, encrypted) in [(MediaEncryptionPolicy.Offer.sdes, true), (.auto, false), (.none, false)] {
            let (harness, _) = try Self.harness(policy: MediaEncryptionPolicy(offer: offer))
            let invite = try CallMediaTests.start(harness)
            let described = try SDPSession.parse(invite.body)
            #expect(described.audioProtocol == (encrypted ? .rtpSAVP : .rtpAVP), "\(offer)")
            #expect(described.crypto.count == (encrypted ? SRTPSuite.preferred.count : 0), "\(offer)")
            if encrypted {
                #expect(described.crypto.first?.suite == .aesCM128SHA1_80 && Set(described.crypto.map(\.key)).count == described.crypto.count,
                    "AES_CM_128_HMAC_SHA1_80 first, a key of its own for each suite")
            }
        }
    }

    @Test("refused with 488: an SDES offer without SRTP in the media layer, and a plain offer when encryption is required")
    func refusals() throws {
        for (policy, srtp, body) in [(MediaEncryptionPolicy(), false, Self.offer), (MediaEncryptionPolicy(required: true), true, PeerMessages.offer)] {
            let (harness, _) = try Self.harness(policy: policy, srtp: srtp)
            harness.deliver(PeerMessages.invite(), body: body)
            #expect(harness.sent().contains { $0.statusCode == 488 }, "\(policy), srtp \(srtp)")
            #expect(harness.conversation == nil)
        }
    }

    @Test("a re-INVITE keeps the call's keys: the hold offer carries the same crypto lines")
    func reinviteKeepsKeys() throws {
        let (harness, media) = try Self.harness(policy: MediaEncryptionPolicy(offer: .sdes))
        let invite = try CallMediaTests.start(harness)
        let offered = try SDPSession.parse(invite.body)
        let answer = PeerMessages.offer.replacingOccurrences(of: "RTP/AVP", with: "RTP/SAVP")
            + "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:HR4fICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6\n"
        harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: false), body: answer)
        #expect(media.lastKeys?.sendKey == offered.crypto[0].key)
        let uuid = try #require(harness.conversation?.uuid)
        _ = harness.sent()
        try harness.manager.perform([.pause(conversationUUID: uuid, isPaused: true)])
        let hold = try #require(harness.sent().first { $0.request?.method == .invite }?.request)
        let held = try SDPSession.parse(hold.body)
        #expect(held.audioProtocol == .rtpSAVP && held.crypto == offered.crypto)
    }

    @Test("an SDES offer whose every line is unusable gets 488: bad base64, a short key, an unknown suite, an MKI, a short lifetime, 100 lines")
    func unusableCrypto() throws {
        let savp = PeerMessages.offer.replacingOccurrences(of: "RTP/AVP", with: "RTP/SAVP")
        let good = "inline:HR4fICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6"
        let bad = [
            "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:!!!not-base64!!!",
            "a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:AAECAwQFBgcICQoLDA0ODxAREhMU",
            "a=crypto:3 F8_128_HMAC_SHA1_80 \(good)",
            "a=crypto:4 AES_CM_128_HMAC_SHA1_80 \(good)|2^20|1:4",
            "a=crypto:5 AES_CM_128_HMAC_SHA1_80 \(good)|2^10",
        ]
        let hundred = (6..<106).map { "a=crypto:\($0) NO_SUCH_SUITE \(good)" }
        // A usable line after the first 16 is not read either.
        for lines in [bad, hundred, bad + hundred + ["a=crypto:200 AES_CM_128_HMAC_SHA1_80 \(good)"]] {
            let (harness, _) = try Self.harness()
            harness.deliver(PeerMessages.invite(), body: savp + lines.joined(separator: "\n") + "\n")
            #expect(harness.sent().contains { $0.statusCode == 488 }, "\(lines.count) lines")
            #expect(harness.conversation == nil)
        }
        let (harness, _) = try Self.harness()
        harness.deliver(PeerMessages.invite(), body: savp + (bad + ["a=crypto:9 AES_CM_128_HMAC_SHA1_80 \(good)"]).joined(separator: "\n") + "\n")
        #expect(harness.conversation != nil, "the one usable line among bad ones is taken")
    }

    @Test("encryption required: a 200 that answers our SRTP offer with plain RTP is acknowledged, then ended (BYE, failed)")
    func plainAnswerEnds() throws {
        let (harness, media) = try Self.harness(policy: MediaEncryptionPolicy(required: true))
        let invite = try CallMediaTests.start(harness)
        #expect(try SDPSession.parse(invite.body).audioProtocol == .rtpSAVP, "required: our offer is encrypted")
        harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: false), body: PeerMessages.offer)
        harness.environment.advance(by: .milliseconds(1))
        let sent = harness.sent()
        #expect(sent.contains { $0.method == "ACK" } && sent.contains { $0.method == "BYE" }, "\(sent.compactMap(\.method))")
        #expect(media.lastKeys == nil && !media.events.contains { $0.hasPrefix("PCMU") }, "no plain audio: \(media.events)")
        #expect(harness.manager.conversations.allSatisfy { $0.state == .leaving || $0.state == .left })
    }

    @Test("encryption required: a re-INVITE that switches the call from SAVP to plain AVP gets 488; the call and its keys go on")
    func downgradeRefused() throws {
        let (harness, media) = try Self.harness(policy: MediaEncryptionPolicy(required: true))
        harness.deliver(PeerMessages.invite(), body: Self.offer)
        let uuid = try #require(harness.conversation?.uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        let ok = try #require(harness.sent().first { $0.statusCode == 200 })
        let tag = try #require(ok.toTag)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        let keys = try #require(media.lastKeys)
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-re-1", contentType: "application/sdp"),
            body: PeerMessages.holdOffer(version: 2))
        #expect(harness.sent().contains { $0.statusCode == 488 }, "a plain re-offer is refused")
        #expect(harness.conversation?.state == .joined && media.lastKeys == keys)
    }
}
