import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import SIPTransport
import Testing

/// Behind a NAT: the registrar's Via `received`/`rport` (RFC 3581) become our address toward it, and keep-alives keep
/// the NAT's mapping open. The registrar is the harness's peer (127.0.0.1:5062); time is the manual timeline's.
@Suite("Engine: registered behind a NAT (received/rport, keep-alives)")
struct NATRegistrationTests {
    static let registrar = SIPURI("sip:127.0.0.1:5062")!

    static func harness(
        keepAlive: KeepAlivePolicy? = nil, configure: (inout EngineConfiguration) -> Void = { _ in }
    ) throws -> EngineHarness {
        let harness = try EngineHarness {
            $0.registration = RegistrationConfiguration(
                registrar: registrar, addressOfRecord: SIPURI("sip:alice@parley.test")!, expires: 600, keepAlive: keepAlive)
            configure(&$0)
        }
        harness.engine.start()
        return harness
    }

    /// The registrar's 200 to `request`, its top Via stamped as a registrar behind which the REGISTER came from
    /// `seen` (nil: stamped with what the Via says).
    static func ok(_ request: SIPRequest, seenAt seen: SIPPeerAddress?) -> String {
        var text = PeerMessages.response(200, "OK", to: request, toTag: "reg-tag")
        if let seen, let via = request.headers["Via"] {
            text = text.replacingOccurrences(
                of: "Via: \(via)", with: "Via: \(via.replacingOccurrences(of: ";rport", with: ";rport=\(seen.port);received=\(seen.host)"))")
        }
        return text.replacingOccurrences(of: "Contact: <sip:bob@127.0.0.1:5062>", with: "Contact: \(request.headers["Contact"] ?? "")")
    }

    static let nat = SIPPeerAddress(host: "203.0.113.2", port: 40_001)

    /// A harness registered through a NAT that maps us to ``nat``: the first REGISTER, its 200, the re-REGISTER.
    static func registeredBehindNAT(keepAlive: KeepAlivePolicy? = nil) throws -> (EngineHarness, SIPRequest) {
        let harness = try harness(keepAlive: keepAlive)
        let first = try #require(harness.sent().first?.request)
        harness.deliver(ok(first, seenAt: nat))
        let second = try #require(harness.sent().first?.request)
        harness.deliver(ok(second, seenAt: nat))
        return (harness, second)
    }

    @Test("every REGISTER asks for rport (RFC 3581)")
    func rport() throws {
        let harness = try Self.harness()
        let register = try #require(harness.sent().first?.request)
        #expect(register.headers.topVia?.requestsRPort == true, "\(register.headers["Via"] ?? "")")
        #expect(register.headers.topVia?.host == "127.0.0.1", "Via keeps our own address")
    }

    @Test("a 2xx whose Via says a NAT mapped us: REGISTER again at once with the mapping, removing the old binding")
    func reRegisterWithMapping() throws {
        let harness = try Self.harness()
        let first = try #require(harness.sent().first?.request)
        #expect(first.headers.contacts.map(\.uri.description) == ["sip:parley@127.0.0.1:5070"])
        harness.deliver(Self.ok(first, seenAt: Self.nat))
        let second = try #require(harness.sent().first?.request)
        #expect(second.method == .register)
        #expect(second.headers.callID == first.headers.callID)
        let contacts = second.headers.contacts
        #expect(contacts.map(\.uri.description) == ["sip:parley@203.0.113.2:40001", "sip:parley@127.0.0.1:5070"])
        #expect(contacts.map { $0.parameters["expires"] } == ["600", "0"], "the old binding is removed in the same REGISTER")
        #expect(second.headers.topVia?.host == "127.0.0.1")
        #expect(harness.engine.registrationState == .registering)

        harness.deliver(Self.ok(second, seenAt: Self.nat))
        #expect(harness.sent().isEmpty, "the mapping now matches our Contact: nothing more")
        guard case .registered(_, let mapped) = harness.engine.registrationState else {
            Issue.record("not registered: \(harness.engine.registrationState)")
            return
        }
        #expect(mapped == "203.0.113.2:40001")

        // The refresh keeps the mapped Contact, and no longer carries the removed one.
        harness.environment.advance(by: .seconds(600))
        let refresh = try #require(harness.sent().first?.request)
        #expect(refresh.headers.contacts.map(\.uri.description) == ["sip:parley@203.0.113.2:40001"])
    }

    @Test("a 2xx that saw us where our Contact says: registered, nothing learned")
    func noNAT() throws {
        let harness = try Self.harness()
        let first = try #require(harness.sent().first?.request)
        harness.deliver(Self.ok(first, seenAt: SIPPeerAddress(host: "127.0.0.1", port: 5070)))
        #expect(harness.sent().isEmpty)
        guard case .registered(_, let mapped) = harness.engine.registrationState else {
            Issue.record("not registered: \(harness.engine.registrationState)")
            return
        }
        #expect(mapped == nil)
    }

