import CallHistory
import ControlChannel
import ControlProtocol
import ConversationKit
import Foundation
import ParleyControl
import ParleyEngine
import SIPMessages
import SIPTransport
import Synchronization
import ParleyTestSupport
import Testing

/// A service on an engine harness, with every event it publishes recorded.
final class ServiceProbe: Sendable {
    let service: ControlService
    let events = EventRecorder<ControlEventMessage>()

    init(_ harness: EngineHarness, history: (any CallHistoryStore)? = nil, contacts: ContactBook = ContactBook(nil)) {
        service = ControlService(engine: harness.engine, history: history, contacts: contacts) {
            DaemonFacts(version: "test", user: "parley", listening: ["udp://127.0.0.1:5070"], pushToken: nil)
        }
        service.publishEvents { [events] line, _ in
            guard let event = ControlEventMessage.decode(line) else {
                Issue.record("the service published a line that is not an event: \(String(decoding: line, as: UTF8.self))")
                return
            }
            events.record(event)
        }
    }

    /// Sends one request line and waits (up to 5 s) for its single reply, parsed.
    func call(_ line: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: try reply(line)) as? [String: Any])
    }

    /// Sends one request line and waits (up to 5 s) for its single reply line.
    func reply(_ line: String) throws -> Data {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Data?>(nil)
        service.handle(Data(line.utf8)) { reply in
            box.withLock { $0 = reply }
            done.signal()
        }
        guard done.wait(timeout: .now() + 5) == .success, let data = box.withLock({ $0 }) else {
            throw ProbeError.noReply(line)
        }
        return data
    }

    /// The error code of a reply, if it is an error.
    func errorCode(_ line: String) throws -> String? {
        ((try call(line))["error"] as? [String: Any])?["code"] as? String
    }

    /// The conversation changes published so far for `uuid`, by what changed.
    func changes(of uuid: UUID) -> [[String]] {
        events.all.compactMap {
            guard case .conversationChanged(let change) = $0, change.conversation.uuid == uuid.uuidString else { return nil }
            return change.changes
        }
    }

    enum ProbeError: Error { case noReply(String) }
}

