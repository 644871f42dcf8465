@testable import CallHistory
import PostgresHistory
import ConversationKit
import Foundation
import Testing

/// A temporary folder with a history database in it; removed on deinit.
final class TemporaryHistory {
    let directory: URL
    var path: String { directory.appending(path: "history.sqlite").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "parley-history-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func open(durability: SQLiteCallHistory.Durability = .normal) throws -> SQLiteCallHistory {
        try SQLiteCallHistory(path: path, durability: durability)
    }
}

let base = Date(timeIntervalSince1970: 1_780_000_000)

/// A record built by hand: `minutes` after `base`, lasting `talk` seconds when connected.
func makeRecord(
    _ handles: [Handle], direction: Conversation.Direction = .incoming, status: CallStatus = .connected,
    minutes: Double = 0, talk: TimeInterval = 60, video: Bool = false, group: UUID? = nil, callID: String? = nil
) -> CallRecord {
    let start = base.addingTimeInterval(minutes * 60)
    let connected = status == .connected ? start.addingTimeInterval(5) : nil
    let reason: Conversation.EndedReason =
        switch status {
        case .connected: .remoteEnded
        case .missed: .unanswered
        case .declined: direction == .incoming ? .localEnded : .declined
        case .blocked, .doNotDisturb: .localEnded
        case .busy: .busy
        case .cancelled: .localEnded
        case .failed: .failed
        case .answeredElsewhere: .joinedElsewhere
        case .declinedElsewhere: .declinedElsewhere
        case .forwarded: .forwarded
        }
    return CallRecord(
        uuid: UUID(), direction: direction,
        remoteHandles: handles.map { RecordedHandle($0, normalizer: .northAmerica) },
        localHandle: Handle(kind: .phoneNumber, value: "+14155559999", displayName: "Me"),
        status: status, endedReason: reason, startedAt: start, connectedAt: connected,
        endedAt: (connected ?? start).addingTimeInterval(status == .connected ? talk : 20), isVideo: video,
        groupUUID: group, callID: callID)
}

let alice = Handle(kind: .phoneNumber, value: "4155550100", displayName: "Alice Liddell")
let bob = Handle(kind: .emailAddress, value: "Bob@Example.com", displayName: "Bob Builder")
let carol = Handle(kind: .generic, value: "sip:carol@127.0.0.1", displayName: "Carol")

/// The stores the shared history suite runs against.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// The embedded default, in a temporary file.
    case sqlite
    /// The shared server store, in the database `PARLEY_TEST_PG` names, under an account of its own.
    case postgresql

    var testDescription: String { rawValue }
}

/// Why a PostgreSQL test cannot run: it fails, never skips.
struct MissingTestDatabase: Error, CustomStringConvertible {
    var description: String {
        "PARLEY_TEST_PG is not set: Scripts/test starts a PostgreSQL cluster (Scripts/postgres-cluster start DIR) and exports its connection string"
    }
}

/// The connection string of the test database.
func testDatabase() throws -> String {
    guard let conninfo = ProcessInfo.processInfo.environment["PARLEY_TEST_PG"], !conninfo.isEmpty else {
        throw MissingTestDatabase()
    }
    return conninfo
}

/// A fresh, empty store of one kind: a new file, or a new account in the shared test database (accounts see only their
/// own rows, so tests running at once never meet).
final class StoreFixture {
    let store: any CallHistoryStore
    private let temporary: TemporaryHistory?

    init(_ kind: StoreKind) throws {
        switch kind {
        case .sqlite:
            let temporary = try TemporaryHistory()
            self.temporary = temporary
            store = try temporary.open()
        case .postgresql:
            temporary = nil
            store = try PostgresCallHistory(connection: try testDatabase(), account: "sip:test-\(UUID().uuidString)@127.0.0.1")
        }
    }
}
