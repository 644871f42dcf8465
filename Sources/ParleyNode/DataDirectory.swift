import CallHistory
import Foundation
import Glibc

/// Where a Parley node keeps its files (the call history, the journal, its identity) and where its control socket and
/// token are (``control``): the one resolver `parley` and `parleyd` share.
public struct DataDirectory: Sendable, Hashable {
    /// The directory.
    public let path: String
    /// How it was chosen, for messages: `--data-dir`, `$PARLEY_DATA_DIR`, `$XDG_DATA_HOME/parley` or
    /// `~/.local/share/parley`.
    public let source: String

    /// Where the control socket and token are: `$XDG_RUNTIME_DIR/parley` for the default data directory in a
    /// session with a runtime directory, else this directory.
    public let control: ControlDirectory

    /// `explicit` (a `--data-dir`) if given, else `$PARLEY_DATA_DIR`, else `$XDG_DATA_HOME/parley` (when absolute),
    /// else `~/.local/share/parley` (`$HOME`, else the account's home directory). A named directory (the first two)
    /// holds everything, the control socket and token too; the default one leaves them to `$XDG_RUNTIME_DIR/parley`
    /// when `$XDG_RUNTIME_DIR` names a directory.
    public static func resolve(
        _ explicit: String? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> DataDirectory {
        if let explicit, !explicit.isEmpty { return DataDirectory(path: explicit, source: "--data-dir") }
        if let dir = environment["PARLEY_DATA_DIR"], !dir.isEmpty { return DataDirectory(path: dir, source: "$PARLEY_DATA_DIR") }
        let runtime = ControlDirectory.runtime(environment: environment)
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return DataDirectory(path: (xdg as NSString).appendingPathComponent("parley"), source: "$XDG_DATA_HOME/parley", control: runtime)
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return DataDirectory(
            path: (home as NSString).appendingPathComponent(".local/share/parley"), source: "~/.local/share/parley", control: runtime)
    }

    /// A directory chosen by the caller, holding the control socket and token too unless `control` says otherwise.
    public init(path: String, source: String, control: ControlDirectory? = nil) {
        self.path = path
        self.source = source
        self.control = control ?? ControlDirectory(path: path, source: source)
    }

    /// The control directory a client (`parley`) should connect to: ``control``, except that when it is the runtime
    /// directory and holds no socket while a parleyd is live on this data directory's own socket (one started before
    /// the socket moved to the runtime directory, or with an older parleyd), that one.
    public var controlForClients: ControlDirectory {
        guard control.isRuntime, !control.hasSocket else { return control }
        let old = ControlDirectory(path: path, source: source)
        return old.isLive ? old : control
    }

    /// The call history's database file: `history.sqlite`.
    public var historyPath: String { (path as NSString).appendingPathComponent(Self.historyFileName) }
    /// The journal of live calls (their records if the node stops without ending them): `calls.journal`.
    public var journalPath: String { (path as NSString).appendingPathComponent(LiveCallJournal.fileName) }
    /// The control socket: `control.sock` in ``control``.
    public var controlSocketPath: String { control.socketPath }

    /// The history database's file name inside a data directory.
    public static let historyFileName = "history.sqlite"

    /// Creates the directory (and its parents) if missing, its owner's alone (0700). An existing directory of ours
    /// that its group or others may enter or read is tightened to 0700: it holds the call history (and the control
    /// token, unless that is in the runtime directory); a symbolic link is followed to the directory it names. One
    /// owned by another user is left as it is. Returns what was done, for the log, or nil when nothing needed saying.
    @discardableResult
    public func create() throws -> String? {
        try PrivateDirectory.create(path, what: "the data directory")
    }
}
