import Glibc

/// A numeric IPv4 or IPv6 address, read and written with inet_pton/inet_ntop.
package struct IPAddress: Hashable, Sendable {
    package enum Storage: Hashable, Sendable {
        case v4(UInt32)
        case v6(UInt64, UInt64)
    }

    package let storage: Storage

    /// Parses a numeric address (IPv6 without brackets); nil for anything else, host names included.
    package init?(_ text: some StringProtocol) {
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

    package init(_ address: in_addr) { storage = .v4(address.s_addr) }

    package init(_ address: in6_addr) {
        storage = withUnsafeBytes(of: address) { raw in
            .v6(raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self), raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    package var isIPv6: Bool {
        switch storage {
        case .v4: false
        case .v6: true
        }
    }

    package var family: Int32 { isIPv6 ? AF_INET6 : AF_INET }

    /// The canonical text (inet_ntop): "127.0.0.1", "::1".
    package var text: String {
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
    package func socketAddress(port: UInt16) -> SocketAddress {
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
package enum SocketAddress: Sendable {
    case v4(sockaddr_in)
    case v6(sockaddr_in6)

    /// Reads what the kernel wrote into a `sockaddr_storage`; nil for families other than IPv4/IPv6.
    package init?(_ storage: sockaddr_storage) {
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

    package var family: Int32 {
        switch self {
        case .v4: AF_INET
        case .v6: AF_INET6
        }
    }

    package var port: UInt16 {
        switch self {
        case .v4(let address): UInt16(bigEndian: address.sin_port)
        case .v6(let address): UInt16(bigEndian: address.sin6_port)
        }
    }

    package var ip: IPAddress {
        switch self {
        case .v4(let address): IPAddress(address.sin_addr)
        case .v6(let address): IPAddress(address.sin6_addr)
        }
    }

    /// "127.0.0.1:5070", "[::1]:5070".
    package var description: String { ip.isIPv6 ? "[\(ip.text)]:\(port)" : "\(ip.text):\(port)" }

    /// Calls `body` with the address as a `sockaddr` pointer and its length.
    package func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
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

