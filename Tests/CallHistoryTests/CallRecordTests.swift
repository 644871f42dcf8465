import CallHistory
import ConversationKit
import Foundation
import Testing

@Suite("Call records")
struct CallRecordTests {
    struct StatusCase: Sendable, CustomTestStringConvertible {
        let direction: Conversation.Direction
        let connected: Bool
        let reason: Conversation.EndedReason
        let status: CallStatus
        var testDescription: String { "\(direction) connected=\(connected) \(reason) → \(status)" }
    }

    static let statusCases: [StatusCase] = [
        .init(direction: .incoming, connected: true, reason: .remoteEnded, status: .connected),
        .init(direction: .incoming, connected: true, reason: .failed, status: .connected),
        .init(direction: .outgoing, connected: true, reason: .localEnded, status: .connected),
        .init(direction: .incoming, connected: false, reason: .unanswered, status: .missed),
        .init(direction: .incoming, connected: false, reason: .cancelled, status: .missed),
        .init(direction: .incoming, connected: false, reason: .localEnded, status: .declined),
        .init(direction: .incoming, connected: false, reason: .joinedElsewhere, status: .answeredElsewhere),
        .init(direction: .incoming, connected: false, reason: .declinedElsewhere, status: .declinedElsewhere),
        .init(direction: .incoming, connected: false, reason: .failed, status: .failed),
        .init(direction: .outgoing, connected: false, reason: .busy, status: .busy),
        .init(direction: .outgoing, connected: false, reason: .declined, status: .declined),
        .init(direction: .outgoing, connected: false, reason: .localEnded, status: .cancelled),
        .init(direction: .outgoing, connected: false, reason: .unanswered, status: .cancelled),
        .init(direction: .outgoing, connected: false, reason: .failed, status: .failed),
    ]

    @Test("status from direction, connection and reason", arguments: statusCases)
    func status(_ item: StatusCase) {
        #expect(CallStatus(direction: item.direction, connected: item.connected, reason: item.reason) == item.status)
    }

    @Test("a live conversation has no record; an ended one keeps everything the history needs")
    func fromConversation() throws {
        let clock = ManualClock()
        let manager = try ConversationManager(configuration: .init(), clock: clock)
        let uuid = UUID()
        try manager.reportNewIncomingConversation(
            uuid: uuid,
            update: .init(
                localMember: Handle(kind: .phoneNumber, value: "+14155559999"), members: [alice],
                account: "sip:me@example.test"))
        #expect(CallRecord(manager.conversation(uuid)!, normalizer: .northAmerica) == nil)
        let delegate = Collector()
        manager.delegate = delegate
        clock.advance(by: 2)
        try manager.perform([.join(conversationUUID: uuid)])  // the delegate fulfils at once: joined
        try manager.reportConversationEvent(.updated(.init(encryption: "sdes")), for: uuid)
        clock.advance(by: 90)
        try manager.reportConversationEvent(.ended(clock.now(), .remoteEnded), for: uuid)
        let ended = try #require(delegate.last)
        let record = try #require(CallRecord(ended, normalizer: .northAmerica, callID: "abc@host"))
        #expect(record.status == .connected)
        #expect(record.endedReason == .remoteEnded)
        #expect(record.duration == 90)
        #expect(record.remoteHandles.map(\.handle) == [alice])
        #expect(record.remoteHandles.first?.normalizedValue == "+14155550100")
        #expect(record.localHandle?.value == "+14155559999")
        #expect(record.callID == "abc@host")
        #expect(record.account == "sip:me@example.test", "the account it came in on")
        #expect(record.encryption == "sdes", "its media was protected")
        #expect(record.isRead)
    }

