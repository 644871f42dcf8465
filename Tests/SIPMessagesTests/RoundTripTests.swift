import Foundation
import Testing

@testable import SIPMessages

@Suite("Serialising and round trips")
struct RoundTripTests {
    @Test("every torture message that parses survives serialise → parse unchanged")
    func tortureRoundTrip() throws {
        let parsed = try TortureCorpus.parsedMessages()
        #expect(parsed.count == 28)  // 13 valid, badbranch, 12 application-layer, inv2543, baddate
        for (name, message) in parsed {
            let bytes = message.serialize()
            let again = try SIPMessage.parse(bytes)
            #expect(again == message, "\(name)")
            #expect(again.serialize() == bytes, "\(name)")
            // The values kept from validation are the ones a fresh parse of the text gives.
            #expect(TypedViews(message.headers) == TypedViews(message.headers.droppingParsedValues()), "\(name)")
        }
    }

    @Test("editing the fields drops the values kept from parsing")
    func editingDropsParsedValues() throws {
        var request = try #require(try SIPMessage.parse(sipBytes(basicInviteLines)).request)
        #expect(request.headers.from?.tag == "1928301774")
        request.headers.set("f", "<sip:carol@example.net>;tag=c3")
        #expect(request.headers.from?.tag == "c3")
        #expect(request.headers.from?.uri.user == "carol")
        request.headers.insert("Via", "SIP/2.0/TCP proxy.example.com;branch=z9hG4bKp", at: 0)
        #expect(request.headers.topVia?.host == "proxy.example.com")
        #expect(request.headers.vias.count == 2)
    }

