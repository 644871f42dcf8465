import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import SIPSignaling
import SIPTransport
import Testing

/// Several accounts in one engine: each registers on its own, the keep-alives of a shared flow go once, a Start goes
/// out through the account it names, and an incoming call carries the account it was called at.
@Suite("Engine: several accounts")
struct AccountTests {
    static let registrar = SIPURI("sip:127.0.0.1:5062")!
    static let work = Account(
        name: "work", registration: RegistrationConfiguration(
            registrar: registrar, addressOfRecord: SIPURI("sip:alice@work.test")!, expires: 600,
            keepAlive: KeepAlivePolicy(interval: .seconds(25))),
        displayName: "Alice at work")
    static let home = Account(
        name: "home", registration: RegistrationConfiguration(
            registrar: registrar, addressOfRecord: SIPURI("sip:alice@home.test")!, expires: 600,
            keepAlive: KeepAlivePolicy(interval: .seconds(25))),
        outboundProxy: SIPURI("sip:127.0.0.1:5064")!)

    static let spare = Account(
        registration: RegistrationConfiguration(
            registrar: registrar, addressOfRecord: SIPURI("sip:bob@work.test")!, expires: 600,
            keepAlive: KeepAlivePolicy(interval: .seconds(25))))

    /// An engine with the three accounts, all registered (home through its proxy); the REGISTERs they sent.
    static func registered() throws -> (EngineHarness, [SIPRequest]) {
        let harness = try EngineHarness { $0.accounts = [work, home, spare] }
        harness.engine.start()
        var registers = [try #require(harness.sent().first?.request)]
        for _ in 1...2 {
            #expect(harness.sent().isEmpty, "the next account's first REGISTER waits its turn")
            harness.environment.advance(by: .milliseconds(40))
            registers.append(try #require(harness.sent().first { $0.request?.method == .register }?.request))
        }
        for register in registers {
            harness.deliver(NATRegistrationTests.ok(register, seenAt: nil))
        }
        _ = harness.sent()
        return (harness, registers)
    }

    @Test("each account registers on its own, its Contact carrying its own line; one keep-alive per flow")
    func registersEach() throws {
        let (harness, registers) = try Self.registered()
        #expect(registers.map { $0.headers.to?.uri.description } == ["sip:alice@work.test", "sip:alice@home.test", "sip:bob@work.test"])
        #expect(Set(registers.map { $0.headers.callID }).count == 3)
        let lines = registers.map { $0.headers.contacts.first?.uri.parameters["line"] }
        #expect(lines == [Self.work.line, Self.home.line, Self.spare.line] && Set(lines).count == 3, "\(lines)")
        #expect(harness.engine.registrations.map(\.account.name) == ["work", "home", "sip:bob@work.test"])
        for registration in harness.engine.registrations {
            guard case .registered = registration.state else {
                Issue.record("\(registration.account.name): \(registration.state)")
                continue
            }
        }
        harness.environment.advance(by: .seconds(25))
        // work and spare share the registrar's flow: one ping there; home's goes through its proxy.
        let pinged = harness.environment.keepAlivesSent.map(\.address.port).sorted()
        #expect(pinged == [5062, 5064], "one ping per flow: \(pinged)")
    }

    @Test("a Start goes out through the account named (its From, its proxy), else the first")
    func outgoing() throws {
        let (harness, _) = try Self.registered()
        let viaDefault = ConversationAction.start(handles: [Handle(kind: .generic, value: "sip:bob@127.0.0.1:5062")])
        try harness.manager.perform([viaDefault])
        let first = try #require(harness.sent().first { $0.request?.method == .invite }?.request)
        #expect(first.headers.from?.uri.description == "sip:alice@work.test")
        #expect(first.headers.from?.displayName == "Alice at work")
        #expect(first.headers["Route"] == nil)
        #expect(harness.manager.conversation(viaDefault.conversationUUID)?.account == "sip:alice@work.test")

        let viaHome = ConversationAction.start(handles: [Handle(kind: .generic, value: "sip:bob@127.0.0.1:5062")])
        #expect(harness.engine.placeThrough(account: "home", conversation: viaHome.conversationUUID))
        try harness.manager.perform([viaHome])
        let sent = harness.environment.takeSent().first { $0.message.request?.method == .invite }
        let second = try #require(sent?.message.request)
        #expect(second.headers.from?.uri.description == "sip:alice@home.test")
        #expect(second.headers["Route"] == "<sip:127.0.0.1:5064;lr>", "home's own outbound proxy")
        #expect(sent?.destination.address.port == 5064)
        #expect(harness.manager.conversation(viaHome.conversationUUID)?.account == "sip:alice@home.test")
        #expect(!harness.engine.placeThrough(account: "nosuch", conversation: UUID()))
        #expect(harness.engine.placeThrough(account: "sip:alice@HOME.test", conversation: UUID()), "by address of record")
    }

    @Test("an incoming call carries the account called: by the line its binding got, by its To, by the registrar, or none")
    func incoming() throws {
        let (harness, _) = try Self.registered()
        let cases: [(uri: String, to: String, source: SIPPeerAddress, account: String?)] = [
            ("sip:parley@127.0.0.1:5070;line=\(Self.home.line)", "sip:someone-else@example.test", harness.peer, "sip:alice@home.test"),
            ("sip:parley@127.0.0.1:5070", "sip:alice@work.test", harness.peer, "sip:alice@work.test"),
            ("sip:parley@127.0.0.1:5070", "sip:forwarded@example.test", harness.peer, "sip:alice@work.test"),
            ("sip:parley@127.0.0.1:5070", "sip:parley@127.0.0.1:5070", SIPPeerAddress(host: "127.0.0.9", port: 5062), nil),
        ]
        for (index, item) in cases.enumerated() {
            let invite = PeerMessages.invite(callID: "call-\(index)@peer", branch: "z9hG4bK-in-\(index)")
                .replacingOccurrences(of: "INVITE sip:parley@127.0.0.1:5070 SIP/2.0", with: "INVITE \(item.uri) SIP/2.0")
                .replacingOccurrences(of: "To: <sip:parley@127.0.0.1:5070>", with: "To: <\(item.to)>")
            harness.deliver(invite, body: PeerMessages.offer, from: item.source)
            let conversation = harness.manager.conversations.first {
                harness.engine.callID(of: $0.uuid) == "call-\(index)@peer"
            }
            #expect(conversation != nil, "call \(index)")
            #expect(conversation?.account == item.account, "call \(index): \(conversation?.account ?? "none")")
        }
    }
}
