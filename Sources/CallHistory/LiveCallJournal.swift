import ConversationKit
import Foundation
import Glibc
import Synchronization

/// The calls live on a node, kept in a small file beside the history (`calls.journal` in the data directory, 0600) so
/// that a node killed with calls up (SIGKILL, a crash, a power cut) records them at its next start: ended as
/// ``Conversation/EndedReason/crashed``, at the last time the node was known to be alive (the file's modification
/// time: every write touches it, and the writer touches it every 10 s while calls are live), with the status that
/// gives (connected, else missed for an incoming call and failed for an outgoing one).
///
/// The file is JSON lines, appended and flushed to disk (`fdatasync`) in batches: `{"live":RECORD}` for a call as it
/// stands (its record as it would be if the node stopped now; a later line for the same call replaces it) and
/// `{"ended":"UUID"}` once its own record is durable in the history. A line cut short by a crash is skipped. The writer
/// empties the file whenever no call is live and rewrites it (a temporary file renamed over it) when ended calls
/// outnumber live ones; a clean stop removes it.
///
/// One node holds a journal at a time (an exclusive `flock`, which the kernel releases when the process dies, however
/// it dies): a second parleyd sharing the data directory (a scripted run beside the daemon) keeps none, and never
/// mistakes the first one's live calls for crashed ones. Every file operation happens on the caller's thread; the
/// engine's writer calls it from one queue of its own.
public final class LiveCallJournal: Sendable {
    /// The journal's file.
    public let path: String
    private let file: Mutex<Int32>

    /// The journal's file name inside a data directory.
    public static let fileName = "calls.journal"

    /// One line of the file.
    public enum Entry: Sendable, Hashable {
        /// A call as it stands: the record it leaves if the node stops now.
        case live(CallRecord)
        /// A call whose own record is in the history now.
        case ended(UUID)
    }

    private struct Line: Codable {
        var live: CallRecord?
        var ended: UUID?
    }

    private init(path: String, fd: Int32) {
        self.path = path
        file = Mutex(fd)
    }

    deinit {
        file.withLock { fd in
            if fd >= 0 { Glibc.close(fd) }
        }
    }

