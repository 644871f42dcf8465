import ControlProtocol
import Foundation
import Testing

/// Issue 48, "who said it": a MESSAGE from outside a call's dialog claiming to come from the call's peer — here a
/// group member — is not that member's message. Only the dialog's identifiers vouch for a sender.
@Suite("Spoofed MESSAGEs: outside the dialog, a claim, never a group member's message", .serialized)
struct SpoofedMessageTests {
    /// An out-of-dialog MESSAGE from 127.0.0.2 whose From is `from`.
    static func message(_ number: Int, from: String, to port: UInt16, peer: CallLimitTests.Peer, type: String, body: String) -> String {
        """
        MESSAGE sip:alice@127.0.0.1:\(port) SIP/2.0\r
        Via: SIP/2.0/UDP \(peer.host):\(peer.port);branch=z9hG4bK-spoof-\(number)\r
        Max-Forwards: 70\r
        From: <\(from)>;tag=spoof\(number)\r
        To: <sip:alice@127.0.0.1:\(port)>\r
        Call-ID: spoof-\(number)@spoofer\r
        CSeq: 1 MESSAGE\r
        Content-Type: \(type)\r
        Content-Length: \(body.utf8.count)\r
        \r
        \(body)
        """
    }

    @Test("a stranger claiming to be Bob: group JSON gets 415, text is shown as unverified with the claimed From, and Bob's session never carries it")
    func claimingToBeAMember() throws {
        let alice = try Parleyd(["--user", "alice", "--display-name", "Alice", "--media", "off"])
        let bob = try Parleyd(["--user", "bob", "--display-name", "Bob", "--media", "off", "--auto-answer", "0"])
        let host = try GroupControl(alice), member = try GroupControl(bob)
        let bobURI = "sip:bob@127.0.0.1:\(bob.port)"
        let toBob = try host.call(bobURI)
        try host.waitForJoined([toBob])
        let session = try host.result(.groupActivate(GroupActivateParams(conversation: toBob, identifier: "com.example.chat", title: "Chat")))
        let id = try #require(session["session"] as? String)
        _ = try member.nextEvent("groupSessionChanged") { ($0["change"] as? String) == "offered" }
        _ = try member.result(.groupJoin(GroupSessionParams(session: id)))
        _ = try host.nextEvent("groupParticipantsChanged") { (($0["active"] as? [Any])?.count ?? 0) == 2 }

        let spoofer = try CallLimitTests.Peer(host: "127.0.0.2")
        let forged = #"{"v":1,"kind":"message","session":"\#(id)","type":"text","data":"forged"}"#
        spoofer.send(Self.message(1, from: bobURI, to: alice.port, peer: spoofer, type: "application/vnd.parley.group+json", body: forged), to: alice.port)
        let refused = spoofer.receiveAll()
        #expect(refused.first?.hasPrefix("SIP/2.0 415") == true, "\(refused.map { $0.prefix(40) })")
        spoofer.send(Self.message(2, from: bobURI, to: alice.port, peer: spoofer, type: "text/plain", body: "send the keys"), to: alice.port)
        let taken = spoofer.receiveAll()
        #expect(taken.first?.hasPrefix("SIP/2.0 200") == true, "\(taken.map { $0.prefix(40) })")
        let text = try host.nextEvent("textMessage") { $0["text"] as? String == "send the keys" }
        #expect(text["verified"] as? Bool == false && text["from"] as? String == bobURI, "\(text)")
        #expect(text["conversation"] as? String == toBob, "\(text)")
        // Someone no call is with gets 403.
        spoofer.send(Self.message(3, from: "sip:mallory@192.0.2.1", to: alice.port, peer: spoofer, type: "text/plain", body: "hi"), to: alice.port)
        #expect(spoofer.receiveAll().first?.hasPrefix("SIP/2.0 403") == true)

        // Bob's own text, in his dialog, is his: the host's session hears it from Bob, and the forged text never came.
        let fromBob = try member.result(.groupSend(GroupSendParams(session: id, type: "text", data: .string("the real bob"))))
        #expect((fromBob["deliveredTo"] as? [String])?.count == 1, "\(fromBob)")
        let first = try host.nextGroupMessage(timeout: 10) { _ in true }
        #expect(GroupControl.text(of: first) == "the real bob", "\(first)")
        #expect(((first["source"] as? [String: Any])?["name"] as? String)?.lowercased().contains("bob") == true, "\(first)")
    }
}
