import Foundation
import Testing

@testable import SIPMessages

/// The typed values a parsed message carries survive the edits that leave them true, and always read what parsing
/// the fields again would.
@Suite struct TypedValuesKeptTests {
    /// Every typed view, as something comparable.
    private func views(_ headers: SIPHeaders) -> [String] {
        [
            "\(headers.vias)", "\(String(describing: headers.from))", "\(String(describing: headers.to))",
            "\(String(describing: headers.callID))", "\(String(describing: headers.cseq))",
            "\(String(describing: headers.maxForwards))", "\(String(describing: headers.contentType))",
            "\(headers.contacts)", "\(headers.routes)", "\(headers.recordRoutes)",
        ]
    }

    private func expectSameViews(_ headers: SIPHeaders, _ context: String, kept: Bool? = nil) {
        #expect(views(headers) == views(headers.droppingParsedValues()), "\(context)")
        if let kept { #expect((headers.parsed != nil) == kept, "\(context): typed values kept") }
    }

    @Test func responsesBuiltFromEveryParsedRequestReadWhatTheirFieldsSay() throws {
        var requests = try TortureCorpus.parsedMessages().compactMap(\.message.request)
        requests.append(try #require(try SIPMessage.parse(sipBytes(basicInviteLines)).request))
        var lines = basicInviteLines
        lines.insert("Record-Route: <sip:p1.example.com;lr>, <sip:p2.example.com;lr>", at: 2)
        lines[4] = "To: \"Bob, the Tagless\" <sip:bob@example.com;transport=udp>;x=1"
        requests.append(try #require(try SIPMessage.parse(sipBytes(lines)).request))
        #expect(requests.count > 20)
        for request in requests {
            for (status, tag, copying) in [(100, nil, false), (180, "t1", true), (200, "t2", false), (486, "t3", false)] {
                let response = request.makeResponse(
                    statusCode: status, toTag: tag, copyingRecordRoute: copying,
                    headers: ["Server": "Parley", "Contact": "<sip:parley@127.0.0.1:5070>", "Allow": "INVITE, BYE"],
                    contentType: status == 200 ? SIPContentType(type: "application", subtype: "sdp") : nil)
                expectSameViews(response.headers, "\(status) to \(request.method) \(request.headers.callID ?? "?")")
            }
        }
    }

    @Test func aTextOnlyResponseWritesTheSameBytesAndReadsTheSameViews() throws {
        let request = try #require(try SIPMessage.parse(sipBytes(basicInviteLines)).request)
        let response = request.makeResponse(statusCode: 486, toTag: "busy1")
        #expect(response.headers.parsed != nil)
        let text = response.textOnly
        #expect(text.headers.parsed == nil)
        #expect(text.serialize() == response.serialize())
        #expect(views(text.headers) == views(response.headers))
        #expect(text == response)
    }

    @Test func editsKeepOrDropTheValuesAsTheyMust() throws {
        let parsed = try #require(try SIPMessage.parse(sipBytes(basicInviteLines)).request).headers
        var headers = parsed
        headers.append("Subject", "hello")
        expectSameViews(headers, "untyped field appended", kept: true)
        headers.append("Via", "SIP/2.0/TCP 192.0.2.9:5060;branch=z9hG4bK-second, SIP/2.0/UDP 192.0.2.10;branch=z9hG4bK-third")
        expectSameViews(headers, "Vias appended", kept: true)
        headers.append("Contact", "<sip:other@192.0.2.2>;q=0.5")
        headers.append("Route", "<sip:proxy.example.com;lr>")
        headers.append("Record-Route", "<sip:rr.example.com;lr>")
        headers.append("Max-Forwards", "9")
        headers.append("Content-Type", "application/sdp")
        expectSameViews(headers, "typed fields appended", kept: true)
        headers.append("From", "<sip:second@example.com>;tag=2")
        expectSameViews(headers, "a second From: the first still reads", kept: true)
        headers.set("Subject", "again")
        expectSameViews(headers, "untyped field set", kept: true)
        var dropped = headers
        dropped.append("Contact", "<<not an address")
        expectSameViews(dropped, "an unparsable Contact: left out of the view, as on a fresh read", kept: true)
        dropped = headers
        dropped.set("To", "<sip:changed@example.com>;tag=9")
        expectSameViews(dropped, "To replaced", kept: false)
        #expect(dropped.to?.tag == "9")
        dropped = headers
        dropped.removeAll("Contact")
        expectSameViews(dropped, "Contacts removed", kept: false)
        dropped = headers
        dropped.insert("Via", "SIP/2.0/UDP 192.0.2.99;branch=z9hG4bK-top", at: 0)
        expectSameViews(dropped, "a Via inserted on top", kept: false)
        #expect(dropped.topVia?.host == "192.0.2.99")
        var untouched = headers
        untouched.removeAll("Subject")
        expectSameViews(untouched, "untyped field removed", kept: true)
    }
}
