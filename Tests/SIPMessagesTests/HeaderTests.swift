import Foundation
import Testing

@testable import SIPMessages

@Suite("Header access")
struct HeaderTests {
    @Test("lookup ignores case and understands compact forms both ways", arguments: [
        ("i", "Call-ID"), ("f", "From"), ("t", "To"), ("v", "Via"), ("m", "Contact"), ("l", "Content-Length"),
        ("c", "Content-Type"), ("k", "Supported"), ("s", "Subject"), ("e", "Content-Encoding"), ("o", "Event"),
        ("r", "Refer-To"), ("b", "Referred-By"), ("u", "Allow-Events"), ("x", "Session-Expires"),
    ])
    func compactForms(compact: String, full: String) {
        let written: SIPHeaders = [compact.uppercased(): "one", "X-Other": "x", full.lowercased(): "two"]
        #expect(written[full] == "one")
        #expect(written[full.uppercased()] == "one")
        #expect(written[compact] == "one")
        #expect(written.values(compact) == ["one", "two"])
        #expect(written.count(of: full) == 2)
        #expect(SIPHeaders.canonicalName(compact) == full)
    }

    @Test("the published compact-form table is the one lookups use")
    func compactTable() {
        for (letter, full) in SIPHeaders.compactForms {
            #expect(SIPHeaders.key(for: letter) == full.lowercased())
            #expect(SIPHeaders.key(for: letter.uppercased()) == full.lowercased())
        }
        #expect(SIPHeaders.key(for: "g") == "g")
    }

    @Test("canonical names")
    func canonicalNames() {
        #expect(SIPHeaders.canonicalName("cseq") == "CSeq")
        #expect(SIPHeaders.canonicalName("CALL-ID") == "Call-ID")
        #expect(SIPHeaders.canonicalName("max-forwards") == "Max-Forwards")
        #expect(SIPHeaders.canonicalName("X-Custom") == "X-Custom")
    }

    @Test("editing keeps order: set replaces in place, removeAll removes every spelling")
    func editing() {
        var headers: SIPHeaders = ["Via": "a", "Subject": "s", "v": "b", "Supported": "timer"]
        headers.set("VIA", "c")
        #expect(headers.map(\.name) == ["VIA", "Subject", "Supported"])
        #expect(headers.values("v") == ["c"])
        headers.insert("Via", "first", at: 0)
        #expect(headers.values("Via") == ["first", "c"])
        headers.removeAll("k")
        #expect(!headers.contains("Supported"))
        headers.set("Max-Forwards", "70")
        #expect(headers.last?.name == "Max-Forwards")
        #expect(headers.maxForwards == 70)
    }

    @Test("values cannot carry a line break")
    func sanitisedValues() {
        let field = SIPHeaderField(name: "Subject", value: "  hi\r\nVia: injected \n")
        #expect(field.value == "hi Via: injected")
        let response = SIPResponse(statusCode: 200, reasonPhrase: "OK\r\nX: y", headers: [:])
        #expect(!String(decoding: response.serialize(), as: UTF8.self).contains("OK\r\nX"))
    }

    @Test("typed views of wsinv: folding, odd whitespace, compact forms, comma-separated Via")
    func wsinv() throws {
        let message = try SIPMessage.parse(TortureCorpus.bytes("wsinv"))
        let request = try #require(message.request)
        #expect(request.method == .invite)
        #expect(request.uri == SIPURI(user: "vivekg", host: "chair-dnrc.example.com", parameters: ["unknownparam": nil]))
        let headers = message.headers
        #expect(headers.vias.map(\.transport) == ["UDP", "TCP", "UDP"])
        #expect(headers.vias.map(\.host) == ["192.0.2.2", "spindle.example.com", "192.168.255.111"])
        #expect(headers.topVia?.branch == "390skdjuw")
        #expect(headers.topVia?.hasRFC3261Branch == false)
        #expect(headers.vias[1].hasRFC3261Branch)
        #expect(headers.to?.tag == "1918181833n")
        #expect(headers.to?.uri == SIPURI(user: "vivekg", host: "chair-dnrc.example.com"))
        #expect(headers.from?.displayName == "J Rosenberg \\\"")
        #expect(headers.from?.tag == "98asjd8")
        #expect(headers.cseq == SIPCSeq(number: 9, method: .invite))
        #expect(headers.maxForwards == 68)
        #expect(headers.contentLength == 150)
        #expect(headers.contentType == .sdp)
        let contact = try #require(headers.contacts.first)
        #expect(contact.displayName == "Quoted string \"\"")
        #expect(contact.parameters == ["newparam": "newvalue", "secondparam": nil, "q": "0.33"])
        #expect(headers.routes.first?.uri.parameters.contains("lr") == true)
        #expect(message.body.count == 150)
    }

