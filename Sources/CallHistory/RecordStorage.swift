import ConversationKit
import Foundation

/// Writes a record's rows.
enum RecordWriter {
    /// Inserts `record`; its handles are normalised again with `normalizer` (the database's own rules).
    /// Times a record may hold: finite, and within ±3,000 years of 2001 (anything else is a bug upstream).
    static func isPlausible(_ seconds: Double) -> Bool { seconds.isFinite && abs(seconds) < 1e11 }

    /// Refuses a record that would be stored wrong or read back as nonsense.
    static func validate(_ record: CallRecord) throws(CallHistoryError) {
        let times = [record.startedAt, record.endedAt] + (record.connectedAt.map { [$0] } ?? [])
        guard times.allSatisfy({ isPlausible($0.timeIntervalSinceReferenceDate) }) else {
            throw .invalidRecord("conversation \(record.uuid) has a time that is not a real date")
        }
        guard record.status != .connected || record.connectedAt != nil else {
            throw .invalidRecord("conversation \(record.uuid) is 'connected' but has no connect time")
        }
    }

    static func insert(
        _ record: CallRecord, into connection: SQLiteConnection, normalizer: HandleNormalizer
    ) throws(CallHistoryError) -> Int64 {
        try validate(record)
        let statement = try connection.statement(
            fixed: """
                INSERT INTO conversation (uuid, direction, status, ended_reason, started_at, connected_at, ended_at,
                    is_video, is_read, local_kind, local_value, local_display, group_uuid, call_id, quality)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        statement.bind(record.uuid.uuidString, at: 1)
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
        statement.bind(record.groupUUID?.uuidString, at: 13)
        statement.bind(record.callID, at: 14)
        statement.bind(record.quality.flatMap { try? String(decoding: JSONEncoder().encode($0), as: UTF8.self) }, at: 15)
        try statement.run()
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
    /// The conversation columns every record read selects, in this order (prefixed `c.` in joined queries).
    static let columnNames = [
        "id", "uuid", "direction", "status", "ended_reason", "started_at", "connected_at", "ended_at", "is_video",
        "is_read", "local_kind", "local_value", "local_display", "group_uuid", "call_id", "quality",
    ]

    static func exists(id: Int64, in connection: SQLiteConnection) throws(CallHistoryError) -> Bool {
        let statement = try connection.statement(fixed: "SELECT 1 FROM conversation WHERE id = ?")
        statement.bind(id, at: 1)
        return try statement.step()
    }

    static func id(uuid: UUID, in connection: SQLiteConnection) throws(CallHistoryError) -> Int64? {
        let statement = try connection.statement(fixed: "SELECT id FROM conversation WHERE uuid = ?")
        statement.bind(uuid.uuidString, at: 1)
        return try statement.step() ? statement.int64(0) : nil
    }

    static func record(uuid: UUID, in connection: SQLiteConnection) throws(CallHistoryError) -> CallRecord? {
        guard let id = try id(uuid: uuid, in: connection) else { return nil }
        return try record(id: id, in: connection)
    }

    static func record(id: Int64, in connection: SQLiteConnection) throws(CallHistoryError) -> CallRecord? {
        let statement = try connection.statement(
            fixed: """
                SELECT id, uuid, direction, status, ended_reason, started_at, connected_at, ended_at, is_video, is_read,
                    local_kind, local_value, local_display, group_uuid, call_id, quality
                FROM conversation WHERE id = ?
                """)
        statement.bind(id, at: 1)
        guard try statement.step() else { return nil }
        return try record(from: statement, in: connection)
    }

    /// The record on `statement`'s current row (its columns are ``columnNames``), with its handles.
    static func record(from statement: SQLiteStatement, in connection: SQLiteConnection) throws(CallHistoryError) -> CallRecord {
        let id = statement.int64(0)
        func corrupt(_ what: String) -> CallHistoryError {
            .corruptDatabase(path: connection.path, detail: "record \(id) has \(what)")
        }
        guard let uuid = statement.uuid(1) else { throw corrupt("a malformed uuid") }
        guard let direction = Conversation.Direction(rawValue: statement.text(2)) else {
            throw corrupt("unknown direction '\(statement.text(2))'")
        }
        guard let status = CallStatus(rawValue: statement.text(3)) else {
            throw corrupt("unknown status '\(statement.text(3))'")
        }
        guard let reason = Conversation.EndedReason(rawValue: statement.text(4)) else {
            throw corrupt("unknown ended reason '\(statement.text(4))'")
        }
        var localHandle: Handle?
        if !statement.isNull(10) {
            guard let kind = Handle.Kind(rawValue: statement.int(10)) else { throw corrupt("an unknown handle kind") }
            localHandle = Handle(kind: kind, value: statement.text(11), displayName: statement.optionalText(12))
        }
        var groupUUID: UUID?
        if !statement.isNull(13) {
            guard let group = statement.uuid(13) else { throw corrupt("a malformed group uuid") }
            groupUUID = group
        }
        for column: Int32 in [5, 6, 7] where !statement.isNull(column) {
            guard RecordWriter.isPlausible(statement.double(column)) else { throw corrupt("a time that is not a real date") }
        }
        var record = CallRecord(
            id: id, uuid: uuid, direction: direction, remoteHandles: [], localHandle: localHandle,
            status: status, endedReason: reason,
            startedAt: Date(timeIntervalSinceReferenceDate: statement.double(5)),
            connectedAt: statement.optionalDouble(6).map(Date.init(timeIntervalSinceReferenceDate:)),
            endedAt: Date(timeIntervalSinceReferenceDate: statement.double(7)),
            isVideo: statement.int(8) != 0, groupUUID: groupUUID, callID: statement.optionalText(14),
            isRead: statement.int(9) != 0)
        if let quality = statement.optionalText(15) {
            guard let figures = try? JSONDecoder().decode(CallQuality.self, from: Data(quality.utf8)) else {
                throw corrupt("unreadable audio figures")
            }
            record.quality = figures
        }
        record.remoteHandles = try handles(of: id, in: connection, corrupt: corrupt)
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
            guard let kind = Handle.Kind(rawValue: statement.int(0)) else { throw corrupt("an unknown handle kind") }
            handles.append(
                RecordedHandle(
                    handle: Handle(kind: kind, value: statement.text(1), displayName: statement.text(3)),
                    normalizedValue: statement.optionalText(2)))
        }
        return handles
    }
}

/// The SQL for a query: text with `?` parameters and their values, built from the query's fields only.
struct QueryBuilder {
    let text: String
    let values: [SQLiteValue]

    init(_ query: HistoryQuery, normalizer: HandleNormalizer, counting: Bool) throws(CallHistoryError) {
        guard counting || (1...1000).contains(query.limit) else {
            throw .invalidQuery("limit must be 1…1000 (got \(query.limit))")
        }
        if let from = query.startedFrom, let before = query.startedBefore, from >= before {
            throw .invalidQuery("the time range is empty: \(from) is not before \(before)")
        }
        var conditions: [String] = []
        var values: [SQLiteValue] = []
        // With a handle, the handle index drives the query (newest first within one person's calls).
        let byHandle = query.handle != nil
        let time = byHandle ? "h.started_at" : "c.started_at"
        let id = byHandle ? "h.conversation_id" : "c.id"
        var from = "conversation c"
        if let handle = query.handle {
            guard let normalized = normalizer.normalizedValue(kind: handle.kind, value: handle.value) else {
                throw .invalidQuery("'\(handle.value)' is not a usable \(handle.kind) handle")
            }
            from = "remote_handle h JOIN conversation c ON c.id = h.conversation_id"
            conditions.append("h.kind = ? AND h.normalized = ?")
            values += [.integer(Int64(handle.kind.rawValue)), .text(normalized)]
        }
        if let direction = query.direction {
            conditions.append("c.direction = ?")
            values.append(.text(direction.rawValue))
        }
        if !query.statuses.isEmpty {
            let statuses = query.statuses.sorted { $0.rawValue < $1.rawValue }
            conditions.append("c.status IN (" + statuses.map { _ in "?" }.joined(separator: ", ") + ")")
            values += statuses.map { .text($0.rawValue) }
        }
        if let start = query.startedFrom {
            conditions.append("\(time) >= ?")
            values.append(.real(start.timeIntervalSinceReferenceDate))
        }
        if let end = query.startedBefore {
            conditions.append("\(time) < ?")
            values.append(.real(end.timeIntervalSinceReferenceDate))
        }
        if let text = query.displayNameContains, !text.isEmpty {
            let escaped = text.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_")
            conditions.append(
                "EXISTS (SELECT 1 FROM remote_handle n WHERE n.conversation_id = c.id AND n.display_name LIKE ? ESCAPE '\\')")
            values.append(.text("%\(escaped)%"))
        }
        if query.unreadOnly { conditions.append("c.is_read = 0") }
        if let cursor = query.cursor, !counting {
            let seconds = cursor.startedAt.timeIntervalSinceReferenceDate
            conditions.append("(\(time) < ? OR (\(time) = ? AND \(id) < ?))")
            values += [.real(seconds), .real(seconds), .integer(cursor.id)]
        }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        if counting {
            text = "SELECT count(*) FROM \(from)\(filter)"
        } else {
            let columns = RecordReader.columnNames.map { "c.\($0)" }.joined(separator: ", ")
            text = "SELECT \(columns) FROM \(from)\(filter) ORDER BY \(time) DESC, \(id) DESC LIMIT ?"
            values.append(.integer(Int64(query.limit) + 1))
        }
        self.values = values
    }
}

/// Collapses consecutive records (newest first) into Recents lines, keeping at most
/// `RecentsEntry.keptRecords` records of a line and counting the rest.
struct RecentsGrouper {
    let normalizer: HandleNormalizer
    private(set) var entries: [RecentsEntry] = []
    private var current: [CallRecord] = []
    private var currentCount = 0
    private var currentUnread = false
    private var currentKey: String?

    init(normalizer: HandleNormalizer) { self.normalizer = normalizer }

    /// Lines finished so far, plus the open one.
    var closedCount: Int { entries.count + (current.isEmpty ? 0 : 1) }

    private func key(_ record: CallRecord) -> String {
        let who = record.remoteHandles.first.map { "\($0.handle.kind.rawValue):\($0.normalizedValue ?? $0.handle.value)" }
        return "\(who ?? "unknown")|\(record.direction.rawValue)|\(record.status == .missed)"
    }

    private var openEntry: RecentsEntry? {
        current.isEmpty ? nil : RecentsEntry(records: current, count: currentCount, hasUnread: currentUnread)
    }

    mutating func add(_ record: CallRecord) {
        let key = key(record)
        if key != currentKey, let open = openEntry {
            entries.append(open)
            current = []
            currentCount = 0
            currentUnread = false
        }
        currentKey = key
        if current.count < RecentsEntry.keptRecords { current.append(record) }
        currentCount += 1
        currentUnread = currentUnread || !record.isRead
    }

    /// Every line, the open one closed.
    var allEntries: [RecentsEntry] { openEntry.map { entries + [$0] } ?? entries }
}
