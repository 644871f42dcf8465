import CallHistory
import ConversationKit
import Foundation
import Synchronization

/// The call history in a PostgreSQL database that many parleyd share: each store reads and writes the rows of one
/// account (an address of record), with the SQLite store's semantics — idempotent insert by conversation uuid, the
/// same cursors, the same Recents lines. A batch is one pipelined round trip and one transaction (group commit).
/// Every change is announced on `LISTEN parley_history` (see ``PostgresHistoryListener``).
///
/// Safe to use from any thread (one session, under a lock). When the server goes away, calls fail with
/// `CallHistoryError.unavailable` and the next call reconnects.
public final class PostgresCallHistory: CallHistoryStore {
    /// The account whose rows this store sees.
    public let account: String
    /// How handles are normalised: the rules the database was created with (kept in it).
    public let normalizer: HandleNormalizer
    /// The server and database, for messages (no password).
    public let server: String
    /// This store's name on the server (`application_name`), which its own change notifications carry.
    public let source: String
    /// The connection string it was opened with.
    let conninfo: String
    private let connection: Mutex<PostgresConnection>
    /// How its queries are written: this account's rows, each call's account read from `call_account` and its
    /// encryption from `encryption` (NULL in an older database a CLI opened without migrating it).
    private let dialect: SQLDialect
    /// Records per insert statement (one JSON array each; a notification payload covers at most 100 of them).
    public static let batchSize = 200

    /// Whether `text` names a PostgreSQL database rather than a file: a `postgresql://` or `postgres://` URI, or libpq
    /// `key=value` pairs.
    public static func isConnectionString(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://") || text.contains("=")
    }

    /// Connects, migrates the schema (under an advisory lock) and reads the matching rules. A server that cannot be
    /// reached is `unavailable`; a bad connection string or a refused login `cannotOpen`; a database that holds
    /// someone else's `conversation` table `notAHistory`. Without `creatingSchema` (the CLI), a database that holds
    /// no history, or one too old to read, is `cannotOpen`, and nothing is written to it; one from before calls kept
    /// their account or encryption is read as it is, every record's ``CallRecord/account`` or
    /// ``CallRecord/encryption`` nil.
    public init(
        connection conninfo: String, account: String, normalizer: HandleNormalizer = .northAmerica,
        creatingSchema: Bool = true
    ) throws(CallHistoryError) {
        guard !account.isEmpty else { throw .invalidQuery("the history account (address of record) is empty") }
        let source = "parley-\(UUID().uuidString.lowercased())"
        let connection = try PostgresConnection(conninfo: conninfo, applicationName: source)
        let version = try PostgresSchema.migrate(connection, creating: creatingSchema)
        self.normalizer = try PostgresSchema.normalizer(in: connection, default: normalizer)
        self.account = account
        self.dialect = .postgres(
            account: account, callAccounts: version >= PostgresSchema.callAccountsVersion,
            encryption: version >= PostgresSchema.encryptionVersion)
        self.server = connection.server
        self.source = source
        self.conninfo = conninfo
        self.connection = Mutex(connection)
    }

    /// Runs `body` on the session under the lock, reconnecting first if the server went away since the last call.
    func use<T>(_ body: (PostgresConnection) throws(CallHistoryError) -> T) throws(CallHistoryError) -> T {
        try connection.withLock { connection throws(CallHistoryError) in
            if connection.isBroken { try connection.reconnect() }
            return try body(connection)
        }
    }

    /// The schema version of the database.
    public var schemaVersion: Int {
        get throws(CallHistoryError) {
            try use { connection throws(CallHistoryError) in
                try connection.run("SELECT version FROM parley_schema").scalar.flatMap { Int($0) } ?? 0
            }
        }
    }

    public func check() throws(CallHistoryError) -> [String] {
        try use { connection throws(CallHistoryError) in
            var problems: [String] = []
            let version = try connection.run("SELECT version FROM parley_schema").scalar.flatMap { Int($0) }
            if version != PostgresSchema.currentVersion {
                problems.append("schema version \(version.map(String.init) ?? "missing"), expected \(PostgresSchema.currentVersion)")
            }
            let stray = try connection.run(
                "SELECT count(*) FROM remote_handle h JOIN conversation c ON c.id = h.conversation_id WHERE h.account <> c.account")
            if let count = stray.scalar, count != "0" { problems.append("\(count) handle rows filed under another account") }
            return problems
        }
    }

    // MARK: Writing

    @discardableResult
    public func insert(_ record: CallRecord) throws(CallHistoryError) -> CallRecord {
        // Read back, as the SQLite store does: the stored handles are the database's (normalised by its rules, a
        // person's second written form dropped), and a record already there is returned as it was first stored.
        guard let stored = try insertAll([record]).stored.first else { throw .database(code: 0, detail: "nothing stored") }
        return try self.record(id: stored.record.id)
    }

