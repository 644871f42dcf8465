/// RFC 3263 §4, the client's procedure for locating a SIP server, as a pure value: it is given a query (the URI's
/// host, port, transport and scheme) and DNS answers, and returns the next questions to ask or the ordered list of
/// targets. It does no I/O and keeps no clock; the randomness of RFC 2782's weighted order is passed in.
/// `DNSResolver.locate` drives it over c-ares; tests drive it with answers they make up.
///
/// ```
///  start ─ numeric host ─────────────────────────────────────────────► finished([that address, port or default])
///    │ ─── port given ─────────────────────────────────────────────┐
///    │ ─── transport given ──► services [SRV for that transport]   │
///    │                              ▲                              │
///    └──► naptr [NAPTR domain] ─────┤ none usable, NXDOMAIN or     │
///           │ usable records        │ no records: SRV for each     │
///           │ (order, preference)   │ allowed transport            │
///           ▼                       │                              │
///         services [SRV per NAPTR replacement] ─ no SRV anywhere ──┤ (the domain, the default port)
///           │ SRV records: priority, then RFC 2782 weighted random  ▼
///           └────────────────────────────────────────────► addresses [A/AAAA per host]
///                                                                  │
///                                        finished(targets in order) or finished(every failure)
///  any other failure (no answer, malformed, SERVFAIL…) where nothing else was found ──► finished(every failure)
/// ```
///
/// Questions of one step are asked together (the SRV names of several transports, the addresses of several hosts);
/// `receive` answers `.wait` until the step's last answer is in.
public struct SIPServerLocation: Sendable {
    /// What the driver does next.
    public enum Step: Hashable, Sendable {
        /// Ask every one of these questions now and hand each answer to `receive`.
        case ask([DNSQuestion])
        /// Answers to questions asked earlier are still missing.
        case wait
        /// Done: targets in failover order, or why there are none.
        case finished(Result<[SIPServerTarget], SIPLocationError>)
    }

    /// An SRV name to ask, and the transport its records are for.
    private struct Service: Hashable, Sendable {
        var name: String
        var transport: SIPServerTransport
    }

    /// A host to reach: an SRV target or the domain itself, with the port and transport to use.
    private struct Hop: Hashable, Sendable {
        var host: String
        var port: UInt16
        var transport: SIPServerTransport
    }

    private typealias Answers = [DNSQuestion: Result<DNSRecords, DNSLookupFailure>]

    private enum State: Sendable {
        /// Not started.
        case idle
        /// Waiting for the domain's NAPTR records.
        case naptr(domain: String)
        /// Waiting for SRV answers; `fallback` is the transport for the domain itself when no name has any.
        case services(domain: String, services: [Service], fallback: SIPServerTransport, answers: Answers)
        /// Waiting for address answers for the hosts of `plan` (in failover order).
        case addresses(plan: [Hop], answers: Answers)
        /// Done; nothing more is accepted.
        case finished
    }

    /// What is being located.
    public let query: SIPServerQuery
    /// The transports and address families allowed.
    public let options: SIPLocationOptions
    private var state = State.idle
    /// Every failed lookup so far, in the order asked (the error names them all).
    private var failures: [DNSLookupFailure] = []
    /// Questions of the current step not yet answered.
    private var pending: Set<DNSQuestion> = []

    /// A procedure for `query` under `options`; call `start()` first.
    public init(_ query: SIPServerQuery, options: SIPLocationOptions = SIPLocationOptions()) {
        self.query = query
        self.options = options
    }

    /// Whether the procedure has finished.
    public var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// The first step: the result at once for a numeric host, else the first questions.
    public mutating func start() -> Step {
        guard case .idle = state else { preconditionFailure("SIPServerLocation.start() called twice") }
        guard let transport = chosenTransport() else { return finish(.failure(.unsupportedTransport(query))) }
        let domain = DNSName.canonical(query.bareHost)
        if let numeric = IPAddressText.numeric(query.bareHost) {
            return finish(.success([SIPServerTarget(transport, numeric, query.port ?? transport.defaultPort)]))
        }
        if let port = query.port {
            return enterAddresses([Hop(host: domain, port: port, transport: transport)])
        }
        if query.transport != nil {
            return enterServices(domain, [Service(name: transport.srvName(at: domain), transport: transport)], fallback: transport)
        }
        state = .naptr(domain: domain)
        return ask([DNSQuestion(domain, .naptr)])
    }

