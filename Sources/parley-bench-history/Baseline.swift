import CallHistory
import Foundation

/// The baseline: the same rows as generated INSERT statements (one per row) for the stock `sqlite3` shell,
/// into a plain two-table schema (no secondary indexes, no constraints beyond the rowid key), in one
/// transaction, with the store's journal settings (WAL, synchronous = FULL).
final class BaselineScript {
    let path: String
    private let file: FileHandle
    private var buffer = ""
    private var nextID: Int64 = 1

    static let prologue = """
        .bail on
        PRAGMA journal_mode = WAL;
        PRAGMA synchronous = FULL;
        CREATE TABLE conversation (id INTEGER PRIMARY KEY, uuid TEXT NOT NULL, direction TEXT NOT NULL,
            status TEXT NOT NULL, ended_reason TEXT NOT NULL, started_at REAL NOT NULL, connected_at REAL,
            ended_at REAL NOT NULL, is_video INTEGER NOT NULL, is_read INTEGER NOT NULL, local_kind INTEGER,
            local_value TEXT, local_display TEXT, group_uuid TEXT, call_id TEXT);
        CREATE TABLE remote_handle (conversation_id INTEGER NOT NULL, position INTEGER NOT NULL,
            kind INTEGER NOT NULL, value TEXT NOT NULL, normalized TEXT, display_name TEXT NOT NULL,
            started_at REAL NOT NULL);
        BEGIN;

        """

    init(path: String) throws {
        self.path = path
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw BenchFailure("cannot create \(path)")
        }
        file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        buffer = Self.prologue
    }

    /// The rows `record` becomes (what `RecordWriter` stores, the same values).
    func append(_ record: CallRecord) throws {
        let id = nextID
        nextID += 1
        let started = record.startedAt.timeIntervalSinceReferenceDate
        buffer += "INSERT INTO conversation VALUES (\(id), '\(record.uuid.uuidString)', '\(record.direction.rawValue)', '"
        buffer += "\(record.status.rawValue)', '\(record.endedReason.rawValue)', \(started), "
        buffer += "\(real(record.connectedAt?.timeIntervalSinceReferenceDate)), \(record.endedAt.timeIntervalSinceReferenceDate), "
        buffer += "\(record.isVideo ? 1 : 0), \(record.isRead ? 1 : 0), "
        buffer += "\(record.localHandle.map { String($0.kind.rawValue) } ?? "NULL"), \(text(record.localHandle?.value)), "
        buffer += "\(text(record.localHandle?.displayName)), \(text(record.groupUUID?.uuidString)), \(text(record.callID)));\n"
        for (position, remote) in record.remoteHandles.enumerated() {
            buffer += "INSERT INTO remote_handle VALUES (\(id), \(position), \(remote.handle.kind.rawValue), "
            buffer += "\(text(remote.handle.value)), \(text(remote.normalizedValue)), \(text(remote.handle.displayName)), \(started));\n"
        }
        if buffer.utf8.count > 1 << 20 { try flush() }
    }

    /// Ends the transaction and closes the file.
    func finish() throws {
        buffer += "COMMIT;\n"
        try flush()
        try file.close()
    }

    private func flush() throws {
        try file.write(contentsOf: Data(buffer.utf8))
        buffer = ""
        buffer.reserveCapacity(1 << 20 + 4096)
    }

    private func text(_ value: String?) -> String {
        guard let value else { return "NULL" }
        guard value.utf8.contains(UInt8(ascii: "'")) else { return "'\(value)'" }
        return "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
    }

    private func real(_ value: Double?) -> String { value.map { "\($0)" } ?? "NULL" }
}

/// Runs the `sqlite3` shell.
enum SQLiteShell {
    /// The shell: $PARLEY_BENCH_SQLITE3, or `sqlite3` on PATH.
    static func locate() throws -> String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["PARLEY_BENCH_SQLITE3"], !path.isEmpty { return path }
        for folder in (environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let candidate = "\(folder)/sqlite3"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw BenchFailure("the sqlite3 shell is not installed (Scripts/bench-history installs it: apt-get install sqlite3)")
    }

    /// Runs the shell on `database` with `arguments`, standard input from `input`; returns its standard output.
    @discardableResult
    static func run(_ shell: String, database: String, arguments: [String] = [], input: String? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: shell)
        process.arguments = [database] + arguments
        let output = Pipe()
        process.standardOutput = output
        if let input { process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: input)) }
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchFailure("\(shell) \(database) failed with status \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The shell's SQLite version (`3.40.1`).
    static func version(_ shell: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: shell)
        process.arguments = ["--version"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: " ").first.map(String.init) ?? "?"
    }
}

/// A benchmark that cannot go on (a failed check or a missing tool), in words.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
