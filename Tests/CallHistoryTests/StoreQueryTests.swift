import CallHistory
import ConversationKit
import Foundation
import Testing

/// One body, two fixtures: every test here runs against the SQLite store and the PostgreSQL store.
@Suite("History store: writing and querying")
struct StoreQueryTests {
    @Test("a record reads back exactly; storing the same conversation twice keeps one", arguments: StoreKind.allCases)
    func roundTrip(_ kind: StoreKind) throws {
        let fixture = try StoreFixture(kind)
        let store = fixture.store
        let group = UUID()
        let record = makeRecord([alice, bob], direction: .outgoing, video: true, group: group, callID: "a84b4c76e66710")
        let stored = try store.insert(record)
        #expect(stored.id > 0)
        var expected = record
        expected.id = stored.id
        #expect(try store.record(id: stored.id) == expected)
        #expect(try store.record(uuid: record.uuid) == expected)
        #expect(try store.insert(record).id == stored.id)
        #expect(try store.count(HistoryQuery()) == 1)
        #expect(try store.insert(contentsOf: [record, makeRecord([carol])]) == 1)
    }

    @Test("the account a call went through reads back, by id, uuid, query and handle; none reads as nil", arguments: StoreKind.allCases)
    func accountRoundTrip(_ kind: StoreKind) throws {
        let fixture = try StoreFixture(kind)
        let store = fixture.store
        var through = makeRecord([alice], status: .missed, minutes: 1)
        through.account = "sip:alice@example.test"
        let without = makeRecord([alice], minutes: 2)
        let single = try store.insert(through)
        #expect(single.account == "sip:alice@example.test", "insert returns the stored record")
        let batch = try store.insertReturningRecords([without, makeRecord([bob], minutes: 3)])
        #expect(try store.record(id: single.id).account == "sip:alice@example.test")
        #expect(try store.record(uuid: through.uuid)?.account == "sip:alice@example.test")
        #expect(try store.record(id: batch[0].id).account == nil)
        #expect(try store.query(HistoryQuery()).records.map(\.account) == [nil, nil, "sip:alice@example.test"])
        #expect(try store.query(HistoryQuery(handle: alice)).records.map(\.account) == [nil, "sip:alice@example.test"])
        #expect(try store.recents(limit: 5).last?.latest.account == "sip:alice@example.test")
    }

    @Test("how a call's media was protected reads back, by id, uuid, query and handle; a plain call reads as nil", arguments: StoreKind.allCases)
    func encryptionRoundTrip(_ kind: StoreKind) throws {
        let fixture = try StoreFixture(kind)
        let store = fixture.store
        var encrypted = makeRecord([alice], minutes: 1)
        encrypted.encryption = "sdes"
        encrypted.account = "sip:alice@example.test"
        let plain = makeRecord([alice], minutes: 2)
        let single = try store.insert(encrypted)
        #expect(single.encryption == "sdes", "insert returns the stored record")
        let batch = try store.insertReturningRecords([plain, makeRecord([bob], minutes: 3)])
        #expect(try store.record(id: single.id).encryption == "sdes")
        #expect(try store.record(id: single.id).account == "sip:alice@example.test", "the account beside it")
        #expect(try store.record(uuid: encrypted.uuid)?.encryption == "sdes")
        #expect(try store.record(id: batch[0].id).encryption == nil)
        #expect(try store.query(HistoryQuery()).records.map(\.encryption) == [nil, nil, "sdes"])
        #expect(try store.query(HistoryQuery(handle: alice)).records.map(\.encryption) == [nil, "sdes"])
        #expect(try store.recents(limit: 5).last?.records.map(\.encryption) == [nil, "sdes"], "one line for alice's two")
        var batched = makeRecord([carol], minutes: 4)
        batched.encryption = "dtls"
        let stored = try store.insertReturningRecords([batched])
        #expect(try store.record(id: stored[0].id) == stored[0] && stored[0].encryption == "dtls", "a batch keeps it too")
    }

    @Test("a batch that holds one conversation twice stores it once; both come back with its id", arguments: StoreKind.allCases)
    func duplicateInOneBatch(_ kind: StoreKind) throws {
        let fixture = try StoreFixture(kind)
        let store = fixture.store
        let twice = makeRecord([carol], minutes: 5)
        let other = makeRecord([alice], minutes: 6)
        let stored = try store.insertReturningRecords([twice, other, twice])
        #expect(stored.map(\.uuid) == [twice.uuid, other.uuid, twice.uuid])
        #expect(stored[0].id == stored[2].id && stored[0].id != stored[1].id)
        #expect(try store.insert(contentsOf: [twice, other, makeRecord([bob], minutes: 7)]) == 1)
        #expect(try store.count(HistoryQuery()) == 3)
        #expect(try store.record(uuid: twice.uuid)?.remoteHandles.map(\.handle) == [carol])
    }

