import CallHistory
internal import CLibPQ
import Foundation

/// One libpq connection. Not thread-safe by itself: its owner serialises access (the store's lock, or the listener's
/// thread). C types stay inside this file.
// @unchecked Sendable: a connection is only ever used under its owner's Mutex or from its one listener thread.
final class PostgresConnection: @unchecked Sendable {
    private var handle: OpaquePointer
    /// The server and database, for messages (never the password).
    let server: String
    /// Statements prepared on this session, by their SQL text.
    private var prepared: [String: String] = [:]

    /// Connects with `conninfo` (a `postgresql://` URI or `key=value` pairs), naming the session `applicationName`.
    /// A server that cannot be reached is `unavailable`; a connection string libpq cannot read, or a refused login,
    /// is `cannotOpen`.
    init(conninfo: String, applicationName: String) throws(CallHistoryError) {
        let keywords = ["dbname", "application_name", "connect_timeout", "client_encoding"]
        let values = [conninfo, applicationName, "5", "UTF8"]
        var problem: UnsafeMutablePointer<CChar>?
        if let options = PQconninfoParse(conninfo, &problem) {
            PQconninfoFree(options)
        } else {
            let detail = problem.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "out of memory"
            PQfreemem(problem)
            throw .cannotOpen(path: "postgresql", detail: "not a libpq connection string: \(detail)")
        }
        let connection = Self.withCStrings(keywords) { keys in
            Self.withCStrings(values) { vals in PQconnectdbParams(keys, vals, 1) }
        }
        guard let connection else { throw .unavailable(server: "postgresql", detail: "out of memory") }
        handle = connection
        server = Self.describe(connection)
        guard PQstatus(connection) == CONNECTION_OK else {
            // deinit finishes the connection.
            throw Self.connectError(server: server, message: Self.message(connection))
        }
        try planEveryExecution()
    }

    /// One database holds many accounts of very different sizes, and a prepared statement's generic plan (chosen
    /// after five runs) cannot see which account it serves: it walked an account index for 15 ms where the plan for
    /// the actual values takes 0.1 ms. Planning each execution costs tens of microseconds.
    private func planEveryExecution() throws(CallHistoryError) {
        try execute("SET plan_cache_mode = force_custom_plan")
    }

    deinit { PQfinish(handle) }

    /// Whether the session is lost (the server went away); the next use tries ``reconnect()`` first.
    var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

    /// Tries to get the session back after the server went away; prepared statements are gone with the old one.
    func reconnect() throws(CallHistoryError) {
        PQreset(handle)
        prepared.removeAll()
        guard PQstatus(handle) == CONNECTION_OK else {
            throw .unavailable(server: server, detail: Self.message(handle))
        }
        try planEveryExecution()
    }

    /// Runs `sql` (several statements allowed, no parameters).
    func execute(_ sql: String) throws(CallHistoryError) {
        _ = try take(PQexec(handle, sql))
    }

    /// Runs one statement with parameters, prepared once per session; returns its rows.
    func run(_ sql: String, _ parameters: [SQLValue] = []) throws(CallHistoryError) -> PostgresRows {
        let name = try statementName(sql)
        let texts = parameters.map(Self.text)
        let result = Self.withOptionalCStrings(texts) { values in
            PQexecPrepared(handle, name, Int32(texts.count), values, nil, nil, 0)
        }
        return try take(result)
    }

