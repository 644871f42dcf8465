import Foundation
import Glibc
import ParleyIO

/// Why a ``ControlWebSocketServer`` could not start.
public enum ControlWebSocketServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The host is not a loopback address (127.0.0.0/8, ::1 or `localhost`) and the listener has no TLS: without it
    /// the control API is local only.
    case notLoopback(host: String)
    /// The host is neither an IP address nor `localhost`.
    case notAnAddress(host: String)
    /// The TLS certificate or key cannot be used: which file and why.
    case tls(String)
    /// Another socket is bound to the address.
    case addressInUse(host: String, port: UInt16)
    /// A system call failed.
    case system(operation: String, code: Int32)

    /// For people.
    public var description: String {
        switch self {
        case .notLoopback(let host):
            "\(host) is not a loopback address; without TLS the control API listens on 127.0.0.1, ::1 or localhost only"
        case .notAnAddress(let host):
            "\(host) is not an IP address; the control API listens on an address of this machine (or localhost)"
        case .tls(let reason):
            "the WebSocket listener's TLS: \(reason)"
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
/// With a ``WebSite``, the listener also serves its pages (a web frontend) on plain GETs, and only the site's
/// ``WebSite/socketPath`` upgrades; the pages' own origin (`http://127.0.0.1:PORT` and the other names of the
/// listener) may then use the socket without being in `allowedOrigins`.
///
/// With TLS (a certificate and its key), every connection is HTTPS/WSS: the pages' origins are `https://`, they are
/// also served under each name and address the certificate is for (its subjectAltNames, with the port), and the
/// listener may bind any address of the machine, since browsers give a page off localhost its microphone only in a
/// secure context. The token rules are the same.
///
/// All work happens on one ParleyIO event loop (the one given, or the server's own); `onLine` and `onClose` run on
/// it, in order, and may call every method here except ``stop()`` (which waits for the loop).
public final class ControlWebSocketServer: Sendable {
    /// The address the server listens on.
    public let host: String
    /// The port the server listens on (the one the system picked when asked for 0).
    public let port: UInt16
    /// Whether connections are TLS (HTTPS pages, WSS sockets).
    public let isSecure: Bool
    /// Where the site's first page is (`http://127.0.0.1:PORT/`, or with TLS `https://` and, for a wildcard listener,
    /// the certificate's first name); nil without a site.
    public let pageURL: String?
    /// The socket's URL (`ws://…/ws`, or `wss://` with TLS), under the same name as ``pageURL``.
    public let socketURL: String
    private let handle: ControlServerHandle<WebSocketFraming>

    /// Binds `host` (a loopback address; with `tls` any of the machine's) at `port` (0: any free port, see ``port``)
    /// and starts serving at once, on `loop` (a loop of its own when nil).
    ///
    /// `onLine` receives each text message of authenticated clients; `onClose` hears when an authenticated client
    /// is gone (not after ``stop()``).
    public init(
        host: String = "127.0.0.1", port: UInt16, token: String, allowedOrigins: Set<String> = [], site: WebSite? = nil,
        tls: TLSConfiguration? = nil, limits: ControlLimits = .init(), loop: EventLoop? = nil,
        onLine: @escaping @Sendable (ControlClientID, Data) -> Void, onClose: (@Sendable (ControlClientID) -> Void)? = nil
    ) throws(ControlWebSocketServerError) {
        self.host = host
        guard let ip = IPAddress(host == "localhost" ? "127.0.0.1" : Self.unbracketed(host)) else {
            throw .notAnAddress(host: host)
        }
        guard tls != nil || Self.isLoopback(ip) else { throw .notLoopback(host: host) }
        let context: TLSContext?
        do throws(TLSError) {
            context = try tls.map { configuration throws(TLSError) in try TLSContext.server(configuration) }
        } catch {
            throw .tls(Self.describe(error))
        }
        isSecure = context != nil
        let listening: (fd: Int32, bound: SocketAddress)
        do {
            listening = try Socket.listening(on: ip.socketAddress(port: port), backlog: 64)
        } catch {
            throw error.code == EADDRINUSE
                ? .addressInUse(host: host, port: port) : .system(operation: error.operation, code: error.code)
        }
        self.port = listening.bound.port
        var framing = WebSocketFraming(maxMessageBytes: limits.maxLineBytes, allowedOrigins: allowedOrigins)
        let isDefaultPort = listening.bound.port == (context == nil ? 80 : 443)
        let named = Self.urlHost(host) + (isDefaultPort ? "" : ":\(listening.bound.port)")
        let hosts = WebSite.hosts(
            listening: host, port: listening.bound.port, certificateNames: context?.certificateNames ?? [], secure: context != nil)
        let shown = hosts.contains(named) || hosts.isEmpty ? named : hosts.sorted()[0]
        pageURL = site.map { _ in "\(context == nil ? "http" : "https")://\(shown)/" }
        socketURL = "\(context == nil ? "ws" : "wss")://\(shown)\(site?.socketPath ?? "/")"
        if let site {
            framing.site = site
            framing.pageHosts = hosts
            framing.secure = context != nil
            framing.allowedOrigins.formUnion(framing.pageHosts.map { "\(context == nil ? "http" : "https")://\($0)" })
        }
        do {
            handle = try ControlServerHandle(
                listening: listening.fd, framing: framing, tls: context,
                token: token, limits: limits, loop: loop, onLine: onLine, onClose: onClose)
        } catch {
            throw .system(operation: error.operation, code: error.code)
        }
    }

    /// Queues `line` (one JSON object) as one text frame for `client`; nothing if the client is gone or not
    /// authenticated. A client whose queue would exceed ``ControlLimits/maxQueuedBytes`` is closed.
    public func send(_ line: Data, to client: ControlClientID) {
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
        handle.sendToSubscribers(line, audioLevelsOnly: audioLevelsOnly)
    }

    /// Queues `line` (as in ``send(_:to:)``) for every authenticated client.
    public func broadcast(_ line: Data) {
        handle.broadcast(line)
    }

    /// Closes `client`'s connection (close code 1000) after writing what is queued for it; `onClose` follows.
    public func close(_ client: ControlClientID) {
        handle.close(client)
    }

    /// Authenticated clients connected now.
    public var clientCount: Int { handle.clientCount }

    /// Connections that have not said hello yet (at most ``ControlLimits/maxPendingConnections``).
    public var pendingCount: Int { handle.pendingCount }

    /// Stops listening and closes every connection (offering each a close frame 1001); returns once every socket is
    /// closed. Idempotent. Must not be called from `onLine` or `onClose`.
    public func stop() {
        handle.stop()
    }

    private static func describe(_ error: TLSError) -> String {
        switch error {
        case .certificateMissing: "it needs both a certificate and its private key"
        case .file(let path, let reason): "\(path): \(reason)"
        case .keyMismatch(let certificate, let key): "the key \(key) does not belong to the certificate \(certificate)"
        case .uncheckableName(let name): "the name \(name) cannot be checked"
        case .system(let error): "\(error)"
        }
    }

    private static func urlHost(_ host: String) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    private static func unbracketed(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }

    /// 127.0.0.0/8 or ::1.
    private static func isLoopback(_ ip: IPAddress) -> Bool {
        switch ip.storage {
        case .v4(let raw):
            // s_addr is in network byte order: its first byte in memory is the first octet.
            return withUnsafeBytes(of: raw) { $0[0] } == 127
        case .v6(let high, let low):
            return high == 0 && low == UInt64(1).bigEndian
        }
    }
}
