import CallHistory
import ConversationKit
import Foundation
import Testing

/// A data directory filled by `parley demo --data-dir`, removed when the test is done.
final class DemoHistoryFixture {
    let directory: URL
    let demo: CLIRun

    init(repeats: Int = 1) throws {
        directory = try CLI.temporaryDirectory()
        demo = try CLI.run(["demo", "--data-dir", directory.path, "--repeat", String(repeats)])
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// `parley history ACTION ARGS… --data-dir DIR`.
    func history(_ arguments: String...) throws -> CLIRun {
        try CLI.run(["history"] + arguments + ["--data-dir", directory.path])
    }

    /// The records `parley history --json` returns.
    func page(_ arguments: String...) throws -> PageJSON {
        let run = try CLI.run(["history"] + arguments + ["--json", "--data-dir", directory.path])
        #expect(run.status == 0, "\(run.stderr)")
        return try PageJSON.decode(run.stdout)
    }

    /// The record whose first remote handle has this raw value.
    func record(_ value: String) throws -> CallRecord {
        try #require(try page().records.first { $0.remoteHandles.first?.handle.value == value })
    }

    /// The number `parley history count ARGS…` prints.
    func count(_ arguments: String...) throws -> Int? {
        let run = try CLI.run(["history", "count"] + arguments + ["--data-dir", directory.path])
        #expect(run.status == 0, "\(run.stderr)")
        return Int(run.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// `parley history --json` as a test reads it back.
struct PageJSON: Decodable {
    let records: [CallRecord]
    let nextCursor: String?

    static func decode(_ text: String) throws -> PageJSON {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(PageJSON.self, from: Data(text.utf8))
    }
}

/// The people of the demo story, by the raw handle value the history stores.
enum DemoValues {
    static let alice = "415-555-0100", bob = "Bob@Example.com ", carol = "+1 (650) 555-0199"
    static let dave = "sip:dave@127.0.0.1:5062", london = "+44 20 7946 0018"
}

/// `parley demo --data-dir` and `parley history`: what is recorded and every action on it.
@Suite("parley history")
struct HistoryCLITests {
    @Test("the demo records its five conversations with the story's statuses")
    func demoRecords() throws {
        let fixture = try DemoHistoryFixture()
        #expect(fixture.demo.status == 0, "\(fixture.demo.stderr)")
        #expect(fixture.demo.stdout.contains("A  incoming conversation with Alice Liddell: ringing"))
        #expect(fixture.demo.stdout.contains("D  recorded in the call history: #"))
        #expect(fixture.demo.stdout.contains("Look at it again: parley history --data-dir \(fixture.directory.path)"))
        #expect(fixture.demo.stdout.contains("Alice Liddell <415-555-0100>"))

        let page = try fixture.page()
        #expect(page.nextCursor == nil)
        #expect(page.records.count == 5)
        let statuses = Dictionary(uniqueKeysWithValues: page.records.map { ($0.remoteHandles[0].handle.value, $0.status) })
        #expect(statuses == [
            DemoValues.alice: .connected, DemoValues.bob: .connected, DemoValues.carol: .declined,
            DemoValues.dave: .missed, DemoValues.london: .failed,
        ])
        #expect(page.records.map(\.startedAt) == page.records.map(\.startedAt).sorted(by: >), "newest first")
        #expect(try fixture.record(DemoValues.alice).remoteHandles[0].handle.displayName == "Alice Liddell")
        #expect(try fixture.record(DemoValues.bob).direction == .outgoing)
        #expect(try fixture.record(DemoValues.dave).isRead == false)
        // The story ends now on the simulated clock.
        #expect(page.records.allSatisfy { abs($0.startedAt.timeIntervalSinceNow) < 600 })

        let table = try fixture.history()
        #expect(table.status == 0)
        #expect(table.stdout.contains("incoming   missed     sip:dave@127.0.0.1:5062"))
        #expect(table.stdout.contains("(* unread)"))
        #expect(!table.stdout.contains("more:"))
    }

    @Test("count, filters and dates")
    func countAndFilters() throws {
        let fixture = try DemoHistoryFixture()
        #expect(try fixture.count() == 5)
        #expect(try fixture.count("--status", "missed") == 1)
        #expect(try fixture.count("--status", "missed", "--unread") == 1)
        #expect(try fixture.count("--status", "connected,MISSED") == 3)
        #expect(try fixture.count("--direction", "outgoing") == 2)
        #expect(try fixture.count("--name", "liddell") == 1)
        #expect(try fixture.count("--handle", "+1 415 555 0100") == 1)
        #expect(try fixture.count("--handle", "bob@EXAMPLE.com") == 1)
        #expect(try fixture.count("--handle", "sip:dave@127.0.0.1:5062", "--kind", "generic") == 1)
        #expect(try fixture.count("--since", "-1h") == 5)
        #expect(try fixture.count("--until", "-1h") == 0)
        #expect(try fixture.count("--since", "2000-01-01", "--until", "-0m") == 5)
        let iso = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-3600))
        #expect(try fixture.count("--since", iso) == 5)
        #expect(try fixture.count("--until", "2000-01-01T00:00:00Z") == 0)
        #expect(try fixture.page("--status", "failed").records.map(\.remoteHandles[0].handle.value) == [DemoValues.london])
        #expect(try fixture.history("--name", "nobody").stdout.contains("no calls match"))
    }