    /// Opens (creating it 0600, or tightening it to 0600) and locks the journal at `path`; nil when another live
    /// process holds it.
    public static func open(at path: String) throws(CallHistoryError) -> LiveCallJournal? {
        for _ in 0..<3 {
            let fd = Glibc.open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw .cannotOpen(path: path, detail: String(cString: strerror(errno))) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                let code = errno
                Glibc.close(fd)
                if code == EWOULDBLOCK { return nil }
                throw .cannotOpen(path: path, detail: "flock: \(String(cString: strerror(code)))")
            }
            // Locked: but a holder compacting the file may have renamed a new one over the one opened here.
            var opened = stat()
            var named = stat()
            guard fstat(fd, &opened) == 0, stat(path, &named) == 0, opened.st_dev == named.st_dev, opened.st_ino == named.st_ino
            else {
                Glibc.close(fd)
                continue
            }
            _ = fchmod(fd, 0o600)
            return LiveCallJournal(path: path, fd: fd)
        }
        throw .cannotOpen(path: path, detail: "the file kept being replaced while it was opened")
    }

    /// The calls the file says were live (each as its last line left it, in the order they began), how many lines
    /// could not be read (a line cut short by a crash), and the file's modification time (nil for an empty file).
    public func read() throws(CallHistoryError) -> (live: [CallRecord], unreadable: Int, lastTouched: Date?) {
        try file.withLock { fd throws(CallHistoryError) in
            var status = stat()
            guard fstat(fd, &status) == 0 else { throw .storage(path: path, detail: String(cString: strerror(errno))) }
            guard status.st_size > 0 else { return ([], 0, nil) }
            var data = Data(count: Int(status.st_size))
            var done = 0
            while done < data.count {
                let count = data.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(done)) }
                guard count > 0 else {
                    if count < 0, errno == EINTR { continue }
                    break
                }
                done += count
            }
            let (live, unreadable) = Self.replay(data.prefix(done))
            let touched = Date(timeIntervalSince1970: Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9)
            return (live, unreadable, touched)
        }
    }

    /// The records the file's lines leave live, in the order the calls first appeared, and how many lines were not
    /// readable (skipped).
    public static func replay(_ data: Data) -> (live: [CallRecord], unreadable: Int) {
        var order: [UUID] = []
        var live: [UUID: CallRecord] = [:]
        var unreadable = 0
        let decoder = JSONDecoder()
        for line in data.split(separator: UInt8(ascii: "\n")) where !line.isEmpty {
            guard let entry = try? decoder.decode(Line.self, from: line) else {
                unreadable += 1
                continue
            }
            if let record = entry.live {
                if live.updateValue(record, forKey: record.uuid) == nil { order.append(record.uuid) }
            } else if let uuid = entry.ended {
                live[uuid] = nil
            } else {
                unreadable += 1
            }
        }
        return (order.compactMap { live[$0] }, unreadable)
    }

    /// The lines of `entries`, as written.
    public static func encode(_ entries: [Entry]) -> Data {
        let encoder = JSONEncoder()
        var data = Data()
        for entry in entries {
            let line: Line
            switch entry {
            case .live(let record): line = Line(live: record, ended: nil)
            case .ended(let uuid): line = Line(live: nil, ended: uuid)
            }
            // A CallRecord always encodes (dates, strings and numbers only).
            guard let encoded = try? encoder.encode(line) else { preconditionFailure("a journal line did not encode") }
            data.append(encoded)
            data.append(UInt8(ascii: "\n"))
        }
        return data
    }

    /// Writes the calls live at a crash into `store` (ended at the file's last touch, at most `now`) and empties the
    /// journal; returns the stored records. A call already in the store (its record was written, the `ended` line
    /// was not) keeps its record. On a store error nothing is emptied: the next start tries again.
    public func recover(into store: any CallHistoryStore, now: Date) throws(CallHistoryError) -> (records: [CallRecord], unreadable: Int) {
        let (live, unreadable, touched) = try read()
        guard !live.isEmpty else {
            try clear()
            return ([], unreadable)
        }
        let lastAlive = min(touched ?? now, now)
        let stored = try store.insertReturningRecords(live.map { $0.endedByCrash(lastAlive: lastAlive) })
        try clear()
        return (stored, unreadable)
    }

    /// Appends `entries` and flushes them to disk.
    public func append(_ entries: [Entry]) throws(CallHistoryError) {
        guard !entries.isEmpty else { return }
        let data = Self.encode(entries)
        try file.withLock { fd throws(CallHistoryError) in
            try Self.write(data, to: fd, path: path)
            guard fdatasync(fd) == 0 else { throw .storage(path: path, detail: "fdatasync: \(String(cString: strerror(errno)))") }
        }
    }

    /// Replaces the file by one holding only `live` (written to a temporary file, flushed, renamed over it).
    public func rewrite(_ live: [CallRecord]) throws(CallHistoryError) {
        let data = Self.encode(live.map { .live($0) })
        let temporary = path + ".new"
        try file.withLock { fd throws(CallHistoryError) in
            unlink(temporary)
            let fresh = Glibc.open(temporary, O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fresh >= 0 else { throw .storage(path: temporary, detail: String(cString: strerror(errno))) }
            // Locked before it takes the journal's name, so that nobody else ever holds the file at that name.
            guard flock(fresh, LOCK_EX | LOCK_NB) == 0 else {
                Glibc.close(fresh)
                unlink(temporary)
                throw .storage(path: temporary, detail: "flock: \(String(cString: strerror(errno)))")
            }
            do throws(CallHistoryError) {
                try Self.write(data, to: fresh, path: temporary)
                guard fdatasync(fresh) == 0, rename(temporary, path) == 0 else {
                    throw .storage(path: path, detail: String(cString: strerror(errno)))
                }
            } catch {
                Glibc.close(fresh)
                unlink(temporary)
                throw error
            }
            Glibc.close(fd)
            fd = fresh
        }
    }

    /// Empties the file (no call is live).
    public func clear() throws(CallHistoryError) {
        try file.withLock { fd throws(CallHistoryError) in
            guard ftruncate(fd, 0) == 0, fdatasync(fd) == 0 else {
                throw .storage(path: path, detail: String(cString: strerror(errno)))
            }
        }
    }

    /// Sets the file's modification time to now: the node is alive.
    public func touch() {
        file.withLock { fd in _ = futimens(fd, nil) }
    }

    /// Removes the file and lets it go (a clean stop with no call live). Nothing more may be written.
    public func remove() {
        file.withLock { fd in
            guard fd >= 0 else { return }
            unlink(path)
            Glibc.close(fd)
            fd = -1
        }
    }

    /// Lets the file go as it is (a stop with calls still live: the next start records them). Nothing more may be
    /// written.
    public func close() {
        file.withLock { fd in
            guard fd >= 0 else { return }
            Glibc.close(fd)
            fd = -1
        }
    }

    private static func write(_ data: Data, to fd: Int32, path: String) throws(CallHistoryError) {
        var written = 0
        while written < data.count {
            let count = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw .storage(path: path, detail: String(cString: strerror(errno))) }
            written += count
        }
    }
}
