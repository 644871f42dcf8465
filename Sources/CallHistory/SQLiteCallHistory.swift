import ConversationKit
import Foundation
import Glibc
import Synchronization

/// The call history in an embedded SQLite database (WAL mode, versioned schema, prepared statements).
/// Safe to use from any thread; several stores (and processes) may open the same file: one writes at a
/// time, readers never block.
public final class SQLiteCallHistory: CallHistoryStore {
    /// How hard a commit works to survive crashes.
    public enum Durability: Sendable {
        /// Every commit is fsynced: survives a process kill and a power loss (the default).
        case full
        /// Survives a process kill; the last commits may be lost on power loss. Faster.
        case normal
    }

    /// How a store may use its file.
    public enum Access: Sendable {
        /// Create the file if missing; migrate an older schema (parleyd, the demo).
        case create
        /// The file must exist; migrate an older schema.
        case readWrite
        /// The file must exist and be at the current schema; nothing is ever written (frontends, the CLI, a
        /// read-only mount).
        case readOnly
    }

    /// The database file.
    public let path: String
    /// How handles are normalised when stored and queried: the rules the database was created with (kept in it),
    /// so every process that opens it matches the same way.
    public let normalizer: HandleNormalizer
    let connection: Mutex<SQLiteConnection>
    /// How records are read: from an older file (read-only, so never migrated) without the columns it lacks.
    let dialect: SQLDialect

    /// Opens the history at `path`. A new database keeps `normalizer`'s rules; an existing one keeps its own. A
    /// file that is not a usable database, or one from a newer Parley, is a clear error — never overwritten.
    public init(
        path: String, normalizer: HandleNormalizer = .northAmerica, durability: Durability = .full,
        access: Access = .create
    ) throws(CallHistoryError) {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        if isDirectory.boolValue { throw .cannotOpen(path: path, detail: "it is a directory") }
        if !exists && access != .create { throw .cannotOpen(path: path, detail: "no such file") }
        if !exists { try Self.createPrivate(path) }
        let connection = try SQLiteConnection(path: path, access: access)
        switch access {
        case .create, .readWrite:
            // The first statement reads the header: this is where a file that is not a database fails. Then
            // nothing is written to a SQLite file that is not ours.
            try HistorySchema.checkOwnership(connection)
            try Self.tighten(path)
            if access == .readWrite, try HistorySchema.version(of: connection) == 0 {
                throw .cannotOpen(path: path, detail: "it holds no call history")
            }
            try connection.switchToWAL()
            switch durability {
            case .full: try connection.execute("PRAGMA synchronous = FULL")
            case .normal: try connection.execute("PRAGMA synchronous = NORMAL")
            }
            try connection.execute("PRAGMA foreign_keys = ON")
            // A 16 MiB page cache: the uuid and handle indexes take random inserts.
            try connection.execute("PRAGMA cache_size = -16384")
            try HistorySchema.migrate(connection)
            self.normalizer = try HistorySchema.normalizer(in: connection, default: normalizer)
            self.dialect = .sqlite
        case .readOnly:
            try HistorySchema.checkOwnership(connection)
            let version = try HistorySchema.version(of: connection)
            guard version >= HistorySchema.oldestReadableVersion else {
                throw .cannotOpen(
                    path: path,
                    detail: version == 0
                        ? "it holds no call history"
                        : "schema version \(version) must be upgraded first; open it read-write once (parleyd does)")
            }
            self.normalizer = try HistorySchema.storedNormalizer(in: connection) ?? normalizer
            // Read as the file is now: should a parleyd migrate it meanwhile, this store still reads the older columns.
            self.dialect = .sqlite(version: version)
        }
        self.path = path
        self.connection = Mutex(connection)
    }

    /// Runs `body` on the connection under the lock and leaves no statement mid-result.
    func use<T>(_ body: (SQLiteConnection) throws(CallHistoryError) -> T) throws(CallHistoryError) -> T {
        try connection.withLock { connection throws(CallHistoryError) in
            defer { connection.finishStatements() }
            return try body(connection)
        }
    }

    /// The schema version of the open database.
    public var schemaVersion: Int {
        get throws(CallHistoryError) {
            try use { connection throws(CallHistoryError) in
                Int(try connection.integer("PRAGMA user_version"))
            }
        }
    }

    /// Runs SQLite's own consistency check; returns its complaints (empty when the database is sound).
    public func check() throws(CallHistoryError) -> [String] {
        try use { connection throws(CallHistoryError) in
            let statement = try connection.statement("PRAGMA quick_check")
            var problems: [String] = []
            while try statement.step() {
                let line = statement.text(0)
                if line != "ok" { problems.append(line) }
            }
            return problems
        }
    }

    // MARK: Writing

    @discardableResult
    public func insert(_ record: CallRecord) throws(CallHistoryError) -> CallRecord {
        try use { connection throws(CallHistoryError) in
            try connection.transaction { () throws(CallHistoryError) in
                let id = try RecordWriter.insertOrFind(record, in: connection, normalizer: normalizer).id
                guard let stored = try RecordReader.record(id: id, in: connection) else {
                    throw .database(code: 0, detail: "record \(id) vanished inside its own transaction")
                }
                return stored
            }
        }
    }

    @discardableResult
    public func insert(contentsOf records: [CallRecord]) throws(CallHistoryError) -> Int {
        try insertAll(records).added
    }

    public func insertReturningRecords(_ records: [CallRecord]) throws(CallHistoryError) -> [CallRecord] {
        try insertAll(records).stored
    }