    /// An answer to one of the questions asked (records or the failure); `random` orders SRV records of equal
    /// priority by weight (RFC 2782).
    public mutating func receive(
        _ answer: Result<DNSRecords, DNSLookupFailure>, for question: DNSQuestion,
        random: inout some RandomNumberGenerator
    ) -> Step {
        let key = question.key
        precondition(pending.remove(key) != nil, "SIPServerLocation got an answer to \(question), which it did not ask")
        if case .failure(let failure) = answer { failures.append(failure) }
        switch state {
        case .idle, .finished:
            preconditionFailure("SIPServerLocation got an answer while not waiting for one")
        case .naptr(let domain):
            return naptrAnswered(domain, answer)
        case .services(let domain, let services, let fallback, var answers):
            answers[key] = answer
            state = .services(domain: domain, services: services, fallback: fallback, answers: answers)
            return pending.isEmpty ? servicesAnswered(domain, services, fallback, answers, random: &random) : .wait
        case .addresses(let plan, var answers):
            answers[key] = answer
            state = .addresses(plan: plan, answers: answers)
            return pending.isEmpty ? addressesAnswered(plan, answers) : .wait
        }
    }

    // MARK: - Transitions

    /// RFC 3263 §4.1 for a URI that names its transport, port or a numeric host: the URI's transport (TCP in a
    /// `sips:` URI means TLS), else UDP for `sip:` and TLS for `sips:` (the next allowed one when UDP is not).
    private func chosenTransport() -> SIPServerTransport? {
        let candidates: [SIPServerTransport]
        switch query.transport {
        case .udp: candidates = query.secure ? [] : [.udp]
        case .tcp: candidates = query.secure ? [.tls] : [.tcp]
        case .tls: candidates = [.tls]
        case nil: candidates = query.secure ? [.tls] : [.udp, .tcp, .tls]
        }
        return candidates.first { options.transports.contains($0) }
    }

    /// The transports tried without NAPTR records: the allowed ones in the options' order (only TLS for `sips:`).
    private var fallbackServices: [SIPServerTransport] {
        options.transports.filter { !query.secure || $0 == .tls }
    }

    private mutating func naptrAnswered(_ domain: String, _ answer: Result<DNSRecords, DNSLookupFailure>) -> Step {
        let fallback = chosenTransport() ?? .udp
        switch answer {
        case .success(let records):
            let usable = usableServices(records)
            if !usable.isEmpty { return enterServices(domain, usable, fallback: usable[0].transport) }
        case .failure(let failure):
            guard failure.reason.meansNoRecords else { return finishWithFailures() }
        }
        let services = fallbackServices.map { Service(name: $0.srvName(at: domain), transport: $0) }
        guard !services.isEmpty else { return finish(.failure(.unsupportedTransport(query))) }
        return enterServices(domain, services, fallback: fallback)
    }

    /// RFC 3263 §4.1 and RFC 3403: records with flag `s`, no regexp, a replacement, a service for an allowed
    /// transport (only `SIPS+D2T` for `sips:`), by order then preference; each replacement once.
    private func usableServices(_ records: DNSRecords) -> [Service] {
        guard case .naptr(let naptr) = records else { return [] }
        let sorted = naptr.enumerated().sorted {
            ($0.element.order, $0.element.preference, $0.offset) < ($1.element.order, $1.element.preference, $1.offset)
        }
        var seen: Set<String> = []
        var services: [Service] = []
        for (_, record) in sorted {
            let replacement = DNSName.canonical(record.replacement)
            guard record.flags.lowercased() == "s", record.regexp.isEmpty, !replacement.isEmpty, replacement != ".",
                let transport = SIPServerTransport(naptrService: record.service), options.transports.contains(transport),
                !query.secure || transport == .tls, seen.insert(replacement).inserted
            else { continue }
            services.append(Service(name: replacement, transport: transport))
        }
        return services
    }