    @Test("intmeth: unusual method, URI, display names with quoted control octets, tokens full of marks")
    func intmeth() throws {
        let message = try SIPMessage.parse(TortureCorpus.bytes("intmeth"))
        let request = try #require(message.request)
        #expect(request.method == .extension("!interesting-Method0123456789_*+`.%indeed'~"))
        #expect(!request.method.isKnown)
        #expect(request.uri.user == "1_unusual.URI~(to-be!sure)&isn't+it$/crazy?,/;;*")
        #expect(request.uri.password == "&it+has=1,weird!*pas$wo~d_too.(doesn't-it)")
        #expect(message.headers.to?.displayName == "BEL:\u{07} NUL:\0 DEL:\u{7F}")
        #expect(message.headers.from?.displayName == "token1~` token2'+_ token3*%!.-")
        #expect(message.headers.from?.tag == "_token~1'+`*%!-.")
        #expect(message.headers.from?.parameters["fromParam''~+*_!.-%"] == "\"работающий\"")
        #expect(message.headers.callID == "intmeth.word%ZK-!.*_+'@word`~)(><:\\/\"][?}{")
        #expect(message.headers.cseq?.method == request.method)
        #expect(message.headers["extensionHeader-!.%*+_`'~"] == "\u{FEFF}大停電")
    }

    @Test("escapes: %-escapes in URIs are decoded (NUL too); elsewhere % is a plain character")
    func escapes() throws {
        let esc01 = try SIPMessage.parse(TortureCorpus.bytes("esc01"))
        #expect(esc01.request?.uri.user == "sips:user@example.com")
        #expect(esc01.headers.from?.uri.user == "I have spaces")
        #expect(esc01.headers.contacts.first?.uri.parameters["name"] == "value%41")
        let escnull = try SIPMessage.parse(TortureCorpus.bytes("escnull"))
        #expect(escnull.headers.to?.uri.user == "null-\0-null")
        #expect(escnull.headers.contacts.map(\.uri.user) == ["\0", "\0\0"])
        let esc02 = try SIPMessage.parse(TortureCorpus.bytes("esc02"))
        #expect(esc02.request?.method == .extension("RE%47IST%45R"))
        #expect(esc02.request?.method != .register)
        #expect(esc02.headers.to?.displayName == "%Z%45")
        #expect(esc02.headers.topVia?.branch == "z9hG4bK209%fzsnel234")
    }

