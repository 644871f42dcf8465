import Glibc

/// Thin wrappers over the socket calls Parley makes: every descriptor non-blocking and close-on-exec, errno turned
/// into ``IOError``. IP and Unix-domain stream sockets, UDP sockets; nothing here waits.
package enum Socket {
    /// Sends one datagram from a UDP socket without blocking (retried when a signal interrupts it): the bytes the
    /// kernel took, or errno.
    package static func sendDatagram(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, to address: SocketAddress) -> Result<Int, IOError> {
        while true {
            let sent = address.withSockAddr { name, length in
                sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL), name, length)
            }
            if sent >= 0 { return .success(sent) }
            let code = errno
            if code != EINTR { return .failure(IOError("sendto", code: code)) }
        }
    }

    /// A non-blocking, close-on-exec socket of `family` (AF_INET, AF_INET6, AF_UNIX).
    package static func open(family: Int32, stream: Bool) throws(IOError) -> Int32 {
        let type = (stream ? Int32(SOCK_STREAM.rawValue) : Int32(SOCK_DGRAM.rawValue))
            | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(family, type, 0)
        guard fd >= 0 else { throw IOError("socket", code: errno) }
        return fd
    }

    /// Sets an integer socket option (failures are ignored: every option Parley sets is an optimisation or a bound
    /// the kernel may cap).
    package static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Reads an integer socket option (0 when it cannot be read).
    package static func option(_ fd: Int32, _ level: Int32, _ name: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(fd, level, name, &value, &length)
        return value
    }

    /// No Nagle delay: signalling messages are small and latency matters more than packet count.
    package static func setNoDelay(_ fd: Int32) { setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1) }

    /// The kernel's send buffer size (tests shrink it so that a peer that does not read fills a queue quickly).
    package static func setSendBuffer(_ fd: Int32, bytes: Int) { setOption(fd, SOL_SOCKET, SO_SNDBUF, Int32(clamping: bytes)) }

    /// The error of a finished non-blocking connect (0 when it succeeded).
    package static func pendingError(_ fd: Int32) -> Int32 { option(fd, SOL_SOCKET, SO_ERROR) }

    /// The local address of a bound IP socket.
    package static func localAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return result == 0 ? SocketAddress(storage) : nil
    }

    /// The remote address of a connected IP socket.
    package static func remoteAddress(_ fd: Int32) -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        return result == 0 ? SocketAddress(storage) : nil
    }

    /// A socket bound to `address` (IPv6 sockets IPv6-only; stream sockets with SO_REUSEADDR); the caller listens or
    /// registers it. The error is bind's errno, so the caller can say "address in use" in its own words.
    package static func bound(_ address: SocketAddress, stream: Bool) throws(IOError) -> Int32 {
        let fd = try open(family: address.family, stream: stream)
        if address.ip.isIPv6 { setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
        if stream { setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1) }
        let result = address.withSockAddr { Glibc.bind(fd, $0, $1) }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw IOError("bind \(address.description)", code: code)
        }
        return fd
    }

    /// A listening TCP socket on `address`, and the address it got (the real port for port 0).
    package static func listening(on address: SocketAddress, backlog: Int32 = SOMAXCONN) throws(IOError) -> (fd: Int32, bound: SocketAddress) {
        let fd = try bound(address, stream: true)
        guard Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw IOError("listen \(address.description)", code: code)
        }
        guard let local = localAddress(fd) else {
            let code = errno
            close(fd)
            throw IOError("getsockname \(address.description)", code: code)
        }
        return (fd, local)
    }

    /// Starts a non-blocking connect to `address`: the socket, and whether it is connected already (otherwise wait
    /// until it is writable, then read ``pendingError(_:)``).
    package static func startConnect(to address: SocketAddress) throws(IOError) -> (fd: Int32, connected: Bool) {
        let fd = try open(family: address.family, stream: true)
        setNoDelay(fd)
        while true {
            if address.withSockAddr({ Glibc.connect(fd, $0, $1) }) == 0 { return (fd, true) }
            let code = errno
            if code == EINTR { continue }
            if code == EINPROGRESS { return (fd, false) }
            close(fd)
            throw IOError("connect \(address.description)", code: code)
        }
    }

    /// The outcome of one `accept`.
    package enum Accepted {
        /// A new connection, non-blocking and close-on-exec, with the peer's IP address (nil for Unix sockets).
        case connection(Int32, peer: SocketAddress?)
        /// The backlog is empty.
        case none
        /// Out of descriptors or memory: the backlog is still readable, so stop watching it for a moment.
        case exhausted(Int32)
    }

    /// Accepts one connection; connections that died in the backlog (ECONNABORTED, EPROTO) are skipped.
    package static func accept(_ listener: Int32) -> Accepted {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
            }
            if fd < 0 {
                let code = errno
                switch code {
                case EINTR, ECONNABORTED, EPROTO: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .exhausted(code)
                default: return .none  // EAGAIN (drained), or a listener that is being closed
                }
            }
            // accept4 is a GNU extension Swift's Glibc does not show: the flags are set by hand.
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            return .connection(fd, peer: SocketAddress(storage))
        }
    }
}