    @Test("handle queries use the matching rules: any written form of a number finds it", arguments: StoreKind.allCases)
    func handleMatching(_ kind: StoreKind) throws {
        let fixture = try StoreFixture(kind)
        let store = fixture.store
        try store.insert(contentsOf: [
            makeRecord([alice], minutes: 1),
            makeRecord([Handle(kind: .phoneNumber, value: "+1 (415) 555-0100")], minutes: 2),
            makeRecord([Handle(kind: .phoneNumber, value: "+1 415 555 0199")], minutes: 3),
            makeRecord([bob], minutes: 4),
            makeRecord([carol, Handle(kind: .phoneNumber, value: "1-415-555-0100")], minutes: 5),
        ])
        for form in ["+1 415 555 0100", "4155550100", "14155550100", "tel:+1-415-555-0100"] {
            let page = try store.query(HistoryQuery(handle: Handle(kind: .phoneNumber, value: form)))
            #expect(page.records.map(\.startedAt) == [5, 2, 1].map { base.addingTimeInterval($0 * 60) }, "\(form)")
        }
        #expect(try store.query(HistoryQuery(handle: Handle(kind: .emailAddress, value: " BOB@example.COM"))).records.count == 1)
        #expect(try store.query(HistoryQuery(handle: Handle(kind: .generic, value: "SIP:carol@127.0.0.1"))).records.isEmpty)
        #expect(try store.query(HistoryQuery(handle: carol)).records.count == 1)
        #expect(throws: CallHistoryError.invalidQuery("'call me!' is not a usable phoneNumber handle")) {
            try store.query(HistoryQuery(handle: Handle(kind: .phoneNumber, value: "call me!")))
        }
    }

    @Test("direction, status, time range, display name and unread filters, alone and together", arguments: StoreKind.allCases)
    func filters(_ kind: StoreKind) throws {
        let fixture = try StoreFixture(kind)
        let store = fixture.store
        try store.insert(contentsOf: [
            makeRecord([alice], direction: .incoming, status: .missed, minutes: 1),
            makeRecord([alice], direction: .incoming, status: .connected, minutes: 2),
            makeRecord([bob], direction: .outgoing, status: .busy, minutes: 3),
            makeRecord([bob], direction: .incoming, status: .missed, minutes: 4),
            makeRecord([carol], direction: .outgoing, status: .cancelled, minutes: 5),
        ])
        func minutes(_ query: HistoryQuery) throws -> [Double] {
            try store.query(query).records.map { $0.startedAt.timeIntervalSince(base) / 60 }
        }
        #expect(try minutes(HistoryQuery()) == [5, 4, 3, 2, 1])
        #expect(try minutes(HistoryQuery(direction: .outgoing)) == [5, 3])
        #expect(try minutes(.missed()) == [4, 1])
        #expect(try minutes(HistoryQuery(statuses: [.busy, .cancelled])) == [5, 3])
        #expect(try minutes(HistoryQuery(startedFrom: base.addingTimeInterval(120), startedBefore: base.addingTimeInterval(240))) == [3, 2])
        #expect(try minutes(HistoryQuery(displayNameContains: "lice")) == [2, 1])
        #expect(try minutes(HistoryQuery(displayNameContains: "%")) == [])
        #expect(try minutes(HistoryQuery(unreadOnly: true)) == [4, 1])
        #expect(try minutes(HistoryQuery(handle: alice, statuses: [.missed], unreadOnly: true)) == [1])
        #expect(try store.count(.missed(unreadOnly: true)) == 2)
        #expect(throws: CallHistoryError.self) { try store.query(HistoryQuery(limit: 0)) }
        #expect(throws: CallHistoryError.self) {
            try store.query(HistoryQuery(startedFrom: base, startedBefore: base))
        }
    }

    @Test("mark read, mark all read, delete one, clear before a date; unknown ids are errors", arguments: StoreKind.allCases)
    func maintenance(_ kind: StoreKind) throws {
        let fixture = try StoreFixture(kind)
        let store = fixture.store
        let missed = try store.insert(makeRecord([alice], status: .missed, minutes: 1))
        let other = try store.insert(makeRecord([bob], status: .missed, minutes: 2))
        let old = try store.insert(makeRecord([carol], minutes: -600))
        #expect(try store.count(.missed(unreadOnly: true)) == 2)
        #expect(try store.markRead(ids: [missed.id]) == 1)
        #expect(try store.markRead(ids: [missed.id]) == 0)
        #expect(throws: CallHistoryError.unknownRecord(999)) { try store.markRead(ids: [other.id, 999]) }
        #expect(try store.record(id: other.id).isRead == false, "a failed mark-read changes nothing")
        #expect(try store.markAllRead() == 1)
        #expect(try store.count(.missed(unreadOnly: true)) == 0)
        try store.delete(id: missed.id)
        #expect(throws: CallHistoryError.unknownRecord(missed.id)) { try store.delete(id: missed.id) }
        #expect(throws: CallHistoryError.unknownRecord(missed.id)) { try store.record(id: missed.id) }
        #expect(try store.deleteAll(endedBefore: base) == 1)
        #expect(try store.record(uuid: old.uuid) == nil)
        #expect(try store.count(HistoryQuery()) == 1)
        #expect(try store.query(HistoryQuery(handle: carol)).records.isEmpty, "handles go with their record")
    }

    @Test("recents collapses consecutive conversations with one person of one kind", arguments: StoreKind.allCases)
    func recents(_ kind: StoreKind) throws {
        let fixture = try StoreFixture(kind)
        let store = fixture.store
        try store.insert(contentsOf: [
            makeRecord([alice], status: .missed, minutes: 1),
            makeRecord([Handle(kind: .phoneNumber, value: "+1 415 555 0100")], status: .missed, minutes: 2),
            makeRecord([alice], status: .connected, minutes: 3),
            makeRecord([bob], status: .missed, minutes: 4),
            makeRecord([alice], status: .missed, minutes: 5),
            makeRecord([alice], direction: .outgoing, status: .connected, minutes: 6),
        ])
        let lines = try store.recents(limit: 10)
        #expect(lines.map(\.count) == [1, 1, 1, 1, 2])
        #expect(lines.map(\.latest.status) == [.connected, .missed, .missed, .connected, .missed])
        #expect(lines.last?.records.map(\.startedAt) == [2, 1].map { base.addingTimeInterval($0 * 60) })
        #expect(try store.recents(limit: 2).count == 2)
        #expect(throws: CallHistoryError.self) { try store.recents(limit: 0) }
    }

    @Test("cursor paging neither repeats nor skips while newer records arrive", arguments: StoreKind.allCases)
    func pagingStability(_ kind: StoreKind) throws {
        let fixture = try StoreFixture(kind)
        let store = fixture.store
        // 25 records, five of which share one start time (ties are broken by id).
        try store.insert(contentsOf: (0..<25).map { makeRecord([alice], minutes: Double($0 < 5 ? 100 : $0)) })
        var seen: [Int64] = []
        var cursor: HistoryCursor?
        var page = 0
        repeat {
            let result = try store.query(HistoryQuery(limit: 7, cursor: cursor))
            seen += result.records.map(\.id)
            cursor = result.nextCursor
            // Newer calls arrive between pages.
            try store.insert(makeRecord([bob], minutes: 1000 + Double(page)))
            page += 1
        } while cursor != nil
        #expect(seen.count == 25)
        #expect(Set(seen).count == 25)
        let starts = try seen.map { try store.record(id: $0).startedAt }
        #expect(starts == starts.sorted(by: >))
        #expect(try store.count(HistoryQuery()) == 25 + page)
    }
}

@Suite("History store: long Recents runs")
struct LongRecentsRunTests {
    @Test("a long run of calls from one person is one line that keeps its newest records and counts the rest", arguments: StoreKind.allCases)
    func longRun(_ kind: StoreKind) throws {
        let fixture = try StoreFixture(kind)
        let store = fixture.store
        try store.insert(contentsOf: (0..<250).map { makeRecord([alice], status: .missed, minutes: Double($0)) })
        try store.insert(makeRecord([bob], minutes: 1000))
        try store.markRead(ids: [try store.query(HistoryQuery(handle: alice, limit: 1)).records[0].id])
        let lines = try store.recents(limit: 5)
        #expect(lines.map(\.count) == [1, 250])
        #expect(lines[1].records.count == RecentsEntry.keptRecords)
        #expect(lines[1].hasUnread)
        #expect(lines[1].latest.startedAt == base.addingTimeInterval(249 * 60))
    }
}
