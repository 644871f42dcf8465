import Foundation
import Testing

@testable import SIPMessages

@Suite("SDP ICE: candidates, ufrag, pwd, options (RFC 8839, 8840)")
struct SDPICETests {
    /// A pwd of 24 ice-chars, as Chrome and libnice write them.
    static let pwd = "asd88fgpdd777uzjYhagZg+/"

    /// An offer in the style of Chrome's (with libnice's and baresip's lines): session-level ice-options, media-level
    /// credentials, host, srflx with Chrome's hidden related address, relay, IPv6, an mDNS host, TCP candidates and
    /// extension pairs.
    static let chromeStyleOffer = """
        v=0\r
        o=- 4611731400430051336 2 IN IP4 127.0.0.1\r
        s=-\r
        c=IN IP4 198.51.100.7\r
        t=0 0\r
        a=ice-options:trickle\r
        m=audio 55816 RTP/AVP 0 8\r
        a=rtpmap:0 PCMU/8000\r
        a=ice-ufrag:4ZcD\r
        a=ice-pwd:\(pwd)\r
        a=candidate:3885250869 1 udp 2122260223 10.0.0.5 54321 typ host generation 0 network-id 1 network-cost 10\r
        a=candidate:2999745851 1 udp 2122262783 2001:DB8:0:0::5 58481 typ host generation 0 network-id 2\r
        a=candidate:1510613869 1 tcp 1518280447 10.0.0.5 9 typ host tcptype active generation 0 network-id 1\r
        a=candidate:2157334355 1 udp 2122260223 4f1e1c9b-8c0e-4e0a-9a5e-0e1a2b3c4d5e.local 54322 typ host generation 0\r
        a=candidate:842163049 1 udp 1677729535 198.51.100.7 55816 typ srflx raddr 0.0.0.0 rport 0 generation 0 ufrag 4ZcD network-cost 999\r
        a=candidate:2 1 UDP 1677729535 203.0.113.7 10000 typ srflx raddr 192.168.1.5 rport 10000\r
        a=candidate:9 1 TCP 1019216383 192.168.1.5 9 typ host tcptype active\r
        a=candidate:1 1 udp 41885439 192.0.2.50 3478 typ relay raddr 198.51.100.7 rport 55816 generation 0\r
        a=candidate:1 2 UDP 2013266430 192.168.1.5 42001 typ host\r
        a=end-of-candidates\r
        a=sendrecv\r

        """

    /// A minimal offer's head, then the audio stream with `media` attributes (and `session` ones before it).
    static func offer(session: [String] = [], media: [String]) throws -> SDPSession {
        try SecureOffers.sdp(SecureOffers.head + session + ["m=audio 5000 RTP/AVP 0"] + media)
    }

    /// Valid credentials as media-level lines.
    static let credentials = ["a=ice-ufrag:abcd", "a=ice-pwd:\(pwd)"]