    @Test("--public-address wins: a NAT's mapping is not learned")
    func publicAddressWins() throws {
        let harness = try Self.harness { $0.publicAddress = "198.51.100.7" }
        let first = try #require(harness.sent().first?.request)
        #expect(first.headers.contacts.first?.uri.host == "198.51.100.7")
        harness.deliver(Self.ok(first, seenAt: Self.nat))
        #expect(harness.sent().isEmpty)
        guard case .registered(_, nil) = harness.engine.registrationState else {
            Issue.record("expected registered without a mapping: \(harness.engine.registrationState)")
            return
        }
    }

    @Test("the NAT's mapping changes (a refresh seen from another port): registered again under the new one")
    func mappingChanges() throws {
        let (harness, _) = try Self.registeredBehindNAT()
        harness.environment.advance(by: .seconds(570))  // the refresh goes 32 s before the 600 s expire
        let refresh = try #require(harness.sent().first?.request)
        let moved = SIPPeerAddress(host: "203.0.113.2", port: 40_777)
        harness.deliver(Self.ok(refresh, seenAt: moved))
        let again = try #require(harness.sent().first?.request)
        #expect(again.headers.contacts.map(\.uri.description) == ["sip:parley@203.0.113.2:40777", "sip:parley@203.0.113.2:40001"])
        #expect(again.headers.contacts.map { $0.parameters["expires"] } == ["600", "0"])
        harness.deliver(Self.ok(again, seenAt: moved))
        #expect(harness.sent().isEmpty)
        #expect(harness.engine.registrationState.description.contains("203.0.113.2:40777"))
    }

    @Test("through the registrar, our INVITE's Contact and SDP name the mapping; Via keeps our address with rport")
    func outgoingThroughRegistrar() throws {
        let (harness, _) = try Self.registeredBehindNAT()
        try harness.manager.perform([.start(conversationUUID: UUID(), handles: [
            Handle(kind: .generic, value: "sip:bob@127.0.0.1:5062", displayName: "Bob"),
        ])])
        let invite = try #require(harness.sent().first?.request)
        #expect(invite.headers["Contact"] == "<sip:parley@203.0.113.2:40001>", "\(invite.headers["Contact"] ?? "")")
        #expect(invite.headers.topVia?.host == "127.0.0.1")
        #expect(invite.headers.topVia?.requestsRPort == true)
        let body = String(decoding: invite.body, as: UTF8.self)
        #expect(body.contains("c=IN IP4 203.0.113.2"), "\(body)")
        #expect(body.contains(" IN IP4 203.0.113.2\r\n"), "o= too: \(body)")
    }

