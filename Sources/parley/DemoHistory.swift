import CallHistory
import ConversationKit
import Foundation
import Synchronization

/// The demo's call history: a ``HistoryRecorder`` on `DIR/history.sqlite` that records every conversation as
/// it reaches `left`, naming parties the way the demo shows them (from its contact book).
final class DemoHistory: Sendable {
    /// The data directory.
    let directory: String
    /// The database inside it.
    let store: SQLiteCallHistory
    /// Whether only `recorded <uuid> <status>` lines are printed.
    let quiet: Bool
    private let recorder: HistoryRecorder
    /// The conversations recorded so far, and how many could not be.
    private struct State {
        var recorded: Set<UUID> = []
        var failures = 0
    }
    private let state = Mutex(State())

    /// Opens (creating it and its directory if needed) the history in `directory`.
    init(directory: String, configuration: ConversationManager.Configuration, contacts: ContactDirectory, quiet: Bool) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        self.quiet = quiet
        store = try SQLiteCallHistory(
            path: (directory as NSString).appendingPathComponent(HistoryLocation.fileName),
            normalizer: configuration.handleNormalizer)
        recorder = HistoryRecorder(store: store, configuration: configuration, contacts: ContactBook(contacts))
    }

    /// A fresh temporary data directory.
    static func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-demo-\(UUID().uuidString.prefix(8).lowercased())").path
    }

    /// How many conversations could not be recorded.
    var failures: Int { state.withLock { $0.failures } }

    /// The delegate's `conversationChanged` hook: stores `conversation` once it has reached `left` (durably,
    /// before returning) and says so — in quiet mode as `recorded <uuid> <status>`, flushed at once.
    func conversationChanged(_ conversation: Conversation, printer: DemoPrinter) {
        guard conversation.state == .left, !state.withLock({ $0.recorded.contains(conversation.uuid) }) else { return }
        do {
            guard let record = try recorder.conversationChanged(conversation) else { return }
            state.withLock { _ = $0.recorded.insert(conversation.uuid) }
            if quiet {
                print("recorded \(record.uuid.uuidString) \(record.status)")
                flushOutput()
            } else {
                printer.line(conversation.uuid, "recorded in the call history: #\(record.id) \(record.status)")
            }
        } catch {
            state.withLock { $0.failures += 1 }
            if quiet {
                printError("parley demo: could not record \(conversation.uuid): \(error)")
            } else {
                printer.line(conversation.uuid, "could not record in the call history: \(error)")
            }
        }
    }

    /// The table `parley history --data-dir DIR` prints, and the command to see it again.
    func summary() throws -> String {
        let page = try ShownPage.fetch(HistoryQuery(), from: store)
        let again = ["parley", "history", "--data-dir", directory].map(HistoryCommand.shellQuoted).joined(separator: " ")
        let table = HistoryRendering.table(page) { cursor in "\(again) --cursor \(cursor)" }
        return "\nCall history (\(store.path)):\n\(table)\n\nLook at it again: \(again)"
    }
}
