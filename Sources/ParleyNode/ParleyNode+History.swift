import CallHistory
import ControlProtocol
import Foundation
import ParleyControl
import ParleyEngine
import PostgresHistory

extension ParleyNode {
    /// The node's history: nil when nothing is recorded, the shared PostgreSQL database when one is configured, else
    /// the SQLite file in the data directory. A database that cannot be reached at start is an error: the node does
    /// not start without the history it was told to keep.
    static func openHistory(_ configuration: NodeConfiguration) throws -> (any CallHistoryStore)? {
        guard configuration.recordsHistory else { return nil }
        let normalizer = configuration.manager.handleNormalizer
        if let database = configuration.historyDatabase {
            do {
                return try PostgresCallHistory(
                    connection: database, account: configuration.effectiveHistoryAccount, normalizer: normalizer)
            } catch {
                throw NodeError("call history: \(error)")
            }
        }
        if let tightened = try configuration.dataDirectory.create() { configuration.log.info(tightened) }
        return try SQLiteCallHistory(path: configuration.dataDirectory.historyPath, normalizer: normalizer)
    }

    /// The journal of live calls in the data directory (with a history only), after the calls a crash left in it are
    /// recorded as `crashed`; nil when another parleyd sharing the data directory holds it (that one journals its own
    /// calls; this one's are not journaled). A history that cannot take the recovered records is an error, and the
    /// journal is left for the next start.
    static func openJournal(
        _ configuration: NodeConfiguration, _ history: (any CallHistoryStore)?
    ) throws -> LiveCallJournal? {
        guard let history else { return nil }
        let log = configuration.log
        if let tightened = try configuration.dataDirectory.create() { log.info(tightened) }
        let path = configuration.dataDirectory.journalPath
        do {
            guard let journal = try LiveCallJournal.open(at: path) else {
                log.info("live-call journal \(path) is held by another parleyd: this one's calls are not journaled")
                return nil
            }
            let (recovered, unreadable) = try journal.recover(into: history, now: Date())
            if unreadable > 0 { log.info("live-call journal: \(unreadable) line(s) cut short by the crash were skipped") }
            // A call whose own record was stored before the crash keeps it (the store returns that one): only the
            // calls recorded now are said to be.
            for record in recovered where record.endedReason == .crashed {
                log.info("conversation \(record.uuid) was live when parleyd stopped without ending it: recorded as crashed "
                    + "(\(record.status), ended \(ISO8601DateFormatter().string(from: record.endedAt)))")
            }
            return journal
        } catch {
            throw NodeError("live-call journal: \(error)")
        }
    }

    /// Where the history is, for the start-up line.
    static func describe(_ history: any CallHistoryStore) -> String {
        switch history {
        case let file as SQLiteCallHistory: file.path
        case let shared as PostgresCallHistory: "\(shared.server) account \(shared.account)"
        default: "\(type(of: history))"
        }
    }

    /// For a shared database: a listener that turns other instances' changes into `historyChanged` events for this
    /// node's frontends (nil for the SQLite file, or without a control API).
    static func listenForOtherInstances(
        _ history: (any CallHistoryStore)?, _ service: ControlService?, log: EngineLog
    ) throws -> PostgresHistoryListener? {
        guard let shared = history as? PostgresCallHistory, let service else { return nil }
        return try PostgresHistoryListener(for: shared, log: { log.info($0) }) { note in
            for change in events(for: note) { service.publish(change) }
        }
    }

    /// The protocol's events for one notification: one `inserted` per record (each names its conversation, as for
    /// this node's own calls), one `read` or `deleted` for all.
    static func events(for note: HistoryNotification) -> [HistoryChanged] {
        guard note.change == "inserted" else { return [HistoryChanged(change: note.change, records: note.records)] }
        return zip(note.records, note.conversations).map { record, uuid in
            HistoryChanged(change: "inserted", records: [record], conversation: uuid.uuidString)
        }
    }
}