@Suite("Control protocol: the service")
struct ControlServiceTests {
    @Test("malformed JSON, unknown methods, wrong or missing parameters and versions get structured errors")
    func errors() throws {
        let probe = ServiceProbe(try EngineHarness())
        let cases: [(String, String, String?)] = [
            ("{nope", "parseError", nil),
            (#"[1, 2]"#, "invalidRequest", nil),
            (#"{"v": 1, "method": "list"}"#, "invalidRequest", "id"),
            (#"{"v": 1, "id": {"x": 1}, "method": "list"}"#, "invalidRequest", "id"),
            (#"{"v": 2, "id": 1, "method": "list"}"#, "unsupportedVersion", "v"),
            (#"{"v": 1, "id": 1, "method": "fly"}"#, "unknownMethod", nil),
            (#"{"v": 1, "id": 1, "method": "start", "params": {"to": 5}}"#, "invalidParams", "to"),
            (#"{"v": 1, "id": 1, "method": "start", "params": []}"#, "invalidParams", "params"),
            (#"{"v": 1, "id": 1, "method": "join", "params": {}}"#, "invalidParams", "conversation"),
            (#"{"v": 1, "id": 1, "method": "mute", "params": {"conversation": "a", "muted": "yes"}}"#, "invalidParams", "muted"),
            (#"{"v": 1, "id": 1, "method": "history", "params": {"limit": 0}}"#, "invalidParams", "limit"),
            (#"{"v": 1, "id": 1, "method": "history", "params": {"limit": 5}}"#, "unavailable", nil),
            (#"{"v": 1, "id": 1, "method": "join", "params": {"conversation": "ffff"}}"#, "notFound", "conversation"),
            (#"{"v": 1, "id": 1, "method": "end", "params": {"conversation": " "}}"#, "invalidParams", "conversation"),
            (#"{"v": 1, "id": "x", "method": "playTone", "params": {"conversation": "a", "digits": "12x"}}"#, "invalidParams", "digits"),
        ]
        for (line, code, field) in cases {
            let reply = try probe.call(line)
            let error = try #require(reply["error"] as? [String: Any], "\(line) → \(reply)")
            #expect(error["code"] as? String == code, "\(line) → \(error)")
            #expect((error["message"] as? String)?.hasSuffix(".") == true, "a sentence: \(error)")
            if let field { #expect((error["details"] as? [String: Any])?["field"] as? String == field, "\(line) → \(error)") }
        }
        let missing = try probe.call(#"{"v": 1, "id": 1, "method": "start", "params": {}}"#)
        #expect((missing["error"] as? [String: Any])?["message"] as? String == #"Missing "to"."#)
    }

    @Test("unknown members from a newer client are ignored")
    func unknownMembers() throws {
        let probe = ServiceProbe(try EngineHarness())
        let reply = try probe.call(#"{"v": 1, "id": 3, "method": "list", "trace": "abc", "params": {"future": true}}"#)
        #expect((reply["result"] as? [String: Any])?["conversations"] != nil, "\(reply)")
    }

    @Test("bad dial targets are invalidParams and start nothing")
    func badTargets() throws {
        let harness = try EngineHarness()
        let probe = ServiceProbe(harness)
        for target in ["not a uri", "+14155550100", "tel:+14155550100", "sip:", "   "] {
            let reply = try probe.call(#"{"v":1,"id":1,"method":"start","params":{"to":"\#(target)"}}"#)
            let error = try #require(reply["error"] as? [String: Any], "\(target) → \(reply)")
            #expect(error["code"] as? String == "invalidParams", "\(target) → \(error)")
            #expect((error["details"] as? [String: Any])?["field"] as? String == "to")
        }
        #expect(harness.manager.conversations.isEmpty)
        #expect(harness.sent().isEmpty)
    }

    @Test("a phone number is dialled at --phone-domain, else at the registrar's domain")
    func phoneDomain() throws {
        let registered = try EngineHarness { configuration in
            configuration.registration = RegistrationConfiguration(
                registrar: SIPURI("sip:127.0.0.1:5062")!, addressOfRecord: SIPURI("sip:parley@127.0.0.2")!)
        }
        // Numeric hosts: the fake network resolves no names.
        let explicit = try EngineHarness { configuration in configuration.phoneDomain = "127.0.0.3" }
        for (harness, host) in [(registered, "127.0.0.2"), (explicit, "127.0.0.3")] {
            let probe = ServiceProbe(harness)
            let reply = try probe.call(#"{"v":1,"id":1,"method":"start","params":{"to":"+1 415 555 0100"}}"#)
            #expect((reply["result"] as? [String: Any])?["state"] as? String == "pending", "\(reply)")
            let invite = try #require(harness.sent().first { $0.request?.method == .invite }?.request)
            #expect(invite.uri.description == "sip:+14155550100@\(host);user=phone")
        }
    }

    @Test("start answers at once with the idle conversation; its events follow; the end result is the whole conversation")
    func callThroughTheAPI() throws {
        let harness = try EngineHarness()
        let probe = ServiceProbe(harness)
        let reply = try probe.call(#"{"v":1,"id":7,"method":"start","params":{"to":"sip:bob@127.0.0.1:5062"}}"#)
        #expect(reply["id"] as? Int == 7)
        let result = try #require(reply["result"] as? [String: Any])
        #expect(result["state"] as? String == "pending")
        let conversation = try #require(result["conversation"] as? [String: Any])
        #expect(conversation["state"] as? String == "idle")
        #expect(conversation["pendingActions"] as? [String] == ["start"])
        #expect(conversation["connectedAt"] is NSNull, "absent members are null: \(conversation)")
        let uuid = try #require(UUID(uuidString: conversation["uuid"] as? String ?? ""))

        let invite = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(180, "Ringing", to: invite))
        #expect(probe.events.wait(until: { events in
            events.contains { if case .actionSettled(let settled) = $0 { settled.state == "complete" } else { false } }
        }))
        #expect(probe.events.wait(until: { _ in
            probe.events.all.contains { event in
                guard case .conversationChanged(let change) = event else { return false }
                return change.changes.contains("pendingActions") && change.conversation.pendingActions.isEmpty
            }
        }), "\(probe.changes(of: uuid))")
        #expect(probe.changes(of: uuid).contains { $0.contains("state") })

        let ended = try probe.call(#"{"v":1,"id":9,"method":"end","params":{"conversation":"\#(uuid.uuidString.prefix(8))"}}"#)
        let endResult = try #require(ended["result"] as? [String: Any], "\(ended)")
        #expect(endResult["state"] as? String == "complete")
        let after = try #require(endResult["conversation"] as? [String: Any])
        #expect(after["direction"] as? String == "outgoing" && after["members"] as? [Any] != nil, "\(after)")
        #expect(harness.sent().map(\.method) == ["CANCEL"])

        let status = try probe.call(#"{"v":1,"id":10,"method":"status"}"#)
        let facts = try #require(status["result"] as? [String: Any])
        #expect((facts["daemon"] as? [String: Any])?["version"] as? String == "test")
        #expect(facts["protocol"] as? Int == 1)
        #expect((facts["registration"] as? [String: Any])?["state"] as? String == "unregistered")
    }

    /// Starts a call through the service and has the callee refuse it with `status` ("486 Busy Here") and a
    /// Retry-After of `retryAfter`; the start's `actionSettled`, once it comes.
    static func startRefused(
        _ harness: EngineHarness, _ given: ServiceProbe?, with status: String, retryAfter: String
    ) throws -> ActionSettled? {
        let probe = given ?? ServiceProbe(harness)
        _ = try probe.call(#"{"v":1,"id":1,"method":"start","params":{"to":"sip:bob@127.0.0.1:5062"}}"#)
        let invite = try #require(harness.sent().first?.request)
        let (code, reason) = (Int(status.prefix(3)) ?? 0, String(status.dropFirst(4)))
        harness.deliver(PeerMessages.response(code, reason, to: invite) + "\nRetry-After: \(retryAfter)")
        var failure: ActionSettled?
        #expect(probe.events.wait(until: { events in
            failure = events.lazy.compactMap { if case .actionSettled(let settled) = $0 { settled } else { nil } }.first
            return failure != nil
        }))
        return failure
    }

    @Test("a busy callee fails the start with a sentence, the SIP status and its Retry-After; the conversation says it too")
    func busy() throws {
        let harness = try EngineHarness()
        let probe = ServiceProbe(harness)
        let failure = try Self.startRefused(harness, probe, with: "486 Busy Here", retryAfter: "120 (in a meeting)")
        #expect(failure?.error?.message == "The line is busy.")
        #expect(failure?.error?.details?.sipStatus == 486 && failure?.error?.details?.sipReason == "Busy Here")
        #expect(failure?.error?.details?.retryAfterMs == 120_000)
        let left = probe.events.all.lazy.compactMap { event -> ConversationInfo? in
            if case .conversationChanged(let change) = event, change.conversation.state == "left" { change.conversation } else { nil }
        }.first
        #expect(left?.endedReason == "busy" && left?.sipStatus == 486, "\(String(describing: left))")
    }

    @Test("a peer's huge or odd Retry-After is at most a day, never an overflow", arguments: [
        ("9223372036854775807", 86_400_000), ("99999999999999999999999", 86_400_000), ("٣٠", nil), ("abc", nil),
    ] as [(String, Int?)])
    func hugeRetryAfter(value: String, milliseconds: Int?) throws {
        let failure = try Self.startRefused(
            try EngineHarness(), nil, with: "503 Service Unavailable", retryAfter: value)
        #expect(failure?.error?.details?.sipStatus == 503 && failure?.error?.details?.retryAfterMs == milliseconds, "\(String(describing: failure))")
    }

    @Test("a refused action is a sentence for people; subscribe returns the event list")
    func refusedAndSubscribe() throws {
        let harness = try EngineHarness()
        let probe = ServiceProbe(harness)
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let uuid = try #require(harness.conversation?.uuid.uuidString)
        let hold = try probe.call(#"{"v":1,"id":1,"method":"hold","params":{"conversation":"\#(uuid)"}}"#)
        let error = try #require(hold["error"] as? [String: Any])
        #expect(error["code"] as? String == "refused")
        #expect(error["message"] as? String == "Can't hold this call: it is still ringing.", "\(error)")
        let done = DispatchSemaphore(value: 0)
        let directive = probe.service.handle(Data(#"{"v":1,"id":2,"method":"subscribe"}"#.utf8)) { _ in done.signal() }
        guard case .subscribe = directive else {
            Issue.record("subscribe should ask the transport to send events")
            return
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
    }

    @Test("contact: a bare user@host is an email first, then a SIP URI; a kind says how to read the value")
    func contactKinds() throws {
        let contacts = ContactBook(ContactDirectory(contacts: [
            .init(name: "Dave", handles: [Handle(kind: .emailAddress, value: "Dave@Example.com")]),
            .init(name: "Erin", handles: [Handle(kind: .generic, value: "sip:erin@example.com")]),
        ]))
        let probe = ServiceProbe(try EngineHarness(), contacts: contacts)
        func lookup(_ params: String) throws -> (name: String?, kind: String?) {
            let result = try #require(try probe.call(#"{"v":1,"id":1,"method":"contact","params":\#(params)}"#)["result"] as? [String: Any])
            return (result["contactName"] as? String, (result["handle"] as? [String: Any])?["kind"] as? String)
        }
        #expect(try lookup(#"{"handle":"dave@example.com"}"#) == ("Dave", "emailAddress"))
        #expect(try lookup(#"{"handle":"mailto:DAVE@example.com"}"#) == ("Dave", "emailAddress"))
        #expect(try lookup(#"{"handle":"erin@example.com"}"#) == ("Erin", "generic"), "no email matches: tried as sip:erin@example.com")
        #expect(try lookup(#"{"handle":"sip:dave@example.com"}"#) == (nil, "generic"), "a SIP URI is not an email address")
        #expect(try lookup(#"{"handle":"dave@example.com","kind":"generic"}"#) == (nil, "generic"))
        #expect(try lookup(#"{"handle":"nobody@example.com"}"#) == (nil, "emailAddress"))
        #expect(try probe.errorCode(#"{"v":1,"id":2,"method":"contact","params":{"handle":"x","kind":"fax"}}"#) == "invalidParams")
    }

    @Test("answering a call we placed says so; unmute is a method of its own")
    func ownCallAndUnmute() throws {
        let harness = try EngineHarness()
        let probe = ServiceProbe(harness)
        let start = try probe.call(#"{"v":1,"id":1,"method":"start","params":{"to":"sip:bob@127.0.0.1:5062"}}"#)
        let uuid = try #require(((start["result"] as? [String: Any])?["conversation"] as? [String: Any])?["uuid"] as? String)
        let answer = try probe.call(#"{"v":1,"id":2,"method":"join","params":{"conversation":"\#(uuid)"}}"#)
        let error = try #require(answer["error"] as? [String: Any])
        #expect(error["code"] as? String == "refused" && error["message"] as? String == "You can't answer a call you placed.", "\(error)")

        let answering = try EngineHarness()
        let answeringProbe = ServiceProbe(answering)
        _ = try IncomingCallTests.answered(answering)
        let incoming = try #require(answering.conversation?.uuid.uuidString)
        _ = try answeringProbe.call(#"{"v":1,"id":3,"method":"mute","params":{"conversation":"\#(incoming.lowercased())"}}"#)
        let unmute = try answeringProbe.call(#"{"v":1,"id":4,"method":"unmute","params":{"conversation":"\#(incoming)"}}"#)
        let conversation = try #require((unmute["result"] as? [String: Any])?["conversation"] as? [String: Any])
        #expect((unmute["result"] as? [String: Any])?["action"] as? String == "unmute" && conversation["isMuted"] as? Bool == false, "\(unmute)")
    }

    @Test("docs/control-api.md is exactly what the protocol's types generate")
    func referenceDocument() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "docs/control-api.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let generated = ControlReference.markdown(limits: ControlEndpoint.documentedLimits())
        #expect(text == generated, "docs/control-api.md drifted: run `parley reference control-api > docs/control-api.md`")
        for method in ControlMethodName.allCases { #expect(text.contains("### `\(method.rawValue)`")) }
        for code in ControlError.Code.allCases { #expect(text.contains("| `\(code.rawValue)` |"), "error code \(code) undocumented") }
    }
}

@Suite("Control protocol: every change is an event")
struct ControlChangeEventTests {
    @Test("mute, a remote hold and resume, and received tones are events naming what changed")
    func changes() throws {
        let harness = try EngineHarness()
        let probe = ServiceProbe(harness)
        let tag = try IncomingCallTests.answered(harness)
        let uuid = try #require(harness.conversation?.uuid)
        let mute = try probe.call(#"{"v":1,"id":1,"method":"mute","params":{"conversation":"\#(uuid.uuidString)"}}"#)
        #expect(((mute["result"] as? [String: Any])?["conversation"] as? [String: Any])?["isMuted"] as? Bool == true)
        #expect(probe.events.wait(until: { _ in probe.changes(of: uuid).contains { $0.contains("isMuted") } }), "\(probe.changes(of: uuid))")

        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-re-1", contentType: "application/sdp"),
            body: PeerMessages.holdOffer(version: 2))
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 2, branch: "z9hG4bK-ack-2"))
        #expect(probe.events.wait(until: { _ in
            probe.changes(of: uuid).contains { $0.contains("isRemotelyHeld") && $0.contains("activeRemoteMembers") }
        }), "\(probe.changes(of: uuid))")
        let held = probe.events.all.last { if case .conversationChanged = $0 { true } else { false } }
        if case .conversationChanged(let change)? = held { #expect(change.conversation.isRemotelyHeld && change.from == "joined") }

        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 3, branch: "z9hG4bK-re-2", contentType: "application/sdp"),
            body: PeerMessages.offer.replacingOccurrences(of: "o=peer 1 1", with: "o=peer 1 3"))
        #expect(probe.events.wait(until: { _ in probe.changes(of: uuid).filter { $0.contains("isRemotelyHeld") }.count == 2 }))

        harness.deliver(
            PeerMessages.inDialog("INFO", localTag: tag, cseq: 4, branch: "z9hG4bK-info", contentType: "application/dtmf-relay"),
            body: "Signal=5\nDuration=160\n")
        #expect(probe.events.wait(until: { events in
            events.contains(.tonesReceived(TonesReceived(conversation: uuid.uuidString, digits: "5")))
        }))
    }

    @Test("merge and unmerge are group changes on both conversations; contacts name callers by phone-number SIP URIs")
    func groupsAndNames() throws {
        let harness = try EngineHarness()
        let contacts = ContactBook(ContactDirectory(contacts: [
            .init(name: "Alice Liddell", handles: [Handle(kind: .phoneNumber, value: "+1 (415) 555-0100")])
        ]))
        let probe = ServiceProbe(harness, contacts: contacts)
        var tags: [String] = []
        for index in 1...2 {
            let from = index == 1 ? "sip:+14155550100@127.0.0.1:5062" : "sip:bob@127.0.0.1:5062"
            harness.deliver(
                PeerMessages.invite(callID: "call-\(index)@peer", branch: "z9hG4bK-in-\(index)")
                    .replacingOccurrences(of: "tag=peer-tag", with: "tag=peer-\(index)")
                    .replacingOccurrences(of: "From: \"Alice\" <sip:alice@127.0.0.1:5062>", with: "From: \"sipp\" <\(from)>"),
                body: PeerMessages.offer)
            tags.append(try #require(harness.sent().first?.toTag))
        }
        let list = try probe.call(#"{"v":1,"id":1,"method":"list"}"#)
        let listed = try #require((list["result"] as? [String: Any])?["conversations"] as? [[String: Any]])
        #expect(listed.first?["displayName"] as? String == "Alice Liddell", "\(listed)")
        let member = try #require((listed.first?["members"] as? [[String: Any]])?.first)
        #expect(member["value"] as? String == "sip:+14155550100@127.0.0.1:5062", "the URI stays whole: \(member)")
        #expect(member["contactName"] as? String == "Alice Liddell" && member["displayName"] as? String == "sipp")
        let contact = try probe.call(#"{"v":1,"id":2,"method":"contact","params":{"handle":"sip:+14155550100@example.com;user=phone"}}"#)
        #expect((contact["result"] as? [String: Any])?["contactName"] as? String == "Alice Liddell", "\(contact)")

        let uuids = harness.manager.conversations.sorted { $0.createdAt < $1.createdAt }.map(\.uuid)
        for (index, uuid) in uuids.enumerated() {
            try harness.manager.perform([.join(conversationUUID: uuid)])
            _ = harness.sent()
            harness.deliver(
                PeerMessages.inDialog("ACK", localTag: tags[index], cseq: 1, branch: "z9hG4bK-ack-\(index)", callID: "call-\(index + 1)@peer")
                    .replacingOccurrences(of: "tag=peer-tag", with: "tag=peer-\(index + 1)"))
        }
        let merge = try probe.call(
            #"{"v":1,"id":3,"method":"merge","params":{"conversation":"\#(uuids[0])","with":"\#(uuids[1])"}}"#)
        #expect((merge["result"] as? [String: Any])?["state"] as? String == "complete", "\(merge)")
        #expect(probe.events.wait(until: { _ in uuids.allSatisfy { probe.changes(of: $0).contains { $0.contains("group") } } }))
        let unmerge = try probe.call(#"{"v":1,"id":4,"method":"unmerge","params":{"conversation":"\#(uuids[1])"}}"#)
        #expect((unmerge["result"] as? [String: Any])?["state"] as? String == "complete", "\(unmerge)")
        #expect(probe.events.wait(until: { _ in probe.changes(of: uuids[1]).filter { $0.contains("group") }.count == 2 }))
        #expect(try probe.errorCode(#"{"v":1,"id":5,"method":"history"}"#) == "unavailable")
    }
}

@Suite("Control protocol: history for frontends")
struct ControlHistoryTests {
    @Test("historyCount for badges; markRead, deleteRecord and clearHistory emit historyChanged with the ids; redial")
    func historyMethods() throws {
        let history = try TemporaryHistory("control")
        let store = history.store
        let harness = try EngineHarness(history: history.recorder)
        let probe = ServiceProbe(harness, history: store)
        harness.deliver(
            PeerMessages.invite().replacingOccurrences(of: "sip:alice@127.0.0.1:5062>", with: "sip:+14155550100@127.0.0.1:5062>"),
            body: PeerMessages.offer)
        harness.environment.advance(by: .seconds(61))  // rings out: a missed call
        #expect(probe.events.wait(until: { events in
            events.contains { if case .historyChanged(let change) = $0 { change.change == "inserted" } else { false } }
        }))
        let badge = try probe.call(#"{"v":1,"id":1,"method":"historyCount","params":{"missed":true,"unread":true}}"#)
        #expect((badge["result"] as? [String: Any])?["count"] as? Int == 1, "\(badge)")
        let page = try probe.call(#"{"v":1,"id":2,"method":"history","params":{"missed":true}}"#)
        let records = try #require((page["result"] as? [String: Any])?["records"] as? [[String: Any]])
        let record = try #require(records.first)
        let id = try #require(record["id"] as? Int)
        #expect(record["durationMs"] as? Int == 0 && record["connectedAt"] is NSNull, "\(record)")
        #expect(record["account"] is NSNull, "\(record)")
        #expect(record["encryption"] is NSNull, "a plain call: \(record)")
        #expect(((record["members"] as? [[String: Any]])?.first)?["value"] as? String == "sip:+14155550100@127.0.0.1:5062")

        _ = try probe.call(#"{"v":1,"id":3,"method":"markRead","params":{"id":\#(id)}}"#)
        #expect(probe.events.wait(until: { $0.contains(.historyChanged(HistoryChanged(change: "read", records: [Int64(id)]))) }))
        let after = try probe.call(#"{"v":1,"id":4,"method":"historyCount","params":{"missed":true,"unread":true}}"#)
        #expect((after["result"] as? [String: Any])?["count"] as? Int == 0)

        let redial = try probe.call(#"{"v":1,"id":5,"method":"redial","params":{"id":\#(id)}}"#)
        #expect((redial["result"] as? [String: Any])?["state"] as? String == "pending", "\(redial)")
        let invite = try #require(harness.sent().first { $0.request?.method == .invite }?.request)
        #expect(invite.uri.description == "sip:+14155550100@127.0.0.1:5062", "redial dials exactly who called")

        #expect(try probe.errorCode(#"{"v":1,"id":6,"method":"deleteRecord","params":{"id":999}}"#) == "notFound")
        _ = try probe.call(#"{"v":1,"id":7,"method":"deleteRecord","params":{"id":\#(id)}}"#)
        #expect(probe.events.wait(until: { $0.contains(.historyChanged(HistoryChanged(change: "deleted", records: [Int64(id)]))) }))
        #expect(try store.count(HistoryQuery()) == 0)

        let now = Date()
        try store.insert(CallRecord(
            uuid: UUID(), direction: .outgoing, remoteHandles: [], status: .cancelled, endedReason: .localEnded,
            startedAt: now, endedAt: now, account: "sip:bob@example.test", encryption: "sdes"))
        let through = try probe.call(#"{"v":1,"id":8,"method":"history","params":{"direction":"outgoing"}}"#)
        let outgoing = try #require((through["result"] as? [String: Any])?["records"] as? [[String: Any]])
        #expect(outgoing.first?["account"] as? String == "sip:bob@example.test", "\(through)")
        #expect(outgoing.first?["encryption"] as? String == "sdes", "\(through)")
    }
}

@Suite("Control protocol: the events of the engine")
struct ControlEventTests {
    @Test("the event stream carries handled pushes, conversation changes and history records, in order")
    func events() throws {
        let history = try TemporaryHistory("events")
        let store = history.store
        let harness = try EngineHarness(history: history.recorder)
        let probe = ServiceProbe(harness, history: store)
        _ = harness.engine.handlePush(PushedCall(
            uuid: UUID(), handle: PushedCallTests.alice, callID: "ev@peer", isVideo: false,
            expiresAt: harness.environment.now.addingTimeInterval(30), isCancel: true))
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        harness.environment.advance(by: .seconds(61))
        #expect(probe.events.wait(until: { $0.contains { $0.name == .historyChanged } }))
        #expect(probe.events.all.map(\.name.rawValue) == ["pushReceived", "conversationChanged", "conversationChanged", "historyChanged"])
    }

    @Test("a conversation a push announced says viaPush from its first event to its last; one an INVITE began does not")
    func viaPush() throws {
        let harness = try EngineHarness()
        let probe = ServiceProbe(harness)
        let pushed = UUID()
        _ = harness.engine.handlePush(PushedCall(
            uuid: pushed, handle: PushedCallTests.alice, callID: "via@peer", isVideo: false,
            expiresAt: harness.environment.now.addingTimeInterval(30), isCancel: false))
        let listed = try probe.call(#"{"v":1,"id":1,"method":"list"}"#)
        let conversations = (listed["result"] as? [String: Any])?["conversations"] as? [[String: Any]] ?? []
        #expect(conversations.map { $0["viaPush"] as? Bool } == [true])
        harness.environment.advance(by: .seconds(31))  // no INVITE: it ends as failed
        #expect(probe.events.wait(until: { events in
            events.contains { if case .conversationChanged(let change) = $0 { change.conversation.state == "left" } else { false } }
        }))
        let views: [ConversationInfo] = probe.events.all.compactMap {
            guard case .conversationChanged(let change) = $0, change.conversation.uuid == pushed.uuidString else { return nil }
            return change.conversation
        }
        #expect(!views.isEmpty && views.allSatisfy(\.viaPush), "\(views.map { ($0.state, $0.viaPush) })")
        #expect(!probe.changes(of: pushed).joined().contains("viaPush"))
        #expect(harness.engine.cameFromPush(pushed))
        #expect(!harness.engine.cameFromPush(UUID()))
    }
}

@Suite("Control protocol: list under load")
struct ListPagingTests {
    @Test("list at 40,000 ringing calls: pages within the client's queue, each conversation once, oldest first")
    func fortyThousandRinging() throws {
        let harness = try EngineHarness()
        let ringing = 40_000
        let handle = Handle(kind: .generic, value: "sip:someone@192.0.2.1")
        var reported: [String] = []
        for _ in 0..<ringing {
            let uuid = UUID()
            try harness.manager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [handle]))
            reported.append(uuid.uuidString)
        }
        #expect(harness.manager.conversationCount == ringing)
        let probe = ServiceProbe(harness)
        let queue = ControlLimits().maxQueuedBytes  // what one client may have waiting
        var seen: [String] = []
        var cursor: String?
        var largest = 0
        repeat {
            let params = cursor.map { #"{"limit": 200, "cursor": "\#($0)"}"# } ?? #"{"limit": 200}"#
            let line = try probe.reply(#"{"v": 1, "id": 1, "method": "list", "params": \#(params)}"#)
            largest = max(largest, line.count)
            let reply = try #require(try JSONSerialization.jsonObject(with: line) as? [String: Any])
            let result = try #require(reply["result"] as? [String: Any], "\(reply)")
            let page = try #require(result["conversations"] as? [[String: Any]])
            #expect(result["total"] as? Int == ringing)
            #expect(page.count == 200)
            seen += page.compactMap { $0["uuid"] as? String }
            cursor = result["nextCursor"] as? String
        } while cursor != nil && seen.count <= ringing
        #expect(seen == reported, "every conversation once, oldest first")
        #expect(largest < queue / 4, "a page (\(largest) bytes) fits the \(queue)-byte client queue with room to spare")
        let first = try #require(try probe.call(#"{"v": 1, "id": 2, "method": "list"}"#)["result"] as? [String: Any])
        #expect((first["conversations"] as? [Any])?.count == 100, "100 a page unless asked")
    }

    @Test("list: a page size out of range or a cursor it never gave is invalidParams; the last page has no cursor")
    func badParams() throws {
        let harness = try EngineHarness()
        for index in 0..<3 {
            harness.deliver(PeerMessages.invite(callID: "few-\(index)@peer", branch: "z9hG4bK-few-\(index)"))
        }
        let probe = ServiceProbe(harness)
        for params in [#"{"limit": 0}"#, #"{"limit": 201}"#, #"{"cursor": "nope"}"#, #"{"cursor": "-1"}"#, #"{"cursor": "007"}"#,
                       #"{"cursor": "1"}"#, #"{"cursor": "abc.1"}"#] {
            #expect(try probe.errorCode(#"{"v": 1, "id": 1, "method": "list", "params": \#(params)}"#) == "invalidParams", "\(params)")
        }
        let first = try #require(try probe.call(#"{"v": 1, "id": 1, "method": "list", "params": {"limit": 2}}"#)["result"] as? [String: Any])
        let cursor = try #require(first["nextCursor"] as? String)
        let nextRun = ServiceProbe(harness)
        #expect(try nextRun.errorCode(#"{"v": 1, "id": 1, "method": "list", "params": {"cursor": "\#(cursor)"}}"#) == "invalidParams",
                "a cursor from another run of parleyd")
        let last = try #require(try probe.call(#"{"v": 1, "id": 1, "method": "list", "params": {"limit": 2, "cursor": "\#(cursor)"}}"#)["result"] as? [String: Any])
        #expect((last["conversations"] as? [[String: Any]])?.compactMap { $0["callID"] as? String } == ["few-2@peer"])
        #expect(last["nextCursor"] is NSNull)
    }
}
