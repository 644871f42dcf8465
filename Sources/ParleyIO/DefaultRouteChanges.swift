import Glibc

/// A change of a default route the kernel announced over rtnetlink (RTM_NEWROUTE/RTM_DELROUTE in the main table with
/// a zero-length destination): what makes a phone's registrations and NAT bindings stale.
package struct DefaultRouteChange: Sendable, Hashable, CustomStringConvertible {
    /// Added (or replaced) or removed.
    package let added: Bool
    /// IPv6 (else IPv4).
    package let isIPv6: Bool
    /// The next hop, when the route names one.
    package let gateway: IPAddress?

    package var description: String {
        let family = isIPv6 ? "IPv6" : "IPv4"
        let via = gateway.map { " via \($0.text)" } ?? ""
        return "the \(family) default route\(via) was \(added ? "added" : "removed")"
    }

    /// The default-route changes in one datagram read from an rtnetlink socket (pure; anything else in it, or
    /// anything malformed, is skipped).
    ///
    /// ```
    ///   nlmsghdr (16: len, type, flags, seq, pid) ─ rtmsg (12: family, dst_len, src_len, tos, table, protocol,
    ///   scope, type, flags) ─ rtattr… (len, type, value padded to 4): RTA_TABLE (15), RTA_GATEWAY (5)
    /// ```
    package static func parse(_ bytes: [UInt8]) -> [DefaultRouteChange] {
        var changes: [DefaultRouteChange] = []
        var offset = 0
        while offset + 16 <= bytes.count {
            let length = Int(word32(bytes, offset))
            let type = word16(bytes, offset + 4)
            guard length >= 16, offset + length <= bytes.count else { break }
            if (type == 24 || type == 25), length >= 28, let change = route(bytes, from: offset + 16, to: offset + length, added: type == 24) {
                changes.append(change)
            }
            offset += (length + 3) & ~3
        }
        return changes
    }

    /// The route message's body from `start` to `end`, if it is a default route of the main table.
    private static func route(_ bytes: [UInt8], from start: Int, to end: Int, added: Bool) -> DefaultRouteChange? {
        let family = Int32(bytes[start]), destinationLength = bytes[start + 1]
        guard family == AF_INET || family == AF_INET6, destinationLength == 0 else { return nil }
        var table = UInt32(bytes[start + 4])
        var gateway: IPAddress?
        var offset = start + 12
        while offset + 4 <= end {
            let length = Int(word16(bytes, offset)), type = word16(bytes, offset + 2)
            guard length >= 4, offset + length <= end else { break }
            let value = Array(bytes[(offset + 4)..<(offset + length)])
            if type == 15, value.count == 4 { table = word32(value, 0) }
            if type == 5 { gateway = address(value, ipv6: family == AF_INET6) }
            offset += (length + 3) & ~3
        }
        guard table == 254 else { return nil }
        return DefaultRouteChange(added: added, isIPv6: family == AF_INET6, gateway: gateway)
    }

    private static func address(_ value: [UInt8], ipv6: Bool) -> IPAddress? {
        guard value.count == (ipv6 ? 16 : 4) else { return nil }
        if !ipv6 { return IPAddress(value.map(String.init).joined(separator: ".")) }
        let groups = stride(from: 0, to: 16, by: 2).map { String(UInt16(value[$0]) << 8 | UInt16(value[$0 + 1]), radix: 16) }
        return IPAddress(groups.joined(separator: ":"))
    }

    // Netlink speaks the host's byte order (little-endian here, as on every machine Parley targets).
    private static func word16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
    private static func word32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }
}
