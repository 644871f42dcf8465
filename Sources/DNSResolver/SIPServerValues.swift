/// A transport Parley runs SIP over, as RFC 3263 chooses among them.
public enum SIPServerTransport: String, Hashable, Sendable, CaseIterable {
    /// SIP over UDP (NAPTR service `SIP+D2U`, SRV `_sip._udp`), default port 5060.
    case udp
    /// SIP over TCP (NAPTR service `SIP+D2T`, SRV `_sip._tcp`), default port 5060.
    case tcp
    /// SIP over TLS over TCP (NAPTR service `SIPS+D2T`, SRV `_sips._tcp`), default port 5061.
    case tls

    /// The port a transport's server listens on when nothing says otherwise (RFC 3261 §19.1.2).
    public var defaultPort: UInt16 {
        switch self {
        case .udp, .tcp: 5060
        case .tls: 5061
        }
    }

    /// The NAPTR service field that offers this transport (RFC 3263 §4.1).
    var naptrService: String {
        switch self {
        case .udp: "SIP+D2U"
        case .tcp: "SIP+D2T"
        case .tls: "SIPS+D2T"
        }
    }

    /// The SRV name of this transport's service at `domain` (RFC 3263 §4.1: `_sips` for TLS).
    func srvName(at domain: String) -> String {
        switch self {
        case .udp: "_sip._udp.\(domain)"
        case .tcp: "_sip._tcp.\(domain)"
        case .tls: "_sips._tcp.\(domain)"
        }
    }

    /// The transport a NAPTR service field names, if it is one Parley runs (case-insensitive).
    init?(naptrService service: String) {
        let wanted = service.lowercased()
        guard let found = Self.allCases.first(where: { $0.naptrService.lowercased() == wanted }) else { return nil }
        self = found
    }
}

/// What RFC 3263 §4 locates a server from: the parts of a SIP or SIPS URI that choose it (the Request-URI, or the
/// first Route, or the outbound proxy).
public struct SIPServerQuery: Hashable, Sendable, CustomStringConvertible {
    /// The URI's host: a domain name, a numeric IPv4 address, or an IPv6 address (with or without brackets).
    public var host: String
    /// The URI's port, if it names one.
    public var port: UInt16?
    /// The URI's `transport` parameter, if it names one Parley runs (`transport=tls` included).
    public var transport: SIPServerTransport?
    /// Whether the URI is `sips:` (only TLS then).
    public var secure: Bool

    /// The query for `host`, `port`, `transport` and the scheme.
    public init(host: String, port: UInt16? = nil, transport: SIPServerTransport? = nil, secure: Bool = false) {
        self.host = host
        self.port = port
        self.transport = transport
        self.secure = secure
    }

    /// `sips:example.com:5061;transport=tcp`, the parts that matter.
    public var description: String {
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return (secure ? "sips:" : "sip:") + bracketed + (port.map { ":\($0)" } ?? "")
            + (transport.map { ";transport=\($0.rawValue)" } ?? "")
    }

    /// The host without IPv6 brackets.
    var bareHost: String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}

/// Which address families the procedure looks up, and which comes first for a host that has both.
public enum SIPAddressFamilies: Hashable, Sendable {
    /// A records only.
    case ipv4Only
    /// AAAA records only.
    case ipv6Only
    /// Both; a host's IPv4 addresses before its IPv6 ones.
    case ipv4First
    /// Both; a host's IPv6 addresses before its IPv4 ones.
    case ipv6First

    /// The record types asked for each host, in order of preference.
    var recordTypes: [DNSRecordType] {
        switch self {
        case .ipv4Only: [.a]
        case .ipv6Only: [.aaaa]
        case .ipv4First: [.a, .aaaa]
        case .ipv6First: [.aaaa, .a]
        }
    }
}

/// What the caller runs and wants: transports (in the order tried when a domain has no NAPTR records) and
/// address families.
public struct SIPLocationOptions: Hashable, Sendable {
    /// The transports Parley can use here, in order of preference for the SRV fallback (RFC 3263 §4.1 leaves
    /// the choice to the client). NAPTR records for any other transport are discarded.
    public var transports: [SIPServerTransport]
    /// Which address records to look up.
    public var addressFamilies: SIPAddressFamilies
    /// At most this many distinct hosts from SRV records are looked up (the rest of a long failover list is dropped).
    public var maxHosts: Int

    /// Options: TLS, TCP then UDP; IPv4 first; 16 hosts.
    public init(
        transports: [SIPServerTransport] = [.tls, .tcp, .udp], addressFamilies: SIPAddressFamilies = .ipv4First,
        maxHosts: Int = 16
    ) {
        self.transports = transports
        self.addressFamilies = addressFamilies
        self.maxHosts = maxHosts
    }
}

/// One place to send a request: a transport, a numeric address and a port. A location's targets are in failover
/// order: on a transaction timeout or an ICMP error the caller moves to the next.
public struct SIPServerTarget: Hashable, Sendable, CustomStringConvertible {
    /// The transport to use.
    public var transport: SIPServerTransport
    /// A numeric IPv4 or IPv6 address (no brackets).
    public var address: String
    /// The port.
    public var port: UInt16

    /// A target.
    public init(_ transport: SIPServerTransport, _ address: String, _ port: UInt16) {
        self.transport = transport
        self.address = address
        self.port = port
    }

    /// `udp 192.0.2.1:5060`, `tls [2001:db8::1]:5061`.
    public var description: String {
        "\(transport.rawValue) " + (address.contains(":") ? "[\(address)]" : address) + ":\(port)"
    }
}

/// Why no server was found for a query.
public enum SIPLocationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Every lookup that could have given a target failed: each failure (name, record type, why), in the order
    /// they were asked.
    case lookupsFailed(SIPServerQuery, [DNSLookupFailure])
    /// The query asks for a transport none of the allowed ones (a `sips:` URI with `transport=udp`, or a
    /// transport the options leave out).
    case unsupportedTransport(SIPServerQuery)

    /// A sentence naming the query and every failure.
    public var description: String {
        switch self {
        case .lookupsFailed(let query, let failures):
            "cannot locate a SIP server for \(query): " + failures.map(\.description).joined(separator: "; ")
        case .unsupportedTransport(let query):
            "cannot locate a SIP server for \(query): no transport Parley runs here fits it"
        }
    }
}