    @Test("methods are equal when their tokens are: named cases by case, an extension spelling a named method equals it")
    func methodEquality() {
        let named: [SIPMethod] = [
            .invite, .ack, .bye, .cancel, .options, .register, .prack, .subscribe, .notify, .publish, .info, .refer,
            .message, .update,
        ]
        for (i, left) in named.enumerated() {
            for (j, right) in named.enumerated() { #expect((left == right) == (i == j), "\(left) against \(right)") }
            let spelled = SIPMethod.extension(left.token)
            #expect(spelled == left && left == spelled && spelled.hashValue == left.hashValue)
            #expect(SIPMethod.extension(left.token.lowercased()) != left, "case-sensitive")
        }
        #expect(SIPMethod.extension("NEWMETHOD") == .extension("NEWMETHOD"))
        #expect(SIPMethod.extension("NEWMETHOD") != .extension("NEWMETHOd"))
        #expect(Set(named + named.map { SIPMethod.extension($0.token) }).count == named.count)
    }

    @Test("parameters: after an addr-spec they belong to the header, inside <> to the URI")
    func contactParameters() throws {
        let cparam01 = try SIPMessage.parse(TortureCorpus.bytes("cparam01"))
        let first = try #require(cparam01.headers.contacts.first)
        #expect(first.parameters.contains("unknownparam"))
        #expect(first.uri.parameters.isEmpty)
        let cparam02 = try SIPMessage.parse(TortureCorpus.bytes("cparam02"))
        let second = try #require(cparam02.headers.contacts.first)
        #expect(second.uri.parameters.contains("unknownparam"))
        #expect(second.parameters.isEmpty)
        let regescrt = try SIPMessage.parse(TortureCorpus.bytes("regescrt"))
        #expect(regescrt.headers.contacts.first?.uri.headers["Route"] == "<sip:sip.example.com>")
        let semiuri = try SIPMessage.parse(TortureCorpus.bytes("semiuri"))
        #expect(semiuri.request?.uri.user == "user;par=u@example.net")
        #expect(semiuri.request?.uri.host == "example.com")
    }

    @Test("other schemes are opaque URIs, and a UAS answers 416 for them in the Request-URI")
    func schemes() throws {
        let unksm2 = try SIPMessage.parse(TortureCorpus.bytes("unksm2"))
        #expect(unksm2.headers.to?.uri == SIPURI(scheme: "isbn", opaquePart: "2983792873"))
        #expect(unksm2.headers.from?.uri.scheme == "http")
        #expect(unksm2.headers.contacts.first?.uri.opaquePart == "John_Smith")
        #expect(throws: Never.self) { try unksm2.request?.checkURIScheme() }
        let novelsc = try #require(try SIPMessage.parse(TortureCorpus.bytes("novelsc")).request)
        #expect(novelsc.uri == SIPURI(scheme: "soap.beep", opaquePart: "//192.0.2.103:3002"))
        #expect(throws: Never.self) { try novelsc.checkURIScheme(supported: ["sip", "soap.beep"]) }
    }

    @Test("Via details: rport, received, IPv6 sent-by, unknown transports")
    func viaDetails() throws {
        let via = try #require(OSIPHeaderReader.via("SIP/2.0/udp [2001:db8::9]:5062;received=2001:db8::1;rport=4000;branch=z9hG4bKx"))
        #expect(via.transport == "UDP")
        #expect(via.host == "2001:db8::9")
        #expect(via.port == 5062)
        #expect(via.received == "2001:db8::1")
        #expect(via.requestsRPort && via.rport == 4000)
        #expect(OSIPHeaderReader.via(via.headerValue) == via)
        let transports = try SIPMessage.parse(TortureCorpus.bytes("transports"))
        #expect(transports.headers.vias.map(\.transport) == ["UDP", "SCTP", "TLS", "UNKNOWN", "TCP"])
        for bad in ["SIP/2.0/UDP a b", "SIP/2.0/UDP h:99999", "SIP/2.0/UDP h:abc", "SIP/3.0/UDP h", "SIP/2.0/UDP h;branch=x y", ""] {
            #expect(OSIPHeaderReader.via(bad) == nil, "\(bad)")
        }
    }

    @Test("addresses libosip2 lets through that Parley refuses", arguments: [
        "<sip:a@b> garbage", "<sip:a@b>, <sip:c@d>", "", "*", "sip:a@b?x=y", "< sip:a@b >", "\"open <sip:a@b>",
        "Bell, Alexander <sip:a@b>", "<sip:a@b c>", "<sip:a@h:123456>", "<sip:@>", "<sip:a@b>;tag=x y",
    ])
    func refusedAddresses(value: String) {
        #expect(OSIPHeaderReader.address(value) == nil)
    }

    @Test("CSeq bounds")
    func cseqBounds() {
        #expect(OSIPHeaderReader.cseq("2147483647 BYE") == SIPCSeq(number: 2_147_483_647, method: .bye))
        #expect(OSIPHeaderReader.cseq("2147483648 BYE") == nil)
        #expect(OSIPHeaderReader.cseq("-1 BYE") == nil)
        #expect(OSIPHeaderReader.cseq("1 INV ITE") == nil)
        #expect(OSIPHeaderReader.cseq("1") == nil)
    }
}
