import Foundation
import Glibc
import ParleyIO

/// Why a ``ControlServer`` could not start.
public enum ControlServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The path does not fit in a Unix socket address (`sun_path`), or is empty or holds a NUL.
    case pathTooLong(path: String, maxBytes: Int)
    /// Another server (a live parleyd) is listening at the path.
    case alreadyInUse(path: String)
    /// Something other than a socket is at the path; it is left alone.
    case notASocket(path: String)
    /// A system call failed.
    case system(operation: String, path: String, code: Int32)

    /// For people.
    public var description: String {
        switch self {
        case .pathTooLong(let path, let maxBytes):
            "control socket path \(path) is \(path.utf8.count) bytes; a Unix socket path holds 1 to \(maxBytes) (choose a shorter data directory, or leave the socket to the runtime directory)"
        case .alreadyInUse(let path):
            "control socket \(path) is already in use: another parleyd is running with this data directory (or, in the runtime directory, for this user)"
        case .notASocket(let path):
            "\(path) exists and is not a socket; refusing to replace it with the control socket"
        case .system(let operation, let path, let code):
            "\(operation) \(path): \(String(cString: strerror(code)))"
        }
    }
}

/// The daemon's end of the control API transport: a Unix stream socket carrying newline-delimited JSON objects,
/// opened to frontends that present the token.
///
/// A connection's first line must be `{"v":1,"type":"hello","token":"…"}` with the right token, within
/// ``ControlLimits/helloTimeout``; it is answered with `{"v":1,"type":"welcome"}`, and from then on every line
/// the client sends goes to `onLine`. Anything else is answered with an `unauthorized` error and the connection is
/// closed. Faults of the transport (``ControlErrorCode``) are reported to the client as
/// `{"v":1,"type":"error","error":{"code":"…","message":"…"}}`; whether a line is valid JSON, and what it means,
/// is the caller's business.
///
/// All work happens on one ParleyIO event loop (the one given, or the server's own); `onLine` and `onClose` run on
/// it, in order, and may call every method here except ``stop()`` (which waits for the loop).
public final class ControlServer: Sendable {
    /// Where the server listens.
    public let socketPath: String
    private let handle: ControlServerHandle<LineFraming>
    /// The socket file this server created: only that file is removed on stop (nil: a socket it was handed, whose
    /// file belongs to whoever made it).
    private let identity: FileIdentity?

    /// Binds a Unix stream socket at `socketPath` (mode 0600) and starts serving at once, on `loop` (a loop of its
    /// own when nil).
    ///
    /// A socket file left by a server that is gone (connecting to it is refused) is replaced; a live socket is
    /// ``ControlServerError/alreadyInUse(path:)`` and anything that is not a socket is
    /// ``ControlServerError/notASocket(path:)`` — neither is touched. `onLine` receives each line (without its LF)
    /// of authenticated clients; `onClose` hears when an authenticated client is gone (not after ``stop()``).
    public init(
        socketPath: String, token: String, limits: ControlLimits = .init(), loop: EventLoop? = nil,
        onLine: @escaping @Sendable (ControlClientID, Data) -> Void,
        onClose: (@Sendable (ControlClientID) -> Void)? = nil
    ) throws(ControlServerError) {
        self.socketPath = socketPath
        let (fd, identity) = try Self.listen(at: socketPath)
        self.identity = identity
        do {
            handle = try ControlServerHandle(
                listening: fd, framing: LineFraming(maxLineBytes: limits.maxLineBytes), token: token, limits: limits,
                loop: loop, onLine: onLine, onClose: onClose)
        } catch {
            unlink(socketPath)
            throw .system(operation: error.operation, path: socketPath, code: error.code)
        }
    }

    /// Serves `fd`, a listening Unix stream socket at `socketPath` that a service manager made and passed on (socket
    /// activation): nothing is bound, and its file is left in place on stop, for the manager's next start. The
    /// descriptor is the server's from now on (made non-blocking; closed on stop, or here when serving fails).
    public init(
        inheriting fd: Int32, socketPath: String, token: String, limits: ControlLimits = .init(), loop: EventLoop? = nil,
        onLine: @escaping @Sendable (ControlClientID, Data) -> Void,
        onClose: (@Sendable (ControlClientID) -> Void)? = nil
    ) throws(ControlServerError) {
        self.socketPath = socketPath
        identity = nil
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        do {
            handle = try ControlServerHandle(
                listening: fd, framing: LineFraming(maxLineBytes: limits.maxLineBytes), token: token, limits: limits,
                loop: loop, onLine: onLine, onClose: onClose)
        } catch {
            throw .system(operation: error.operation, path: socketPath, code: error.code)
        }
    }

    deinit {
        removeSocketFile()
    }

    /// Queues `line` (one JSON object, without a newline; the LF is added) for `client`; nothing if the client is
    /// gone or not authenticated. A client whose queue would exceed ``ControlLimits/maxQueuedBytes`` is closed.
    public func send(_ line: Data, to client: ControlClientID) {
        precondition(!Self.hasNewline(line), "a control line must not contain a newline")
        handle.send(line, to: client)
    }