    @Test("a candidate reads and writes back: host, srflx with raddr/rport, relay, IPv6 (canonical), names in any case")
    func candidates() throws {
        let host = try #require(SDPCandidate(attributeValue: "1 1 UDP 2130706431 192.168.1.5 50000 typ host"))
        #expect(host.foundation == "1" && host.component == 1 && host.priority == 2_130_706_431)
        #expect(host.address == "192.168.1.5" && host.port == 50_000 && host.type == .host && host.relatedAddress == nil)
        #expect(host.attributeValue == "1 1 UDP 2130706431 192.168.1.5 50000 typ host" && host.isUsable)
        let srflx = try #require(SDPCandidate(attributeValue: "a+/Z 2 udp 1694498815 203.0.113.7 6000 TYP SrFlx RPORT 5000 raddr 10.0.0.2"))
        #expect(srflx.type == .srflx && srflx.relatedAddress == "10.0.0.2" && srflx.relatedPort == 5_000, "pairs in any order")
        #expect(srflx.attributeValue == "a+/Z 2 UDP 1694498815 203.0.113.7 6000 typ srflx raddr 10.0.0.2 rport 5000")
        let v6 = try #require(SDPCandidate(attributeValue: "x 1 UDP 1 2001:DB8:0:0:0:0:0:1 7000 typ relay\traddr  ::FFFF:192.0.2.1 rport 1"))
        #expect(v6.address == "2001:db8::1" && v6.relatedAddress == "::ffff:192.0.2.1" && v6.type == .relay)
        for candidate in [host, srflx, v6] {
            #expect(SDPCandidate(attributeValue: candidate.attributeValue) == candidate)
            #expect(SDPCandidate(
                foundation: candidate.foundation, component: candidate.component, priority: candidate.priority,
                address: candidate.address, port: candidate.port, type: candidate.type,
                relatedAddress: candidate.relatedAddress, relatedPort: candidate.relatedPort) == candidate)
        }
        let extended = try #require(SDPCandidate(attributeValue: "7 1 udp 4294967295 10.0.0.1 9 typ prflx generation 0 network-id 3 lone"))
        #expect(extended.type == .prflx && extended.priority == UInt32.max && extended.attributeValue.hasSuffix("typ prflx"))
        let chrome = try #require(SDPCandidate(attributeValue: "8 1 udp 1 198.51.100.7 9 typ srflx raddr 0.0.0.0 rport 0"))
        #expect(chrome.relatedAddress == "0.0.0.0" && chrome.relatedPort == 0 && chrome.isUsable, "the related pair is not judged")
        let halfRelated = try #require(SDPCandidate(attributeValue: "8 1 udp 1 198.51.100.7 9 typ srflx raddr 10.0.0.1"))
        #expect(halfRelated.relatedAddress == nil && halfRelated.relatedPort == nil, "raddr without rport is left out")
        let nameRelated = try #require(SDPCandidate(attributeValue: "8 1 udp 1 198.51.100.7 9 typ srflx raddr a.local rport 9"))
        #expect(nameRelated.relatedAddress == nil && nameRelated.relatedPort == nil, "a related name is left out")
    }

    /// Values refused.
    static let refused = [
        "", "1", "1 1 UDP 1 10.0.0.1 5000 typ", "1 1 UDP 1 10.0.0.1 5000 host", "1 1 UDP 1 10.0.0.1 5000 type host",
        "1 1 TCP 1 10.0.0.1 5000 typ host tcptype passive", "1 1 DTLS 1 10.0.0.1 5000 typ host",
        "1 1 UDP 1 host.example.com 5000 typ host", "1 1 UDP 1 abc.local 5000 typ host", "1 1 UDP 1 [2001:db8::1] 5000 typ host",
        "1 1 UDP 1 fe80::1%eth0 5000 typ host", "1 1 UDP 1 010.0.0.1 5000 typ host", "1 1 UDP 1 10.0.0 5000 typ host",
        "1 1 UDP 1 10.0.0.1 0 typ host", "1 1 UDP 1 10.0.0.1 65536 typ host", "1 1 UDP 1 10.0.0.1 +500 typ host",
        "1 0 UDP 1 10.0.0.1 5000 typ host", "1 257 UDP 1 10.0.0.1 5000 typ host", "1 0001 UDP 1 10.0.0.1 5000 typ host",
        "1 1 UDP 4294967296 10.0.0.1 5000 typ host", "1 1 UDP -1 10.0.0.1 5000 typ host", "1 1 UDP 1x 10.0.0.1 5000 typ host",
        String(repeating: "f", count: 33) + " 1 UDP 1 10.0.0.1 5000 typ host", "f-1 1 UDP 1 10.0.0.1 5000 typ host",
        "1 1 UDP 1 10.0.0.1 5000 typ hostx", "1 1 UDP 1 10.0.0.1 5000 typ relayed", "é 1 UDP 1 10.0.0.1 5000 typ host",
        "1 1 UDP 1 10.0.0.1 5000 typ host " + String(repeating: "x", count: SDPCandidate.maximumLength),
    ]

    @Test("refused: malformed, not UDP, not an IP literal, out of range, unknown type, too long")
    func refusals() {
        for value in Self.refused { #expect(SDPCandidate(attributeValue: value) == nil, "\(value)") }
        #expect(SDPCandidate(foundation: "", component: 1, priority: 1, address: "10.0.0.1", port: 1, type: .host) == nil)
        #expect(SDPCandidate(foundation: "1", component: 1, priority: 1, address: "10.0.0.1", port: 0, type: .host) == nil)
        #expect(SDPCandidate(foundation: "1", component: 1, priority: 1, address: "a.example", port: 1, type: .host) == nil)
        #expect(SDPCandidate(foundation: "1", component: 1, priority: 1, address: "10.0.0.1", port: 1, type: .srflx,
            relatedAddress: "10.0.0.2") == nil, "a related address needs its port")
    }

    @Test("address hygiene: unspecified, multicast, broadcast and link-local are unusable; loopback is usable")
    func hygiene() throws {
        let unusable = ["0.0.0.0", "0.1.2.3", "224.0.0.1", "239.255.255.250", "255.255.255.255", "169.254.1.1", "::", "ff02::1",
            "ff0e::fb", "fe80::1", "febf::1", "::ffff:0.0.0.0", "::ffff:224.0.0.1", "::ffff:169.254.0.9"]
        let usable = ["127.0.0.1", "127.1.2.3", "::1", "10.0.0.1", "192.0.2.1", "223.255.255.255", "fec0::1",
            "2001:db8::1", "::ffff:192.0.2.1"]
        for address in unusable + usable {
            let candidate = try #require(SDPCandidate(attributeValue: "1 1 UDP 1 \(address) 5000 typ host"), "\(address)")
            #expect(candidate.isUsable == usable.contains(address), "\(address)")
        }
    }

    @Test("a Chrome/libnice/baresip style offer: UDP candidates at IP literals kept in order, the rest counted")
    func realWorldOffer() throws {
        let offer = try SecureOffers.parse(Self.chromeStyleOffer)
        let ice = try #require(offer.ice)
        #expect(ice.ufrag == "4ZcD" && ice.pwd == Self.pwd && !ice.isLite && ice.options == ["trickle"] && ice.endOfCandidates)
        #expect(ice.candidates.map(\.description) == [
            "3885250869 1 UDP 2122260223 10.0.0.5 54321 typ host",
            "2999745851 1 UDP 2122262783 2001:db8::5 58481 typ host",
            "842163049 1 UDP 1677729535 198.51.100.7 55816 typ srflx raddr 0.0.0.0 rport 0",
            "2 1 UDP 1677729535 203.0.113.7 10000 typ srflx raddr 192.168.1.5 rport 10000",
            "1 1 UDP 41885439 192.0.2.50 3478 typ relay raddr 198.51.100.7 rport 55816",
            "1 2 UDP 2013266430 192.168.1.5 42001 typ host",
        ])
        #expect(ice.droppedCandidates == 3, "two TCP candidates and an mDNS name")
        #expect(offer.codecs == [.pcmu, .pcma] && offer.direction == .sendrecv, "the rest of the offer is read as before")
    }

    @Test("ufrag and pwd: the stream's over the session's; both needed, within bounds, or no ICE at all")
    func credentials() throws {
        let candidate = "a=candidate:1 1 UDP 1 10.0.0.1 5000 typ host"
        let session = try Self.offer(session: Self.credentials, media: [candidate])
        #expect(session.ice?.ufrag == "abcd" && session.ice?.pwd == Self.pwd && session.ice?.candidates.count == 1)
        let overridden = try Self.offer(session: Self.credentials, media: ["a=ice-ufrag:wxyz", candidate])
        #expect(overridden.ice?.ufrag == "wxyz" && overridden.ice?.pwd == Self.pwd, "each attribute from the stream, else the session")
        let noCandidates = try Self.offer(media: Self.credentials)
        #expect(noCandidates.ice?.candidates == [] && noCandidates.ice?.droppedCandidates == 0, "trickle: candidates may come later")
        let limits = [("abc", Self.pwd), ("abcd", String(Self.pwd.prefix(21))), (String(repeating: "u", count: 257), Self.pwd),
            ("abcd", String(repeating: "p", count: 257)), ("ab-d", Self.pwd), ("abcd", Self.pwd + "=")]
        for (ufrag, pwd) in limits {
            #expect(try Self.offer(media: ["a=ice-ufrag:\(ufrag)", "a=ice-pwd:\(pwd)", candidate]).ice == nil, "\(ufrag) \(pwd)")
            #expect(SDPICE(ufrag: ufrag, pwd: pwd) == nil)
        }
        #expect(try Self.offer(media: ["a=ice-ufrag:" + String(repeating: "u", count: 256), "a=ice-pwd:" + String(repeating: "p", count: 22)]).ice != nil)
        #expect(try Self.offer(media: ["a=ice-pwd:\(Self.pwd)", candidate]).ice == nil, "no ufrag")
        #expect(try Self.offer(media: ["a=ice-ufrag:abcd", candidate]).ice == nil, "no pwd")
        #expect(try Self.offer(media: ["a=ice-ufrag", "a=ice-pwd:\(Self.pwd)"]).ice == nil, "an empty ufrag")
        let badOverride = try Self.offer(session: Self.credentials, media: ["a=ice-pwd:short", candidate])
        #expect(badOverride.ice == nil, "a stream's bad pwd is not replaced by the session's")
        #expect(try Self.offer(media: [candidate]).ice == nil)
    }

    @Test("a thousand candidate lines: 64 examined, 16 kept for a component, the rest counted; the call survives")
    func manyCandidates() throws {
        let lines = (0..<1_000).map { "a=candidate:\($0) \($0 % 2 + 1) UDP \($0) 10.\($0 / 250).\($0 % 250).1 \(1_000 + $0) typ host" }
        let body = (SecureOffers.head + ["m=audio 5000 RTP/AVP 0"] + Self.credentials + lines).joined(separator: "\r\n") + "\r\n"
        #expect(body.utf8.count <= SIPMessage.maximumSize)
        let ice = try #require(try SecureOffers.parse(body).ice)
        #expect(ice.candidates.filter { $0.component == 1 }.count == 16 && ice.candidates.filter { $0.component == 2 }.count == 16)
        #expect(ice.candidates.map(\.foundation) == (0..<32).map(String.init), "the first ones, in order")
        #expect(ice.droppedCandidates == 1_000 - 32)
        let oneComponent = (0..<100).map { "a=candidate:\($0) 1 UDP 1 10.0.0.1 \(1_000 + $0) typ host" }
        let capped = try #require(try Self.offer(media: Self.credentials + oneComponent).ice)
        #expect(capped.candidates.count == 16 && capped.droppedCandidates == 84)
        let late = (0..<64).map { _ in "a=candidate:x" } + ["a=candidate:1 1 UDP 1 10.0.0.1 5000 typ host"]
        let unread = try #require(try Self.offer(media: Self.credentials + late).ice)
        #expect(unread.candidates.isEmpty && unread.droppedCandidates == 65, "a good line after 64 bad ones is not read")
    }

    @Test("unusable candidates (0.0.0.0, multicast, link-local, broadcast, port 0) and duplicates are dropped and counted")
    func unusableDropped() throws {
        let lines = ["0.0.0.0 5000", "224.0.0.1 5000", "169.254.3.4 5000", "fe80::1 5000", "ff02::1 5000", "255.255.255.255 5000",
            "::ffff:169.254.1.1 5000", "10.0.0.1 0", "10.0.0.1 5000", "10.0.0.1 5000", "127.0.0.1 5000", "::1 5000"]
            .map { "a=candidate:1 1 UDP 1 \($0) typ host" }
        let ice = try #require(try Self.offer(media: Self.credentials + lines).ice)
        #expect(ice.candidates.map(\.address) == ["10.0.0.1", "127.0.0.1", "::1"])
        #expect(ice.droppedCandidates == 9)
    }

    @Test("garbage lines are skipped, never fatal; candidates and credentials at the session level do not make a stream's")
    func garbage() throws {
        // (An empty value, `a=candidate:`, makes libosip2 refuse the whole description.)
        let garbage = ["a=candidate", "a=candidate:   ", "a=candidate:\u{7F}\u{1}", "a=candidate:1 1 UDP",
            "a=candidate:1 1 UDP 1 10.0.0.1 5000 typ host typ host", "a=ice-options", "a=ice-options:a-b trickle  x y",
            "a=CANDIDATE:2 1 udp 1 10.0.0.2 5000 typ host", "a=end-of-candidates:junk"]
        let offer = try Self.offer(media: Self.credentials + garbage)
        let ice = try #require(offer.ice)
        #expect(ice.candidates.map(\.foundation) == ["1", "2"], "an extra pair is ignored; names in any case")
        #expect(ice.droppedCandidates == 4 && ice.options == [] && ice.endOfCandidates, "the first ice-options line counts")
        let sessionLevel = try Self.offer(
            session: Self.credentials + ["a=candidate:1 1 UDP 1 10.0.0.1 5000 typ host", "a=ice-lite"], media: [])
        #expect(sessionLevel.ice?.candidates == [] && sessionLevel.ice?.droppedCandidates == 0 && sessionLevel.ice?.isLite == true)
        let mediaLite = try Self.offer(media: Self.credentials + ["a=ice-lite"])
        #expect(mediaLite.ice?.isLite == false, "ice-lite is a session-level attribute")
        let options = try Self.offer(session: ["a=ice-options:ice2"], media: Self.credentials
            + ["a=ice-options:trickle trickle renomination bad-tag " + (1...9).map { "o\($0)" }.joined(separator: " ")])
        #expect(options.ice?.options == ["trickle", "renomination", "o1", "o2", "o3", "o4", "o5", "o6"])
    }

    @Test("written at media level after the other attributes (ice-lite at session level) and read back the same")
    func roundTrip() throws {
        let candidates = try [
            #require(SDPCandidate(foundation: "1", component: 1, priority: 2_130_706_431, address: "192.0.2.4", port: 40_000, type: .host)),
            #require(SDPCandidate(foundation: "2", component: 1, priority: 1_694_498_815, address: "203.0.113.9", port: 50_000,
                type: .srflx, relatedAddress: "192.0.2.4", relatedPort: 40_000)),
            #require(SDPCandidate(foundation: "3", component: 2, priority: 16_777_215, address: "2001:DB8::9", port: 3_478, type: .relay,
                relatedAddress: "203.0.113.9", relatedPort: 50_001)),
        ]
        let ice = try #require(SDPICE(
            ufrag: "Parl", pwd: Self.pwd, isLite: true, options: ["trickle", "ice2"], candidates: candidates, endOfCandidates: true))
        var session = SDPSession(
            origin: SecureOffers.local, connectionAddress: "192.0.2.4", audioPort: 40_000, video: SDPVideo(port: 40_002, direction: .sendrecv),
            rtcpMux: true, ice: ice)
        let text = String(decoding: session.serialize(), as: UTF8.self)
        #expect(text.contains("t=0 0\r\na=ice-lite\r\nm=audio"))
        #expect(text.contains("a=rtcp-mux\r\na=sendrecv\r\na=ice-ufrag:Parl\r\na=ice-pwd:\(Self.pwd)\r\na=ice-options:trickle ice2\r\n"
            + "a=candidate:1 1 UDP 2130706431 192.0.2.4 40000 typ host\r\n"
            + "a=candidate:2 1 UDP 1694498815 203.0.113.9 50000 typ srflx raddr 192.0.2.4 rport 40000\r\n"
            + "a=candidate:3 2 UDP 16777215 2001:db8::9 3478 typ relay raddr 203.0.113.9 rport 50001\r\n"
            + "a=end-of-candidates\r\nm=video 40002"))
        #expect(try SDPSession.parse(session.serialize()) == session)
        session.ice?.isLite = false
        session.ice?.endOfCandidates = false
        session.ice?.candidates = []
        #expect(try SDPSession.parse(session.serialize()) == session)
        let plain = SDPSession(origin: SecureOffers.local, connectionAddress: "192.0.2.4", audioPort: 40_000)
        #expect(plain.ice == nil && !String(decoding: plain.serialize(), as: UTF8.self).contains("ice"))
        #expect(try SDPSession.parse(plain.serialize()).ice == nil)
        let read = try SecureOffers.parse(Self.chromeStyleOffer)
        var reread = try SDPSession.parse(read.serialize())
        reread.ice?.droppedCandidates = read.ice?.droppedCandidates ?? 0
        #expect(reread.ice == read.ice, "what is read writes back the same (but for the count of what was dropped)")
    }

    @Test("an answer does not copy the offer's ICE; the pwd is in no description, dump or mirror")
    func answerAndRedaction() throws {
        let offer = try SecureOffers.parse(Self.chromeStyleOffer)
        let answer = try #require(offer.answer(origin: SecureOffers.local, connectionAddress: "192.0.2.4", audioPort: 4_000))
        #expect(offer.ice != nil && answer.ice == nil)
        var dumped = ""
        dump(offer, to: &dumped)
        for text in ["\(offer)", String(reflecting: offer), "\(offer.ice!)", String(reflecting: offer.ice), dumped] {
            #expect(!text.contains(Self.pwd) && text.contains("4ZcD"), "\(text)")
        }
        #expect(offer.ice?.description.contains("pwd redacted (24 chars)") == true)
    }

    @Test("options: 1–32 ice-chars, each once, at most 8, or the value is refused")
    func optionBounds() {
        #expect(SDPICE(ufrag: "abcd", pwd: Self.pwd, options: ["trickle", "ice2"])?.options == ["trickle", "ice2"])
        #expect(SDPICE(ufrag: "abcd", pwd: Self.pwd, options: ["trickle", "trickle"]) == nil)
        #expect(SDPICE(ufrag: "abcd", pwd: Self.pwd, options: ["tr ickle"]) == nil)
        #expect(SDPICE(ufrag: "abcd", pwd: Self.pwd, options: [""]) == nil)
        #expect(SDPICE(ufrag: "abcd", pwd: Self.pwd, options: (1...9).map { "o\($0)" }) == nil)
    }
}
