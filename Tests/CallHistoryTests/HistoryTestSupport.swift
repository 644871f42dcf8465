@testable import CallHistory
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
        case .blocked: .localEnded
        case .busy: .busy
        case .cancelled: .localEnded
        case .failed: .failed
        case .answeredElsewhere: .joinedElsewhere
        case .declinedElsewhere: .declinedElsewhere
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
