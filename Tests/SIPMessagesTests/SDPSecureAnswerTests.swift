import Foundation
import Testing

@testable import SIPMessages

@Suite("SDP security: profiles, answers to encrypted offers, what offer and answer agreed")
struct SDPSecureAnswerTests {
    static let sdes = SDPMediaSecurity.sdes(SecureOffers.ourLines)
    static let dtls = SDPMediaSecurity.dtls(fingerprints: [SecureOffers.ourFingerprint], setup: .active)

    /// The answer to `offer` with `security` (and rtcp-mux when `mux`).
    static func answer(_ offer: SDPSession, _ security: SDPMediaSecurity = .plain, mux: Bool = false) -> SDPSession? {
        offer.answer(
            origin: SecureOffers.local, connectionAddress: "192.0.2.4", audioPort: 4000, telephoneEvents: true,
            security: security, acceptsRTCPMux: mux)
    }

    @Test("profiles: the six known ones typed, in any case, with secure / feedback / DTLS; anything else kept as written")
    func profiles() {
        let table: [(String, SDPTransportProtocol, SDPEncryption, Bool)] = [
            ("RTP/AVP", .rtpAVP, .plain, false), ("RTP/AVPF", .rtpAVPF, .plain, true), ("RTP/SAVP", .rtpSAVP, .sdes, false),
            ("RTP/SAVPF", .rtpSAVPF, .sdes, true), ("UDP/TLS/RTP/SAVP", .udpTLSRTPSAVP, .dtls, false),
            ("UDP/TLS/RTP/SAVPF", .udpTLSRTPSAVPF, .dtls, true),
        ]
        for (text, value, encryption, feedback) in table {
            #expect(SDPTransportProtocol(text) == value && SDPTransportProtocol(text.lowercased()) == value && value.text == text)
            #expect(value.encryption == encryption && value.hasFeedback == feedback && value.isDTLS == (encryption == .dtls))
            #expect(value.isSecure == (encryption != .plain) && SDPTransportProtocol.rtp(encryption, feedback: feedback) == value)
        }
        let odd = SDPTransportProtocol("TCP/TLS/RTP/SAVP")
        #expect(odd == .unknown("TCP/TLS/RTP/SAVP") && odd.encryption == nil && !odd.isSecure && odd.text == "TCP/TLS/RTP/SAVP")
    }

    @Test("plain answers as before: RTP/AVP only; an encrypted offer without our security, or AVPF, gets none")
    func plainPath() throws {
        for offer in [SecureOffers.baresipSRTPMand, SecureOffers.baresipSRTPMandF, SecureOffers.linphoneSRTP, SecureOffers.baresipDTLS] {
            #expect(Self.answer(try SecureOffers.parse(offer)) == nil)
        }
        let avpf = try SecureOffers.sdp(SecureOffers.head + ["m=audio 5000 RTP/AVPF 0"])
        #expect(Self.answer(avpf, Self.sdes) == nil && Self.answer(avpf, Self.dtls) == nil)
        let unknown = try SecureOffers.sdp(SecureOffers.head + ["m=audio 5000 TCP/RTP/AVP 0"])
        #expect(Self.answer(unknown) == nil && Self.answer(unknown, Self.sdes) == nil)
    }

    @Test("an RTP/AVP offer with a=crypto (baresip's mediaenc=srtp) is answered plain, as linphone does")
    func bestEffortIsPlain() throws {
        let offer = try SecureOffers.parse(SecureOffers.baresipSRTPBestEffort)
        #expect(offer.audioProtocol == .rtpAVP && offer.crypto.count == 1, "the line is read")
        for security in [SDPMediaSecurity.plain, Self.sdes, Self.dtls] {
            let answer = try #require(Self.answer(offer, security))
            #expect(answer.audioProtocol == .rtpAVP && answer.crypto.isEmpty && answer.fingerprints.isEmpty && answer.setup == nil)
            #expect(!String(decoding: answer.serialize(), as: UTF8.self).contains("a=crypto"))
            #expect(SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: false) == .plain)
        }
    }