    @Test("a call relayed by the registrar is answered with the mapping in Contact and SDP; one from elsewhere is not")
    func incomingThroughRegistrar() throws {
        let (harness, _) = try Self.registeredBehindNAT()
        // As a proxy relays it: from the registrar's address, the caller's Contact and SDP elsewhere.
        let relayed = PeerMessages.invite().replacingOccurrences(
            of: "Contact: <sip:alice@127.0.0.1:5062>", with: "Contact: <sip:alice@127.0.0.20:5080>")
        harness.deliver(relayed, body: PeerMessages.offer.replacingOccurrences(of: "IN IP4 127.0.0.1", with: "IN IP4 127.0.0.20"))
        _ = harness.sent()
        try harness.manager.perform([.join(conversationUUID: try #require(harness.conversation?.uuid))])
        let ok = try #require(harness.sent().first)
        #expect(ok.headers["Contact"] == "<sip:parley@203.0.113.2:40001>", "\(ok.headers["Contact"] ?? "")")
        #expect(ok.bodyText.contains("c=IN IP4 203.0.113.2"), "\(ok.bodyText)")

        let other = SIPPeerAddress(host: "127.0.0.9", port: 5062)
        let direct = PeerMessages.invite(callID: "call-2@peer", branch: "z9hG4bK-in-2")
            .replacingOccurrences(of: "127.0.0.1:5062", with: "127.0.0.9:5062")
        harness.deliver(direct, body: PeerMessages.offer, from: other)
        _ = harness.sent()
        let second = try #require(harness.manager.conversations.first { $0.state == .ringing }?.uuid)
        try harness.manager.perform([.join(conversationUUID: second)])
        let answer = try #require(harness.sent().first { $0.statusCode == 200 && $0.headers.callID == "call-2@peer" })
        #expect(answer.headers["Contact"] == "<sip:parley@127.0.0.1:5070>", "\(answer.headers["Contact"] ?? "")")
        #expect(!answer.bodyText.contains("203.0.113.2"), "\(answer.bodyText)")
    }

    @Test("CRLF keep-alives to the registrar every interval while registered; none before, none once it fails")
    func crlfKeepAlives() throws {
        let harness = try Self.harness(keepAlive: KeepAlivePolicy(interval: .seconds(25)))
        let first = try #require(harness.sent().first?.request)
        harness.environment.advance(by: .seconds(1))
        #expect(harness.environment.keepAlivesSent.isEmpty, "not registered yet")
        harness.deliver(Self.ok(first, seenAt: nil))
        _ = harness.sent()  // the REGISTER's retransmissions
        harness.environment.advance(by: .seconds(24))
        #expect(harness.environment.keepAlivesSent.isEmpty)
        harness.environment.advance(by: .seconds(1))
        let registrar = SIPDestination(kind: .udp, address: SIPPeerAddress(host: "127.0.0.1", port: 5062))
        #expect(harness.environment.keepAlivesSent == [registrar])
        harness.environment.advance(by: .seconds(50))
        #expect(harness.environment.keepAlivesSent.count == 3)
        #expect(harness.sent().isEmpty, "keep-alives are not SIP messages")
        // The refresh (at 568 s) is refused: no binding, no keep-alives.
        harness.environment.advance(by: .seconds(500))
        let refresh = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(403, "Forbidden", to: refresh))
        let count = harness.environment.keepAlivesSent.count
        #expect(count == 23, "every 25 s until the refusal: \(count)")
        harness.environment.advance(by: .seconds(100))
        #expect(harness.environment.keepAlivesSent.count == count, "none once the registration failed")
    }

    @Test("OPTIONS keep-alives: an answer keeps them going; silence registers again")
    func optionsKeepAlives() throws {
        let harness = try Self.harness(keepAlive: KeepAlivePolicy(interval: .seconds(20), method: .options))
        let first = try #require(harness.sent().first?.request)
        harness.deliver(Self.ok(first, seenAt: nil))
        harness.environment.advance(by: .seconds(20))
        let options = try #require(harness.sent().first?.request)
        #expect(options.method == .options)
        #expect(options.uri.description == "sip:127.0.0.1:5062")
        #expect(options.headers.topVia?.requestsRPort == true)
        harness.deliver(PeerMessages.response(200, "OK", to: options))
        harness.environment.advance(by: .seconds(20))
        let unanswered = try #require(harness.sent().first?.request)
        #expect(unanswered.method == .options)
        // Timer F (32 s) without an answer: REGISTER again (retransmissions of the OPTIONS go meanwhile).
        harness.environment.advance(by: .seconds(32))
        let sent = harness.sent().compactMap(\.request)
        #expect(sent.contains { $0.method == .register }, "\(sent.map(\.method))")
        #expect(sent.filter { $0.method == .options && $0.headers.callID != unanswered.headers.callID }.isEmpty,
                "no second OPTIONS while the first is unanswered")
    }

    @Test("no keep-alives when switched off")
    func keepAlivesOff() throws {
        let harness = try Self.harness(keepAlive: nil)
        let first = try #require(harness.sent().first?.request)
        harness.deliver(Self.ok(first, seenAt: nil))
        harness.environment.advance(by: .seconds(300))
        #expect(harness.environment.keepAlivesSent.isEmpty)
        #expect(harness.sent().isEmpty)
    }
}

/// The keep-alive machine alone: inputs in, effects out.
@Suite("Keep-alive machine")
struct KeepAliveMachineTests {
    static let flow = SIPDestination(kind: .tcp, address: SIPPeerAddress(host: "192.0.2.1", port: 5060))

    @Test("start, a ping each interval, a refresh does not restart it, stop")
    func pings() {
        var machine = KeepAliveMachine(policy: KeepAlivePolicy(interval: .seconds(10)))
        #expect(machine.timerFired().isEmpty, "stopped: nothing")
        let started = machine.start(toward: Self.flow)
        #expect(started.prefix(2) == [.cancelTimer, .startTimer(after: .seconds(10))])
        #expect(machine.start(toward: Self.flow).isEmpty)
        #expect(machine.timerFired() == [.sendPing(to: Self.flow), .startTimer(after: .seconds(10))])
        #expect(machine.sent == 1)
        let moved = SIPDestination(kind: .tcp, address: SIPPeerAddress(host: "192.0.2.2", port: 5060))
        #expect(machine.start(toward: moved).prefix(2) == [.cancelTimer, .startTimer(after: .seconds(10))])
        #expect(machine.stop() == [.cancelTimer])
        #expect(machine.stop().isEmpty)
        #expect(machine.timerFired().isEmpty)
    }

    @Test("OPTIONS: one at a time; a failure asks for a new registration; a late answer after stop changes nothing")
    func options() {
        var machine = KeepAliveMachine(policy: KeepAlivePolicy(interval: .seconds(10), method: .options))
        _ = machine.start(toward: Self.flow)
        #expect(machine.timerFired() == [.sendOptions(to: Self.flow), .startTimer(after: .seconds(10))])
        #expect(machine.timerFired() == [.startTimer(after: .seconds(10))], "the first is still out")
        let failed = machine.optionsFailed("timeout")
        #expect(failed.contains(.flowFailed(reason: "keep-alive OPTIONS: timeout")))
        #expect(machine.state == .waiting(flow: Self.flow))
        #expect(machine.timerFired().first == .sendOptions(to: Self.flow))
        #expect(machine.optionsAnswered().isEmpty)
        #expect(machine.state == .waiting(flow: Self.flow))
        _ = machine.timerFired()
        _ = machine.stop()
        #expect(machine.optionsAnswered().isEmpty)
        #expect(machine.optionsFailed("timeout").isEmpty)
        #expect(machine.state == .stopped)
    }
}
