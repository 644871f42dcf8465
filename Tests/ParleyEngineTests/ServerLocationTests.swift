import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import SIPTransport
import Testing

/// A locator whose answers the test gives, handed back on the next `deliver()` (never inside `locate`, as the
/// real one).
final class ScriptedLocator: SIPServerLocator {
    var answers: [String: Result<[SIPDestination], SIPLocateError>] = [:]
    private(set) var asked: [SIPServerRequest] = []
    private var pending: [() -> Void] = []

    func locate(
        _ request: SIPServerRequest, transports: [SIPTransportKind],
        completion: @escaping (Result<[SIPDestination], SIPLocateError>) -> Void
    ) {
        asked.append(request)
        let answer = answers[request.host] ?? .failure(SIPLocateError("no such name: \(request.host)"))
        pending.append { completion(answer) }
    }

    /// Hands the answers asked for so far to their askers.
    func deliver() {
        let waiting = pending
        pending = []
        waiting.forEach { $0() }
    }
}

@Suite("Engine: where out-of-dialog requests go (RFC 3263, the outbound proxy, the account's domain)")
struct ServerLocationTests {
    static func udp(_ port: UInt16) -> SIPDestination {
        SIPDestination(kind: .udp, address: SIPPeerAddress(host: "127.0.0.1", port: port))
    }

    @Test("a host name is located before the INVITE goes; nothing answering the first target moves it to the next")
    func failover() throws {
        let locator = ScriptedLocator()
        locator.answers["example.test"] = .success([Self.udp(6001), Self.udp(6002)])
        let harness = try EngineHarness(locator: locator)
        try harness.manager.perform([
            .start(handles: [Handle(kind: .generic, value: "sip:bob@example.test", displayName: "Bob")]),
        ])
        #expect(harness.environment.takeSent().isEmpty, "nothing goes before the name is located")
        locator.deliver()
        let first = try #require(harness.environment.takeSent().first)
        #expect(first.destination.address.port == 6001 && first.destination.serverName == "example.test")
        harness.engine.transportFailed(towards: first.destination, reason: "nobody is listening at udp 127.0.0.1:6001 (ICMP port unreachable)")
        let second = try #require(harness.environment.takeSent().first)
        #expect(second.destination.address.port == 6002)
        let (firstInvite, secondInvite) = (try #require(first.message.request), try #require(second.message.request))
        #expect(secondInvite.method == .invite && secondInvite.headers.callID == firstInvite.headers.callID)
        #expect(secondInvite.headers.topVia?.branch != firstInvite.headers.topVia?.branch, "a new transaction")
        #expect(harness.conversation?.state != .left)
        // The second target fails too: nothing is left, the call fails and says why.
        harness.engine.transportFailed(towards: second.destination, reason: "nobody is listening at udp 127.0.0.1:6002 (ICMP port unreachable)")
        #expect(harness.transitions.all.last?.failure == "nobody is listening at udp 127.0.0.1:6002 (ICMP port unreachable)")
    }

    @Test("a name that cannot be located fails the call with the locator's words; an End while it is located ends it")
    func unlocated() throws {
        let locator = ScriptedLocator()
        let harness = try EngineHarness(locator: locator)
        try harness.manager.perform([.start(handles: [Handle(kind: .generic, value: "sip:bob@nosuch.test", displayName: "Bob")])])
        locator.deliver()
        #expect(harness.transitions.all.last?.failure == "no such name: nosuch.test")
        try harness.manager.perform([.start(handles: [Handle(kind: .generic, value: "sip:bob@nosuch.test", displayName: "Bob")])])
        try harness.manager.perform([.end(conversationUUID: try #require(harness.manager.conversations.last?.uuid))])
        locator.deliver()
        #expect(harness.environment.takeSent().isEmpty, "no INVITE for a call that ended while it was located")
    }

    @Test("an outbound proxy: the INVITE goes to it with a pre-loaded Route, the callee's domain is never located")
    func outboundProxy() throws {
        let locator = ScriptedLocator()
        let harness = try EngineHarness(locator: locator) { $0.outboundProxy = SIPURI("sip:127.0.0.1:6100") }
        try harness.manager.perform([
            .start(handles: [Handle(kind: .generic, value: "sip:bob@example.test", displayName: "Bob")]),
        ])
        let sent = try #require(harness.environment.takeSent().first)
        #expect(sent.destination.address.port == 6100)
        let invite = try #require(sent.message.request)
        #expect(invite.uri.description == "sip:bob@example.test")
        #expect(invite.headers["Route"] == "<sip:127.0.0.1:6100;lr>")
        #expect(locator.asked.isEmpty)
    }

    @Test("through an account, a bare name is a user at its domain; without one, it stays a host")
    func bareNames() throws {
        var configuration = EngineConfiguration(listenAddresses: [.init(kind: .udp, host: "127.0.0.1", port: 5070)])
        #expect(try DialTarget.handle(for: "bob", configuration: configuration).get().value == "sip:bob")
        configuration.registration = RegistrationConfiguration(
            registrar: SIPURI("sip:example.test")!, addressOfRecord: SIPURI("sip:alice@example.test")!)
        #expect(try DialTarget.handle(for: "bob", configuration: configuration).get().value == "sip:bob@example.test")
        #expect(try DialTarget.handle(for: "alice.smith", configuration: configuration).get().value == "sip:alice.smith@example.test")
        #expect(try DialTarget.handle(for: "sip:bob", configuration: configuration).get().value == "sip:bob", "a scheme names a host")
        #expect(try DialTarget.handle(for: "+1 415 555 0100", configuration: configuration).get().kind == .phoneNumber)
        #expect(try DialTarget.handle(for: "carol@other.test", configuration: configuration).get().value == "sip:carol@other.test")
    }
}

extension ServerLocationTests {
    @Test("a REGISTER nothing answered is retried at the registrar's next target, which stays first after it is located again")
    func registrationFailover() throws {
        let locator = ScriptedLocator()
        locator.answers["example.test"] = .success([Self.udp(6001), Self.udp(6002)])
        let harness = try EngineHarness(locator: locator) {
            $0.registration = RegistrationConfiguration(
                registrar: SIPURI("sip:example.test")!, addressOfRecord: SIPURI("sip:alice@example.test")!)
        }
        harness.engine.start()
        locator.deliver()
        let first = try #require(harness.environment.takeSent().first { $0.message.request?.method == .register })
        #expect(first.destination.address.port == 6001)
        harness.engine.transportFailed(towards: first.destination, reason: "nobody is listening (ICMP port unreachable)")
        // The retry comes after the machine's back-off (10 s after a first failure); it is located again (the same
        // answer) and goes to 6002.
        harness.environment.advance(by: .seconds(11))
        locator.deliver()
        let retried = try #require(harness.environment.takeSent().last { $0.message.request?.method == .register })
        #expect(retried.destination.address.port == 6002, "the failed target went to the back")
    }
}
