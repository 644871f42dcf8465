import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import SIPTransport
import Testing

/// The address we give a peer: the listener's own, a configured public one, or (on every interface) the route's.
@Suite("Our address in Via, Contact and SDP")
struct AdvertisedAddressTests {
    @Test("a public address (a host behind a static NAT) is what the answer's Contact, o= and c= name")
    func publicAddress() throws {
        let harness = try EngineHarness { $0.publicAddress = "203.0.113.7" }
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        _ = harness.sent()
        try harness.manager.perform([.join(conversationUUID: try #require(harness.conversation?.uuid))])
        let ok = try #require(harness.sent().first)
        #expect(ok.headers["Contact"] == "<sip:parley@203.0.113.7:5070>", "\(ok.headers["Contact"] ?? "")")
        let lines = ok.bodyText.split(whereSeparator: \.isNewline)
        #expect(lines.contains { $0.hasPrefix("o=- ") && $0.hasSuffix(" IN IP4 203.0.113.7") }, "\(ok.bodyText)")
        #expect(lines.contains { $0 == "c=IN IP4 203.0.113.7" }, "\(ok.bodyText)")
        #expect(!ok.bodyText.contains("127.0.0.1"))
    }

    @Test("a call placed from an IPv6 listener writes its address once bracketed in Via, From and Contact")
    func ipv6Brackets() throws {
        let harness = try EngineHarness(local: ListenAddress(kind: .udp, host: "::1", port: 5070))
        try harness.manager.perform([.start(conversationUUID: UUID(), handles: [
            Handle(kind: .generic, value: "sip:bob@[::1]:5062", displayName: "Bob"),
        ])])
        let invite = try #require(harness.sent().first?.request)
        #expect(invite.headers["Via"]?.hasPrefix("SIP/2.0/UDP [::1]:5070;") == true, "\(invite.headers["Via"] ?? "")")
        #expect(invite.headers["Contact"] == "<sip:parley@[::1]:5070>", "\(invite.headers["Contact"] ?? "")")
        #expect(invite.headers["From"]?.contains("sip:parley@[::1]:5070>") == true, "\(invite.headers["From"] ?? "")")
        #expect(!String(decoding: invite.serialize(), as: UTF8.self).contains("[["))
    }

    @Test("our From without an account is dialable: it names the port we listen on, left out when it is 5060")
    func fromPort() throws {
        for (port, from) in [(UInt16(5070), "<sip:parley@127.0.0.1:5070>;tag="), (5060, "<sip:parley@127.0.0.1>;tag=")] {
            let harness = try EngineHarness(local: ListenAddress(kind: .udp, host: "127.0.0.1", port: port))
            try harness.manager.perform([.start(conversationUUID: UUID(), handles: [
                Handle(kind: .generic, value: "sip:bob@127.0.0.1:5062", displayName: "Bob"),
            ])])
            let invite = try #require(harness.sent().first?.request)
            #expect(invite.headers["From"]?.contains(from) == true, "\(invite.headers["From"] ?? "")")
        }
    }
}
