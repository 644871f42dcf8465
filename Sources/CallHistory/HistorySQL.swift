import ConversationKit
import Foundation

/// A value bound to a statement parameter, for either store.
package enum SQLValue: Sendable, Hashable {
    /// A 64-bit integer.
    case integer(Int64)
    /// A double.
    case real(Double)
    /// Text.
    case text(String)
    /// SQL NULL.
    case null
}

/// How the SQL of one database differs from another's in the queries both stores share: how parameters are written,
/// how text is matched without regard to case, the account every row of a shared database belongs to, and the columns
/// that keep the account each call went through and how its media was protected.
package struct SQLDialect: Sendable {
    /// The text of parameter `number` (counted from 1).
    package let placeholder: @Sendable (Int) -> String
    /// The operator for "contains, ignoring case" (SQLite's LIKE already ignores ASCII case).
    package let caseInsensitiveLike: String
    /// The account whose rows a query may see (nil: the database holds one account's rows).
    package let account: String?
    /// The `conversation` column that keeps the account a call went through (``CallRecord/account``); nil in a
    /// database from before it, whose records read with none.
    package let callAccountColumn: String?
    /// The `conversation` column that keeps how a call's media was protected (``CallRecord/encryption``); nil in a
    /// database from before it, whose records read with none.
    package let encryptionColumn: String?

    /// SQLite: `?` parameters, one account per file, each call's account in `account`, its encryption in `encryption`.
    package static let sqlite = SQLDialect(
        placeholder: { _ in "?" }, caseInsensitiveLike: "LIKE", account: nil, callAccountColumn: "account",
        encryptionColumn: "encryption")

    /// SQLite at schema `version` (read-only stores never migrate): the columns a file from before them lacks read as
    /// NULL.
    static func sqlite(version: Int) -> SQLDialect {
        SQLDialect(
            placeholder: { _ in "?" }, caseInsensitiveLike: "LIKE", account: nil,
            callAccountColumn: version >= HistorySchema.accountsVersion ? "account" : nil,
            encryptionColumn: version >= HistorySchema.encryptionVersion ? "encryption" : nil)
    }

    /// PostgreSQL: `$n` parameters, rows of many accounts in one database (`account` is the row's owner, so each
    /// call's account is `call_account`; `callAccounts` or `encryption` false: a schema from before that column).
    package static func postgres(account: String, callAccounts: Bool = true, encryption: Bool = true) -> SQLDialect {
        SQLDialect(
            placeholder: { "$\($0)" }, caseInsensitiveLike: "ILIKE", account: account,
            callAccountColumn: callAccounts ? "call_account" : nil, encryptionColumn: encryption ? "encryption" : nil)
    }
}

/// What a record must satisfy before either store takes it.
package enum RecordRules {
    /// Times a record may hold: finite, and within ±3,000 years of 2001 (anything else is a bug upstream).
    package static func isPlausible(_ seconds: Double) -> Bool { seconds.isFinite && abs(seconds) < 1e11 }

    /// Refuses a record that would be stored wrong or read back as nonsense.
    package static func validate(_ record: CallRecord) throws(CallHistoryError) {
        let times = [record.startedAt, record.endedAt] + (record.connectedAt.map { [$0] } ?? [])
        guard times.allSatisfy({ isPlausible($0.timeIntervalSinceReferenceDate) }) else {
            throw .invalidRecord("conversation \(record.uuid) has a time that is not a real date")
        }
        guard record.status != .connected || record.connectedAt != nil else {
            throw .invalidRecord("conversation \(record.uuid) is 'connected' but has no connect time")
        }
    }

    /// A record's audio figures as the text both stores keep (JSON; nil for a call without audio).
    package static func qualityText(_ record: CallRecord) -> String? {
        record.quality.flatMap { try? String(decoding: JSONEncoder().encode($0), as: UTF8.self) }
    }

    /// The conversation columns every record read selects, in this order, before the call's account and encryption
    /// (see ``selectList(_:)``).
    package static let columnNames = [
        "id", "uuid", "direction", "status", "ended_reason", "started_at", "connected_at", "ended_at", "is_video",
        "is_read", "local_kind", "local_value", "local_display", "group_uuid", "call_id", "quality",
    ]

    /// What a record read selects from `conversation c` in `dialect`: ``columnNames``, then the call's account and
    /// encryption (NULL where the database has no such column), so a row always has the columns
    /// ``record(from:location:)`` reads.
    package static func selectList(_ dialect: SQLDialect) -> String {
        let later = [dialect.callAccountColumn, dialect.encryptionColumn].map { $0.map { "c.\($0)" } ?? "NULL" }
        return (columnNames.map { "c.\($0)" } + later).joined(separator: ", ")
    }
}