    private mutating func servicesAnswered(
        _ domain: String, _ services: [Service], _ fallback: SIPServerTransport, _ answers: Answers,
        random: inout some RandomNumberGenerator
    ) -> Step {
        var hops: [Hop] = []
        var allSayNone = true
        for service in services {
            switch answers[DNSQuestion(service.name, .srv).key] {
            case .success(.srv(let records)):
                // RFC 2782: a single record with target "." says the service is decidedly not offered.
                let offered = records.filter { DNSName.canonical($0.target) != "." && !$0.target.isEmpty }
                for record in SRVOrder.ordered(offered, random: &random) {
                    hops.append(Hop(host: DNSName.canonical(record.target), port: record.port, transport: service.transport))
                }
            case .failure(let failure):
                allSayNone = allSayNone && failure.reason.meansNoRecords
            case .success(.naptr), .success(.addresses), nil:
                preconditionFailure("an SRV question got another kind of answer, or none")
            }
        }
        if !hops.isEmpty { return enterAddresses(hops) }
        guard allSayNone else { return finishWithFailures() }
        // RFC 3263 §4.2: no SRV records, so the domain's own addresses at the transport's default port.
        return enterAddresses([Hop(host: domain, port: fallback.defaultPort, transport: fallback)])
    }

    private mutating func addressesAnswered(_ plan: [Hop], _ answers: Answers) -> Step {
        var targets: [SIPServerTarget] = []
        var seen: Set<SIPServerTarget> = []
        for hop in plan {
            let addresses: [String]
            if let numeric = IPAddressText.numeric(hop.host) {
                addresses = [numeric]
            } else {
                addresses = options.addressFamilies.recordTypes.flatMap { type -> [String] in
                    guard case .success(.addresses(let found)) = answers[DNSQuestion(hop.host, type).key] else { return [] }
                    return found
                }
            }
            for address in addresses {
                let target = SIPServerTarget(hop.transport, address, hop.port)
                if seen.insert(target).inserted { targets.append(target) }
            }
        }
        return targets.isEmpty ? finishWithFailures() : finish(.success(targets))
    }

    // MARK: - Steps

    private mutating func enterServices(_ domain: String, _ services: [Service], fallback: SIPServerTransport) -> Step {
        state = .services(domain: domain, services: services, fallback: fallback, answers: [:])
        return ask(services.map { DNSQuestion($0.name, .srv) })
    }

    /// The hosts of the first `maxHosts` distinct names, in order; their address questions (numeric hosts need none).
    private mutating func enterAddresses(_ hops: [Hop]) -> Step {
        var hosts: [String] = []
        let plan = hops.filter { hop in
            if hosts.contains(hop.host) { return true }
            guard hosts.count < max(1, options.maxHosts) else { return false }
            hosts.append(hop.host)
            return true
        }
        state = .addresses(plan: plan, answers: [:])
        let questions = hosts.filter { IPAddressText.numeric($0) == nil }.flatMap { host in
            options.addressFamilies.recordTypes.map { DNSQuestion(host, $0) }
        }
        return questions.isEmpty ? addressesAnswered(plan, [:]) : ask(questions)
    }

    /// Asks each distinct question once.
    private mutating func ask(_ questions: [DNSQuestion]) -> Step {
        var unique: [DNSQuestion] = []
        for question in questions where pending.insert(question.key).inserted { unique.append(question.key) }
        return .ask(unique)
    }

    private mutating func finishWithFailures() -> Step {
        finish(.failure(.lookupsFailed(query, failures)))
    }

    private mutating func finish(_ result: Result<[SIPServerTarget], SIPLocationError>) -> Step {
        state = .finished
        pending.removeAll()
        return .finished(result)
    }
}
