/// A DNS record type the resolver asks for: the four RFC 3263 uses.
public enum DNSRecordType: String, Hashable, Sendable, CaseIterable {
    /// Naming Authority Pointer (RFC 3403): which transports a SIP domain offers, and the SRV name of each.
    case naptr = "NAPTR"
    /// Service location (RFC 2782): the hosts and ports of one service, with priority and weight.
    case srv = "SRV"
    /// An IPv4 address.
    case a = "A"
    /// An IPv6 address.
    case aaaa = "AAAA"

    /// The type's number on the wire (RFC 1035, 3596, 2782, 3403).
    var code: Int32 {
        switch self {
        case .naptr: 35
        case .srv: 33
        case .a: 1
        case .aaaa: 28
        }
    }
}

/// One question to the DNS: a name and the type of record wanted.
public struct DNSQuestion: Hashable, Sendable, CustomStringConvertible {
    /// The name asked about, as given (compared without case and without a trailing dot).
    public var name: String
    /// The record type asked for.
    public var type: DNSRecordType

    /// The question `type` about `name`.
    public init(_ name: String, _ type: DNSRecordType) {
        self.name = name
        self.type = type
    }

    /// `SRV _sip._udp.example.com`.
    public var description: String { "\(type.rawValue) \(name)" }

    /// The name folded for comparison and caching: lower case, no trailing dot.
    var key: DNSQuestion { DNSQuestion(DNSName.canonical(name), type) }
}

/// A NAPTR record (RFC 3403) as RFC 3263 reads it.
public struct NAPTRRecord: Hashable, Sendable {
    /// Records with a lower order are used first.
    public var order: UInt16
    /// Among records of one order, a lower preference is used first.
    public var preference: UInt16
    /// `s` for SIP: the replacement is an SRV name.
    public var flags: String
    /// `SIP+D2U`, `SIP+D2T`, `SIPS+D2T`…
    public var service: String
    /// Empty for SIP (it uses the replacement).
    public var regexp: String
    /// The next name to look up (an SRV name for SIP).
    public var replacement: String

    /// A record with these fields.
    public init(order: UInt16, preference: UInt16, flags: String, service: String, regexp: String = "", replacement: String) {
        self.order = order
        self.preference = preference
        self.flags = flags
        self.service = service
        self.regexp = regexp
        self.replacement = replacement
    }
}

/// An SRV record (RFC 2782).
public struct SRVRecord: Hashable, Sendable {
    /// Lower priorities are tried first.
    public var priority: UInt16
    /// Among records of one priority, the share of choices (RFC 2782's weighted random order).
    public var weight: UInt16
    /// The port the service listens on.
    public var port: UInt16
    /// The host offering the service; `.` means the service is not offered.
    public var target: String

    /// A record with these fields.
    public init(priority: UInt16, weight: UInt16, port: UInt16, target: String) {
        self.priority = priority
        self.weight = weight
        self.port = port
        self.target = target
    }
}

/// The records of one answer, by the type asked for.
public enum DNSRecords: Hashable, Sendable {
    /// NAPTR records, in the order the server gave them.
    case naptr([NAPTRRecord])
    /// SRV records, in the order the server gave them.
    case srv([SRVRecord])
    /// Numeric addresses (IPv6 without brackets) from A or AAAA records.
    case addresses([String])

    /// How many records the answer holds.
    public var count: Int {
        switch self {
        case .naptr(let records): records.count
        case .srv(let records): records.count
        case .addresses(let addresses): addresses.count
        }
    }
}

/// An answer: the records and how long they may be reused (their smallest TTL, capped by the configuration).
public struct DNSAnswer: Hashable, Sendable {
    /// The records of the type asked for (at least one).
    public var records: DNSRecords
    /// Seconds the records may be cached.
    public var ttl: UInt32

    /// An answer with these records.
    public init(records: DNSRecords, ttl: UInt32) {
        self.records = records
        self.ttl = ttl
    }
}