    @discardableResult
    public func insert(contentsOf records: [CallRecord]) throws(CallHistoryError) -> Int {
        try insertAll(records).added
    }

    public func insertReturningRecords(_ records: [CallRecord]) throws(CallHistoryError) -> [CallRecord] {
        try insertAll(records).stored.map(\.record)
    }

    /// Group commit: one statement per ``batchSize`` records, all of them in one pipeline — one round trip, one
    /// implicit transaction (more than 2,000 records: several pipelines in one explicit transaction).
    private func insertAll(_ records: [CallRecord]) throws(CallHistoryError) -> (stored: [(record: CallRecord, isNew: Bool)], added: Int) {
        for record in records { try RecordRules.validate(record) }
        guard !records.isEmpty else { return ([], 0) }
        let chunks = stride(from: 0, to: records.count, by: Self.batchSize).map {
            records[$0..<min($0 + Self.batchSize, records.count)]
        }
        let statements = chunks.map { chunk in
            (sql: PostgresRecordSQL.insertBatch, parameters: PostgresRecordSQL.parameters(ofBatch: chunk, account: account, normalizer: normalizer))
        }
        let results = try use { connection throws(CallHistoryError) in try Self.run(statements, on: connection) }
        var stored: [(record: CallRecord, isNew: Bool)] = []
        stored.reserveCapacity(records.count)
        var seen: Set<UUID> = []
        for (chunk, result) in zip(chunks, results) {
            guard result.rows.count == chunk.count else {
                throw .database(code: 0, detail: "a batch of \(chunk.count) records answered \(result.rows.count) rows")
            }
            for (record, row) in zip(chunk, result.rows) {
                var copy = record
                if let id = row[1].flatMap({ Int64($0) }) {
                    copy.id = id
                } else {
                    // Another parleyd stored this conversation in a transaction that committed after this statement
                    // took its snapshot: read the id it got.
                    guard let id = try existingID(record.uuid) else {
                        throw .database(code: 0, detail: "conversation \(record.uuid) was neither stored nor found")
                    }
                    copy.id = id
                }
                // A uuid twice in one batch is stored once: the first is new, the later ones carry its id.
                let isNew = row[2] == "t" && seen.insert(record.uuid).inserted
                stored.append((copy, isNew))
            }
        }
        return (stored, stored.count(where: \.isNew))
    }

    /// Statements per pipeline: a pipeline sends everything before it reads anything, and on a blocking session a very
    /// long one could fill both socket buffers and wait on the server forever (10 statements carry 2,000 records).
    static let statementsPerPipeline = 10

