import Foundation
import Testing

@testable import SIPMessages

@Suite("SDP security: SDES a=crypto (RFC 4568)")
struct SDPCryptoTests {
    /// A valid line for `suite` with `tag`, its key the test key, then `tail` (lifetime, MKI, session parameters).
    static func line(_ tag: Int = 1, _ suite: SRTPSuite = .aesCM128SHA1_80, tail: String = "") -> String {
        "\(tag) \(suite.rawValue) inline:\(Data(SecureOffers.key(suite.keyLength)).base64EncodedString())\(tail)"
    }

    @Test("each suite knows its key length and GStreamer's srtpenc names (the _32 suites keep an 80-bit SRTCP tag)")
    func suites() {
        let table: [(SRTPSuite, Int, String, String, String)] = [
            (.aesCM128SHA1_80, 30, "aes-128-icm", "hmac-sha1-80", "hmac-sha1-80"),
            (.aesCM128SHA1_32, 30, "aes-128-icm", "hmac-sha1-32", "hmac-sha1-80"),
            (.aes256CMSHA1_80, 46, "aes-256-icm", "hmac-sha1-80", "hmac-sha1-80"),
            (.aes256CMSHA1_32, 46, "aes-256-icm", "hmac-sha1-32", "hmac-sha1-80"),
            (.aeadAES128GCM, 28, "aes-128-gcm", "null", "null"),
            (.aeadAES256GCM, 44, "aes-256-gcm", "null", "null"),
        ]
        #expect(table.map(\.0) == SRTPSuite.allCases)
        for (suite, length, cipher, rtpAuth, rtcpAuth) in table {
            #expect(suite.keyLength == length && suite.rtpCipher == cipher && suite.rtcpCipher == cipher, "\(suite)")
            #expect(suite.rtpAuth == rtpAuth && suite.rtcpAuth == rtcpAuth, "\(suite)")
            #expect(SRTPSuite(name: suite.rawValue.lowercased()) == suite, "suite names are case-insensitive")
        }
        #expect(SRTPSuite.preferred.first == .aesCM128SHA1_80)
        #expect(SRTPSuite(name: "F8_128_HMAC_SHA1_80") == nil)
    }

    @Test("a line of each suite reads, and writes back to the same value")
    func readsEverySuite() throws {
        for suite in SRTPSuite.allCases {
            let crypto = try SDPCrypto(attributeValue: Self.line(7, suite))
            #expect(crypto.tag == 7 && crypto.suite == suite && crypto.key.bytes == SecureOffers.key(suite.keyLength))
            #expect(crypto.attributeValue == Self.line(7, suite))
            #expect(try SDPCrypto(attributeValue: crypto.attributeValue) == crypto)
        }
    }

    @Test("accepted: a lifetime from 2^31 to 2^48 (not kept), WSH, optional '-' parameters, tabs, no base64 padding")
    func accepted() throws {
        let expected = try SDPCrypto(attributeValue: Self.line())
        for tail in ["|2^31", "|2^48", "|2147483648", "|281474976710656", " WSH=64", " -FUTURE_PARAM=1", " WSH=128 -X"] {
            #expect(try SDPCrypto(attributeValue: Self.line(tail: tail)) == expected, "\(tail)")
        }
        #expect(try SDPCrypto(attributeValue: Self.line().replacingOccurrences(of: " ", with: "\t")) == expected)
        #expect(try SDPCrypto(attributeValue: "1 aes_cm_128_hmac_sha1_80 INLINE:" + Self.line().split(separator: ":")[1]) == expected)
        // 46 bytes end in "==", 28 in "==", 44 in "=": each readable without its padding too.
        for suite in [SRTPSuite.aes256CMSHA1_80, .aeadAES128GCM, .aeadAES256GCM] {
            let padded = Self.line(1, suite)
            #expect(padded.hasSuffix("="))
            let unpadded = String(padded.reversed().drop { $0 == "=" }.reversed())
            #expect(try SDPCrypto(attributeValue: unpadded) == SDPCrypto(attributeValue: padded), "\(suite)")
        }
    }

