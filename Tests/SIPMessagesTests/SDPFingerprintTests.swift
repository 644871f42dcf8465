import Foundation
import Testing

@testable import SIPMessages

@Suite("SDP security: DTLS fingerprint, setup, rtcp-mux (RFC 8122, 5763, 8842)")
struct SDPFingerprintTests {
    /// `count` hex pairs.
    static func hex(_ count: Int, _ byte: String = "A5") -> String { Array(repeating: byte, count: count).joined(separator: ":") }

    @Test("sha-1, sha-256, sha-384 and sha-512 read with their lengths, in any case, and write back the same")
    func knownFunctions() throws {
        for (name, function, length) in [("sha-1", SDPHashFunction.sha1, 20), ("SHA-256", .sha256, 32), ("sha-384", .sha384, 48), ("Sha-512", .sha512, 64)] {
            let fingerprint = try SDPFingerprint(attributeValue: "\(name) \(Self.hex(length, "0f"))")
            #expect(fingerprint.hashFunction == function && fingerprint.digest == Array(repeating: 0x0F, count: length))
            #expect(fingerprint.attributeValue == "\(function.name) \(Self.hex(length, "0F"))", "lower-case name, upper-case hex")
            #expect(try SDPFingerprint(attributeValue: fingerprint.attributeValue) == fingerprint)
            #expect(SDPFingerprint(hashFunction: function, digest: Array(repeating: 1, count: length - 1)) == nil)
        }
        let baresip = try SDPFingerprint(attributeValue: "SHA-256 " + SecureOffers.fingerprintHex)
        #expect(baresip.attributeValue == "sha-256 " + SecureOffers.fingerprintHex)
    }

    @Test("an unknown hash function is kept by name, for the caller to refuse; it never matches a certificate")
    func unknownFunction() throws {
        let md5 = try SDPFingerprint(attributeValue: "MD5 " + Self.hex(16))
        #expect(md5.hashFunction == .unknown("md5") && !md5.hashFunction.isKnown && md5.digest.count == 16)
        let future = try SDPFingerprint(attributeValue: "sha3-256 " + Self.hex(32))
        #expect(future.hashFunction == .unknown("sha3-256"))
        #expect(![md5, future].hasKnownHashFunction)
        #expect(![md5, future].matchesCertificate { _ in Array(repeating: 0xA5, count: 32) })
    }

    /// Values refused, each with the reason.
    static let refused: [(String, SDPFingerprintRefusal)] = [
        ("", .malformed),
        ("sha-256", .malformed),
        ("sha-256 AB CD", .malformed),
        ("sha(256) " + hex(32), .malformed),
        (String(repeating: "x", count: 33) + " AB", .malformed),
        ("sha-256 " + hex(31) + ":GG", .badHex),
        ("sha-256 " + hex(31) + ":A", .badHex),
        ("sha-256 " + hex(31) + ":ABC", .badHex),
        ("sha-256 " + hex(32) + ":", .badHex),
        ("sha-256 :" + hex(32), .badHex),
        ("sha-256 " + hex(31) + ":+F", .badHex),
        ("sha-256 " + hex(30) + "::A5", .badHex),
        ("sha-256 " + hex(32).replacingOccurrences(of: ":", with: ""), .badHex),
        ("sha-256 " + hex(31), .wrongLength(expected: 32, actual: 31)),
        ("sha-256 " + hex(33), .wrongLength(expected: 32, actual: 33)),
        ("sha-1 " + hex(32), .wrongLength(expected: 20, actual: 32)),
        ("sha-512 " + hex(65), .wrongLength(expected: 64, actual: 65)),
        ("md5 " + hex(65), .badHex),
    ]

    @Test("refused, each for its reason: malformed, bad hex, wrong length")
    func refusals() {
        for (value, reason) in Self.refused {
            #expect(throws: reason, "\(value)") { try SDPFingerprint(attributeValue: value) }
        }
    }

    @Test("a certificate is checked against the strongest known hash function present")
    func matching() throws {
        let sha256 = try #require(SDPFingerprint(hashFunction: .sha256, digest: Array(repeating: 2, count: 32)))
        let sha1 = try #require(SDPFingerprint(hashFunction: .sha1, digest: Array(repeating: 1, count: 20)))
        let digests: (SDPHashFunction) -> [UInt8]? = { $0 == .sha256 ? Array(repeating: 2, count: 32) : $0 == .sha1 ? Array(repeating: 9, count: 20) : nil }
        #expect([sha1, sha256].matchesCertificate(digest: digests), "sha-256 is used, not the mismatching sha-1")
        #expect(![sha1].matchesCertificate(digest: digests))
        #expect(![sha256].matchesCertificate { _ in nil }, "a digest that cannot be computed does not match")
        #expect(![SDPFingerprint]().matchesCertificate(digest: digests))
    }