    @Test("a parsed message keeps its header order, names and values as written")
    func headersAsWritten() throws {
        let message = try SIPMessage.parse(TortureCorpus.bytes("wsinv"))
        let names = message.headers.map(\.name)
        #expect(names == [
            "TO", "from", "MaX-fOrWaRdS", "Call-ID", "Content-Length", "cseq", "Via", "s", "NewFangledHeader",
            "UnknownHeaderWithUnusualValue", "Content-Type", "Route", "v", "m",
        ])
        #expect(message.headers["NewFangledHeader"] == "newfangled value continued newfangled value")
        #expect(message.headers["UnknownHeaderWithUnusualValue"] == ";;,,;;,;")
        #expect(message.headers["s"] == "")
        // Folds become one space; other whitespace stays as written.
        #expect(message.headers["TO"] == "sip:vivekg@chair-dnrc.example.com ;   tag    = 1918181833n")
        #expect(message.headers["Route"] == "<sip:services.example.com;lr;unknownwith=value;unknown-no-value>")
    }

    @Test("a built request writes the usual headers and reads back the same values")
    func builtRequest() throws {
        let via = SIPVia(transport: "udp", host: "192.0.2.1", port: 5060, branch: "z9hG4bK-1", parameters: ["rport": nil])
        let from = SIPAddress(
            displayName: "Alice \"Al\" \\ Smith", uri: SIPURI(user: "alice", host: "example.org"), parameters: ["tag": "a1"])
        let to = SIPAddress(displayName: "Bøb", uri: SIPURI(user: "bob", host: "example.com"))
        let contact = SIPAddress(uri: SIPURI(user: "alice", host: "2001:db8::1", port: 5070, parameters: ["transport": "tcp"]))
        let sdp = Data("v=0\r\n".utf8)
        let request = SIPRequest(
            method: .invite, uri: SIPURI(user: "bob", host: "example.com"), via: via, from: from, to: to,
            callID: "c1@example.org", cseq: 1, contact: contact, headers: ["Subject": "hello, world"],
            contentType: .sdp, body: sdp)
        let text = String(decoding: request.serialize(), as: UTF8.self)
        #expect(text.hasPrefix("INVITE sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1:5060;rport;branch=z9hG4bK-1\r\n"))
        #expect(text.contains("\r\nContact: <sip:alice@[2001:db8::1]:5070;transport=tcp>\r\n"))
        #expect(text.hasSuffix("Content-Type: application/sdp\r\nContent-Length: 5\r\n\r\nv=0\r\n"))

        let parsed = try #require(try SIPMessage.parse(request.serialize()).request)
        #expect(parsed == request)
        #expect(parsed.headers.topVia == SIPVia(transport: "UDP", host: "192.0.2.1", port: 5060, branch: "z9hG4bK-1", parameters: ["rport": nil]))
        #expect(parsed.headers.from == from)
        #expect(parsed.headers.to == to)
        #expect(parsed.headers.contacts == [contact])
        #expect(parsed.headers.callID == "c1@example.org")
        #expect(parsed.headers.cseq == SIPCSeq(number: 1, method: .invite))
        #expect(parsed.headers.maxForwards == 70)
        #expect(parsed.headers.contentType == .sdp)
        #expect(parsed.headers.contentLength == 5)
        #expect(parsed.body == sdp)
    }

    @Test("URIs with characters that need escaping read back as written", arguments: [
        SIPURI(user: "al@ice:x y", password: "p:w@d", host: "example.com", port: 5061),
        SIPURI(user: "null-\0-null", host: "example.com"),
        SIPURI(user: "+1-212;phone-context=x", host: "gw.example.com", parameters: ["user": "phone"]),
        SIPURI(scheme: "sips", user: "ünïcode", host: "example.com", parameters: ["p": "a;b=c", "lr": nil]),
        SIPURI(host: "example.com", headers: ["Route": "<sip:proxy.example.com;lr>", "Subject": "a&b=c"]),
        SIPURI(host: "::1", port: 5060, parameters: ["maddr": "[2001:db8::2]"]),
        SIPURI(scheme: "tel", opaquePart: "+1-212-555-0101;phone-context=example.com"),
        SIPURI(scheme: "soap.beep", opaquePart: "//192.0.2.103:3002"),
    ])
    func uriRoundTrip(uri: SIPURI) throws {
        let parsed = try #require(SIPURI(uri.description), "\(uri)")
        #expect(parsed == uri)
        let address = SIPAddress(displayName: "Name", uri: uri, parameters: ["tag": "t"])
        #expect(OSIPHeaderReader.address(address.headerValue) == address)
    }

    @Test("a request whose Request-URI needs escaping round-trips")
    func escapedRequestURI() throws {
        var request = try #require(try SIPMessage.parse(sipBytes(basicInviteLines)).request)
        request.uri = SIPURI(user: "sips:user@example.com", host: "example.net", parameters: ["x": "%41"])
        let again = try SIPMessage.parse(request.serialize())
        #expect(again.request == request)
        let text = String(decoding: request.serialize(), as: UTF8.self)
        #expect(text.hasPrefix("INVITE sip:sips%3Auser%40example.com@example.net;x=%2541 SIP/2.0\r\n"))
    }

    @Test("Content-Length always equals the body size")
    func contentLengthManaged() throws {
        var request = try #require(try SIPMessage.parse(sipBytes(basicInviteLines)).request)
        #expect(request.headers.contentLength == 0)
        request.body = Data("hello".utf8)
        #expect(request.headers.contentLength == 5)
        #expect(request.headers.count(of: "Content-Length") == 1)
        request.headers.removeAll("Content-Length")
        #expect(request.headers["l"] == "5")
        request.headers.append("l", "77")
        #expect(request.headers.values("Content-Length") == ["5"])
        #expect(try SIPMessage.parse(request.serialize()).request == request)
        // A datagram without Content-Length gets one, and a value with leading zeros is rewritten.
        var lines = basicInviteLines
        lines.removeLast()
        let withoutLength = try SIPMessage.parse(sipBytes(lines, body: "abc"))
        #expect(withoutLength.body == Data("abc".utf8))
        #expect(withoutLength.headers["Content-Length"] == "3")
        lines.append("Content-Length: 002")
        #expect(try SIPMessage.parse(sipBytes(lines, body: "abc")).headers.values("Content-Length") == ["2"])
    }
}