    /// Lines refused, each with the reason.
    static let refused: [(String, SDPCryptoRefusal)] = [
        ("1 AES_CM_128_HMAC_SHA1_80", .malformed),
        ("", .malformed),
        (line(0), .badTag),
        (line(1_000_000_000), .badTag),
        ("x " + line().dropFirst(2), .badTag),
        ("-1 " + line().dropFirst(2), .badTag),
        (line().replacingOccurrences(of: "AES_CM_128_HMAC_SHA1_80", with: "F8_128_HMAC_SHA1_80"), .unknownSuite),
        (line().replacingOccurrences(of: "AES_CM_128_HMAC_SHA1_80", with: "NULL_HMAC_SHA1_80"), .unknownSuite),
        (line().replacingOccurrences(of: "inline:", with: "uri:"), .unknownKeyMethod),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:", .badBase64),
        ("1 AES_CM_128_HMAC_SHA1_80 inlin:" + line().split(separator: ":")[1], .unknownKeyMethod),
        (line(tail: ";inline:YWJj"), .multipleKeys),
        (line().replacingOccurrences(of: "inline:", with: "inline:!"), .badBase64),
        (line() + "=", .badBase64),
        (line() + "====", .badBase64),
        (line().replacingOccurrences(of: "inline:", with: "inline: "), .badBase64),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:" + Data(SecureOffers.key(29)).base64EncodedString(), .wrongKeyLength(expected: 30, actual: 29)),
        ("1 AES_CM_128_HMAC_SHA1_80 inline:" + Data(SecureOffers.key(46)).base64EncodedString(), .wrongKeyLength(expected: 30, actual: 46)),
        ("1 AEAD_AES_128_GCM inline:" + Data(SecureOffers.key(30)).base64EncodedString(), .wrongKeyLength(expected: 28, actual: 30)),
        (line(tail: "|1:4"), .mki),
        (line(tail: "|2^31|1:4"), .mki),
        (line(tail: "|2^20"), .lifetime),
        (line(tail: "|2^30"), .lifetime),
        (line(tail: "|2^49"), .lifetime),
        (line(tail: "|1048576"), .lifetime),
        (line(tail: "|2^"), .lifetime),
        (line(tail: "|"), .lifetime),
        (line(tail: "|99999999999999999999999"), .lifetime),
        (line(tail: "|2^31|2^31|2^31"), .malformed),
        (line(tail: " UNENCRYPTED_SRTP"), .unsupportedSessionParameter),
        (line(tail: " UNENCRYPTED_SRTCP"), .unsupportedSessionParameter),
        (line(tail: " UNAUTHENTICATED_SRTP"), .unsupportedSessionParameter),
        (line(tail: " KDR=1"), .unsupportedSessionParameter),
        (line(tail: " FEC_ORDER=FEC_SRTP"), .unsupportedSessionParameter),
        (line(tail: " WSH=x"), .unsupportedSessionParameter),
        (line(tail: " SOMETHING_NEW"), .unsupportedSessionParameter),
    ]

    @Test("refused, each for its reason: malformed, tag, suite, method, several keys, base64, key length, MKI, lifetime, parameters")
    func refusals() {
        for (value, reason) in Self.refused {
            #expect(throws: reason, "\(value)") { try SDPCrypto(attributeValue: value) }
        }
        // A stray bit in the last character: "AB" is one byte, "AC" would need a second.
        #expect(Base64.decode("AB") == nil && Base64.decode("AA") == [0] && Base64.decode("AA==") == [0])
        #expect(Base64.decode("A") == nil && Base64.decode("") == nil && Base64.decode("AA=") == nil)
    }

    @Test("a value is built only with a tag 1…999999999 and a key of the suite's length; fresh lines are tagged 1…n")
    func building() throws {
        #expect(SDPCrypto(tag: 1, suite: .aesCM128SHA1_80, key: SRTPKey(SecureOffers.key(30))) != nil)
        #expect(SDPCrypto(tag: 0, suite: .aesCM128SHA1_80, key: SRTPKey(SecureOffers.key(30))) == nil)
        #expect(SDPCrypto(tag: 1, suite: .aesCM128SHA1_80, key: SRTPKey(SecureOffers.key(28))) == nil)
        let lines = SDPCrypto.fresh { SecureOffers.key($0.keyLength, from: UInt8($0.keyLength)) }
        #expect(lines.map(\.tag) == [1, 2, 3, 4, 5, 6])
        #expect(lines.map(\.suite) == SRTPSuite.preferred && lines.first?.suite == .aesCM128SHA1_80)
        #expect(lines.allSatisfy { $0.key.bytes.count == $0.suite.keyLength })
        let some = SDPCrypto.fresh(suites: [.aeadAES128GCM, .aesCM128SHA1_80]) { $0 == .aeadAES128GCM ? [1] : SecureOffers.key(30) }
        #expect(some.map(\.suite) == [.aesCM128SHA1_80] && some.map(\.tag) == [1], "a wrong-length key leaves its suite out")
    }