/// A result row either store reads records from: columns by position, NULL as nil.
package protocol HistoryRow {
    /// Whether the column is NULL.
    func isNull(_ column: Int32) -> Bool
    /// The column as an integer (0 when NULL).
    func int64(_ column: Int32) -> Int64
    /// The column as a double (0 when NULL).
    func double(_ column: Int32) -> Double
    /// The column as text ("" when NULL).
    func text(_ column: Int32) -> String
    /// The column as a uuid (nil when NULL or malformed).
    func uuid(_ column: Int32) -> UUID?
}

extension HistoryRow {
    func int(_ column: Int32) -> Int { Int(int64(column)) }
    func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }
    func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }
    func uuid(_ column: Int32) -> UUID? { isNull(column) ? nil : UUID(uuidString: text(column)) }
}

extension RecordRules {
    /// The record on `row` (its columns are ``selectList(_:)``'s), without its handles; every stored name checked, so
    /// a damaged row is a `corruptDatabase` error naming `location`, never a wrong record.
    package static func record(from row: some HistoryRow, location: String) throws(CallHistoryError) -> CallRecord {
        let id = row.int64(0)
        func corrupt(_ what: String) -> CallHistoryError {
            .corruptDatabase(path: location, detail: "record \(id) has \(what)")
        }
        guard let uuid = row.uuid(1) else { throw corrupt("a malformed uuid") }
        guard let direction = Conversation.Direction(rawValue: row.text(2)) else {
            throw corrupt("unknown direction '\(row.text(2))'")
        }
        guard let status = CallStatus(rawValue: row.text(3)) else {
            throw corrupt("unknown status '\(row.text(3))'")
        }
        guard let reason = Conversation.EndedReason(rawValue: row.text(4)) else {
            throw corrupt("unknown ended reason '\(row.text(4))'")
        }
        var localHandle: Handle?
        if !row.isNull(10) {
            guard let kind = Handle.Kind(rawValue: row.int(10)) else { throw corrupt("an unknown handle kind") }
            localHandle = Handle(kind: kind, value: row.text(11), displayName: row.optionalText(12))
        }
        var groupUUID: UUID?
        if !row.isNull(13) {
            guard let group = row.uuid(13) else { throw corrupt("a malformed group uuid") }
            groupUUID = group
        }
        for column: Int32 in [5, 6, 7] where !row.isNull(column) {
            guard RecordRules.isPlausible(row.double(column)) else { throw corrupt("a time that is not a real date") }
        }
        var record = CallRecord(
            id: id, uuid: uuid, direction: direction, remoteHandles: [], localHandle: localHandle,
            status: status, endedReason: reason,
            startedAt: Date(timeIntervalSinceReferenceDate: row.double(5)),
            connectedAt: row.optionalDouble(6).map(Date.init(timeIntervalSinceReferenceDate:)),
            endedAt: Date(timeIntervalSinceReferenceDate: row.double(7)),
            isVideo: row.int(8) != 0, groupUUID: groupUUID, callID: row.optionalText(14),
            isRead: row.int(9) != 0, account: row.optionalText(16), encryption: row.optionalText(17))
        if let quality = row.optionalText(15) {
            guard let figures = try? JSONDecoder().decode(CallQuality.self, from: Data(quality.utf8)) else {
                throw corrupt("unreadable audio figures")
            }
            record.quality = figures
        }
        return record
    }

