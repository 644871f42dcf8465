@testable import CallHistory
import ConversationKit
import Foundation
import Testing

@Suite("History store: access modes, stored rules, paging edge")
struct StoreAccessTests {
    @Test("read-only access reads a live WAL database and never writes")
    func readOnly() throws {
        let temp = try TemporaryHistory()
        let writer = try temp.open()
        try writer.insert(makeRecord([alice], status: .missed))
        let reader = try SQLiteCallHistory(path: temp.path, access: .readOnly)
        #expect(try reader.count(.missed()) == 1)
        #expect(throws: CallHistoryError.self) { try reader.markAllRead() }
        try writer.insert(makeRecord([bob]))
        #expect(try reader.count(HistoryQuery()) == 2, "a reader sees later commits")
    }

    @Test("read-only access refuses an empty file and a schema that needs upgrading")
    func readOnlyRefusals() throws {
        let temp = try TemporaryHistory()
        FileManager.default.createFile(atPath: temp.path, contents: Data())
        #expect(throws: CallHistoryError.cannotOpen(path: temp.path, detail: "it holds no call history")) {
            try SQLiteCallHistory(path: temp.path, access: .readOnly)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: temp.path)).isEmpty, "nothing was written")
        let old = try TemporaryHistory()
        do {
            let connection = try SQLiteConnection(path: old.path, access: .create)
            try connection.execute(HistorySchema.migrations[0])
            try connection.execute("PRAGMA user_version = 1")
        }
        #expect(throws: CallHistoryError.self) { try SQLiteCallHistory(path: old.path, access: .readOnly) }
    }

    @Test("a database keeps the matching rules it was created with")
    func storedRules() throws {
        let temp = try TemporaryHistory()
        let uk = try HandleNormalizer(defaultCountryCode: "44")
        do {
            let store = try SQLiteCallHistory(path: temp.path, normalizer: uk)
            // Recorded with North American rules by mistake: the store normalises again with its own.
            try store.insert(makeRecord([Handle(kind: .phoneNumber, value: "020 7946 0018")]))
        }
        let reopened = try SQLiteCallHistory(path: temp.path, normalizer: .northAmerica)
        #expect(reopened.normalizer == uk)
        let found = try reopened.query(HistoryQuery(handle: Handle(kind: .phoneNumber, value: "+44 20 7946 0018")))
        #expect(found.records.count == 1)
        #expect(found.records.first?.remoteHandles.first?.normalizedValue == "+442079460018")
        #expect(try SQLiteCallHistory(path: temp.path, access: .readOnly).normalizer == uk)
    }

    @Test("a page that is exactly full and last has no cursor")
    func exactPage() throws {
        let temp = try TemporaryHistory()
        let store = try temp.open()
        try store.insert(contentsOf: (0..<10).map { makeRecord([alice], minutes: Double($0)) })
        #expect(try store.query(HistoryQuery(limit: 10)).nextCursor == nil)
        let first = try store.query(HistoryQuery(limit: 5))
        let cursor = try #require(first.nextCursor)
        let second = try store.query(HistoryQuery(limit: 5, cursor: cursor))
        #expect(second.records.count == 5)
        #expect(second.nextCursor == nil)
    }

    @Test("the recorder names parties from contacts, over the name that came with the call")
    func recorderContacts() throws {
        let temp = try TemporaryHistory()
        let store = try temp.open()
        let contacts = ContactDirectory(contacts: [
            Contact(name: "Alice Liddell", handles: [Handle(kind: .phoneNumber, value: "+1 415 555 0100")]),
        ])
        let recorder = HistoryRecorder(store: store, configuration: .init(), contacts: ContactBook(contacts))
        let clock = ManualClock()
        let manager = try ConversationManager(configuration: .init(), clock: clock)
        let collector = Collector()
        manager.delegate = collector
        let named = Handle(kind: .phoneNumber, value: "415-555-0100", displayName: "Front desk")
        for handle in [Handle(kind: .phoneNumber, value: "415-555-0100"), named] {
            let uuid = UUID()
            try manager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [handle]))
            try manager.reportConversationEvent(.ended(clock.now(), .unanswered), for: uuid)
            try recorder.conversationChanged(try #require(collector.last))
        }
        let names = try store.query(HistoryQuery()).records.map(\.displayName)
        #expect(names == ["Alice Liddell", "Alice Liddell"])
        let stranger = Handle(kind: .phoneNumber, value: "650-555-0199", displayName: "Front desk")
        let uuid = UUID()
        try manager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [stranger]))
        try manager.reportConversationEvent(.ended(clock.now(), .unanswered), for: uuid)
        try recorder.conversationChanged(try #require(collector.last))
        #expect(try store.query(HistoryQuery(limit: 1)).records.first?.displayName == "Front desk", "no contact: the SIP name")
    }
}