    @Test("baresip's srtp-mand offer: RTP/SAVP, one line, tag 1, AES_CM_128_HMAC_SHA1_80")
    func baresipOffer() throws {
        let offer = try SecureOffers.parse(SecureOffers.baresipSRTPMand)
        #expect(offer.audioProtocol == .rtpSAVP && offer.audioProtocol.isSecure && !offer.audioProtocol.isDTLS)
        #expect(!offer.audioProtocol.hasFeedback && offer.audioProtocol.encryption == .sdes)
        #expect(offer.crypto.count == 1 && offer.crypto.first?.tag == 1 && offer.crypto.first?.suite == .aesCM128SHA1_80)
        #expect(offer.crypto.first?.key.bytes == Array(Data(base64Encoded: "e7xOZaX/buTSV6hePpFg5goWW5a3KD+KdM9PwiFf")!))
        #expect(offer.codecs == [.pcmu, .pcma] && offer.telephoneEvent == 101 && offer.ptime == 20)
        #expect(offer.fingerprints.isEmpty && offer.setup == nil && !offer.rtcpMux)
        if case .sdes(let lines) = offer.security { #expect(lines == offer.crypto) } else { Issue.record("not sdes") }
    }

    @Test("linphone's srtp offer: RTP/SAVP with its four suites, tags 1 to 4, in order")
    func linphoneOffer() throws {
        let offer = try SecureOffers.parse(SecureOffers.linphoneSRTP)
        #expect(offer.audioProtocol == .rtpSAVP)
        #expect(offer.crypto.map(\.tag) == [1, 2, 3, 4])
        #expect(offer.crypto.map(\.suite) == [.aesCM128SHA1_80, .aesCM128SHA1_32, .aes256CMSHA1_80, .aes256CMSHA1_32])
        #expect(offer.crypto.map(\.key.bytes.count) == [30, 30, 46, 46])
        #expect(offer.codecs == [.opus, .pcmu, .pcma] && offer.telephoneEvent == 100)
    }

    @Test("a bad line is skipped, not the description; a repeated tag keeps the first; session-level crypto is not read")
    func badLinesSkipped() throws {
        let offer = try SecureOffers.sdp(SecureOffers.head + ["a=crypto:9 " + Self.line(9).dropFirst(2),
            "m=audio 5000 RTP/SAVP 0", "a=crypto:" + Self.line(1, tail: "|1:4"), "a=crypto:2 AES_CM_128_HMAC_SHA1_80 inline:@@@",
            "a=crypto:" + Self.line(3, .aeadAES128GCM), "a=crypto:" + Self.line(3, .aesCM128SHA1_80), "a=crypto",
            "a=crypto:" + Self.line(4, .aesCM128SHA1_32, tail: " UNENCRYPTED_SRTP"), "a=crypto:" + Self.line(5, .aes256CMSHA1_80)])
        #expect(offer.crypto.map(\.tag) == [3, 5])
        #expect(offer.crypto.map(\.suite) == [.aeadAES128GCM, .aes256CMSHA1_80])
        #expect(offer.codecs == [.pcmu] && offer.audioPort == 5000)
    }

    @Test("a hundred a=crypto lines: the first 16 are examined and the rest ignored")
    func hundredLines() throws {
        let junk = (1...100).map { "a=crypto:\($0) AES_CM_128_HMAC_SHA1_80 inline:\(String(repeating: "!", count: 40))" }
        let sixteenth = Array(junk.prefix(15)) + ["a=crypto:" + Self.line(16)] + junk.dropFirst(16)
        let seventeenth = Array(junk.prefix(16)) + ["a=crypto:" + Self.line(17)] + junk.dropFirst(17)
        let base = SecureOffers.head + ["m=audio 5000 RTP/SAVP 0"]
        #expect(try SecureOffers.sdp(base + junk).crypto.isEmpty)
        #expect(try SecureOffers.sdp(base + sixteenth).crypto.map(\.tag) == [16])
        #expect(try SecureOffers.sdp(base + seventeenth).crypto.isEmpty, "the 17th line is not read")
        let good = (1...100).map { "a=crypto:" + Self.line($0) }
        #expect(try SecureOffers.sdp(base + good).crypto.count == 16)
    }

    @Test("written: RTP/SAVP and one a=crypto line per value, read back the same")
    func serialization() throws {
        let plain = SDPSession(origin: SecureOffers.local, connectionAddress: "192.0.2.4", audioPort: 4000)
        let offer = plain.secured(.sdes(SecureOffers.ourLines))
        let text = String(decoding: offer.serialize(), as: UTF8.self)
        #expect(text.contains("m=audio 4000 RTP/SAVP 0 8\r\n"))
        for line in SecureOffers.ourLines { #expect(text.contains("a=crypto:\(line.attributeValue)\r\n")) }
        #expect(try SDPSession.parse(offer.serialize()) == offer)
        let feedback = plain.secured(.sdes(SecureOffers.ourLines), feedback: true)
        #expect(String(decoding: feedback.serialize(), as: UTF8.self).contains("m=audio 4000 RTP/SAVPF 0 8\r\n"))
        #expect(try SDPSession.parse(feedback.serialize()) == feedback)
        #expect(offer.secured(.plain) == plain, "securing plain removes the crypto lines")
    }
}