    @Test("SDES: the offer's first supported suite, its tag echoed with our key; SAVP answered SAVP, SAVPF SAVPF")
    func sdesAnswer() throws {
        let baresip = try SecureOffers.parse(SecureOffers.baresipSRTPMand)
        let answer = try #require(Self.answer(baresip, Self.sdes))
        #expect(answer.audioProtocol == .rtpSAVP && answer.crypto.count == 1)
        let chosen = try #require(answer.crypto.first)
        #expect(chosen.tag == 1 && chosen.suite == .aesCM128SHA1_80 && chosen.key == SecureOffers.ourLines[0].key)
        #expect(String(decoding: answer.serialize(), as: UTF8.self).contains("m=audio 4000 RTP/SAVP 0 8 101\r\n"))
        #expect(try SDPSession.parse(answer.serialize()) == answer)
        let withF = try #require(Self.answer(try SecureOffers.parse(SecureOffers.baresipSRTPMandF), Self.sdes))
        #expect(withF.audioProtocol == .rtpSAVPF && withF.crypto.map(\.tag) == [1])
        // linphone's four lines: our first suite is its first; only the AES-256 ones if that is all we take.
        let linphone = try SecureOffers.parse(SecureOffers.linphoneSRTP)
        #expect(Self.answer(linphone, Self.sdes)?.crypto.map(\.tag) == [1])
        let aes256 = SecureOffers.ourLines.filter { $0.suite.masterKeyLength == 32 }
        let picked = try #require(Self.answer(linphone, .sdes(aes256))?.crypto.first)
        #expect(picked.tag == 3 && picked.suite == .aes256CMSHA1_80 && picked.key.bytes.count == 46)
        #expect(picked.key == aes256.first { $0.suite == .aes256CMSHA1_80 }?.key, "our key, not the offer's")
        // The offer's order wins over ours.
        let reordered = try SecureOffers.sdp(SecureOffers.head + ["m=audio 5000 RTP/SAVP 0",
            "a=crypto:" + SDPCryptoTests.line(8, .aeadAES128GCM), "a=crypto:" + SDPCryptoTests.line(9, .aesCM128SHA1_80)])
        #expect(Self.answer(reordered, Self.sdes)?.crypto.map(\.tag) == [8])
    }

    @Test("SDES: no acceptable line gives no answer (488): no common suite, no line at all, all lines refused")
    func sdesRefused() throws {
        let linphone = try SecureOffers.parse(SecureOffers.linphoneSRTP)
        let gcmOnly = SecureOffers.ourLines.filter(\.suite.isAEAD)
        #expect(Self.answer(linphone, .sdes(gcmOnly)) == nil)
        #expect(Self.answer(linphone, .sdes([])) == nil)
        #expect(Self.answer(linphone, Self.dtls) == nil, "DTLS does not answer SDES")
        let bare = try SecureOffers.sdp(SecureOffers.head + ["m=audio 5000 RTP/SAVP 0"])
        #expect(Self.answer(bare, Self.sdes) == nil)
        let mki = try SecureOffers.sdp(SecureOffers.head + ["m=audio 5000 RTP/SAVP 0", "a=crypto:" + SDPCryptoTests.line(tail: "|1:4")])
        #expect(mki.crypto.isEmpty && Self.answer(mki, Self.sdes) == nil)
    }