    @Test("setup roles: read in any case; answered active to actpass (or passive when preferred), complementing otherwise")
    func setupRoles() {
        #expect(SDPSetupRole(name: "ACTPASS") == .actpass && SDPSetupRole(name: "bogus") == nil)
        #expect(SDPSetupRole.answer(to: .actpass) == .active)
        #expect(SDPSetupRole.answer(to: .actpass, preferring: .passive) == .passive)
        #expect(SDPSetupRole.answer(to: .actpass, preferring: .actpass) == nil)
        #expect(SDPSetupRole.answer(to: .active) == .passive)
        #expect(SDPSetupRole.answer(to: .passive) == .active)
        #expect(SDPSetupRole.answer(to: nil) == .passive, "no a=setup reads as active (RFC 4145)")
        #expect(SDPSetupRole.answer(to: .holdconn) == nil)
        #expect(SDPSetupRole.active.isClient == true && SDPSetupRole.passive.isClient == false && SDPSetupRole.actpass.isClient == nil)
    }

    @Test("baresip's dtls_srtp offer: UDP/TLS/RTP/SAVPF, session-level setup and SHA-256 fingerprint, rtcp-mux")
    func baresipOffer() throws {
        let offer = try SecureOffers.parse(SecureOffers.baresipDTLS)
        #expect(offer.audioProtocol == .udpTLSRTPSAVPF && offer.audioProtocol.isDTLS && offer.audioProtocol.hasFeedback)
        #expect(offer.setup == .actpass && offer.rtcpMux && offer.crypto.isEmpty)
        #expect(offer.fingerprints.map(\.attributeValue) == ["sha-256 " + SecureOffers.fingerprintHex])
        #expect(offer.security == .dtls(fingerprints: offer.fingerprints, setup: .actpass))
    }

    @Test("linphone's dtls offer: UDP/TLS/RTP/SAVP, media-level setup and fingerprint, no rtcp-mux")
    func linphoneOffer() throws {
        let offer = try SecureOffers.parse(SecureOffers.linphoneDTLS)
        #expect(offer.audioProtocol == .udpTLSRTPSAVP && !offer.audioProtocol.hasFeedback)
        #expect(offer.setup == .actpass && !offer.rtcpMux && offer.fingerprints.count == 1)
    }

    @Test("media level over session level; fingerprint lines beyond 8 ignored; bad ones skipped")
    func levels() throws {
        let session = ["a=setup:passive", "a=fingerprint:sha-1 " + Self.hex(20)]
        let media = try SecureOffers.sdp(SecureOffers.head + session + ["m=audio 5000 UDP/TLS/RTP/SAVP 0", "a=setup:active",
            "a=fingerprint:sha-256 " + Self.hex(31), "a=fingerprint:sha-512 " + Self.hex(64)])
        #expect(media.setup == .active && media.fingerprints.map(\.hashFunction) == [.sha512])
        let onlyBad = try SecureOffers.sdp(SecureOffers.head + session + ["m=audio 5000 UDP/TLS/RTP/SAVP 0", "a=fingerprint:sha-256 zz"])
        #expect(onlyBad.fingerprints.isEmpty && onlyBad.setup == .passive, "a stream with fingerprint lines does not take the session's")
        let sessionOnly = try SecureOffers.sdp(SecureOffers.head + session + ["m=audio 5000 UDP/TLS/RTP/SAVP 0", "a=setup:nonsense"])
        #expect(sessionOnly.fingerprints.map(\.hashFunction) == [.sha1] && sessionOnly.setup == .passive)
        let many = (1...9).map { _ in "a=fingerprint:sha-256 zz" } + ["a=fingerprint:sha-256 " + Self.hex(32)]
        #expect(try SecureOffers.sdp(SecureOffers.head + ["m=audio 5000 UDP/TLS/RTP/SAVP 0"] + many).fingerprints.isEmpty)
        let sessionMux = try SecureOffers.sdp(SecureOffers.head + ["a=rtcp-mux", "m=audio 5000 RTP/AVP 0"])
        #expect(!sessionMux.rtcpMux, "rtcp-mux is a media-level attribute (RFC 5761)")
        #expect(sessionMux.security == .plain)
        let noSetup = try SecureOffers.sdp(SecureOffers.head + ["m=audio 5000 UDP/TLS/RTP/SAVP 0", "a=fingerprint:sha-256 " + Self.hex(32)])
        #expect(noSetup.setup == nil && noSetup.security == .dtls(fingerprints: noSetup.fingerprints, setup: .active), "RFC 4145's default")
    }

    @Test("written: UDP/TLS/RTP/SAVP(F), setup, fingerprints and rtcp-mux at media level, read back the same")
    func serialization() throws {
        var plain = SDPSession(origin: SecureOffers.local, connectionAddress: "192.0.2.4", audioPort: 4000)
        plain.rtcpMux = true
        let offer = plain.secured(.dtls(fingerprints: [SecureOffers.ourFingerprint], setup: .actpass), feedback: true)
        let text = String(decoding: offer.serialize(), as: UTF8.self)
        #expect(text.contains("m=audio 4000 UDP/TLS/RTP/SAVPF 0 8\r\n"))
        #expect(text.contains("a=rtcp-mux\r\na=setup:actpass\r\na=fingerprint:sha-256 " + Self.hex(32, "AB") + "\r\n"), "\(text)")
        #expect(try SDPSession.parse(offer.serialize()) == offer)
        let savp = plain.secured(.dtls(fingerprints: [SecureOffers.ourFingerprint], setup: .actpass))
        #expect(try SDPSession.parse(savp.serialize()).audioProtocol == .udpTLSRTPSAVP)
    }
}