@Suite("Responses to requests")
struct ResponseBuildingTests {
    let request: SIPRequest

    init() throws {
        var lines = basicInviteLines
        lines.insert("Via: SIP/2.0/TCP proxy.example.com;branch=z9hG4bKproxy", at: 1)
        lines.insert("Record-Route: <sip:proxy.example.com;lr>", at: 2)
        lines.insert("Timestamp: 54", at: 3)
        request = try #require(try SIPMessage.parse(sipBytes(lines)).request)
    }

    @Test("a response copies Via, From, To, Call-ID and CSeq and adds the To tag")
    func ringing() throws {
        let response = request.makeResponse(statusCode: 180, toTag: "b2")
        #expect(response.reasonPhrase == "Ringing")
        #expect(response.headers.map(\.name) == ["Via", "Via", "From", "To", "Call-ID", "CSeq", "Content-Length"])
        #expect(response.headers.values("Via") == request.headers.values("Via"))
        #expect(response.headers.from == request.headers.from)
        #expect(response.headers["To"] == "Bob <sip:bob@example.com>;tag=b2")
        #expect(response.headers.to?.tag == "b2")
        #expect(response.headers.cseq == request.headers.cseq)
        #expect(try SIPMessage.parse(response.serialize()).response == response)
    }

    @Test("100 Trying has no tag and echoes Timestamp; a tag already present is kept")
    func tryingAndExistingTag() throws {
        let trying = request.makeResponse(statusCode: 100, toTag: "ignored")
        #expect(trying.headers.to?.tag == nil)
        #expect(trying.headers["Timestamp"] == "54")
        let ok = request.makeResponse(statusCode: 200, toTag: "b2")
        let again = SIPRequest(method: .bye, uri: request.uri, headers: ok.headers).makeResponse(statusCode: 200, toTag: "other")
        #expect(again.headers.to?.tag == "b2")
    }

    @Test("a 200 with SDP, Contact and Record-Route")
    func okWithBody() throws {
        let body = Data("v=0\r\n".utf8)
        let response = request.makeResponse(
            statusCode: 200, toTag: "b2", copyingRecordRoute: true,
            headers: ["Contact": "<sip:bob@192.0.2.4>"], contentType: .sdp, body: body)
        #expect(response.headers.recordRoutes.map(\.uri) == [SIPURI(host: "proxy.example.com", parameters: ["lr": nil])])
        #expect(response.headers.contentLength == body.count)
        #expect(response.headers.contentType == .sdp)
        #expect(try SIPMessage.parse(response.serialize()).response == response)
    }

    @Test("the fields copied once answer a 180 and the 200 after it as makeResponse would")
    func copiedFieldsReused() throws {
        let copied = request.answeringFields(statusCode: 180, toTag: "b2", copyingRecordRoute: true)
        let contact: SIPHeaders = ["Contact": "<sip:bob@192.0.2.4>"]
        let body = Data("v=0\r\n".utf8)
        let ringing = SIPResponse(statusCode: 180, answering: copied, headers: contact)
        let ok = SIPResponse(statusCode: 200, answering: copied, headers: contact, contentType: .sdp, body: body)
        #expect(ringing == request.makeResponse(statusCode: 180, toTag: "b2", copyingRecordRoute: true, headers: contact))
        #expect(ok == request.makeResponse(
            statusCode: 200, toTag: "b2", copyingRecordRoute: true, headers: contact, contentType: .sdp, body: body))
        #expect(ok.serialize() == request.makeResponse(
            statusCode: 200, toTag: "b2", copyingRecordRoute: true, headers: contact, contentType: .sdp, body: body).serialize())
        #expect(ok.reasonPhrase == "OK" && ok.headers.to?.tag == "b2" && ok.headers.contentLength == body.count)
    }
}