    /// Whether any client subscribed now (read from any thread; a hint, as a client may subscribe right after).
    public var hasSubscribers: Bool { handle.subscribers.value > 0 }

    /// Whether any subscribed client asked for audio levels now (a hint, like ``hasSubscribers``).
    public var hasLevelSubscribers: Bool { handle.subscribers.levels > 0 }

    /// Marks `client` subscribed: it gets ``sendToSubscribers(_:audioLevelsOnly:)`` (with `audioLevels`, also what
    /// goes to level subscribers only; subscribing again changes that) and keeps its slot when the server is full.
    public func subscribe(_ client: ControlClientID, audioLevels: Bool = false) {
        handle.subscribe(client, audioLevels: audioLevels)
    }

    /// Queues `line` (as in ``send(_:to:)``) for every subscribed client, or only for those that asked for audio
    /// levels.
    public func sendToSubscribers(_ line: Data, audioLevelsOnly: Bool = false) {
        precondition(!Self.hasNewline(line), "a control line must not contain a newline")
        handle.sendToSubscribers(line, audioLevelsOnly: audioLevelsOnly)
    }

    /// Queues `line` (as in ``send(_:to:)``) for every authenticated client.
    public func broadcast(_ line: Data) {
        precondition(!Self.hasNewline(line), "a control line must not contain a newline")
        handle.broadcast(line)
    }

    /// Closes `client`'s connection after writing what is queued for it; `onClose` follows.
    public func close(_ client: ControlClientID) {
        handle.close(client)
    }

    /// Authenticated clients connected now.
    public var clientCount: Int { handle.clientCount }

    /// Connections that have not said hello yet (at most ``ControlLimits/maxPendingConnections``).
    public var pendingCount: Int { handle.pendingCount }

    /// Stops listening, closes every connection and removes the socket file; returns once every socket is closed.
    /// Idempotent. Must not be called from `onLine` or `onClose`.
    public func stop() {
        handle.stop()
        removeSocketFile()
    }

    /// Whether `line` holds a LF (memchr: a reply can be tens of kilobytes).
    private static func hasNewline(_ line: Data) -> Bool {
        line.withUnsafeBytes { bytes in bytes.baseAddress.map { memchr($0, 0x0A, bytes.count) != nil } ?? false }
    }

    /// Removes the socket file only if it is still the one we bound (not one a later server made).
    private func removeSocketFile() {
        guard let identity else { return }
        if case .success(let current) = UnixSocket.identity(of: socketPath), current == identity {
            unlink(socketPath)
        }
    }

    /// Creates the listening socket: path checks, stale socket removal, bind with mode 0600, listen.
    private static func listen(at path: String) throws(ControlServerError) -> (Int32, FileIdentity) {
        guard !path.utf8.isEmpty, path.utf8.count <= UnixSocket.maxPathBytes, !path.utf8.contains(0) else {
            throw .pathTooLong(path: path, maxBytes: UnixSocket.maxPathBytes)
        }
        switch UnixSocket.identity(of: path) {
        case .failure(let error) where error.code == ENOENT:
            break
        case .failure(let error):
            throw .system(operation: "stat", path: path, code: error.code)
        case .success(let existing):
            guard existing.isSocket else { throw .notASocket(path: path) }
            switch UnixSocket.connect(to: path) {
            case .success(let fd):
                Glibc.close(fd)
                throw .alreadyInUse(path: path)
            case .failure(let error) where error.code == ECONNREFUSED:
                // Nobody listens: a socket file left by a server that died. Replace it.
                guard unlink(path) == 0 || errno == ENOENT else { throw .system(operation: "remove stale socket", path: path, code: errno) }
            case .failure(let error):
                throw .system(operation: "probe existing socket", path: path, code: error.code)
            }
        }
        let fd = UnixSocket.makeSocket(nonBlocking: true)
        guard fd >= 0 else { throw .system(operation: "socket", path: path, code: errno) }
        // On Linux the socket file takes its mode from the socket's inode (less the umask): set 0600 before bind so
        // the file is never open to others, then chmod it again below in case this kernel ignores that.
        _ = fchmod(fd, 0o600)
        let bound = UnixSocket.withAddress(path) { bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = errno
            Glibc.close(fd)
            throw code == EADDRINUSE ? .alreadyInUse(path: path) : .system(operation: "bind", path: path, code: code)
        }
        func fail(_ operation: String, _ code: Int32) -> ControlServerError {
            Glibc.close(fd)
            unlink(path)
            return .system(operation: operation, path: path, code: code)
        }
        guard chmod(path, 0o600) == 0 else { throw fail("chmod", errno) }
        guard Glibc.listen(fd, 64) == 0 else { throw fail("listen", errno) }
        switch UnixSocket.identity(of: path) {
        case .success(let identity): return (fd, identity)
        case .failure(let error): throw fail("stat", error.code)
        }
    }
}