    /// The remote handle in `row`'s columns from `first` on: kind, value, normalized, display name.
    package static func recordedHandle(
        from row: some HistoryRow, at first: Int32, corrupt: (String) -> CallHistoryError
    ) throws(CallHistoryError) -> RecordedHandle {
        guard let kind = Handle.Kind(rawValue: row.int(first)) else { throw corrupt("an unknown handle kind") }
        return RecordedHandle(
            handle: Handle(kind: kind, value: row.text(first + 1), displayName: row.text(first + 3)),
            normalizedValue: row.optionalText(first + 2))
    }
}

/// The SQL for a query: text with parameters and their values, built from the query's fields only.
package struct QueryBuilder {
    /// The statement.
    package let text: String
    /// Its parameters' values, in order.
    package let values: [SQLValue]

    /// The query's SQL in `dialect`: a page of records (one row more than the limit, which tells whether another
    /// page follows), or with `counting` the number of matches.
    package init(
        _ query: HistoryQuery, normalizer: HandleNormalizer, counting: Bool, dialect: SQLDialect = .sqlite
    ) throws(CallHistoryError) {
        guard counting || (1...1000).contains(query.limit) else {
            throw .invalidQuery("limit must be 1…1000 (got \(query.limit))")
        }
        if let from = query.startedFrom, let before = query.startedBefore, from >= before {
            throw .invalidQuery("the time range is empty: \(from) is not before \(before)")
        }
        var conditions: [String] = []
        var values: [SQLValue] = []
        func parameter(_ value: SQLValue) -> String {
            values.append(value)
            return dialect.placeholder(values.count)
        }
        // With a handle, the handle index drives the query (newest first within one person's calls).
        let byHandle = query.handle != nil
        let time = byHandle ? "h.started_at" : "c.started_at"
        let id = byHandle ? "h.conversation_id" : "c.id"
        var from = "conversation c"
        if let account = dialect.account {
            conditions.append("\(byHandle ? "h" : "c").account = \(parameter(.text(account)))")
        }
        if let handle = query.handle {
            guard let normalized = normalizer.normalizedValue(kind: handle.kind, value: handle.value) else {
                throw .invalidQuery("'\(handle.value)' is not a usable \(handle.kind) handle")
            }
            from = "remote_handle h JOIN conversation c ON c.id = h.conversation_id"
            conditions.append(
                "h.kind = \(parameter(.integer(Int64(handle.kind.rawValue)))) AND h.normalized = \(parameter(.text(normalized)))")
        }
        if let direction = query.direction {
            conditions.append("c.direction = \(parameter(.text(direction.rawValue)))")
        }
        if !query.statuses.isEmpty {
            let statuses = query.statuses.sorted { $0.rawValue < $1.rawValue }
            conditions.append("c.status IN (" + statuses.map { parameter(.text($0.rawValue)) }.joined(separator: ", ") + ")")
        }
        if let start = query.startedFrom {
            conditions.append("\(time) >= \(parameter(.real(start.timeIntervalSinceReferenceDate)))")
        }
        if let end = query.startedBefore {
            conditions.append("\(time) < \(parameter(.real(end.timeIntervalSinceReferenceDate)))")
        }
        if let text = query.displayNameContains, !text.isEmpty {
            let escaped = text.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_")
            conditions.append(
                "EXISTS (SELECT 1 FROM remote_handle n WHERE n.conversation_id = c.id AND n.display_name "
                    + "\(dialect.caseInsensitiveLike) \(parameter(.text("%\(escaped)%"))) ESCAPE '\\')")
        }
        if query.unreadOnly { conditions.append("c.is_read = 0") }
        if let cursor = query.cursor, !counting {
            let seconds = cursor.startedAt.timeIntervalSinceReferenceDate
            conditions.append(
                "(\(time) < \(parameter(.real(seconds))) OR (\(time) = \(parameter(.real(seconds))) AND \(id) < \(parameter(.integer(cursor.id)))))")
        }
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        if counting {
            text = "SELECT count(*) FROM \(from)\(filter)"
        } else {
            text = "SELECT \(RecordRules.selectList(dialect)) FROM \(from)\(filter) ORDER BY \(time) DESC, \(id) DESC LIMIT \(parameter(.integer(Int64(query.limit) + 1)))"
        }
        self.values = values
    }
}

