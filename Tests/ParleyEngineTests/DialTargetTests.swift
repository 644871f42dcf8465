import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import SIPTransport
import Testing

/// What a typed dial target becomes: the transport a SIP URI names is honoured or refused before anything is sent.
@Suite("Dial targets: transports")
struct DialTargetTests {
    static let udpOnly = EngineConfiguration(listenAddresses: [ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070)])

    @Test("the schemes a desktop hands over: callto: and callto:// name a number, an address or a name; tel: and callto: may come percent-encoded")
    func desktopSchemes() throws {
        let phones = EngineConfiguration(listenAddresses: Self.udpOnly.listenAddresses, phoneDomain: "example.com")
        for (target, kind, value) in [
            ("callto:+14155550100", Handle.Kind.phoneNumber, "+14155550100"),
            ("CALLTO://+1 415 555 0100/", .phoneNumber, "+1 415 555 0100"),
            ("tel:%2B14155550100", .phoneNumber, "+14155550100"),
            ("callto:%2B14155550100", .phoneNumber, "+14155550100"),
            ("callto://bob@127.0.0.1:5062", .generic, "sip:bob@127.0.0.1:5062"),
            ("callto:sip:bob@127.0.0.1", .generic, "sip:bob@127.0.0.1"),
        ] {
            let handle = try DialTarget.handle(for: target, configuration: phones).get()
            #expect(handle.kind == kind && handle.value == value, "\(target) → \(handle)")
        }
        for target in ["callto:", "callto://", "callto:%zz"] {
            guard case .failure = DialTarget.handle(for: target, configuration: phones) else {
                Issue.record("\(target) was accepted")
                continue
            }
        }
        #expect(DialTarget.unwrapped("sip:b%40b@example.com") == "sip:b%40b@example.com", "a SIP URI's escapes are its own")
    }

    @Test("a transport parleyd does not run is refused with a sentence naming it")
    func unsupportedTransports() throws {
        for (target, shown) in [
            ("sip:bob@127.0.0.1:5062;transport=sctp", "SCTP"), ("sip:bob@127.0.0.1:5062;transport=SCTP", "SCTP"),
            ("bob@127.0.0.1;transport=ws", "WS"), ("sips:bob@example.com;transport=wss;lr", "WSS"),
        ] {
            guard case .failure(let problem) = DialTarget.handle(for: target, configuration: Self.udpOnly) else {
                Issue.record("\(target) was accepted")
                continue
            }
            #expect(problem.message == "Parley can't place calls over \(shown); use udp, tcp or tls.", "\(target)")
            #expect(problem.technical?.contains("not supported") == true)
        }
    }

    @Test("tcp and tls stay in the handle, so the call (and its redial) goes over them; udp is the default")
    func supportedTransports() throws {
        let tcp = try DialTarget.handle(for: "sip:bob@127.0.0.1:5062;transport=TCP", configuration: Self.udpOnly).get()
        #expect(tcp.kind == .generic && tcp.value == "sip:bob@127.0.0.1:5062;transport=tcp" && tcp.displayName == tcp.value)
        let tls = try DialTarget.handle(for: "bob@example.com;transport=tls", configuration: Self.udpOnly).get()
        #expect(tls.value == "sip:bob@example.com;transport=tls")
        let udp = try DialTarget.handle(for: "sip:bob@127.0.0.1:5062;transport=udp", configuration: Self.udpOnly).get()
        #expect(udp.value == "sip:bob@127.0.0.1:5062")
        let phone = try DialTarget.handle(for: "sip:+14155550100@127.0.0.1;transport=tcp", configuration: Self.udpOnly).get()
        #expect(phone.kind == .phoneNumber && phone.value == "sip:+14155550100@127.0.0.1;transport=tcp")
        // What contacts and history filters use keeps ignoring parameters.
        #expect(DialTarget.parse("sip:bob@127.0.0.1:5062;transport=tcp")?.value == "sip:bob@127.0.0.1:5062")
    }

    @Test("a number without a phone domain names the options that give one (they exist: parleyd --phone-domain, --register)")
    func phoneDomainOptions() throws {
        guard case .failure(let problem) = DialTarget.handle(for: "+1 415 555 0100", configuration: Self.udpOnly) else {
            Issue.record("a number was accepted without a phone domain")
            return
        }
        #expect(problem.message == "Can't dial the number +1 415 555 0100: no phone domain (start parleyd with --phone-domain or --register).")
    }

    @Test("through the control API: an SCTP target is invalidParams on `to`, and nothing starts or is sent")
    func refusedBeforeSending() throws {
        let harness = try EngineHarness()
        let probe = ServiceProbe(harness)
        let reply = try probe.call(#"{"v":1,"id":1,"method":"start","params":{"to":"sip:bob@127.0.0.1:5062;transport=sctp"}}"#)
        let error = try #require(reply["error"] as? [String: Any], "\(reply)")
        #expect(error["code"] as? String == "invalidParams")
        #expect(error["message"] as? String == "Parley can't place calls over SCTP; use udp, tcp or tls.")
        #expect((error["details"] as? [String: Any])?["field"] as? String == "to")
        #expect(harness.manager.conversations.isEmpty)
        #expect(harness.sent().isEmpty)
    }

    @Test("through the control API: ;transport=tcp sends the INVITE over TCP, not UDP")
    func tcpIsHonoured() throws {
        let harness = try EngineHarness(local: ListenAddress(kind: .tcp, host: "127.0.0.1", port: 5070))
        let probe = ServiceProbe(harness)
        let reply = try probe.call(#"{"v":1,"id":1,"method":"start","params":{"to":"sip:bob@127.0.0.1:5062;transport=tcp"}}"#)
        #expect((reply["result"] as? [String: Any])?["state"] as? String == "pending", "\(reply)")
        let sent = harness.environment.takeSent()
        let invite = try #require(sent.first { $0.message.request?.method == .invite })
        #expect(invite.destination.kind == .tcp)
        #expect(invite.message.request?.uri.transport == "tcp")
    }

    @Test("the engine's own check, for targets that skip the dial field (parleyd --call): the same sentence")
    func engineRefusal() throws {
        let harness = try EngineHarness()
        let uuid = UUID()
        let handle = Handle(kind: .generic, value: "sip:bob@127.0.0.1:5062;transport=sctp")
        let start = ConversationAction.start(conversationUUID: uuid, handles: [handle])
        try harness.manager.perform([start])
        #expect(start.state == .failed(reason: "Parley can't place calls over SCTP; use udp, tcp or tls."))
        #expect(harness.transitions.states.last == "left(failed)")
        #expect(harness.sent().isEmpty)
    }
}
