import Foundation
import SIPMessages
import SIPSignaling
import Testing

@Suite("Requests inside a dialog (RFC 3261 §12.2.1.1, §13.2.2.4, §9.1)")
struct DialogRoutingTests {
    typealias F = DialogFixture

    @Test("loose routing, callee side: Request-URI is the remote target, Route is the route set in order")
    func calleeLooseRouting() throws {
        var dialog = try F.bobsDialog(localSequence: 40)
        let bye = dialog.makeRequest(.bye, via: F.via("z9hG4bKbye1"))
        #expect(F.text(bye) == """
            BYE sip:alice@client.atlanta.example.com;transport=tcp SIP/2.0\r
            Via: SIP/2.0/TCP client.biloxi.example.com:5060;branch=z9hG4bKbye1\r
            Max-Forwards: 70\r
            To: "Alice" <sip:alice@atlanta.example.com>;tag=9fxced76sl\r
            From: "Bob" <sip:bob@biloxi.example.com>;tag=314159\r
            Call-ID: 3848276298220188511@atlanta.example.com\r
            CSeq: 41 BYE\r
            Route: <sip:ss2.biloxi.example.com;lr>\r
            Route: <sip:ss1.atlanta.example.com;lr>\r
            Content-Length: 0\r
            \r

            """)
        #expect(dialog.nextHop == SIPURI("sip:ss2.biloxi.example.com;lr"))
        #expect(!dialog.usesStrictRouting)
        // What we send parses, and the peer finds its dialog in it.
        let parsed = try #require(try SIPMessage.parse(bye.serialize()).request)
        #expect(DialogID(incomingRequest: parsed) == DialogID(callID: F.callID, localTag: F.aliceTag, remoteTag: F.bobTag))
    }

    @Test("loose routing, caller side: the route set is Record-Route reversed, so ss1 (next to Alice) comes first")
    func callerLooseRouting() throws {
        var dialog = try F.alicesDialog(cseq: 1)
        let body = Data("v=0\r\n".utf8)
        let reinvite = dialog.makeRequest(
            .invite, via: F.via("z9hG4bKre1", host: "client.atlanta.example.com"),
            contact: SIPAddress(uri: SIPURI("sip:alice@client.atlanta.example.com;transport=tcp")!),
            headers: ["Subject": "hold"], contentType: .sdp, body: body)
        #expect(F.text(reinvite) == """
            INVITE sip:bob@client.biloxi.example.com;transport=tcp SIP/2.0\r
            Via: SIP/2.0/TCP client.atlanta.example.com:5060;branch=z9hG4bKre1\r
            Max-Forwards: 70\r
            To: "Bob" <sip:bob@biloxi.example.com>;tag=314159\r
            From: "Alice" <sip:alice@atlanta.example.com>;tag=9fxced76sl\r
            Call-ID: 3848276298220188511@atlanta.example.com\r
            CSeq: 2 INVITE\r
            Contact: <sip:alice@client.atlanta.example.com;transport=tcp>\r
            Route: <sip:ss1.atlanta.example.com;lr>\r
            Route: <sip:ss2.biloxi.example.com;lr>\r
            Subject: hold\r
            Content-Type: application/sdp\r
            Content-Length: 5\r
            \r
            v=0\r

            """)
        #expect(dialog.nextHop == SIPURI("sip:ss1.atlanta.example.com;lr"))
    }

    @Test("strict routing: the first route is the Request-URI (without method and headers), the target the last Route")
    func strictRouting() throws {
        let invite = F.outgoingInvite()
        // As Record-Route comes back: p2 (loose, next to Bob), then p1 (strict, next to Alice).
        let ok = try F.responseFromBob(
            to: invite, statusCode: 200,
            recordRoutes: ["<sip:p2.example.com;lr>", "<sip:p1.example.com;maddr=192.0.2.7;method=INVITE?X-Y=z>"])
        var dialog = try #require(SIPDialog.asCaller(request: invite, response: ok))
        #expect(dialog.usesStrictRouting)
        let info = dialog.makeRequest(.info, via: F.via("z9hG4bKinfo", host: "client.atlanta.example.com"))
        let text = F.text(info)
        #expect(text.hasPrefix("INFO sip:p1.example.com;maddr=192.0.2.7 SIP/2.0\r\n"))
        #expect(info.headers.values("Route") == [
            "<sip:p2.example.com;lr>", "<sip:bob@client.biloxi.example.com;transport=tcp>",
        ])
        #expect(text.contains("CSeq: 2 INFO\r\n"))
        #expect(dialog.nextHop == SIPURI("sip:p1.example.com;maddr=192.0.2.7"))
        #expect(dialog.requestURI == dialog.nextHop)
    }

    @Test("no route set: the request goes straight to the remote target without Route headers")
    func noRouteSet() throws {
        let invite = F.outgoingInvite()
        let ok = try F.responseFromBob(to: invite, statusCode: 200, recordRoutes: [])
        var dialog = try #require(SIPDialog.asCaller(request: invite, response: ok))
        let bye = dialog.makeRequest(.bye, via: F.via("z9hG4bKb", host: "client.atlanta.example.com"))
        #expect(bye.uri == SIPURI("sip:bob@client.biloxi.example.com;transport=tcp"))
        #expect(!bye.headers.contains("Route"))
        #expect(dialog.nextHop == bye.uri)
    }

    @Test("the ACK for a 2xx: the INVITE's CSeq number, its own branch, routed like the dialog, no CSeq increment")
    func ackForSuccess() throws {
        var dialog = try F.alicesDialog(cseq: 5)
        let ack = dialog.makeACK(
            forInviteCSeq: 5, via: F.via("z9hG4bKack", host: "client.atlanta.example.com"),
            headers: ["Proxy-Authorization": "Digest username=\"alice\""])
        #expect(ack.method == .ack)
        #expect(ack.headers.cseq == SIPCSeq(number: 5, method: .ack))
        #expect(ack.headers.topVia?.branch == "z9hG4bKack")
        #expect(ack.headers.values("Route") == ["<sip:ss1.atlanta.example.com;lr>", "<sip:ss2.biloxi.example.com;lr>"])
        #expect(ack.headers["Proxy-Authorization"] == "Digest username=\"alice\"")
        #expect(!ack.headers.contains("Contact"))
        #expect(dialog.localSequence == 5)
        let bye = dialog.makeRequest(.bye, via: F.via("z9hG4bKbye", host: "client.atlanta.example.com"))
        #expect(bye.headers.cseq?.number == 6)
    }

    @Test("CANCEL from an INVITE: same Request-URI, top Via, To, From, Call-ID, Route and CSeq number; no body")
    func cancelFromInvite() throws {
        let routes = ["<sip:proxy1.example.com;lr>", "<sip:proxy2.example.com;lr>"]
        var invite = Fixture.request(.invite, cseq: 31, routes: routes)
        invite.body = Data("v=0\r\n".utf8)
        let cancel = invite.makeCancel()
        #expect(F.text(cancel) == """
            CANCEL sip:bob@biloxi.example.com SIP/2.0\r
            Via: SIP/2.0/UDP pc33.atlanta.example.com:5060;branch=z9hG4bK776asdhds\r
            Max-Forwards: 70\r
            To: "Bob" <sip:bob@biloxi.example.com>\r
            From: "Alice" <sip:alice@atlanta.example.com>;tag=1928301774\r
            Call-ID: a84b4c76e66710@pc33.atlanta.example.com\r
            CSeq: 31 CANCEL\r
            Route: <sip:proxy1.example.com;lr>\r
            Route: <sip:proxy2.example.com;lr>\r
            Content-Length: 0\r
            \r

            """)
        // The server finds the INVITE the CANCEL targets; the client keeps the CANCEL's own transaction.
        let serverKey = try #require(TransactionKey(serverRequest: cancel))
        #expect(serverKey.cancelledInvite == TransactionKey(serverRequest: invite))
        #expect(TransactionKey(clientRequest: cancel) == .client(branch: "z9hG4bK776asdhds", method: .cancel))
        #expect(TransactionKey(response: cancel.makeResponse(statusCode: 200)) == TransactionKey(clientRequest: cancel))
        // Also when parsed from the wire, and for an RFC 2543 branch.
        let parsed = try #require(try SIPMessage.parse(cancel.serialize()).request)
        #expect(TransactionKey(serverRequest: parsed)?.cancelledInvite == TransactionKey(serverRequest: invite))
        let legacy = Fixture.request(.invite, branch: "bad-branch-1")
        let legacyCancel = legacy.makeCancel()
        #expect(TransactionKey(serverRequest: legacyCancel)?.cancelledInvite == TransactionKey(serverRequest: legacy))
    }
}