extension CallHistoryStore {
    /// `deleteAll(endedBefore:)` as both stores do it: `deleteBatch` deletes at most 1,000 records that ended before
    /// the time it is given (seconds since 2001), in one transaction, and says how many; batches go on until one is
    /// short, so a large clear never holds the write lock long enough to make a recording writer time out.
    package func deleteInBatches(
        endedBefore date: Date, _ deleteBatch: (Double) throws(CallHistoryError) -> Int
    ) throws(CallHistoryError) -> Int {
        guard date.timeIntervalSinceReferenceDate.isFinite else { throw .invalidQuery("the date must be finite") }
        var total = 0
        while true {
            let deleted = try deleteBatch(date.timeIntervalSinceReferenceDate)
            total += deleted
            if deleted < 1000 { return total }
        }
    }

    /// Recents lines read a page at a time through ``CallHistoryStore/query(_:)`` (what both stores do).
    package func recentsByPaging(limit: Int, normalizer: HandleNormalizer) throws(CallHistoryError) -> [RecentsEntry] {
        guard (1...1000).contains(limit) else { throw .invalidQuery("limit must be 1…1000 (got \(limit))") }
        var grouper = RecentsGrouper(normalizer: normalizer)
        var cursor: HistoryCursor?
        // Most lines stand for one call: read a little more than the lines asked for, then more only if
        // calls collapsed into lines.
        var pageSize = min(1000, limit + 8)
        repeat {
            let page = try query(HistoryQuery(limit: pageSize, cursor: cursor))
            pageSize = 200
            for record in page.records {
                grouper.add(record)
                if grouper.closedCount > limit { return Array(grouper.entries.prefix(limit)) }
            }
            cursor = page.nextCursor
        } while cursor != nil
        return Array(grouper.allEntries.prefix(limit))
    }
}

/// Collapses consecutive records (newest first) into Recents lines, keeping at most
/// `RecentsEntry.keptRecords` records of a line and counting the rest.
package struct RecentsGrouper {
    /// How handles are matched.
    package let normalizer: HandleNormalizer
    /// The lines closed so far.
    package private(set) var entries: [RecentsEntry] = []
    private var current: [CallRecord] = []
    private var currentCount = 0
    private var currentUnread = false
    private var currentKey: String?

    /// An empty grouper.
    package init(normalizer: HandleNormalizer) { self.normalizer = normalizer }

    /// Lines finished so far, plus the open one.
    package var closedCount: Int { entries.count + (current.isEmpty ? 0 : 1) }

    private func key(_ record: CallRecord) -> String {
        let who = record.remoteHandles.first.map { "\($0.handle.kind.rawValue):\($0.normalizedValue ?? $0.handle.value)" }
        return "\(who ?? "unknown")|\(record.direction.rawValue)|\(record.status == .missed)"
    }

    private var openEntry: RecentsEntry? {
        current.isEmpty ? nil : RecentsEntry(records: current, count: currentCount, hasUnread: currentUnread)
    }

    /// Adds the next (older) record.
    package mutating func add(_ record: CallRecord) {
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
    package var allEntries: [RecentsEntry] { openEntry.map { entries + [$0] } ?? entries }
}