    @Test("JSON carries the account (null when none); JSON written before records had one still decodes")
    func accountJSON() throws {
        var record = makeRecord([alice], status: .missed)
        record.account = "sip:alice@example.test"
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        let text = try encoder.encode(record)
        #expect(String(decoding: text, as: UTF8.self).contains(#""account":"sip:alice@example.test""#))
        #expect(try decoder.decode(CallRecord.self, from: text) == record)
        record.account = nil
        let none = try encoder.encode(record)
        #expect(String(decoding: none, as: UTF8.self).contains(#""account":null"#))
        var older = try #require(try JSONSerialization.jsonObject(with: none) as? [String: Any])
        older.removeValue(forKey: "account")
        #expect(try decoder.decode(CallRecord.self, from: JSONSerialization.data(withJSONObject: older)) == record)
    }

    @Test("JSON carries the encryption (null for a plain call); JSON written before records had it still decodes")
    func encryptionJSON() throws {
        var record = makeRecord([alice], status: .connected)
        record.encryption = "sdes"
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        let text = try encoder.encode(record)
        #expect(String(decoding: text, as: UTF8.self).contains(#""encryption":"sdes""#))
        #expect(try decoder.decode(CallRecord.self, from: text) == record)
        record.encryption = nil
        let none = try encoder.encode(record)
        #expect(String(decoding: none, as: UTF8.self).contains(#""encryption":null"#))
        var older = try #require(try JSONSerialization.jsonObject(with: none) as? [String: Any])
        older.removeValue(forKey: "encryption")
        #expect(try decoder.decode(CallRecord.self, from: JSONSerialization.data(withJSONObject: older)) == record)
    }

    @Test("a plain call's record has no encryption")
    func plainRecord() throws {
        let clock = ManualClock()
        let manager = try ConversationManager(configuration: .init(), clock: clock)
        let uuid = UUID()
        try manager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [alice]))
        let delegate = Collector()
        manager.delegate = delegate
        try manager.perform([.join(conversationUUID: uuid)])
        try manager.reportConversationEvent(.ended(clock.now(), .remoteEnded), for: uuid)
        let ended = try #require(delegate.last)
        let record = try #require(CallRecord(ended, normalizer: .northAmerica))
        #expect(record.encryption == nil)
    }

    @Test("a blocked caller's record keeps the account the call came in on")
    func blockedAccount() throws {
        let temp = try TemporaryHistory()
        let recorder = HistoryRecorder(store: try temp.open(), configuration: .init())
        let record = try #require(
            recorder.blockedRecord(from: alice, to: nil, callID: "b@h", at: base, account: "sip:me@example.test"))
        #expect(record.account == "sip:me@example.test" && record.status == .blocked)
        #expect(recorder.blockedRecord(from: alice, to: nil, callID: nil, at: base)?.account == nil)
    }

    @Test("redial turns a record into a Start action with its handles and video flag")
    func redial() {
        let record = makeRecord([alice, bob], direction: .outgoing, video: true)
        let action = record.redialAction()
        guard case .start(let handles, let isVideo) = action.kind else {
            Issue.record("expected a start action, got \(action.kind)")
            return
        }
        #expect(handles == [alice, bob])
        #expect(isVideo)
    }

    @Test("cursor text round-trips; damaged text is rejected")
    func cursor() {
        let cursor = HistoryCursor(startedAt: base, id: 42)
        #expect(HistoryCursor(cursor.description) == cursor)
        for bad in ["", "h1", "h1.zz.4", "h2.0.1", "h1.0.-1", "h1.7ff0000000000000.3", "h1..1"] {
            #expect(HistoryCursor(bad) == nil, "\(bad)")
        }
    }
}

/// Keeps the last conversation snapshot the manager reported.
final class Collector: ConversationManagerDelegate, @unchecked Sendable {
    // Only touched from the manager's delivery, which never overlaps (one callback at a time).
    var last: Conversation?
    var seen: [UUID: Conversation] = [:]
    func conversationManager(_ manager: ConversationManager, conversationChanged conversation: Conversation) {
        last = conversation
        seen[conversation.uuid] = conversation
    }
    func conversationManager(_ manager: ConversationManager, perform action: ConversationAction) {
        action.fulfill()
    }
}