    @Test("paging: a cursor line when more records match, and following it visits each record once")
    func paging() throws {
        let fixture = try DemoHistoryFixture(repeats: 3)
        #expect(fixture.demo.status == 0)
        let first = try fixture.history("--limit", "4")
        let more = try #require(first.stdout.split(separator: "\n").last.map(String.init))
        #expect(more.hasPrefix("more: parley history --limit 4 --data-dir \(fixture.directory.path) --cursor h1."))
        let words = more.dropFirst("more: parley ".count).split(separator: " ").map(String.init)
        let next = try CLI.run(words)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(next.stdout.contains("\nmore: parley history --limit 4"))
        #expect(next.stdout != first.stdout)

        var seen: [Int64] = []
        var cursor: String?
        repeat {
            let page = try cursor.map { try fixture.page("--limit", "4", "--cursor", $0) } ?? fixture.page("--limit", "4")
            seen += page.records.map(\.id)
            cursor = page.nextCursor
        } while cursor != nil && seen.count < 100
        #expect(seen.count == 15)
        #expect(Set(seen).count == 15)

        // A page that is exactly full and the last one has no cursor.
        #expect(try fixture.page("--limit", "15").nextCursor == nil)
        #expect(try !fixture.history("--limit", "15").stdout.contains("more:"))
        let second = try fixture.page("--limit", "10")
        let rest = try fixture.page("--limit", "5", "--cursor", try #require(second.nextCursor))
        #expect(rest.records.count == 5)
        #expect(rest.nextCursor == nil)
    }

    @Test("recents collapses repeated calls; show prints one record")
    func recentsAndShow() throws {
        let fixture = try DemoHistoryFixture()
        let recents = try fixture.history("recents")
        #expect(recents.status == 0)
        let lines = recents.stdout.split(separator: "\n")
        #expect(lines.count == 5)
        #expect(lines.first?.hasPrefix("+44 20 7946 0018") == true)
        #expect(recents.stdout.contains("Alice Liddell"))
        #expect(try fixture.history("recents", "--limit", "2").stdout.split(separator: "\n").count == 2)

        // Three missed calls from Alice in a row are one line.
        let store = try SQLiteCallHistory(path: fixture.directory.appending(path: "history.sqlite").path, access: .readWrite)
        for minute in 1...3 {
            let start = Date().addingTimeInterval(TimeInterval(minute * 60))
            try store.insert(CallRecord(
                uuid: UUID(), direction: .incoming,
                remoteHandles: [RecordedHandle(Handle(kind: .phoneNumber, value: "+14155550100", displayName: "Alice Liddell"), normalizer: .northAmerica)],
                status: .missed, endedReason: .unanswered, startedAt: start, endedAt: start.addingTimeInterval(20)))
        }
        let grouped = try fixture.history("recents", "--limit", "1")
        #expect(grouped.stdout.hasPrefix("Alice Liddell (3)  incoming  missed"), "\(grouped.stdout)")
        let json = try fixture.history("recents", "--json")
        #expect(json.stdout.contains("\"count\" : 3"))

        let dave = try fixture.record(DemoValues.dave)
        let show = try fixture.history("show", String(dave.id))
        #expect(show.status == 0)
        #expect(show.stdout.hasPrefix("record \(dave.id)"))
        #expect(show.stdout.contains(dave.uuid.uuidString))
        #expect(show.stdout.contains("missed (ended: unanswered)"))
        #expect(show.stdout.contains("no (unread)"))
        let showJSON = try fixture.history("show", String(dave.id), "--json")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        #expect(try decoder.decode(CallRecord.self, from: Data(showJSON.stdout.utf8)).uuid == dave.uuid)
    }

    @Test("the account a call went through: a table column only when a record on the page has one, a line of show, JSON")
    func account() throws {
        let fixture = try DemoHistoryFixture()
        let plain = try fixture.history()
        #expect(plain.status == 0)
        #expect(!plain.stdout.contains("account"), "the demo's calls went through no account: no column")
        #expect(try fixture.page().records.allSatisfy { $0.account == nil })
        #expect(try fixture.history("show", String(fixture.record(DemoValues.dave).id)).stdout.contains("  account       —\n"))

        let store = try SQLiteCallHistory(path: fixture.directory.appending(path: "history.sqlite").path, access: .readWrite)
        let start = Date().addingTimeInterval(60)
        let stored = try store.insert(CallRecord(
            uuid: UUID(), direction: .incoming,
            remoteHandles: [RecordedHandle(Handle(kind: .generic, value: "sip:erin@example.test"), normalizer: .northAmerica)],
            status: .missed, endedReason: .unanswered, startedAt: start, endedAt: start.addingTimeInterval(20),
            account: "sip:alice@example.test"))
        let table = try fixture.history()
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasSuffix("video  account") == true, "\(table.stdout)")
        let newest = try #require(lines.dropFirst().first)
        #expect(newest.contains("sip:erin@example.test") && newest.hasSuffix("  sip:alice@example.test"), "\(table.stdout)")
        #expect(lines.dropFirst(2).first?.hasSuffix("—") == true, "a record without one shows a dash: \(table.stdout)")
        #expect(try fixture.history("--limit", "1").stdout.contains("account"))
        #expect(try !fixture.history("--status", "failed").stdout.contains("account"), "a page without accounts has no column")
        let show = try fixture.history("show", String(stored.id))
        #expect(show.stdout.contains("  account       sip:alice@example.test\n"), "\(show.stdout)")
        #expect(try fixture.page("--limit", "1").records.first?.account == "sip:alice@example.test")
        let json = try fixture.history("show", String(stored.id), "--json")
        #expect(json.stdout.contains(#""account" : "sip:alice@example.test""#), "\(json.stdout)")
    }

