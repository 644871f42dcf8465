import DNSResolver
import ParleyEngine
import ParleyIO
import SIPTransport

/// The engine's RFC 3263 locator over c-ares (`DNSResolver`), on the node's SIP loop: NAPTR, SRV, then A/AAAA, with
/// the resolver's TTL cache and bounds. Loop-confined, like the engine that calls it.
final class DNSServerLocator: SIPServerLocator {
    private let loop: EventLoop
    private let servers: [String]
    /// Made on the loop's thread at the first lookup (c-ares' sockets belong to the loop).
    private var resolver: Result<DNSResolver, DNSResolverError>?

    /// A locator asking `servers` (numeric `HOST[:PORT]`; none: the system's resolver configuration, /etc/resolv.conf).
    init(loop: EventLoop, servers: [String]) {
        self.loop = loop
        self.servers = servers
    }

    func locate(
        _ request: SIPServerRequest, transports: [SIPTransportKind],
        completion: @escaping (Result<[SIPDestination], SIPLocateError>) -> Void
    ) {
        let query = SIPServerQuery(
            host: request.host, port: request.port.flatMap { UInt16(exactly: $0) },
            transport: request.transport.map(Self.transport), secure: request.secure)
        let options = SIPLocationOptions(transports: transports.map(Self.transport))
        if resolver == nil {
            resolver = Result { () throws(DNSResolverError) in
                try DNSResolver(loop: loop, configuration: DNSResolverConfiguration(servers: servers))
            }
        }
        let resolver: DNSResolver
        switch self.resolver {
        case .success(let made)?: resolver = made
        case .failure(let error)?: return loop.atEndOfTurn { completion(.failure(SIPLocateError("no DNS resolver: \(error)"))) }
        case nil: preconditionFailure("made above")
        }
        resolver.locate(query, options: options) { result in
            completion(result
                .map { targets in
                    targets.map { SIPDestination(kind: Self.kind($0.transport), address: SIPPeerAddress(host: $0.address, port: $0.port)) }
                }
                .mapError { SIPLocateError($0.description) })
        }
    }

    private static func transport(_ kind: SIPTransportKind) -> SIPServerTransport {
        switch kind {
        case .udp: .udp
        case .tcp: .tcp
        case .tls: .tls
        }
    }

    private static func kind(_ transport: SIPServerTransport) -> SIPTransportKind {
        switch transport {
        case .udp: .udp
        case .tcp: .tcp
        case .tls: .tls
        }
    }
}
