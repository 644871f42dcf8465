import Glibc

/// Where a call's media may be sent (issue 48: no reflection): a numeric unicast address only. Never a host name (a
/// peer would make us resolve names it controls), multicast, broadcast or reserved space, and loopback only when our
/// own media address is loopback (a peer on the network must not aim our RTP at this machine's own services).
/// `0.0.0.0` and `::` are not destinations but RFC 2543's hold: nothing is sent, as for a refused address.
public enum MediaDestination {
    /// Whether `host` is an unspecified address in any spelling (`0.0.0.0`, `::`, `0::0`, `::ffff:0.0.0.0`…): a hold.
    public static func isUnspecified(_ host: String) -> Bool { bytes(of: host)?.allSatisfy { $0 == 0 } ?? false }

    /// Why media must not go to `host` when ours is `local`; nil when it may (or when `host` is a hold's 0.0.0.0).
    public static func refusal(of host: String, local: String) -> String? {
        guard let bytes = Self.bytes(of: host) else { return "\(host) is not a numeric address (a host name is never resolved for media)" }
        if bytes.allSatisfy({ $0 == 0 }) { return nil }
        switch Self.kind(bytes) {
        case .multicast: return "\(host) is a multicast address"
        case .broadcastOrReserved: return "\(host) is a broadcast or reserved address"
        case .loopback where Self.bytes(of: local).map(Self.kind) != .loopback:
            return "\(host) is a loopback address and ours (\(local)) is not"
        default: return nil
        }
    }

    private enum Kind { case unicast, loopback, multicast, broadcastOrReserved }

    /// An IPv4 address's 4 bytes or an IPv6 one's 16 (an IPv4-mapped one as its IPv4 bytes); nil when not numeric.
    private static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        return bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] ? Array(bytes.suffix(4)) : bytes
    }

    private static func kind(_ bytes: [UInt8]) -> Kind {
        if bytes.count == 4 {
            switch bytes[0] {
            case 127: return .loopback
            case 224...239: return .multicast
            case 240...255: return .broadcastOrReserved
            default: return .unicast
            }
        }
        if bytes[0] == 0xFF { return .multicast }
        if bytes.prefix(15).allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return .loopback }
        return .unicast
    }
}
