internal import ParleyIO

/// How a `DNSResolver` asks: which servers, how patiently, how much at once, how long answers are kept.
public struct DNSResolverConfiguration: Hashable, Sendable {
    /// The DNS servers, tried in order: `192.0.2.53`, `127.0.0.1:5353`, `[2001:db8::53]:53`, `2001:db8::53`
    /// (numeric only; port 53 when none is given). Empty: the system's (/etc/resolv.conf).
    public var servers: [String]
    /// How long one try waits for an answer from one server (c-ares doubles it at each round over the servers).
    public var timeout: Duration
    /// How many rounds over the servers a query makes before it fails with `timedOut`.
    public var tries: Int
    /// At most this many distinct questions are in flight; a lookup beyond it fails at once with
    /// `tooManyLookupsInFlight` (identical questions in flight share one query and do not count twice).
    public var maxLookupsInFlight: Int
    /// An answer with more records of the asked type than this fails with `tooManyRecords` (nothing of it is used).
    public var maxRecordsPerAnswer: Int
    /// At most this many answers are cached; when full, the one closest to expiry goes first.
    public var maxCachedAnswers: Int
    /// No answer is kept longer than this, whatever its TTL says.
    public var maxTTL: Duration

    /// A configuration: 2 s timeout, 2 tries, 64 lookups in flight, 64 records per answer, 1,024 cached answers,
    /// kept at most an hour.
    public init(
        servers: [String], timeout: Duration = .seconds(2), tries: Int = 2, maxLookupsInFlight: Int = 64,
        maxRecordsPerAnswer: Int = 64, maxCachedAnswers: Int = 1024, maxTTL: Duration = .seconds(3600)
    ) {
        self.servers = servers
        self.timeout = timeout
        self.tries = tries
        self.maxLookupsInFlight = maxLookupsInFlight
        self.maxRecordsPerAnswer = maxRecordsPerAnswer
        self.maxCachedAnswers = maxCachedAnswers
        self.maxTTL = maxTTL
    }

    /// The servers as c-ares' `ares_set_servers_ports_csv` reads them (`127.0.0.1:5353,[::1]:53`), or the first
    /// one that is not a numeric address with an optional port.
    func serversCSV() -> Result<String, DNSResolverError> {
        var entries: [String] = []
        for server in servers {
            guard let (address, port) = Self.parse(server) else { return .failure(.badServer(server)) }
            entries.append(address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)")
        }
        return .success(entries.joined(separator: ","))
    }

    /// `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address → its canonical address and port.
    private static func parse(_ server: String) -> (String, UInt16)? {
        var host = Substring(server)
        var port: UInt16 = 53
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":"), let number = UInt16(rest.dropFirst()), number > 0 else { return nil }
                port = number
            }
        } else if host.filter({ $0 == ":" }).count == 1, let colon = host.firstIndex(of: ":") {
            guard let number = UInt16(host[host.index(after: colon)...]), number > 0 else { return nil }
            port = number
            host = host[..<colon]
        }
        guard let address = IPAddress(host) else { return nil }
        return (address.text, port)
    }
}

/// Why a `DNSResolver` could not be made.
public enum DNSResolverError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A server entry is not a numeric address with an optional port.
    case badServer(String)
    /// A bound is out of range (the field's name and what it must be).
    case badSetting(String)
    /// c-ares refused to start (its message).
    case resolverFailure(String)

    /// A sentence for people.
    public var description: String {
        switch self {
        case .badServer(let server):
            "DNS server \"\(server)\" is not a numeric address with an optional port (192.0.2.53, 127.0.0.1:5353, [::1]:53)"
        case .badSetting(let setting): "DNS resolver setting out of range: \(setting)"
        case .resolverFailure(let message): "c-ares could not start: \(message)"
        }
    }
}
