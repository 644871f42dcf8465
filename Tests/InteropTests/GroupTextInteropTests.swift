import ControlProtocol
import Foundation
import GroupActivities
import Testing

/// Plain softphones in a group session: they read and write text only (SIP MESSAGE, text/plain), which parleyd
/// turns into `text` messages from their participant.
@Suite("Group sessions with plain softphones: baresip and linphonec exchange text", .serialized)
struct GroupTextInteropTests {
    @Test("baresip in a merged call with another parleyd: text both ways (its own goes out of dialog), other types unsupported for it")
    func baresip() throws {
        let alice = try Parleyd(["--user", "parley", "--display-name", "Alice"])
        let bob = try Parleyd(["--user", "bob", "--display-name", "Bob", "--auto-answer", "0"])
        let baresip = try Baresip(contacts: ["\"Parley\" <sip:parley@127.0.0.1:\(alice.port)>"])
        let host = try GroupControl(alice), member = try GroupControl(bob)
        let toBaresip = try host.call(baresip.uri(.udp))
        let toBob = try host.call("sip:bob@127.0.0.1:\(bob.port)")
        try host.waitForJoined([toBaresip, toBob])
        _ = try host.result(.merge(MergeParams(conversation: toBob, with: toBaresip)))
        let session = try host.result(.groupActivate(GroupActivateParams(conversation: toBob, identifier: "com.example.chat", title: "Chat")))
        let id = try #require(session["session"] as? String)
        _ = try member.nextEvent("groupSessionChanged") { ($0["change"] as? String) == "offered" }
        _ = try member.result(.groupJoin(GroupSessionParams(session: id)))
        _ = try host.nextEvent("groupParticipantsChanged") { (($0["active"] as? [Any])?.count ?? 0) == 3 }

        let hello = try host.result(.groupSend(GroupSendParams(session: id, type: "text", data: .string("hello group"))))
        #expect((hello["deliveredTo"] as? [String])?.count == 2, "\(hello)")
        try baresip.waitFor("the text in its SIP trace") { $0.contains("[Alice] hello group") }
        let item = try member.result(.groupSend(GroupSendParams(session: id, type: "app.item", data: .object(["n": .integer(1)]))))
        #expect((item["unsupported"] as? [String])?.count == 1 && (item["deliveredTo"] as? [String])?.count == 1, "\(item)")
        let relayed = try member.result(.groupSend(GroupSendParams(session: id, type: "text", data: .string("from bob"))))
        #expect((relayed["deliveredTo"] as? [String])?.count == 2, "\(relayed)")
        try baresip.waitFor("bob's text, relayed, under the name Bob's parleyd gave") { $0.contains("[Bob] from bob") }

        // baresip can only send chat out of dialog, from its address of record, to its current contact: nothing
        // vouches for its sender, so the host's frontend hears it as unverified text, never as a member's message.
        try baresip.send("/message hi from baresip")
        let text = try host.nextEvent("textMessage", timeout: 10) { $0["text"] as? String == "hi from baresip" }
        #expect(text["conversation"] as? String == toBaresip && text["verified"] as? Bool == false, "\(text)")
        #expect((text["from"] as? String)?.hasPrefix("sip:") == true, "\(text)")
        _ = try host.result(.groupSend(GroupSendParams(session: id, type: "text", data: .string("after baresip"))))
        let next = try member.nextGroupMessage(timeout: 10) { ["hi from baresip", "after baresip"].contains(GroupControl.text(of: $0)) }
        #expect(GroupControl.text(of: next) == "after baresip", "the member never got baresip's text as a group message: \(next)")
    }

    /// linphonec 5.1 answers chat to our From without its port, and finds the call to send it in only when the call's
    /// remote address has none either: parleyd on the default port, whose From leaves it out. (On another port our
    /// From names it, and linphonec sends its chat out of dialog to port 5060.)
    @Test("linphonec (chat in the call's dialog): text both ways with parleyd's session")
    func linphonec() throws {
        let peers = try LinphoneAndParleyd(sipOptions: ["chat_use_call_dialogs=1"], defaultPort: true) { port in
            ["--call", "sip:bob@127.0.0.1:\(port)", "--display-name", "Alice"]
        }
        try peers.process.waitForLine(timeout: .seconds(20), "the call joined") { $0.contains("→ joined") }
        let host = try GroupControl(dataDirectory: peers.parleydData)
        let listed = try host.result(.list(ListParams()))
        let call = try #require(((listed["conversations"] as? [[String: Any]])?.first)?["uuid"] as? String)
        let session = try host.result(.groupActivate(GroupActivateParams(conversation: call, identifier: "com.example.chat", title: "Chat")))
        let id = try #require(session["session"] as? String)
        // linphonec refuses the JSON roster (415): from then on it is a text member, active at once.
        _ = try host.nextEvent("groupParticipantsChanged") { (($0["added"] as? [Any])?.count ?? 0) == 1 }
        let sent = try host.result(.groupSend(GroupSendParams(session: id, type: "text", data: .string("hello bob"))))
        #expect((sent["deliveredTo"] as? [String])?.count == 1, "\(sent)")
        try peers.waitForLinphone("[Alice] hello bob")
        peers.send("chat sip:parley@127.0.0.1 hi alice")
        _ = try host.nextGroupMessage(timeout: 10) { GroupControl.text(of: $0) == "hi alice" }
        peers.send("terminate")
    }
}

extension GroupControl {
    /// The text of a `text` group message (nil for another type).
    static func text(of message: [String: Any]) -> String? {
        guard message["type"] as? String == "text" else { return nil }
        let data = message["data"]
        return (data as? String) ?? ((data as? [String: Any])?["text"] as? String)
    }
}
