import Foundation

/// Why the call history could not do something. Descriptions name the file and the problem.
public enum CallHistoryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file exists but is not a SQLite database, or is damaged.
    case corruptDatabase(path: String, detail: String)
    /// The file or its folder cannot be opened (permissions, missing folder, read-only).
    case cannotOpen(path: String, detail: String)
    /// The disk is full or an I/O error occurred.
    case storage(path: String, detail: String)
    /// The file is a SQLite database of something else; Parley leaves it alone.
    case notAHistory(path: String)
    /// A record that cannot be stored as it is (times that are not finite or out of order…).
    case invalidRecord(String)
    /// The database was written by a newer Parley, whose schema this one does not know.
    case newerSchema(path: String, found: Int, supported: Int)
    /// Any other SQLite failure.
    case database(code: Int, detail: String)
    /// No record has this id.
    case unknownRecord(Int64)
    /// A paging cursor that this store did not make (or that was damaged).
    case invalidCursor(String)
    /// A query parameter out of range (limit, time range…).
    case invalidQuery(String)
    /// A history server (PostgreSQL) that cannot be reached now: down, restarting, or the connection was lost.
    /// Nothing was written; the same call may succeed once the server is back.
    case unavailable(server: String, detail: String)

    /// The error in words.
    public var description: String {
        switch self {
        case .corruptDatabase(let path, let detail):
            "\(path): not a usable call-history database (\(detail)); move it aside to start a new one"
        case .cannotOpen(let path, let detail): "\(path): cannot open the call history (\(detail))"
        case .notAHistory(let path):
            "\(path): a SQLite database of something else, not a Parley call history; left untouched"
        case .invalidRecord(let problem): "cannot store this record: \(problem)"
        case .storage(let path, let detail): "\(path): storage error (\(detail))"
        case .newerSchema(let path, let found, let supported):
            "\(path): the call history has schema version \(found), newer than this Parley supports (\(supported))"
        case .database(let code, let detail): "call history database error \(code): \(detail)"
        case .unknownRecord(let id): "no call-history record \(id)"
        case .invalidCursor(let cursor): "invalid paging cursor '\(cursor)'"
        case .invalidQuery(let problem): "invalid history query: \(problem)"
        case .unavailable(let server, let detail): "\(server): the history server cannot be reached (\(detail))"
        }
    }
}
