import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Turns a host into a numeric address: literals pass through, names resolve once through the system resolver
/// (A and AAAA records, IPv4 first; no NAPTR or SRV).
enum HostResolver {
    /// The numeric form of `host`, or nil when it is neither a literal nor resolvable.
    static func numericAddress(_ host: String) -> String? {
        if isLiteral(host) { return host }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &results) == 0, let first = results else { return nil }
        defer { freeaddrinfo(results) }
        var best: String?
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(entry.pointee.ai_addr, entry.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0,
                NI_NUMERICHOST) == 0
            {
                let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if entry.pointee.ai_family == AF_INET { return text }
                best = best ?? text
            }
            cursor = entry.pointee.ai_next
        }
        return best
    }

    /// Whether `host` is an IPv4 or IPv6 literal.
    static func isLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