    /// One transaction: each record not there yet is inserted; every record comes back with its id.
    private func insertAll(_ records: [CallRecord]) throws(CallHistoryError) -> (stored: [CallRecord], added: Int) {
        try use { connection throws(CallHistoryError) in
            try connection.transaction { () throws(CallHistoryError) in
                var stored: [CallRecord] = []
                stored.reserveCapacity(records.count)
                var added = 0
                for var record in records {
                    let (id, isNew) = try RecordWriter.insertOrFind(record, in: connection, normalizer: normalizer)
                    record.id = id
                    if isNew { added += 1 }
                    stored.append(record)
                }
                return (stored, added)
            }
        }
    }

    @discardableResult
    public func markRead(ids: [Int64]) throws(CallHistoryError) -> Int {
        try use { connection throws(CallHistoryError) in
            try connection.transaction { () throws(CallHistoryError) in
                var changed = 0
                for id in ids {
                    guard try RecordReader.exists(id: id, in: connection) else { throw .unknownRecord(id) }
                    let statement = try connection.statement("UPDATE conversation SET is_read = 1 WHERE id = ? AND is_read = 0")
                    statement.bind(id, at: 1)
                    try statement.run()
                    changed += connection.changes
                }
                return changed
            }
        }
    }

    @discardableResult
    public func markAllRead() throws(CallHistoryError) -> Int {
        try use { connection throws(CallHistoryError) in
            try connection.statement("UPDATE conversation SET is_read = 1 WHERE is_read = 0").run()
            return connection.changes
        }
    }

    public func delete(id: Int64) throws(CallHistoryError) {
        try use { connection throws(CallHistoryError) in
            let statement = try connection.statement("DELETE FROM conversation WHERE id = ?")
            statement.bind(id, at: 1)
            try statement.run()
            guard connection.changes == 1 else { throw .unknownRecord(id) }
        }
    }

    @discardableResult
    public func deleteAll(endedBefore date: Date) throws(CallHistoryError) -> Int {
        try deleteInBatches(endedBefore: date) { seconds throws(CallHistoryError) in
            try use { connection throws(CallHistoryError) in
                try connection.transaction { () throws(CallHistoryError) in
                    let statement = try connection.statement(
                        fixed: "DELETE FROM conversation WHERE id IN (SELECT id FROM conversation WHERE ended_at < ? LIMIT 1000)")
                    statement.bind(seconds, at: 1)
                    try statement.run()
                    return connection.changes
                }
            }
        }
    }

    // MARK: Reading

    public func record(id: Int64) throws(CallHistoryError) -> CallRecord {
        try use { connection throws(CallHistoryError) in
            guard let record = try RecordReader.record(id: id, in: connection, dialect: dialect) else {
                throw .unknownRecord(id)
            }
            return record
        }
    }

    public func record(uuid: UUID) throws(CallHistoryError) -> CallRecord? {
        try use { connection throws(CallHistoryError) in
            try RecordReader.record(uuid: uuid, in: connection, dialect: dialect)
        }
    }

    public func query(_ query: HistoryQuery) throws(CallHistoryError) -> HistoryPage {
        let sql = try QueryBuilder(query, normalizer: normalizer, counting: false, dialect: dialect)
        return try use { connection throws(CallHistoryError) in
            try connection.read { () throws(CallHistoryError) in
                let statement = try connection.statement(sql.text)
                statement.bind(all: sql.values)
                // The builder asks for one row more than the page: it tells whether another page follows.
                var records: [CallRecord] = []
                var more = false
                while try statement.step() {
                    guard records.count < query.limit else {
                        more = true
                        break
                    }
                    records.append(try RecordReader.record(from: statement, in: connection))
                }
                let next = more ? records.last.map { HistoryCursor(startedAt: $0.startedAt, id: $0.id) } : nil
                return HistoryPage(records: records, nextCursor: next)
            }
        }
    }

    public func count(_ query: HistoryQuery) throws(CallHistoryError) -> Int {
        let sql = try QueryBuilder(query, normalizer: normalizer, counting: true, dialect: dialect)
        return try use { connection throws(CallHistoryError) in
            let statement = try connection.statement(sql.text)
            statement.bind(all: sql.values)
            guard try statement.step() else { return 0 }
            return statement.int(0)
        }
    }

    public func recents(limit: Int) throws(CallHistoryError) -> [RecentsEntry] {
        try recentsByPaging(limit: limit, normalizer: normalizer)
    }
}

extension SQLiteCallHistory {
    /// A new database file is created 0600 before SQLite opens it, whatever the umask (SQLite gives its -wal and
    /// -shm files the database file's mode).
    static func createPrivate(_ path: String) throws(CallHistoryError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 || errno == EEXIST else { throw .cannotOpen(path: path, detail: String(cString: strerror(errno))) }
        if fd >= 0 { close(fd) }
    }

    /// An existing history (ours: checked first) and its -wal and -shm that others may read are made 0600. A symbolic
    /// link is not followed (someone who could plant one must not get its target's mode changed), and a file owned by
    /// another user is left alone.
    static func tighten(_ path: String) throws(CallHistoryError) {
        for file in [path, path + "-wal", path + "-shm"] {
            var status = stat()
            guard lstat(file, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_uid == geteuid(),
                status.st_mode & 0o077 != 0
            else { continue }
            guard chmod(file, 0o600) == 0 else {
                throw .cannotOpen(path: file, detail: "others may read it and it cannot be made private: \(String(cString: strerror(errno)))")
            }
        }
    }
}
