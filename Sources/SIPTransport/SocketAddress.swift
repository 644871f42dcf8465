import Glibc

/// A numeric IPv4 or IPv6 address, read and written with inet_pton/inet_ntop.
struct IPAddress: Hashable {
    enum Storage: Hashable {
        case v4(UInt32)
        case v6(UInt64, UInt64)
    }

    let storage: Storage

    /// Parses a numeric address (IPv6 without brackets); nil for anything else, host names included.
    init?(_ text: some StringProtocol) {
        var v4 = in_addr()
        var v6 = in6_addr()
        let string = String(text)
        if inet_pton(AF_INET, string, &v4) == 1 {
            storage = .v4(v4.s_addr)
        } else if inet_pton(AF_INET6, string, &v6) == 1 {
            storage = withUnsafeBytes(of: v6) { raw in
                .v6(raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
        } else {
            return nil
        }
    }

    init(_ address: in_addr) { storage = .v4(address.s_addr) }

    init(_ address: in6_addr) {
        storage = withUnsafeBytes(of: address) { raw in
            .v6(raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    var isIPv6: Bool {
        switch storage {
        case .v4: false
        case .v6: true
        }
    }

    var family: Int32 { isIPv6 ? AF_INET6 : AF_INET }

    /// The canonical text (inet_ntop): "127.0.0.1", "::1".
    var text: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch storage {
        case .v4(let raw):
            var address = in_addr(s_addr: raw)
            inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
        case .v6(let high, let low):
            var address = in6Address(high, low)
            inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
        }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    private func in6Address(_ high: UInt64, _ low: UInt64) -> in6_addr {
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { raw in
            raw.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
        }
        return address
    }

    /// A socket address for this IP and `port`.
    func socketAddress(port: UInt16) -> SocketAddress {
        switch storage {
        case .v4(let raw):
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr = in_addr(s_addr: raw)
            return .v4(address)
        case .v6(let high, let low):
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = in6Address(high, low)
            return .v6(address)
        }
    }
}

/// A `sockaddr_in` or `sockaddr_in6`, as the socket calls want it.
enum SocketAddress {
    case v4(sockaddr_in)
    case v6(sockaddr_in6)

    /// Reads what the kernel wrote into a `sockaddr_storage`; nil for families other than IPv4/IPv6.
    init?(_ storage: sockaddr_storage) {
        var copy = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            self = withUnsafePointer(to: &copy) { .v4($0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }) }
        case AF_INET6:
            self = withUnsafePointer(to: &copy) { .v6($0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }) }
        default:
            return nil
        }
    }

    var family: Int32 {
        switch self {
        case .v4: AF_INET
        case .v6: AF_INET6
        }
    }

    var port: UInt16 {
        switch self {
        case .v4(let address): UInt16(bigEndian: address.sin_port)
        case .v6(let address): UInt16(bigEndian: address.sin6_port)
        }
    }

    var ip: IPAddress {
        switch self {
        case .v4(let address): IPAddress(address.sin_addr)
        case .v6(let address): IPAddress(address.sin6_addr)
        }
    }

    var peerAddress: SIPPeerAddress { SIPPeerAddress(host: ip.text, port: port) }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
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

/// Thin wrappers over the socket calls Parley makes, returning errno-carrying errors.
enum Socket {
    /// A non-blocking, close-on-exec socket.
    static func open(family: Int32, stream: Bool) throws(TransportError) -> Int32 {
        let type = (stream ? Int32(SOCK_STREAM.rawValue) : Int32(SOCK_DGRAM.rawValue))
            | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(family, type, 0)
        guard fd >= 0 else { throw .system(operation: "socket", code: errno) }
        return fd
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    static func option(_ fd: Int32, _ level: Int32, _ name: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(fd, level, name, &value, &length)
        return value
    }

    /// The local address of a bound socket.
    static func localAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return result == 0 ? SocketAddress(storage) : nil
    }

    /// The remote address of a connected socket.
    static func remoteAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        return result == 0 ? SocketAddress(storage) : nil
    }

    /// Opens, configures and binds a socket for `address`; the caller listens or registers it.
    static func bound(_ address: ListenAddress, limits: TransportLimits) throws(TransportError) -> Int32 {
        guard let ip = IPAddress(address.host) else {
            throw .invalidListenAddress(address.description, reason: "'\(address.host)' is not a numeric IP address")
        }
        let stream = address.kind != .udp
        let fd = try open(family: ip.family, stream: stream)
        if ip.isIPv6 { setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
        if stream {
            setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        } else {
            tuneDatagramSocket(fd, limits: limits)
        }
        let result = ip.socketAddress(port: address.port).withSockAddr { Glibc.bind(fd, $0, $1) }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw TransportError.bindFailed(address, code: code)
        }
        return fd
    }

    /// Large buffers (the kernel may cap them at net.core.rmem_max) and the drop counter in ancillary data.
    static func tuneDatagramSocket(_ fd: Int32, limits: TransportLimits) {
        let size = Int32(clamping: limits.udpReceiveBuffer)
        setOption(fd, SOL_SOCKET, SO_RCVBUF, size)
        setOption(fd, SOL_SOCKET, SO_SNDBUF, size)
        setOption(fd, SOL_SOCKET, SO_RXQ_OVFL, 1)
    }
}
