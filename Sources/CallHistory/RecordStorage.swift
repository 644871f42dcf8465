import ConversationKit
import Foundation

/// Writes a record's rows.
enum RecordWriter {
    /// Inserts `record` unless a record with its UUID is stored already; either way, the stored record's id.
    static func insertOrFind(
        _ record: CallRecord, in connection: SQLiteConnection, normalizer: HandleNormalizer
    ) throws(CallHistoryError) -> (id: Int64, isNew: Bool) {
        if let id = try insertIfNew(record, into: connection, normalizer: normalizer) { return (id, true) }
        guard let id = try RecordReader.id(uuid: record.uuid, in: connection) else {
            throw .database(code: 0, detail: "record \(record.uuid) was there at its insert and gone after it, in one transaction")
        }
        return (id, false)
    }

    /// Inserts `record` and returns its id, or nil when a record with its UUID is already stored (then nothing is
    /// written: one statement both looks and writes); its handles are normalised again with `normalizer` (the
    /// database's own rules).
    private static func insertIfNew(
        _ record: CallRecord, into connection: SQLiteConnection, normalizer: HandleNormalizer
    ) throws(CallHistoryError) -> Int64? {
        try RecordRules.validate(record)
        let statement = try connection.statement(
            fixed: """
                INSERT INTO conversation (uuid, direction, status, ended_reason, started_at, connected_at, ended_at,
                    is_video, is_read, local_kind, local_value, local_display, group_uuid, call_id, quality, account,
                    encryption)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (uuid) DO NOTHING
                """)
        statement.bind(record.uuid, at: 1)
        statement.bind(record.direction.rawValue, at: 2)
        statement.bind(record.status.rawValue, at: 3)
        statement.bind(record.endedReason.rawValue, at: 4)
        statement.bind(record.startedAt.timeIntervalSinceReferenceDate, at: 5)
        statement.bind(record.connectedAt?.timeIntervalSinceReferenceDate, at: 6)
        statement.bind(record.endedAt.timeIntervalSinceReferenceDate, at: 7)
        statement.bind(record.isVideo, at: 8)
        statement.bind(record.isRead, at: 9)
        statement.bind(record.localHandle?.kind.rawValue, at: 10)
        statement.bind(record.localHandle?.value, at: 11)
        statement.bind(record.localHandle?.displayName, at: 12)
        statement.bind(record.groupUUID, at: 13)
        statement.bind(record.callID, at: 14)
        statement.bind(RecordRules.qualityText(record), at: 15)
        statement.bind(record.account, at: 16)
        statement.bind(record.encryption, at: 17)
        try statement.run()
        guard connection.changes == 1 else { return nil }
        let id = connection.lastInsertRowID

        let handleStatement = try connection.statement(
            fixed: """
                INSERT INTO remote_handle (conversation_id, position, kind, value, normalized, display_name, started_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
        var seen: Set<String> = []
        for (position, given) in record.remoteHandles.enumerated() {
            let remote = RecordedHandle(given.handle, normalizer: normalizer)
            // Two raw values of one person (e.g. "+1 415…" and "415…") are one match key: keep the first.
            if let key = remote.normalizedValue, !seen.insert("\(remote.handle.kind.rawValue):\(key)").inserted {
                continue
            }
            handleStatement.reset()
            handleStatement.bind(id, at: 1)
            handleStatement.bind(position, at: 2)
            handleStatement.bind(remote.handle.kind.rawValue, at: 3)
            handleStatement.bind(remote.handle.value, at: 4)
            handleStatement.bind(remote.normalizedValue, at: 5)
            handleStatement.bind(remote.handle.displayName, at: 6)
            handleStatement.bind(record.startedAt.timeIntervalSinceReferenceDate, at: 7)
            try handleStatement.run()
        }
        return id
    }
}

/// Reads records back, checking every stored name.
enum RecordReader {
    static func exists(id: Int64, in connection: SQLiteConnection) throws(CallHistoryError) -> Bool {
        let statement = try connection.statement(fixed: "SELECT 1 FROM conversation WHERE id = ?")
        statement.bind(id, at: 1)
        return try statement.step()
    }

    static func id(uuid: UUID, in connection: SQLiteConnection) throws(CallHistoryError) -> Int64? {
        let statement = try connection.statement(fixed: "SELECT id FROM conversation WHERE uuid = ?")
        statement.bind(uuid, at: 1)
        return try statement.step() ? statement.int64(0) : nil
    }

    static func record(
        uuid: UUID, in connection: SQLiteConnection, dialect: SQLDialect = .sqlite
    ) throws(CallHistoryError) -> CallRecord? {
        guard let id = try id(uuid: uuid, in: connection) else { return nil }
        return try record(id: id, in: connection, dialect: dialect)
    }

    /// The record with `id`, its columns as ``RecordRules/selectList(_:)`` has them in `dialect` (the call's account
    /// and encryption NULL in a database from before them).
    static func record(
        id: Int64, in connection: SQLiteConnection, dialect: SQLDialect = .sqlite
    ) throws(CallHistoryError) -> CallRecord? {
        let statement =
            dialect.callAccountColumn != nil && dialect.encryptionColumn != nil
            ? try connection.statement(fixed: select)
            : try connection.statement("SELECT \(RecordRules.selectList(dialect)) FROM conversation c WHERE c.id = ?")
        statement.bind(id, at: 1)
        guard try statement.step() else { return nil }
        return try record(from: statement, in: connection)
    }

    /// A record by id.
    private static let select: StaticString = """
        SELECT id, uuid, direction, status, ended_reason, started_at, connected_at, ended_at, is_video, is_read,
            local_kind, local_value, local_display, group_uuid, call_id, quality, account, encryption
        FROM conversation WHERE id = ?
        """

    /// The record on `statement`'s current row (its columns are ``RecordRules/selectList(_:)``'s), with its handles.
    static func record(from statement: SQLiteStatement, in connection: SQLiteConnection) throws(CallHistoryError) -> CallRecord {
        var record = try RecordRules.record(from: statement, location: connection.path)
        record.remoteHandles = try handles(of: record.id, in: connection) { what in
            .corruptDatabase(path: connection.path, detail: "record \(record.id) has \(what)")
        }
        return record
    }

    private static func handles(
        of id: Int64, in connection: SQLiteConnection, corrupt: (String) -> CallHistoryError
    ) throws(CallHistoryError) -> [RecordedHandle] {
        let statement = try connection.statement(
            fixed: "SELECT kind, value, normalized, display_name FROM remote_handle WHERE conversation_id = ? ORDER BY position")
        defer { statement.reset() }
        statement.bind(id, at: 1)
        var handles: [RecordedHandle] = []
        while try statement.step() {
            handles.append(try RecordRules.recordedHandle(from: statement, at: 0, corrupt: corrupt))
        }
        return handles
    }
}
