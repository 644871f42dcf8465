import CallHistory
import CommandLineSupport
import Foundation
import ParleyNode
import PostgresHistory

/// Where the call history lives: `--db FILE`, or `--data-dir DIR` (the file `DIR/history.sqlite`), else the
/// default data directory: `$PARLEY_DATA_DIR`, else `$XDG_DATA_HOME/parley`, else `~/.local/share/parley`. Or a
/// PostgreSQL database that several parleyd share: `--db CONNINFO --account AOR`.
struct HistoryLocation: Sendable, Equatable {
    /// The database file's name inside a data directory.
    static let fileName = DataDirectory.historyFileName

    /// The database file.
    let path: String
    /// How the path was chosen, for error messages (`--db`, `--data-dir`, `$PARLEY_DATA_DIR`…).
    let source: String
    /// For a PostgreSQL database (then `path` is its connection string): the account whose lines are read.
    var account: String? = nil

    /// The default data directory and the setting it came from.
    static func defaultDataDirectory(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> (path: String, source: String) {
        let directory = DataDirectory.resolve(environment: environment)
        return (directory.path, directory.source)
    }

    /// Takes `--db` and `--data-dir` out of `arguments` (they exclude each other).
    static func take(from arguments: inout Arguments) throws(UsageError) -> HistoryLocation {
        let db = try arguments.option("--db")
        let dataDir = try arguments.option("--data-dir")
        let account = try arguments.option("--account")
        if let db, PostgresCallHistory.isConnectionString(db) {
            guard dataDir == nil else { throw UsageError("give --db CONNINFO or --data-dir DIR, not both") }
            guard let account, !account.isEmpty else {
                throw UsageError("--db with a PostgreSQL connection string needs --account AOR: whose lines to read (e.g. sip:alice@example.com)")
            }
            return HistoryLocation(path: db, source: "--db", account: account)
        }
        guard account == nil else { throw UsageError("--account goes with --db CONNINFO, a PostgreSQL database") }
        switch (db, dataDir) {
        case (.some, .some): throw UsageError("give --db FILE or --data-dir DIR, not both")
        case (.some(let file), nil):
            guard !file.isEmpty else { throw UsageError("--db needs a file name") }
            return HistoryLocation(path: file, source: "--db")
        case (nil, .some(let dir)):
            guard !dir.isEmpty else { throw UsageError("--data-dir needs a directory") }
            return HistoryLocation(path: (dir as NSString).appendingPathComponent(fileName), source: "--data-dir")
        case (nil, nil):
            let (dir, source) = defaultDataDirectory()
            return HistoryLocation(path: (dir as NSString).appendingPathComponent(fileName), source: source)
        }
    }

    /// Opens the existing history, read-only unless `writable`; never creates one (a PostgreSQL database without a
    /// history, or with an older one, is refused untouched). A missing file is a ``HistoryLocationError``.
    func open(writable: Bool = false) throws -> any CallHistoryStore {
        if let account { return try PostgresCallHistory(connection: path, account: account, creatingSchema: false) }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw HistoryLocationError.missing(path: path, source: source)
        }
        guard !isDirectory.boolValue else { throw HistoryLocationError.directory(path: path) }
        // SQLite would take an empty file for an empty database and write a schema into it.
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue
        guard size != 0 else { throw HistoryLocationError.empty(path: path) }
        return try SQLiteCallHistory(path: path, access: writable ? .readWrite : .readOnly)
    }

    /// Where the history is and its schema version, for `parley history check`.
    static func describe(_ store: any CallHistoryStore) throws -> (where: String, schemaVersion: Int) {
        switch store {
        case let file as SQLiteCallHistory: (file.path, try file.schemaVersion)
        case let shared as PostgresCallHistory: ("\(shared.server) account \(shared.account)", try shared.schemaVersion)
        default: ("\(type(of: store))", 0)
        }
    }
}

/// Why the call history file could not be found.
enum HistoryLocationError: Error, CustomStringConvertible {
    /// Nothing at the path.
    case missing(path: String, source: String)
    /// The path is a directory.
    case directory(path: String)
    /// The file is empty: no history was ever written to it.
    case empty(path: String)

    /// The error in words, with where Parley looked and how history gets written.
    var description: String {
        switch self {
        case .missing(let path, let source):
            """
            no call history at \(path) (from \(source)).
            History is written as conversations end: by the Parley daemon, or by 'parley demo --data-dir DIR'.
            Point at another one with --data-dir DIR or --db FILE (default: $PARLEY_DATA_DIR, else \
            $XDG_DATA_HOME/parley, else ~/.local/share/parley).
            """
        case .empty(let path):
            "\(path) is empty: no call history has been written to it (history is written as conversations end)"
        case .directory(let path):
            "\(path) is a directory, not a call-history database; give --data-dir for a data directory"
        }
    }
}