    @Test("how a call's media was protected: a table column only when a record on the page has one, a line of show, JSON")
    func encryption() throws {
        let fixture = try DemoHistoryFixture()
        let plain = try fixture.history()
        #expect(plain.status == 0)
        #expect(!plain.stdout.contains("encryption"), "the demo's calls were plain: no column")
        #expect(try fixture.page().records.allSatisfy { $0.encryption == nil })
        #expect(try fixture.history("show", String(fixture.record(DemoValues.dave).id)).stdout.contains("  encryption    —\n"))

        let store = try SQLiteCallHistory(path: fixture.directory.appending(path: "history.sqlite").path, access: .readWrite)
        let start = Date().addingTimeInterval(60)
        let erin = [RecordedHandle(Handle(kind: .generic, value: "sip:erin@example.test"), normalizer: .northAmerica)]
        let stored = try store.insert(CallRecord(
            uuid: UUID(), direction: .outgoing, remoteHandles: erin, status: .connected, endedReason: .localEnded,
            startedAt: start, connectedAt: start.addingTimeInterval(2), endedAt: start.addingTimeInterval(20),
            encryption: "sdes"))
        let table = try fixture.history()
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasSuffix("video  encryption") == true, "\(table.stdout)")
        let newest = try #require(lines.dropFirst().first)
        #expect(newest.contains("sip:erin@example.test") && newest.hasSuffix("  sdes"), "\(table.stdout)")
        #expect(lines.dropFirst(2).first?.hasSuffix("—") == true, "a plain call shows a dash: \(table.stdout)")
        #expect(try !fixture.history("--status", "failed").stdout.contains("encryption"), "a page of plain calls has no column")
        let show = try fixture.history("show", String(stored.id))
        #expect(show.stdout.contains("  encryption    sdes\n"), "\(show.stdout)")
        #expect(try fixture.page("--limit", "1").records.first?.encryption == "sdes")
        let json = try fixture.history("show", String(stored.id), "--json")
        #expect(json.stdout.contains(#""encryption" : "sdes""#), "\(json.stdout)")

