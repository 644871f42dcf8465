import Foundation
import Glibc

/// A TCP address of the push simulator: a numeric IPv4 or IPv6 address (or `localhost`) and a port.
/// Written `127.0.0.1:5070` or `[::1]:5070`.
public struct PushEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The numeric address, IPv6 without brackets.
    public var host: String
    /// The port (0 when listening means "any free port").
    public var port: UInt16

    /// An endpoint; `host` must be a numeric IPv4 or IPv6 address (`localhost` means 127.0.0.1).
    public init?(host: String, port: UInt16) {
        let numeric = host == "localhost" ? "127.0.0.1" : host
        guard SocketAddress(host: numeric, port: port) != nil else { return nil }
        self.host = numeric
        self.port = port
    }

    /// Parses `127.0.0.1:5070`, `[::1]:5070` or `localhost:5070`; nil for anything else.
    public init?(_ text: String) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !portPart.isEmpty, portPart.allSatisfy(\.isASCII), portPart.allSatisfy(\.isNumber), let port = UInt16(portPart)
        else { return nil }
        self.init(host: String(hostPart), port: port)
    }

    /// Whether the address is IPv6.
    public var isIPv6: Bool { host.contains(":") }

    /// `127.0.0.1:5070`, `[::1]:5070`.
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A socket call failed.
public struct PushSocketError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was being done: `bind 127.0.0.1:5070`, `connect [::1]:5070`.
    public var operation: String
    /// The `errno` it failed with (0 when the failure was not a system call's, e.g. a timeout).
    public var code: Int32
    /// The reason, for people.
    public var reason: String

    /// A failure of `operation` with `errno` `code`.
    public init(_ operation: String, code: Int32) {
        self.operation = operation
        self.code = code
        self.reason = Sockets.errorText(code)
    }

    /// A failure with a reason of our own (a timeout).
    public init(_ operation: String, reason: String) {
        self.operation = operation
        self.code = 0
        self.reason = reason
    }

    /// `connect 127.0.0.1:5070: Connection refused`.
    public var description: String { "\(operation): \(reason)" }
}

/// A `sockaddr_in` or `sockaddr_in6`.
enum SocketAddress {
    case v4(sockaddr_in)
    case v6(sockaddr_in6)

    init?(host: String, port: UInt16) {
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            self = .v4(v4)
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            self = .v6(v6)
        } else {
            return nil
        }
    }

    /// What the kernel wrote into a `sockaddr_storage`; nil for other families.
    init?(_ storage: sockaddr_storage) {
        var copy = storage
        switch Int32(storage.ss_family) {
        case AF_INET: self = withUnsafeBytes(of: &copy) { .v4($0.loadUnaligned(as: sockaddr_in.self)) }
        case AF_INET6: self = withUnsafeBytes(of: &copy) { .v6($0.loadUnaligned(as: sockaddr_in6.self)) }
        default: return nil
        }
    }

    var family: Int32 {
        switch self {
        case .v4: AF_INET
        case .v6: AF_INET6
        }
    }

    /// The address as an endpoint.
    var endpoint: PushEndpoint? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let port: UInt16
        switch self {
        case .v4(var address):
            inet_ntop(AF_INET, &address.sin_addr, &buffer, socklen_t(buffer.count))
            port = UInt16(bigEndian: address.sin_port)
        case .v6(var address):
            inet_ntop(AF_INET6, &address.sin6_addr, &buffer, socklen_t(buffer.count))
            port = UInt16(bigEndian: address.sin6_port)
        }
        let host = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return PushEndpoint(host: host, port: port)
    }

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        switch self {
        case .v4(var address):
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .v6(var address):
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }
}

/// The socket calls the push channel makes, errno turned into ``PushSocketError``.
enum Sockets {
    /// A non-blocking listening TCP socket on `endpoint`, and the address it got (the real port for port 0).
    static func listen(on endpoint: PushEndpoint, backlog: Int32 = 128) throws(PushSocketError) -> (fd: Int32, bound: PushEndpoint) {
        guard let address = SocketAddress(host: endpoint.host, port: endpoint.port) else {
            preconditionFailure("PushEndpoint holds a numeric address by construction")
        }
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw PushSocketError("socket", code: errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if address.withSockaddr({ bind(fd, $0, $1) }) != 0 {
            let code = errno
            close(fd)
            throw PushSocketError("bind \(endpoint)", code: code)
        }
        if Glibc.listen(fd, backlog) != 0 {
            let code = errno
            close(fd)
            throw PushSocketError("listen \(endpoint)", code: code)
        }
        guard let bound = localEndpoint(fd) else {
            close(fd)
            throw PushSocketError("getsockname \(endpoint)", code: errno)
        }
        return (fd, bound)
    }

    /// The outcome of one `accept`.
    enum Accepted {
        case connection(fd: Int32, peer: String)
        /// Nothing more to accept now.
        case none
        case failed(PushSocketError)
    }

    /// Accepts one connection (non-blocking, close-on-exec, no Nagle delay).
    static func accept(_ listener: Int32) -> Accepted {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.accept(listener, $0, &length)
                }
            }
            if fd < 0 {
                let code = errno
                switch code {
                case EINTR, ECONNABORTED: continue
                case EAGAIN, EWOULDBLOCK: return .none
                default: return .failed(PushSocketError("accept", code: code))
                }
            }
            // accept4 is not visible to Swift (it needs _GNU_SOURCE): set the flags afterwards.
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            noDelay(fd)
            let peer = SocketAddress(storage)?.endpoint?.description ?? "unknown peer"
            return .connection(fd: fd, peer: peer)
        }
    }

    /// Starts a non-blocking connect; `connected` is false while it is in progress (wait until writable, then
    /// read ``pendingError(_:)``).
    static func startConnect(to endpoint: PushEndpoint) throws(PushSocketError) -> (fd: Int32, connected: Bool) {
        guard let address = SocketAddress(host: endpoint.host, port: endpoint.port) else {
            preconditionFailure("PushEndpoint holds a numeric address by construction")
        }
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw PushSocketError("socket", code: errno) }
        noDelay(fd)
        while true {
            if address.withSockaddr({ connect(fd, $0, $1) }) == 0 { return (fd, true) }
            let code = errno
            if code == EINTR { continue }
            if code == EINPROGRESS { return (fd, false) }
            close(fd)
            throw PushSocketError("connect \(endpoint)", code: code)
        }
    }

    /// The error of a finished non-blocking connect (0 when it succeeded).
    static func pendingError(_ fd: Int32) -> Int32 {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return errno }
        return code
    }

    /// The address a socket is bound to.
    static func localEndpoint(_ fd: Int32) -> PushEndpoint? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { return nil }
        return SocketAddress(storage)?.endpoint
    }

    /// Frames are small and latency matters more than packet count.
    static func noDelay(_ fd: Int32) {
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sets the kernel's send buffer size.
    static func setSendBuffer(_ fd: Int32, bytes: Int) {
        var size = Int32(clamping: bytes)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// `strerror`.
    static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
