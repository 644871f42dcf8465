internal import CSQLite
import Foundation

/// One SQLite connection. Not thread-safe by itself: its owner serialises access (the store's lock).
/// C types stay inside this file and `SQLiteStatement`.
// @unchecked Sendable: in the store a connection is only ever reached through `SQLiteCallHistory.connection`, a Mutex, so
// no two threads touch it at once; SQLite itself is opened NOMUTEX on that promise.
final class SQLiteConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    let path: String
    /// How long, in milliseconds, a statement waits for another process's lock before giving up.
    let busyTimeout: Int32
    private var cache: [String: SQLiteStatement] = [:]
    /// Statements of fixed SQL, found by the address of their text (no hashing of the text itself).
    private var staticCache: [UnsafeRawPointer: SQLiteStatement] = [:]

    /// Process-wide settings, made once before the first connection opens (SQLite takes them only before it
    /// initialises): no memory statistics, whose global mutex every allocation would take.
    private static let configured: Void = { _ = csqlite_disable_memory_statistics() }()

    /// Opens the database at `path` as `access` allows and applies Parley's connection settings.
    init(path: String, access: SQLiteCallHistory.Access, busyTimeout: Int32 = 15_000) throws(CallHistoryError) {
        self.path = path
        self.busyTimeout = busyTimeout
        var pointer: OpaquePointer?
        let mode: Int32 =
            switch access {
            case .create: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
            case .readWrite: SQLITE_OPEN_READWRITE
            case .readOnly: SQLITE_OPEN_READONLY
            }
        _ = Self.configured
        let flags = mode | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &pointer, flags, nil)
        guard code == SQLITE_OK, let pointer else {
            let message = pointer.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(pointer)
            throw Self.error(code: code, message: message, path: path)
        }
        handle = pointer
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeout)
        _ = csqlite_enable_defensive(handle)
    }

    deinit {
        cache.removeAll()
        staticCache.removeAll()
        sqlite3_close_v2(handle)
    }

    static func error(code: Int32, message: String, path: String) -> CallHistoryError {
        switch code & 0xFF {
        case SQLITE_NOTADB, SQLITE_CORRUPT:
            .corruptDatabase(path: path, detail: message)
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY, SQLITE_AUTH:
            .cannotOpen(path: path, detail: message)
        case SQLITE_FULL, SQLITE_IOERR:
            .storage(path: path, detail: message)
        default:
            .database(code: Int(code), detail: message)
        }
    }

    func error(_ code: Int32) -> CallHistoryError {
        Self.error(code: code, message: String(cString: sqlite3_errmsg(handle)), path: path)
    }

    /// Runs SQL text (one or more statements) that returns no rows.
    func execute(_ sql: String) throws(CallHistoryError) {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw error(code) }
    }

    /// A prepared statement for `sql`, reused across calls (reset and cleared before it is handed out).
    func statement(_ sql: String) throws(CallHistoryError) -> SQLiteStatement {
        if let cached = cache[sql] {
            cached.reset()
            return cached
        }
        let statement = try prepare(sql)
        cache[sql] = statement
        return statement
    }

    /// A prepared statement for fixed SQL text, cached by the text's address.
    func statement(fixed sql: StaticString) throws(CallHistoryError) -> SQLiteStatement {
        let key = UnsafeRawPointer(sql.utf8Start)
        if let cached = staticCache[key] {
            cached.reset()
            return cached
        }
        let statement = try prepare(sql.description)
        staticCache[key] = statement
        return statement
    }

    private func prepare(_ sql: String) throws(CallHistoryError) -> SQLiteStatement {
        var pointer: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard code == SQLITE_OK, let pointer else { throw error(code) }
        return SQLiteStatement(pointer, connection: self)
    }

    /// Runs `body` in one read transaction: every statement in it sees the same snapshot, and the file is
    /// locked once rather than per statement.
    func read<T>(_ body: () throws(CallHistoryError) -> T) throws(CallHistoryError) -> T {
        try inTransaction(beginning: "BEGIN DEFERRED", body)
    }

    /// Resets every cached statement: a statement left mid-result holds its read snapshot open and blocks
    /// COMMIT, so each operation ends with this.
    func finishStatements() {
        for statement in cache.values { statement.reset() }
        for statement in staticCache.values { statement.reset() }
    }

    /// Runs `body` in a write transaction (BEGIN IMMEDIATE … COMMIT), rolling back if it throws.
    func transaction<T>(_ body: () throws(CallHistoryError) -> T) throws(CallHistoryError) -> T {
        try inTransaction(beginning: "BEGIN IMMEDIATE", body)
    }

    private func inTransaction<T>(
        beginning begin: String, _ body: () throws(CallHistoryError) -> T
    ) throws(CallHistoryError) -> T {
        try execute(begin)
        do {
            let result = try body()
            finishStatements()
            try execute("COMMIT")
            return result
        } catch {
            finishStatements()
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Switches the file to WAL journaling (a lasting property of the file). SQLite answers "busy" to this
    /// without calling the busy handler when another process holds the file at that moment — as when several
    /// processes create one history at once — so it is retried here, for as long as the busy timeout allows.
    func switchToWAL() throws(CallHistoryError) {
        let deadline = Date(timeIntervalSinceNow: Double(busyTimeout) / 1000)
        var pause: useconds_t = 1_000
        while true {
            let mode: String?
            do {
                mode = try text("PRAGMA journal_mode = WAL")
            } catch {
                guard case .database(let code, _) = error, code & 0xFF == Int(SQLITE_BUSY), Date() < deadline else {
                    throw error
                }
                usleep(pause)
                pause = min(pause * 2, 50_000)
                continue
            }
            guard mode?.lowercased() == "wal" else {
                throw .storage(path: path, detail: "cannot switch to WAL journaling (got \(mode ?? "nothing"))")
            }
            return
        }
    }

    /// The rowid of the last inserted row.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the last statement.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// A single integer from a query such as `PRAGMA user_version`.
    func integer(_ sql: String) throws(CallHistoryError) -> Int64 {
        let statement = try statement(sql)
        defer { statement.reset() }
        guard try statement.step() else { return 0 }
        return statement.int64(0)
    }

    /// A single text value from a query such as `PRAGMA journal_mode`.
    func text(_ sql: String) throws(CallHistoryError) -> String? {
        let statement = try statement(sql)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return statement.text(0)
    }
}

/// A prepared statement: bind parameters by index (1-based), step through rows, read columns (0-based).
final class SQLiteStatement {
    private let pointer: OpaquePointer
    private unowned let connection: SQLiteConnection

    init(_ pointer: OpaquePointer, connection: SQLiteConnection) {
        self.pointer = pointer
        self.connection = connection
    }

    deinit { sqlite3_finalize(pointer) }

    func reset() {
        sqlite3_reset(pointer)
        sqlite3_clear_bindings(pointer)
    }

    func bind(_ value: Int64, at index: Int32) { sqlite3_bind_int64(pointer, index, value) }
    func bind(_ value: Int, at index: Int32) { sqlite3_bind_int64(pointer, index, Int64(value)) }
    func bind(_ value: Double, at index: Int32) { sqlite3_bind_double(pointer, index, value) }
    func bind(_ value: Bool, at index: Int32) { sqlite3_bind_int64(pointer, index, value ? 1 : 0) }
    /// Binds text by its UTF-8 length, so a NUL inside it is kept rather than ending the string.
    func bind(_ value: String, at index: Int32) {
        var text = value
        text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else {
                sqlite3_bind_text(pointer, index, "", 0, csqlite_transient())
                return
            }
            base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
                _ = sqlite3_bind_text(pointer, index, chars, Int32(bytes.count), csqlite_transient())
            }
        }
    }
    func bindNull(at index: Int32) { sqlite3_bind_null(pointer, index) }

    /// Binds a UUID as text spelt as Foundation's `uuidString` spells it (upper-case hex, 8-4-4-4-12), written
    /// here: `uuidString` formats through `snprintf`, which was a twentieth of the history thread's time per call.
    func bind(_ value: UUID, at index: Int32) {
        let digits: StaticString = "0123456789ABCDEF"
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { text in
            var end = 0
            withUnsafeBytes(of: value.uuid) { bytes in
                for (offset, byte) in bytes.enumerated() {
                    if offset == 4 || offset == 6 || offset == 8 || offset == 10 {
                        text[end] = UInt8(ascii: "-")
                        end += 1
                    }
                    text[end] = digits.utf8Start[Int(byte >> 4)]
                    text[end + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    end += 2
                }
            }
            text.baseAddress!.withMemoryRebound(to: CChar.self, capacity: end) { chars in
                _ = sqlite3_bind_text(pointer, index, chars, Int32(end), csqlite_transient())
            }
        }
    }

    func bind(_ value: UUID?, at index: Int32) {
        if let value { bind(value, at: index) } else { bindNull(at: index) }
    }

    func bind(_ value: String?, at index: Int32) {
        if let value { bind(value, at: index) } else { bindNull(at: index) }
    }
    func bind(_ value: Double?, at index: Int32) {
        if let value { bind(value, at: index) } else { bindNull(at: index) }
    }
    func bind(_ value: Int?, at index: Int32) {
        if let value { bind(value, at: index) } else { bindNull(at: index) }
    }

    /// Binds each value in order from parameter 1.
    func bind(all values: [SQLValue]) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .integer(let number): bind(number, at: index)
            case .real(let number): bind(number, at: index)
            case .text(let text): bind(text, at: index)
            case .null: bindNull(at: index)
            }
        }
    }

    /// Advances to the next row; false when done.
    func step() throws(CallHistoryError) -> Bool {
        let code = sqlite3_step(pointer)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let failure = connection.error(code)
            sqlite3_reset(pointer)
            throw failure
        }
    }

    /// Steps a statement that returns no rows.
    func run() throws(CallHistoryError) {
        while try step() {}
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(pointer, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(pointer, column) }
    func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(pointer, column)) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(pointer, column) }
    func optionalDouble(_ column: Int32) -> Double? { isNull(column) ? nil : double(column) }

    func text(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(pointer, column) else { return "" }
        let count = Int(sqlite3_column_bytes(pointer, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }
    func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    /// A uuid stored as its 36-character text, parsed straight from SQLite's bytes (Foundation's parser goes
    /// through sscanf on Linux and showed up in query profiles); nil if malformed.
    func uuid(_ column: Int32) -> UUID? {
        guard let bytes = sqlite3_column_text(pointer, column), sqlite3_column_bytes(pointer, column) == 36 else {
            return nil
        }
        var value: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &value) { out -> Bool in
            var index = 0
            var position = 0
            while position < 36 {
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard bytes[position] == UInt8(ascii: "-") else { return false }
                    position += 1
                    continue
                }
                guard let high = Self.hexValue(bytes[position]), let low = Self.hexValue(bytes[position + 1]) else {
                    return false
                }
                out[index] = high << 4 | low
                index += 1
                position += 2
            }
            return index == 16
        }
        return parsed ? UUID(uuid: value) : nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension SQLiteStatement: HistoryRow {}