/// Why a lookup found nothing usable.
public enum DNSFailureReason: Hashable, Sendable {
    /// The name does not exist (NXDOMAIN).
    case nameNotFound
    /// The name exists but has no record of the type asked for (NOERROR, empty answer).
    case noRecords
    /// No server answered in time: tries × timeout elapsed.
    case timedOut
    /// The server's port refused us (ICMP port unreachable on UDP, a refused TCP connection).
    case connectionRefused
    /// The server answered with an error code: SERVFAIL, REFUSED, NOTIMP or FORMERR.
    case serverError(String)
    /// The answer could not be read (truncated in a record, a bad name, lengths past its end).
    case malformedAnswer(String)
    /// The answer held more records of the type than the resolver takes (`limit`, 64 by default).
    case tooManyRecords(count: Int, limit: Int)
    /// The answer's CNAME chain comes back to a name it already passed through (the chain, in order).
    case cnameLoop([String])
    /// The resolver already has its bound of lookups in flight; this one was not sent.
    case tooManyLookupsInFlight(limit: Int)
    /// The name cannot be asked about (empty, too long, a label over 63 bytes).
    case badName
    /// The resolver was closed before the answer came.
    case resolverClosed
    /// c-ares failed for a reason of its own (its message).
    case resolverFailure(String)

    /// A failure that says "there is nothing there", as opposed to "we could not find out": RFC 3263's fallbacks
    /// (NAPTR → SRV → A/AAAA) follow only these.
    public var meansNoRecords: Bool {
        switch self {
        case .nameNotFound, .noRecords: true
        case .timedOut, .connectionRefused, .serverError, .malformedAnswer, .tooManyRecords, .cnameLoop,
            .tooManyLookupsInFlight, .badName, .resolverClosed, .resolverFailure:
            false
        }
    }
}

/// A failed lookup: which name, which record type, and why.
public struct DNSLookupFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was asked.
    public var question: DNSQuestion
    /// Why nothing usable came back.
    public var reason: DNSFailureReason

    /// A failure of `question` for `reason`.
    public init(_ question: DNSQuestion, _ reason: DNSFailureReason) {
        self.question = question
        self.reason = reason
    }

    /// `SRV _sip._udp.example.com: no such name (NXDOMAIN)`.
    public var description: String {
        let why: String
        switch reason {
        case .nameNotFound: why = "no such name (NXDOMAIN)"
        case .noRecords: why = "no \(question.type.rawValue) records"
        case .timedOut: why = "no answer from the DNS server (timed out)"
        case .connectionRefused: why = "the DNS server refused the connection (nothing listening)"
        case .serverError(let code): why = "the DNS server answered \(code)"
        case .malformedAnswer(let detail): why = "malformed answer: \(detail)"
        case .tooManyRecords(let count, let limit):
            why = "\(count) \(question.type.rawValue) records, more than the \(limit) the resolver takes"
        case .cnameLoop(let chain): why = "CNAME loop: " + chain.joined(separator: " → ")
        case .tooManyLookupsInFlight(let limit): why = "not sent: \(limit) lookups already in flight"
        case .badName: why = "not a valid DNS name"
        case .resolverClosed: why = "the resolver was closed"
        case .resolverFailure(let message): why = "resolver failure: \(message)"
        }
        return "\(question): \(why)"
    }
}

/// Name handling shared by the procedure and the resolver.
enum DNSName {
    /// Lower case, without a trailing dot: the form names are compared and cached in.
    static func canonical(_ name: String) -> String {
        let lower = name.lowercased()
        return lower.hasSuffix(".") && lower.count > 1 ? String(lower.dropLast()) : lower
    }

    /// Whether `name` can be put in a query: 1–253 bytes, labels of 1–63 bytes, no spaces or control bytes.
    static func isValid(_ name: String) -> Bool {
        let name = canonical(name)
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            guard (1...63).contains(label.utf8.count), label.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                return false
            }
        }
        return true
    }
}