    /// Runs `statements` as one transaction: one pipeline (its implicit transaction) when they fit, else pipelines of
    /// ``statementsPerPipeline`` inside BEGIN … COMMIT.
    private static func run(
        _ statements: [(sql: String, parameters: [SQLValue])], on connection: PostgresConnection
    ) throws(CallHistoryError) -> [PostgresRows] {
        guard statements.count > statementsPerPipeline else { return try connection.pipeline(statements) }
        try connection.execute("BEGIN")
        do throws(CallHistoryError) {
            var results: [PostgresRows] = []
            for start in stride(from: 0, to: statements.count, by: statementsPerPipeline) {
                results += try connection.pipeline(Array(statements[start..<min(start + statementsPerPipeline, statements.count)]))
            }
            try connection.execute("COMMIT")
            return results
        } catch {
            if !connection.isBroken { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    private func existingID(_ uuid: UUID) throws(CallHistoryError) -> Int64? {
        try use { connection throws(CallHistoryError) in
            try connection.run(
                "SELECT id FROM conversation WHERE account = $1 AND uuid = $2", [.text(account), .text(uuid.uuidString)]
            ).scalar.flatMap { Int64($0) }
        }
    }

    @discardableResult
    public func markRead(ids: [Int64]) throws(CallHistoryError) -> Int {
        guard !ids.isEmpty else { return 0 }
        let list = Self.array(ids)
        return try use { connection throws(CallHistoryError) in
            // One statement: unknown ids are found and nothing changes, or every known one is marked.
            let rows = try connection.run(
                """
                WITH wanted AS (SELECT DISTINCT unnest($2::bigint[]) AS id),
                missing AS (SELECT w.id FROM wanted w
                    WHERE NOT EXISTS (SELECT 1 FROM conversation c WHERE c.id = w.id AND c.account = $1)),
                marked AS (UPDATE conversation SET is_read = 1
                    WHERE account = $1 AND id IN (SELECT id FROM wanted) AND is_read = 0
                        AND NOT EXISTS (SELECT 1 FROM missing) RETURNING id)
                SELECT (SELECT min(id) FROM missing), (SELECT count(*) FROM marked)
                """, [.text(account), .text(list)])
            if let missing = rows.rows.first?[0].flatMap({ Int64($0) }) { throw .unknownRecord(missing) }
            return rows.rows.first?[1].flatMap { Int($0) } ?? 0
        }
    }

    @discardableResult
    public func markAllRead() throws(CallHistoryError) -> Int {
        try use { connection throws(CallHistoryError) in
            try connection.run(
                "WITH marked AS (UPDATE conversation SET is_read = 1 WHERE account = $1 AND is_read = 0 RETURNING 1) SELECT count(*) FROM marked",
                [.text(account)]
            ).scalar.flatMap { Int($0) } ?? 0
        }
    }

    public func delete(id: Int64) throws(CallHistoryError) {
        let deleted = try use { connection throws(CallHistoryError) in
            try connection.run("DELETE FROM conversation WHERE account = $1 AND id = $2 RETURNING id", [.text(account), .integer(id)])
        }
        guard deleted.rows.count == 1 else { throw .unknownRecord(id) }
    }

    @discardableResult
    public func deleteAll(endedBefore date: Date) throws(CallHistoryError) -> Int {
        try deleteInBatches(endedBefore: date) { seconds throws(CallHistoryError) in
            try use { connection throws(CallHistoryError) in
                try connection.run(
                    """
                    WITH gone AS (DELETE FROM conversation WHERE id IN
                        (SELECT id FROM conversation WHERE account = $1 AND ended_at < $2 LIMIT 1000) RETURNING 1)
                    SELECT count(*) FROM gone
                    """, [.text(account), .real(seconds)]
                ).scalar.flatMap { Int($0) } ?? 0
            }
        }
    }

    // MARK: Reading

    public func record(id: Int64) throws(CallHistoryError) -> CallRecord {
        guard let record = try records(where: "c.id = $2", [.integer(id)]).first else { throw .unknownRecord(id) }
        return record
    }

    public func record(uuid: UUID) throws(CallHistoryError) -> CallRecord? {
        try records(where: "c.uuid = $2", [.text(uuid.uuidString)]).first
    }

    public func query(_ query: HistoryQuery) throws(CallHistoryError) -> HistoryPage {
        let sql = try QueryBuilder(query, normalizer: normalizer, counting: false, dialect: dialect)
        var records = try use { connection throws(CallHistoryError) in
            try read(try connection.run(sql.text, sql.values), in: connection)
        }
        // The builder asks for one row more than the page: it tells whether another page follows.
        let more = records.count > query.limit
        if more { records.removeLast(records.count - query.limit) }
        let next = more ? records.last.map { HistoryCursor(startedAt: $0.startedAt, id: $0.id) } : nil
        return HistoryPage(records: records, nextCursor: next)
    }

    public func count(_ query: HistoryQuery) throws(CallHistoryError) -> Int {
        let sql = try QueryBuilder(query, normalizer: normalizer, counting: true, dialect: dialect)
        return try use { connection throws(CallHistoryError) in
            try connection.run(sql.text, sql.values).scalar.flatMap { Int($0) } ?? 0
        }
    }

    public func recents(limit: Int) throws(CallHistoryError) -> [RecentsEntry] {
        try recentsByPaging(limit: limit, normalizer: normalizer)
    }

    // MARK: Private

    private func records(where condition: String, _ values: [SQLValue]) throws(CallHistoryError) -> [CallRecord] {
        let columns = RecordRules.selectList(dialect)
        return try use { connection throws(CallHistoryError) in
            let rows = try connection.run(
                "SELECT \(columns) FROM conversation c WHERE c.account = $1 AND \(condition)", [.text(account)] + values)
            return try read(rows, in: connection)
        }
    }

    /// The records of `rows` (columns as ``RecordRules/selectList(_:)``), with their handles read in one query.
    private func read(_ rows: PostgresRows, in connection: PostgresConnection) throws(CallHistoryError) -> [CallRecord] {
        guard !rows.rows.isEmpty else { return [] }
        var records: [CallRecord] = []
        records.reserveCapacity(rows.rows.count)
        for row in rows.rows { records.append(try RecordRules.record(from: PostgresRow(values: row), location: server)) }
        // The ids are the account's already; the primary key finds their handles.
        let handles = try connection.run(
            """
            SELECT conversation_id, kind, value, normalized, display_name FROM remote_handle
            WHERE conversation_id = ANY($1::bigint[]) ORDER BY conversation_id, position
            """, [.text(Self.array(records.map(\.id)))])
        var byRecord: [Int64: [RecordedHandle]] = [:]
        for values in handles.rows {
            let row = PostgresRow(values: values)
            let id = row.int64(0)
            byRecord[id, default: []].append(
                try RecordRules.recordedHandle(from: row, at: 1) { what in
                    .corruptDatabase(path: server, detail: "record \(id) has \(what)")
                })
        }
        for index in records.indices { records[index].remoteHandles = byRecord[records[index].id] ?? [] }
        return records
    }

    /// A PostgreSQL array literal of integers.
    static func array(_ ids: [Int64]) -> String { "{" + ids.map(String.init).joined(separator: ",") + "}" }
}
