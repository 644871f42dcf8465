import Dispatch
import Foundation
import Glibc

/// Why a ``ControlWebSocketServer`` could not start.
public enum ControlWebSocketServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The host is not a loopback address (127.0.0.0/8, ::1 or `localhost`): the control API is local only.
    case notLoopback(host: String)
    /// Another socket is bound to the address.
    case addressInUse(host: String, port: UInt16)
    /// A system call failed.
    case system(operation: String, code: Int32)

    /// For people.
    public var description: String {
        switch self {
        case .notLoopback(let host):
            "\(host) is not a loopback address; the control API listens on 127.0.0.1, ::1 or localhost only"
        case .addressInUse(let host, let port):
            "\(host) port \(port) is already in use"
        case .system(let operation, let code):
            "\(operation): \(String(cString: strerror(code)))"
        }
    }
}

/// The control API over WebSocket (RFC 6455) on a loopback TCP port, for browser frontends: the same protocol and
/// the same semantics as ``ControlServer``, so the daemon can plug the same handlers into both.
///
/// A connection first upgrades with an HTTP/1.1 GET (its head at most 8 KiB). A request that carries an `Origin`
/// (every browser's does) must name one of `allowedOrigins`, else it is refused with 403; a request without one
/// (not from a browser) is allowed. The first text message must then be the hello
/// `{"v":1,"type":"hello","token":"…"}` (so browser code needs no custom headers), handshake and hello within
/// ``ControlLimits/helloTimeout``; it is answered with `{"v":1,"type":"welcome"}`, anything else with an
/// `unauthorized` error message and a close frame. Every text message — one JSON object each, no newline needed —
/// then goes to `onLine`. Binary messages (1003), invalid UTF-8 (1007), unmasked or otherwise invalid frames (1002)
/// and messages over ``ControlLimits/maxLineBytes`` (a `frameTooLarge` error, then 1009) close the connection.
///
/// All work happens on one private serial queue; `onLine` and `onClose` run on it, in order, and may call every
/// method here except ``stop()`` (which waits for the queue).
public final class ControlWebSocketServer: Sendable {
    /// The address the server listens on.
    public let host: String
    /// The port the server listens on (the one the system picked when asked for 0).
    public let port: UInt16
    private let core: WebSocketServerCore

    deinit {
        let core = core
        core.queue.async { core.stop() }
    }

    /// Binds `host` (a loopback address) at `port` (0: any free port, see ``port``) and starts serving at once.
    ///
    /// `onLine` receives each text message of authenticated clients; `onClose` hears when an authenticated client
    /// is gone (not after ``stop()``).
    public init(
        host: String = "127.0.0.1", port: UInt16, token: String, allowedOrigins: Set<String> = [],
        limits: ControlLimits = .init(), onLine: @escaping @Sendable (ControlClientID, Data) -> Void,
        onClose: (@Sendable (ControlClientID) -> Void)? = nil
    ) throws(ControlWebSocketServerError) {
        self.host = host
        let (fd, bound) = try Self.listen(host: host, port: port)
        self.port = bound
        core = WebSocketServerCore(
            token: Array(token.utf8), limits: limits, allowedOrigins: allowedOrigins, onLine: onLine, onClose: onClose)
        core.queue.sync { core.start(listener: fd) }
    }

    /// Queues `line` (one JSON object) as one text frame for `client`; nothing if the client is gone or not
    /// authenticated. A client whose queue would exceed ``ControlLimits/maxQueuedBytes`` is closed.
    public func send(_ line: Data, to client: ControlClientID) {
        core.perform { core in core.send(line, to: client) }
    }

    /// Queues `line` (as in ``send(_:to:)``) for every authenticated client.
    public func broadcast(_ line: Data) {
        core.perform { core in core.broadcast(line) }
    }

    /// Closes `client`'s connection (close code 1000) after writing what is queued for it; `onClose` follows.
    public func close(_ client: ControlClientID) {
        core.perform { core in core.close(client) }
    }

    /// Authenticated clients connected now.
    public var clientCount: Int {
        core.performAndWait { core in core.authenticatedCount }
    }

    /// Stops listening and closes every connection (offering each a close frame 1001); returns once every socket is
    /// closed (or after 2 s). Idempotent. Must not be called from `onLine` or `onClose`.
    public func stop() {
        dispatchPrecondition(condition: .notOnQueue(core.queue))
        core.queue.sync { core.stop() }
        _ = core.socketsClosed.wait(timeout: .now() + 2)
    }

    /// The loopback address `host` names, as a socket address; nil when it is not one.
    private static func loopbackAddress(_ host: String) -> LoopbackAddress? {
        let name = host == "localhost" ? "127.0.0.1" : host
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 {
            // s_addr is in network byte order: its first byte in memory is the first octet.
            guard withUnsafeBytes(of: &v4, { $0[0] }) == 127 else { return nil }
            return .v4(v4)
        }
        var v6 = in6_addr()
        let bare = name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
        if inet_pton(AF_INET6, bare, &v6) == 1 {
            let bytes = withUnsafeBytes(of: &v6) { Array($0) }
            guard bytes == Array(repeating: 0, count: 15) + [1] else { return nil }
            return .v6(v6)
        }
        return nil
    }

    /// An IPv4 or IPv6 loopback address.
    private enum LoopbackAddress {
        case v4(in_addr)
        case v6(in6_addr)
    }

    /// Creates the listening socket: bind (SO_REUSEADDR), listen, and the port bound.
    private static func listen(host: String, port: UInt16) throws(ControlWebSocketServerError) -> (Int32, UInt16) {
        guard let address = loopbackAddress(host) else { throw .notLoopback(host: host) }
        let family: Int32 =
            switch address {
            case .v4: AF_INET
            case .v6: AF_INET6
            }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .system(operation: "socket", code: errno) }
        func fail(_ operation: String, _ code: Int32) -> ControlWebSocketServerError {
            Glibc.close(fd)
            return code == EADDRINUSE ? .addressInUse(host: host, port: port) : .system(operation: operation, code: code)
        }
        var reuse: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var storage = sockaddr_storage()
        let length: socklen_t
        switch address {
        case .v4(let v4):
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = port.bigEndian
            socketAddress.sin_addr = v4
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: &socketAddress) { raw.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        case .v6(let v6):
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = port.bigEndian
            socketAddress.sin6_addr = v6
            withUnsafeMutableBytes(of: &storage) { raw in withUnsafeBytes(of: &socketAddress) { raw.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw fail("bind \(host) port \(port)", errno) }
        guard Glibc.listen(fd, 64) == 0 else { throw fail("listen", errno) }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        guard named == 0 else { throw fail("getsockname", errno) }
        // sin_port and sin6_port sit at the same offset, right after the family.
        let boundPort = withUnsafeBytes(of: &actual) { UInt16($0[2]) << 8 | UInt16($0[3]) }
        return (fd, boundPort)
    }
}
