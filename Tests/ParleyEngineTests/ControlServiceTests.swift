import CallHistory
import ControlProtocol
import ConversationKit
import Foundation
import ParleyControl
import ParleyEngine
import SIPMessages
import Synchronization
import ParleyTestSupport
import Testing

@Suite("Control protocol: the service")
struct ControlServiceTests {
    /// Sends one request line and waits (up to 5 s) for its single reply.
    static func call(_ service: ControlService, _ line: String) throws -> [String: Any] {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Data?>(nil)
        service.handle(Data(line.utf8)) { reply in
            box.withLock { $0 = reply }
            done.signal()
        }
        guard done.wait(timeout: .now() + 5) == .success, let data = box.withLock({ $0 }) else {
            throw ControlTestError.noReply(line)
        }
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    enum ControlTestError: Error { case noReply(String) }

    static func service(_ harness: EngineHarness) -> ControlService {
        ControlService(engine: harness.engine) { ["daemon": "test"] }
    }

    @Test("malformed JSON, unknown methods, wrong parameter types and versions get structured errors")
    func errors() throws {
        let harness = try EngineHarness()
        let service = Self.service(harness)
        let cases: [(String, String)] = [
            ("{nope", "parseError"),
            (#"[1, 2]"#, "invalidRequest"),
            (#"{"v": 1, "method": "list"}"#, "invalidRequest"),
            (#"{"v": 2, "id": 1, "method": "list"}"#, "unsupportedVersion"),
            (#"{"v": 1, "id": 1, "method": "fly"}"#, "unknownMethod"),
            (#"{"v": 1, "id": 1, "method": "start", "params": {"to": 5}}"#, "invalidParams"),
            (#"{"v": 1, "id": 1, "method": "join", "params": {}}"#, "invalidParams"),
            (#"{"v": 1, "id": 1, "method": "join", "params": {"conversation": "ffff"}}"#, "notFound"),
            (#"{"v": 1, "id": "x", "method": "playTone", "params": {"conversation": "a", "digits": "12x"}}"#, "notFound"),
        ]
        for (line, code) in cases {
            let reply = try Self.call(service, line)
            let error = try #require(reply["error"] as? [String: Any], "\(line) → \(reply)")
            #expect(error["code"] as? String == code, "\(line) → \(error)")
            #expect((error["message"] as? String)?.isEmpty == false)
        }
    }

    @Test("start → INVITE; the answer comes when the call rings; list and join by uuid prefix; end")
    func callThroughTheAPI() throws {
        let harness = try EngineHarness()
        let service = Self.service(harness)
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Data?>(nil)
        service.handle(Data(#"{"v":1,"id":7,"method":"start","params":{"to":"sip:bob@127.0.0.1:5062"}}"#.utf8)) { reply in
            box.withLock { $0 = reply }
            done.signal()
        }
        let invite = try #require(harness.sent().first?.request)
        #expect(invite.method == .invite)
        harness.deliver(PeerMessages.response(180, "Ringing", to: invite))
        #expect(done.wait(timeout: .now() + 5) == .success)
        let reply = try #require(try JSONSerialization.jsonObject(with: box.withLock { $0 }!) as? [String: Any])
        #expect(reply["id"] as? Int == 7)
        let result = try #require(reply["result"] as? [String: Any])
        let conversation = try #require(result["conversation"] as? [String: Any])
        #expect(conversation["state"] as? String == "ringing")
        #expect(conversation["callID"] as? String == invite.headers.callID)

        let list = try Self.call(service, #"{"v":1,"id":8,"method":"list"}"#)
        let listed = try #require((list["result"] as? [String: Any])?["conversations"] as? [[String: Any]])
        #expect(listed.count == 1)
        let uuid = try #require(listed.first?["uuid"] as? String)

        let ended = try Self.call(service, #"{"v":1,"id":9,"method":"end","params":{"conversation":"\#(uuid.prefix(8))"}}"#)
        #expect((ended["result"] as? [String: Any])?["state"] as? String == "complete")
        #expect(harness.sent().map(\.method) == ["CANCEL"])

        let status = try Self.call(service, #"{"v":1,"id":10,"method":"status"}"#)
        let facts = try #require(status["result"] as? [String: Any])
        #expect(facts["daemon"] as? String == "test")
        #expect(facts["protocol"] as? Int == 1)
    }

    @Test("a refused action is an error naming why; subscribe returns the event list")
    func refusedAndSubscribe() throws {
        let harness = try EngineHarness()
        let service = Self.service(harness)
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let uuid = try #require(harness.conversation?.uuid.uuidString)
        let hold = try Self.call(service, #"{"v":1,"id":1,"method":"hold","params":{"conversation":"\#(uuid)"}}"#)
        #expect((hold["error"] as? [String: Any])?["code"] as? String == "refused")
        let done = DispatchSemaphore(value: 0)
        let directive = service.handle(Data(#"{"v":1,"id":2,"method":"subscribe"}"#.utf8)) { _ in done.signal() }
        guard case .subscribe = directive else {
            Issue.record("subscribe should ask the transport to send events")
            return
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
    }

    @Test("every method and event is in docs/control-api.md, and the document names no other")
    func referenceDocument() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "docs/control-api.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let documented = Set(text.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("### `") else { return nil }
            return String(line.dropFirst(5).prefix { $0 != "`" })
        })
        let known = Set(ControlMethod.all.map(\.name) + ControlEvent.allCases.map(\.rawValue))
        #expect(documented == known, "documented \(documented.sorted()) vs code \(known.sorted())")
        for code in ControlError.Code.allCases { #expect(text.contains("`\(code.rawValue)`"), "error code \(code) undocumented") }
    }
}

@Suite("Control protocol: history methods")
struct ControlHistoryTests {
    @Test("a finished call is in history; markRead, redial and deleteRecord work; bad ids are notFound")
    func historyMethods() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "parley-control-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteCallHistory(path: directory.appending(path: "history.sqlite").path)
        let harness = try EngineHarness(history: HistoryRecorder(store: store, configuration: .init()))
        let service = ControlService(engine: harness.engine, history: store) { [:] }
        let recorded = EventRecorder<UUID>()
        harness.engine.observeEvents { if case .historyRecorded(let uuid) = $0 { recorded.record(uuid) } }
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        harness.environment.advance(by: .seconds(61))  // rings out: a missed call
        _ = recorded.first()  // the history writer committed it
        let page = try ControlServiceTests.call(service, #"{"v":1,"id":1,"method":"history","params":{"missed":true}}"#)
        let records = try #require((page["result"] as? [String: Any])?["records"] as? [[String: Any]])
        #expect(records.count == 1)
        let id = try #require(records.first?["id"] as? Int)
        let marked = try ControlServiceTests.call(service, #"{"v":1,"id":2,"method":"markRead","params":{"id":\#(id)}}"#)
        #expect((marked["result"] as? [String: Any])?["changed"] as? Int == 1)
        let missing = try ControlServiceTests.call(service, #"{"v":1,"id":3,"method":"deleteRecord","params":{"id":999}}"#)
        #expect((missing["error"] as? [String: Any])?["code"] as? String == "notFound")
        let deleted = try ControlServiceTests.call(service, #"{"v":1,"id":4,"method":"deleteRecord","params":{"id":\#(id)}}"#)
        #expect((deleted["result"] as? [String: Any])?["deleted"] as? Int == id)
        #expect(try store.count(HistoryQuery()) == 0)
    }
}

@Suite("Control protocol: events")
struct ControlEventTests {
    @Test("the event stream carries conversation changes, history records and handled pushes")
    func events() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "parley-events-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteCallHistory(path: directory.appending(path: "history.sqlite").path)
        let harness = try EngineHarness(history: HistoryRecorder(store: store, configuration: .init()))
        let names = EventRecorder<String>()
        harness.engine.observeEvents { event in
            let line = ControlService.event(for: event)
            let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any]
            names.record(object?["event"] as? String ?? "?")
        }
        _ = harness.engine.handlePush(PushedCall(
            uuid: UUID(), handle: PushedCallTests.alice, callID: "ev@peer", isVideo: false,
            expiresAt: harness.environment.now.addingTimeInterval(30), isCancel: true))
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        harness.environment.advance(by: .seconds(61))
        _ = names.wait(until: { $0.contains("historyChanged") })
        #expect(names.all == ["pushReceived", "conversationChanged", "conversationChanged", "historyChanged"])
    }
}

@Suite("Control protocol: every conversation method")
struct ControlMethodTests {
    @Test("join, mute, playTone, merge, unmerge and contact through the service")
    func methods() throws {
        let harness = try EngineHarness()
        let contacts = ContactDirectory(contacts: [
            .init(name: "Alice Liddell", handles: [Handle(kind: .generic, value: "sip:alice@127.0.0.1:5062")])
        ])
        let service = ControlService(engine: harness.engine, contacts: contacts) { [:] }
        var uuids: [String] = []
        var tags: [String] = []
        for index in 1...2 {
            harness.deliver(
                PeerMessages.invite(callID: "call-\(index)@peer", branch: "z9hG4bK-in-\(index)").replacingOccurrences(
                    of: "tag=peer-tag", with: "tag=peer-\(index)"),
                body: PeerMessages.offer)
            tags.append(try #require(harness.sent().first?.toTag))
        }
        for conversation in harness.manager.conversations.sorted(by: { $0.createdAt < $1.createdAt }) {
            uuids.append(conversation.uuid.uuidString)
        }
        for (index, uuid) in uuids.enumerated() {
            let done = DispatchSemaphore(value: 0)
            let box = Mutex<Data?>(nil)
            service.handle(Data(#"{"v":1,"id":\#(index),"method":"join","params":{"conversation":"\#(uuid)"}}"#.utf8)) {
                reply in
                box.withLock { $0 = reply }
                done.signal()
            }
            _ = harness.sent()
            harness.deliver(
                PeerMessages.inDialog("ACK", localTag: tags[index], cseq: 1, branch: "z9hG4bK-ack-\(index)", callID: "call-\(index + 1)@peer")
                    .replacingOccurrences(of: "tag=peer-tag", with: "tag=peer-\(index + 1)"))
            #expect(done.wait(timeout: .now() + 5) == .success)
            #expect(box.withLock { $0 }.map { String(decoding: $0, as: UTF8.self) }?.contains(#""state":"joined""#) == true)
        }
        let mute = try ControlServiceTests.call(service, #"{"v":1,"id":10,"method":"mute","params":{"conversation":"\#(uuids[0])"}}"#)
        #expect(((mute["result"] as? [String: Any])?["conversation"] as? [String: Any])?["isMuted"] as? Bool == true)
        let merge = try ControlServiceTests.call(
            service, #"{"v":1,"id":11,"method":"merge","params":{"conversation":"\#(uuids[0])","with":"\#(uuids[1])"}}"#)
        #expect((merge["result"] as? [String: Any])?["state"] as? String == "complete", "\(merge)")
        #expect(harness.manager.conversations.allSatisfy { $0.groupUUID != nil })
        let unmerge = try ControlServiceTests.call(
            service, #"{"v":1,"id":12,"method":"unmerge","params":{"conversation":"\#(uuids[1])"}}"#)
        #expect((unmerge["result"] as? [String: Any])?["state"] as? String == "complete", "\(unmerge)")
        let contact = try ControlServiceTests.call(
            service, #"{"v":1,"id":13,"method":"contact","params":{"handle":"sip:alice@127.0.0.1:5062"}}"#)
        #expect((contact["result"] as? [String: Any])?["displayName"] as? String == "Alice Liddell", "\(contact)")
        let noHistory = try ControlServiceTests.call(service, #"{"v":1,"id":14,"method":"history"}"#)
        #expect((noHistory["error"] as? [String: Any])?["code"] as? String == "refused")
    }
}