    /// Runs `statements` in one round trip and one implicit transaction (libpq's pipeline mode): all of them take
    /// effect, or — if any fails — none. Returns each statement's rows.
    func pipeline(_ statements: [(sql: String, parameters: [SQLValue])]) throws(CallHistoryError) -> [PostgresRows] {
        // Prepared first, outside the pipeline: a name is known before any statement uses it.
        let names = try statements.map { statement throws(CallHistoryError) in try statementName(statement.sql) }
        guard PQenterPipelineMode(handle) == 1 else { throw failure("cannot enter pipeline mode") }
        defer { _ = PQexitPipelineMode(handle) }
        for (name, statement) in zip(names, statements) {
            let texts = statement.parameters.map(Self.text)
            let sent = Self.withOptionalCStrings(texts) { values in
                PQsendQueryPrepared(handle, name, Int32(texts.count), values, nil, nil, 0)
            }
            guard sent == 1 else { throw failure("cannot send a pipelined statement") }
        }
        guard PQpipelineSync(handle) == 1 else { throw failure("cannot end the pipeline") }
        var rows: [PostgresRows] = []
        var firstError: CallHistoryError?
        for _ in statements {
            guard let result = PQgetResult(handle) else { throw failure("the pipeline ended early") }
            // Each statement's results end with a null.
            while let extra = PQgetResult(handle) { PQclear(extra) }
            if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                PQclear(result)
                continue
            }
            do throws(CallHistoryError) {
                rows.append(try take(result))
            } catch {
                if firstError == nil { firstError = error }
            }
        }
        // The sync point: the implicit transaction committed (or rolled back after an error).
        if let sync = PQgetResult(handle) {
            let status = PQresultStatus(sync)
            PQclear(sync)
            if status != PGRES_PIPELINE_SYNC, firstError == nil { firstError = failure("the pipeline did not end with its sync") }
        }
        if let firstError { throw firstError }
        return rows
    }

    // MARK: Notifications

    /// The session's socket, for waiting on notifications.
    var socket: Int32 { PQsocket(handle) }

    /// Reads what the server sent and returns the notifications that arrived: channel and payload.
    func notifications() throws(CallHistoryError) -> [(channel: String, payload: String)] {
        guard PQconsumeInput(handle) == 1 else { throw .unavailable(server: server, detail: Self.message(handle)) }
        var received: [(String, String)] = []
        while let notification = PQnotifies(handle) {
            received.append((String(cString: notification.pointee.relname), String(cString: notification.pointee.extra)))
            PQfreemem(notification)
        }
        return received
    }

    // MARK: Private

    private func statementName(_ sql: String) throws(CallHistoryError) -> String {
        if let name = prepared[sql] { return name }
        let name = "parley_\(prepared.count + 1)"
        _ = try take(PQprepare(handle, name, sql, 0, nil))
        prepared[sql] = name
        return name
    }

    /// The rows of a finished result, which is freed; a failed one becomes the error it names.
    private func take(_ result: OpaquePointer?) throws(CallHistoryError) -> PostgresRows {
        guard let result else { throw failure("no result") }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
            return PostgresRows(result)
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
            // Class 08 is a connection exception; 57P01–57P03 the server shutting down or starting.
            if isBroken || state.hasPrefix("08") || state.hasPrefix("57P") {
                throw .unavailable(server: server, detail: message.isEmpty ? Self.message(handle) : message)
            }
            throw .database(code: Self.numericCode(state), detail: state.isEmpty ? message : "\(state): \(message)")
        }
    }

    private func failure(_ what: String) -> CallHistoryError {
        let message = Self.message(handle)
        if isBroken { return .unavailable(server: server, detail: message.isEmpty ? what : message) }
        return .database(code: 0, detail: message.isEmpty ? what : "\(what): \(message)")
    }

    private static func connectError(server: String, message: String) -> CallHistoryError {
        // A server that answered and refused (no such database or role, bad password) will refuse again: that is a
        // configuration problem, not an outage.
        let refusals = ["does not exist", "authentication failed", "no pg_hba.conf entry", "password"]
        if refusals.contains(where: message.contains) { return .cannotOpen(path: server, detail: message) }
        return .unavailable(server: server, detail: message)
    }

    private static func message(_ connection: OpaquePointer) -> String {
        PQerrorMessage(connection).map { String(cString: $0) }?
            .trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "\n", with: "; ").replacingOccurrences(of: "\t", with: "") ?? ""
    }

    /// "postgresql db@host:port" from the connection's own parameters: no password in any message.
    private static func describe(_ connection: OpaquePointer) -> String {
        func text(_ value: UnsafeMutablePointer<CChar>?) -> String { value.map { String(cString: $0) } ?? "" }
        let host = text(PQhost(connection))
        let port = text(PQport(connection))
        let where_ = host.hasPrefix("/") ? "\(host)/.s.PGSQL.\(port)" : "\(host):\(port)"
        return "postgresql \(text(PQdb(connection)))@\(where_)"
    }

    private static func numericCode(_ state: String) -> Int {
        // SQLSTATE is five base-36 characters; its number keeps codes apart in `CallHistoryError.database`.
        Int(state, radix: 36) ?? 0
    }

    private static func text(_ value: SQLValue) -> String? {
        switch value {
        case .integer(let number): String(number)
        case .real(let number): "\(number)"
        case .text(let text): text
        case .null: nil
        }
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        withOptionalCStrings(strings.map { Optional($0) }) { body($0) }
    }

    private static func withOptionalCStrings<R>(
        _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R
    ) -> R {
        let copies = strings.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

/// The rows of one result, copied out of libpq: text values, NULL as nil.
struct PostgresRows: Sendable {
    /// Row by row, column by column.
    let rows: [[String?]]

    init(_ result: OpaquePointer) {
        let count = PQntuples(result)
        let columns = PQnfields(result)
        var rows: [[String?]] = []
        rows.reserveCapacity(Int(count))
        for row in 0..<count {
            var values: [String?] = []
            values.reserveCapacity(Int(columns))
            for column in 0..<columns {
                values.append(PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column)))
            }
            rows.append(values)
        }
        self.rows = rows
    }

    /// The first column of the first row, if any.
    var scalar: String? { rows.first?.first ?? nil }
}

/// One row as a ``HistoryRow``, for the record reader both stores share.
struct PostgresRow: HistoryRow {
    let values: [String?]

    func isNull(_ column: Int32) -> Bool { values[Int(column)] == nil }
    func int64(_ column: Int32) -> Int64 { values[Int(column)].flatMap { Int64($0) } ?? 0 }
    func double(_ column: Int32) -> Double { values[Int(column)].flatMap { Double($0) } ?? .nan }
    func text(_ column: Int32) -> String { values[Int(column)] ?? "" }
    func uuid(_ column: Int32) -> UUID? { values[Int(column)].flatMap { UUID(uuidString: $0) } }
}