    @Test("SDES agreed: the offerer sends with its key and receives with the answer's; the answerer the other way")
    func sdesKeying() throws {
        let offer = SDPSession(origin: SecureOffers.local, connectionAddress: "192.0.2.4", audioPort: 4000).secured(Self.sdes)
        let theirs = SDPCrypto.fresh { SecureOffers.key($0.keyLength, from: 100) }
        let answer = try #require(Self.answer(offer, .sdes(Array(theirs.dropFirst()))), "their first suite is our _32")
        let keying = try #require(SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: true))
        let expected = SRTPKeying(suite: .aesCM128SHA1_32, tag: 2, sendKey: SecureOffers.ourLines[1].key, receiveKey: theirs[1].key)
        #expect(keying == .sdes(expected) && keying.encryption == .sdes)
        let mirrored = SRTPKeying(suite: .aesCM128SHA1_32, tag: 2, sendKey: theirs[1].key, receiveKey: SecureOffers.ourLines[1].key)
        #expect(SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: false) == .sdes(mirrored))
        // An answer whose tag we did not offer, or with another suite under an offered tag, or plain: nothing agreed.
        var unknownTag = answer
        unknownTag.crypto = [try #require(SDPCrypto(tag: 77, suite: .aesCM128SHA1_32, key: theirs[1].key))]
        #expect(SDPSession.negotiatedSecurity(offer: offer, answer: unknownTag, localIsOfferer: true) == nil)
        var otherSuite = answer
        otherSuite.crypto = [try #require(SDPCrypto(tag: 2, suite: .aesCM128SHA1_80, key: theirs[0].key))]
        #expect(SDPSession.negotiatedSecurity(offer: offer, answer: otherSuite, localIsOfferer: true) == nil)
        #expect(SDPSession.negotiatedSecurity(offer: offer, answer: answer.secured(.plain), localIsOfferer: true) == nil)
        #expect(SDPSession.negotiatedSecurity(offer: offer, answer: answer.secured(Self.dtls), localIsOfferer: true) == nil)
        var feedback = answer
        feedback.audioProtocol = .rtpSAVPF
        #expect(SDPSession.negotiatedSecurity(offer: offer, answer: feedback, localIsOfferer: true) == .sdes(expected), "SAVP and SAVPF fit")
    }

    @Test("DTLS: answered in kind, active to actpass, with our fingerprint; rtcp-mux when offered and accepted")
    func dtlsAnswer() throws {
        let baresip = try SecureOffers.parse(SecureOffers.baresipDTLS)
        let answer = try #require(Self.answer(baresip, Self.dtls, mux: true))
        #expect(answer.audioProtocol == .udpTLSRTPSAVPF && answer.setup == .active && answer.rtcpMux)
        #expect(answer.fingerprints == [SecureOffers.ourFingerprint] && answer.crypto.isEmpty)
        #expect(try SDPSession.parse(answer.serialize()) == answer)
        #expect(Self.answer(baresip, Self.dtls)?.rtcpMux == false, "not accepted: not answered")
        let linphone = try SecureOffers.parse(SecureOffers.linphoneDTLS)
        let toLinphone = try #require(Self.answer(linphone, Self.dtls, mux: true))
        #expect(toLinphone.audioProtocol == .udpTLSRTPSAVP && toLinphone.setup == .active && !toLinphone.rtcpMux)
        let passive = SDPMediaSecurity.dtls(fingerprints: [SecureOffers.ourFingerprint], setup: .passive)
        #expect(Self.answer(linphone, passive)?.setup == .passive)
        // Refused: no fingerprint we can check in the offer, holdconn, SDES keys for a DTLS offer, no fingerprint of ours.
        let md5 = try SecureOffers.parse(SecureOffers.linphoneDTLS.replacingOccurrences(
            of: "SHA-256 " + SecureOffers.fingerprintHex, with: "md5 " + SDPFingerprintTests.hex(16)))
        #expect(md5.fingerprints.first?.hashFunction == .unknown("md5") && Self.answer(md5, Self.dtls) == nil)
        let none = try SecureOffers.parse(SecureOffers.linphoneDTLS.replacingOccurrences(of: "a=fingerprint", with: "a=x-fingerprint"))
        #expect(none.fingerprints.isEmpty && Self.answer(none, Self.dtls) == nil)
        var holdconn = linphone
        holdconn.setup = .holdconn
        #expect(Self.answer(holdconn, Self.dtls) == nil)
        #expect(Self.answer(linphone, Self.sdes) == nil)
        #expect(Self.answer(linphone, .dtls(fingerprints: [], setup: .active)) == nil)
    }

    @Test("DTLS agreed: our role from the answer's setup, and the peer's fingerprints; roles that clash agree nothing")
    func dtlsKeying() throws {
        let offer = SDPSession(origin: SecureOffers.local, connectionAddress: "192.0.2.4", audioPort: 4000)
            .secured(.dtls(fingerprints: [SecureOffers.ourFingerprint], setup: .actpass))
        let peer = try SecureOffers.parse(SecureOffers.baresipDTLS).fingerprints
        for (role, offererIsClient) in [(SDPSetupRole.active, false), (.passive, true)] {
            let answer = try #require(Self.answer(offer, .dtls(fingerprints: peer, setup: role)))
            #expect(SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: true)
                == .dtls(DTLSKeying(isClient: offererIsClient, peerFingerprints: peer)))
            #expect(SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: false)
                == .dtls(DTLSKeying(isClient: !offererIsClient, peerFingerprints: [SecureOffers.ourFingerprint])))
        }
        var answer = try #require(Self.answer(offer, .dtls(fingerprints: peer, setup: .active)))
        answer.setup = .actpass
        #expect(SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: true) == nil)
        var activeOffer = offer
        activeOffer.setup = .active
        answer.setup = .active
        #expect(SDPSession.negotiatedSecurity(offer: activeOffer, answer: answer, localIsOfferer: true) == nil, "both active")
        answer.setup = nil
        #expect(SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: true)
            == .dtls(DTLSKeying(isClient: false, peerFingerprints: peer)), "no a=setup reads as active")
        answer.fingerprints = []
        #expect(SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: true) == nil)
        let keying = DTLSKeying(isClient: true, peerFingerprints: peer)
        #expect(keying.matchesPeerCertificate { $0 == .sha256 ? peer[0].digest : nil })
        #expect(!keying.matchesPeerCertificate { _ in Array(repeating: 0, count: 32) })
    }

    @Test("no key appears in the description, debug description or dump of any value that holds one")
    func keysRedacted() throws {
        let offer = try SecureOffers.parse(SecureOffers.linphoneSRTP)
        let answer = try #require(Self.answer(offer, Self.sdes))
        let agreed = try #require(SDPSession.negotiatedSecurity(offer: offer, answer: answer, localIsOfferer: false))
        let secrets = (offer.crypto + SecureOffers.ourLines).map { Data($0.key.bytes).base64EncodedString() }
        #expect(secrets.count == 10)
        let values: [Any] = [offer, answer, agreed, Self.sdes, offer.crypto, offer.crypto[0], offer.crypto[0].key,
            SecureOffers.ourLines[0].key, offer.security]
        for value in values {
            var dumped = ""
            dump(value, to: &dumped)
            for text in [String(describing: value), String(reflecting: value), dumped, "\(value)"] {
                for secret in secrets { #expect(!text.contains(secret) && !text.contains(secret.prefix(12)), "\(type(of: value))") }
                #expect(!text.contains("200, 201") && !text.contains("200\n"), "no key bytes: \(type(of: value))")
            }
        }
        #expect(offer.crypto[0].description == "SDPCrypto(1 AES_CM_128_HMAC_SHA1_80, key redacted)")
        #expect(offer.crypto[0].key.description == "SRTPKey(30 bytes, redacted)")
        #expect(String(decoding: answer.serialize(), as: UTF8.self).contains(answer.crypto[0].attributeValue), "the wire form has it")
    }
}