        // With an account on the page too: encryption, then account.
        try store.insert(CallRecord(
            uuid: UUID(), direction: .incoming, remoteHandles: erin, status: .missed, endedReason: .unanswered,
            startedAt: start.addingTimeInterval(60), endedAt: start.addingTimeInterval(80), account: "sip:alice@example.test"))
        let both = try fixture.history().stdout.split(separator: "\n").map(String.init)
        #expect(both.first?.hasSuffix("video  encryption  account") == true, "\(both)")
        #expect(both.dropFirst().first?.hasSuffix("—           sip:alice@example.test") == true, "\(both)")
        #expect(both.dropFirst(2).first?.hasSuffix("sdes        —") == true, "\(both)")
    }

    @Test("mark-read, delete and clear change what is stored")
    func markDeleteClear() throws {
        let fixture = try DemoHistoryFixture()
        let dave = try fixture.record(DemoValues.dave)
        #expect(try fixture.count("--unread") == 1)
        let mark = try fixture.history("mark-read", String(dave.id))
        #expect(mark.status == 0)
        #expect(mark.stdout.contains("marked 1 record read"))
        #expect(try fixture.count("--unread") == 0)
        #expect(try fixture.history("mark-read", "--all").stdout.contains("marked 0 records read"))

        let carol = try fixture.record(DemoValues.carol)
        let delete = try fixture.history("delete", String(carol.id))
        #expect(delete.status == 0)
        #expect(delete.stdout.contains("deleted record \(carol.id)"))
        #expect(try fixture.count() == 4)
        let again = try fixture.history("delete", String(carol.id))
        #expect(again.status == 1)
        #expect(again.stderr.contains("no call-history record \(carol.id)"))

        // Bob's call ended first of those left; 5 s later nothing else had ended.
        let bob = try fixture.record(DemoValues.bob)
        let cutoff = ISO8601DateFormatter().string(from: bob.endedAt.addingTimeInterval(5))
        let clear = try fixture.history("clear", "--before", cutoff)
        #expect(clear.status == 0, "\(clear.stderr)")
        #expect(clear.stdout.contains("deleted 1 record that ended before"))
        #expect(try fixture.count() == 3)
        #expect(try fixture.history("clear", "--before", "-1w").stdout.contains("deleted 0 records"))
        #expect(try fixture.history("clear", "--before", "2999-01-01").stdout.contains("deleted 3 records"))
        #expect(try fixture.history().stdout.contains("no calls match"))
        let check = try fixture.history("check")
        #expect(check.status == 0)
        #expect(check.stdout.contains("ok:"))
    }

    @Test("redial without a running parleyd dials nothing and exits 1, saying so; --dry-run shows the Start action (exit 0)")
    func redial() throws {
        let fixture = try DemoHistoryFixture()
        let alice = try fixture.record(DemoValues.alice)
        let directory = fixture.directory.path
        for command in [["redial"], ["history", "redial"]] {
            let refused = try CLI.run(command + [String(alice.id), "--data-dir", directory])
            #expect(refused.status == 1, "\(command): \(refused.stdout)")
            #expect(refused.stdout.isEmpty)
            #expect(refused.stderr == "parley \(command[0]): no parleyd is running on the data directory \(directory), so nothing "
                + "was dialled: start one with 'parleyd --data-dir \(directory)', or add --dry-run to only show the call.\n")
        }
        let run = try CLI.run(["redial", String(alice.id), "--dry-run", "--data-dir", directory])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("would perform: start(phoneNumber:415-555-0100 (Alice Liddell))"))
        #expect(run.stdout.contains("handle  phoneNumber 415-555-0100 (Alice Liddell)"))
        #expect(run.stdout.contains("video   no"))
        #expect(run.stdout.contains("Nothing was dialled (--dry-run)."))
        #expect(try fixture.history("redial", String(alice.id), "--dry-run").stdout == run.stdout)
        #expect(try CLI.run("redial", "--help").stdout.contains("its control API performs the Start action"))
        let unknown = try CLI.run(["redial", "999", "--dry-run", "--data-dir", directory])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no call-history record 999"))
    }
}

