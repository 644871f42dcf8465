import ControlChannel
import Foundation
import Glibc
import ParleyIO

/// Where parleyd's control socket (`control.sock`) and its token (`control.token`) live: `$XDG_RUNTIME_DIR/parley`
/// when the session has a runtime directory and no data directory was named (`--data-dir`, `$PARLEY_DATA_DIR`), else
/// the data directory itself. The runtime directory is the user's alone, on tmpfs, and short (a Unix socket's path
/// holds at most 107 bytes), as `pipewire-0`, `pulse/native` and `bus` are there.
public struct ControlDirectory: Sendable, Hashable {
    /// The directory.
    public let path: String
    /// How it was chosen, for messages: `$XDG_RUNTIME_DIR/parley`, or the data directory's source.
    public let source: String
    /// Whether it is the session's runtime directory (else a data directory).
    public let isRuntime: Bool

    /// A directory chosen by the caller.
    public init(path: String, source: String, isRuntime: Bool = false) {
        self.path = path
        self.source = source
        self.isRuntime = isRuntime
    }

    /// The control socket: `control.sock`.
    public var socketPath: String { (path as NSString).appendingPathComponent("control.sock") }
    /// The control token: `control.token`.
    public var tokenPath: String { ControlToken.path(in: path) }

    /// `$XDG_RUNTIME_DIR/parley` when `$XDG_RUNTIME_DIR` is an absolute path to an existing directory (the basedir
    /// spec's rule: a relative one is ignored); nil otherwise.
    static func runtime(environment: [String: String]) -> ControlDirectory? {
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: runtime, isDirectory: &isDirectory), isDirectory.boolValue else { return nil }
        return ControlDirectory(
            path: (runtime as NSString).appendingPathComponent("parley"), source: "$XDG_RUNTIME_DIR/parley", isRuntime: true)
    }

    /// Whether a parleyd listens on the socket now (a connection to it is accepted).
    public var isLive: Bool {
        guard case .success(let fd) = UnixSocket.connect(to: socketPath) else { return false }
        close(fd)
        return true
    }

    /// Whether a socket file is there (live or left behind).
    var hasSocket: Bool {
        guard case .success(let identity) = UnixSocket.identity(of: socketPath) else { return false }
        return identity.isSocket
    }

    /// Creates the directory if missing, 0700, or tightens one of ours that others may open (see
    /// ``DataDirectory/create()``); what was done, for the log.
    @discardableResult
    public func create() throws -> String? {
        try PrivateDirectory.create(path, what: isRuntime ? "the runtime directory" : "the data directory")
    }
}

/// A directory only its owner may enter: created 0700, an existing one of ours tightened to 0700.
enum PrivateDirectory {
    /// Creates `path` (and its parents) if missing, 0700. An existing directory of ours that its group or others may
    /// enter or read is tightened to 0700 (a symbolic link is followed to the directory it names); one owned by
    /// another user is left as it is. Returns what was done, for the log, or nil when nothing needed saying.
    static func create(_ path: String, what: String) throws -> String? {
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let mode = Int(status.st_mode & 0o777)
        guard mode & 0o077 != 0 else { return nil }
        guard status.st_uid == geteuid() else {
            return "\(what) \(path) is open to others (\(String(mode, radix: 8))) and is not ours: left as it is"
        }
        guard chmod(path, 0o700) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EPERM) }
        return "\(what) \(path) was \(String(mode, radix: 8)) (open to others); it is now 700"
    }
}
