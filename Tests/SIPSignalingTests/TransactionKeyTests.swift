import Foundation
import SIPMessages
import SIPSignaling
import Testing

@Suite("Transaction matching (RFC 3261 §17.1.3, §17.2.3)")
struct TransactionKeyTests {
    @Test("a response matches its client transaction by branch and CSeq method")
    func clientMatching() {
        let invite = Fixture.request(.invite)
        let key = TransactionKey(clientRequest: invite)
        #expect(key == .client(branch: "z9hG4bK776asdhds", method: .invite))
        #expect(TransactionKey(response: invite.makeResponse(statusCode: 180)) == key)
        let cancel = Fixture.request(.cancel)
        #expect(TransactionKey(response: cancel.makeResponse(statusCode: 200)) != key)
        let other = Fixture.request(.invite, branch: "z9hG4bKother")
        #expect(TransactionKey(response: other.makeResponse(statusCode: 200)) != key)
        #expect(TransactionKey(clientRequest: Fixture.request(.invite, branch: nil)) == nil)
    }

    @Test("server: branch + sent-by + method; the ACK finds its INVITE; CANCEL has its own key")
    func serverMatching() {
        let invite = Fixture.request(.invite)
        let key = TransactionKey(serverRequest: invite)
        #expect(key == .server(branch: "z9hG4bK776asdhds", sentBy: "pc33.atlanta.example.com:5060", method: .invite))
        #expect(TransactionKey(serverRequest: invite) == key)
        #expect(TransactionKey(serverRequest: Fixture.request(.ack, toTag: "a6c85cf")) == key)
        let cancel = TransactionKey(serverRequest: Fixture.request(.cancel))
        #expect(cancel != key)
        #expect(cancel?.cancelledInvite == key)
        #expect(key?.cancelledInvite == nil)
        #expect(TransactionKey(serverRequest: Fixture.request(.invite, host: "PC33.atlanta.example.com")) == key)
        #expect(TransactionKey(serverRequest: Fixture.request(.invite, host: "evil.example.com")) != key)
        #expect(TransactionKey(serverRequest: Fixture.request(.invite, branch: "z9hG4bKnew")) != key)
    }

    @Test("requests without the magic cookie fall back to RFC 2543 matching")
    func rfc2543Matching() throws {
        let invite = Fixture.request(.invite, branch: "bad-branch-1")
        let key = try #require(TransactionKey(serverRequest: invite))
        guard case .rfc2543(let fields) = key.kind else {
            Issue.record("expected an RFC 2543 key, got \(key)")
            return
        }
        #expect(fields.callID == "a84b4c76e66710@pc33.atlanta.example.com")
        #expect(fields.cseqNumber == 314159)
        #expect(fields.fromTag == "1928301774")
        #expect(fields.topVia.hasPrefix("SIP/2.0/UDP pc33.atlanta.example.com:5060;branch=bad-branch-1"))
        #expect(TransactionKey(serverRequest: invite) == key)
        // The ACK for a non-2xx carries the server's To tag and still matches the INVITE.
        #expect(TransactionKey(serverRequest: Fixture.request(.ack, branch: "bad-branch-1", toTag: "a6c85cf")) == key)
        #expect(TransactionKey(serverRequest: Fixture.request(.invite, branch: "bad-branch-1", cseq: 314160)) != key)
        #expect(TransactionKey(serverRequest: Fixture.request(.invite, branch: "bad-branch-2")) != key)
        #expect(TransactionKey(serverRequest: Fixture.request(.invite, branch: nil)) != key)
        // Non-INVITE requests keep the To tag; CANCEL maps to the INVITE it cancels.
        let bye = TransactionKey(serverRequest: Fixture.request(.bye, branch: nil, toTag: "a"))
        #expect(bye != TransactionKey(serverRequest: Fixture.request(.bye, branch: nil, toTag: "b")))
        let cancel = TransactionKey(serverRequest: Fixture.request(.cancel, branch: "bad-branch-1"))
        #expect(cancel != key)
        #expect(cancel?.cancelledInvite == key)
    }

    @Test("parsed requests from the wire produce the same keys")
    func parsedRequest() throws {
        let text = """
            INVITE sip:bob@biloxi.example.com SIP/2.0\r
            Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bKnashds8\r
            Max-Forwards: 70\r
            To: Bob <sip:bob@biloxi.example.com>\r
            From: Alice <sip:alice@atlanta.example.com>;tag=1928301774\r
            Call-ID: a84b4c76e66710\r
            CSeq: 314159 INVITE\r
            Content-Length: 0\r
            \r

            """
        let request = try #require(try SIPMessage.parse(Data(text.utf8)).request)
        #expect(TransactionKey(serverRequest: request)
            == .server(branch: "z9hG4bKnashds8", sentBy: "pc33.atlanta.example.com:5060", method: .invite))
    }
}