/// What the network says is shown, not obeyed; handle kinds are guessed from how values look.
@Suite("parley history: untrusted text and handle forms")
struct HistoryInputTests {
    @Test("a display name with terminal escapes is printed escaped")
    func escapes() throws {
        let fixture = try DemoHistoryFixture()
        let store = try SQLiteCallHistory(path: fixture.directory.appending(path: "history.sqlite").path, access: .readWrite)
        let sneaky = Handle(kind: .generic, value: "sip:x@h", displayName: "Evil\u{1b}[2J\nName")
        let now = Date()
        try store.insert(CallRecord(
            uuid: UUID(), direction: .incoming, remoteHandles: [RecordedHandle(sneaky, normalizer: .northAmerica)],
            status: .missed, endedReason: .unanswered, startedAt: now, endedAt: now))
        for run in [try fixture.history("list"), try fixture.history("recents")] {
            #expect(run.status == 0)
            #expect(!run.stdout.contains("\u{1b}"))
            #expect(run.stdout.contains("Evil\\u{1b}[2J\\u{a}Name"))
        }
    }

    @Test("tel: URIs and plain numbers are phone numbers; names are generic")
    func guessedKinds() throws {
        let fixture = try DemoHistoryFixture()
        #expect(try fixture.count("--handle", "tel:+1-415-555-0100") == 1)
        #expect(try fixture.count("--handle", "(415) 555-0100") == 1)
        #expect(try fixture.count("--handle", "alice") == 0)
        #expect(try fixture.count("--handle", "mailto:BOB@example.com") == 1)
    }
}

/// `--json` on every history action, for scripts and frontends.
@Suite("parley history --json")
struct HistoryJSONTests {
    func object(_ run: CLIRun) throws -> [String: Any] {
        #expect(run.status == 0, "\(run.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
    }

    @Test("count, redial, mark-read, check, delete and clear speak JSON")
    func actions() throws {
        let fixture = try DemoHistoryFixture()
        #expect(try object(fixture.history("count", "--status", "missed", "--json"))["count"] as? Int == 1)
        let alice = try fixture.record(DemoValues.alice)
        let redial = try object(fixture.history("redial", String(alice.id), "--dry-run", "--json"))
        let action = try #require(redial["action"] as? [String: Any])
        #expect(action["kind"] as? String == "start")
        #expect((action["handles"] as? [[String: Any]])?.first?["value"] as? String == DemoValues.alice)
        #expect(try object(fixture.history("mark-read", "--all", "--json"))["changed"] as? Int == 1)
        let check = try object(fixture.history("check", "--json"))
        #expect(check["ok"] as? Bool == true)
        #expect(check["records"] as? Int == 5)
        #expect(try object(fixture.history("delete", String(alice.id), "--json"))["deleted"] as? [Int] == [Int(alice.id)])
        #expect(try object(fixture.history("clear", "--before", "2100-01-01", "--json"))["deleted"] as? Int == 4)
    }
}
