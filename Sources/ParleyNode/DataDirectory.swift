import CallHistory
import Foundation
import Glibc

/// Where a Parley node keeps its files (the call history, the control socket and token): the one resolver `parley`
/// and `parleyd` share.
public struct DataDirectory: Sendable, Hashable {
    /// The directory.
    public let path: String
    /// How it was chosen, for messages: `--data-dir`, `$PARLEY_DATA_DIR`, `$XDG_DATA_HOME/parley` or
    /// `~/.local/share/parley`.
    public let source: String

    /// `explicit` (a `--data-dir`) if given, else `$PARLEY_DATA_DIR`, else `$XDG_DATA_HOME/parley` (when absolute),
    /// else `~/.local/share/parley` (`$HOME`, else the account's home directory).
    public static func resolve(
        _ explicit: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> DataDirectory {
        if let explicit, !explicit.isEmpty { return DataDirectory(path: explicit, source: "--data-dir") }
        if let dir = environment["PARLEY_DATA_DIR"], !dir.isEmpty { return DataDirectory(path: dir, source: "$PARLEY_DATA_DIR") }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return DataDirectory(path: (xdg as NSString).appendingPathComponent("parley"), source: "$XDG_DATA_HOME/parley")
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return DataDirectory(path: (home as NSString).appendingPathComponent(".local/share/parley"), source: "~/.local/share/parley")
    }

    /// A directory chosen by the caller.
    public init(path: String, source: String) {
        self.path = path
        self.source = source
    }

    /// The call history's database file: `history.sqlite`.
    public var historyPath: String { (path as NSString).appendingPathComponent(Self.historyFileName) }
    /// The journal of live calls (their records if the node stops without ending them): `calls.journal`.
    public var journalPath: String { (path as NSString).appendingPathComponent(LiveCallJournal.fileName) }
    /// The control socket: `control.sock`.
    public var controlSocketPath: String { (path as NSString).appendingPathComponent("control.sock") }

    /// The history database's file name inside a data directory.
    public static let historyFileName = "history.sqlite"

    /// Creates the directory (and its parents) if missing, its owner's alone (0700). An existing directory of ours
    /// that its group or others may enter or read is tightened to 0700: it holds the call history and the control
    /// token (a symbolic link is followed to the directory it names). One owned by another user is left as it is.
    /// Returns what was done, for the log, or nil when nothing needed saying.
    @discardableResult
    public func create() throws -> String? {
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let mode = Int(status.st_mode & 0o777)
        guard mode & 0o077 != 0 else { return nil }
        guard status.st_uid == geteuid() else {
            return "the data directory \(path) is open to others (\(String(mode, radix: 8))) and is not ours: left as it is"
        }
        guard chmod(path, 0o700) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM) }
        return "the data directory \(path) was \(String(mode, radix: 8)) (open to others); it is now 700"
    }
}
