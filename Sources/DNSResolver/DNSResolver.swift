public import ParleyIO

/// Asynchronous DNS for the SIP loop: c-ares driven by a ParleyIO `EventLoop` (its sockets are watched by the loop,
/// its timeouts are loop timers; no thread, nothing blocks), answers cached for their TTL, a bound on lookups in
/// flight, and RFC 3263 server location (`locate`) on top.
///
/// Loop-confined: make it, use it and drop it on its loop's thread. Completions run on the loop thread, never
/// inside the call that asked (a cached answer or an immediate failure comes at the end of the turn). `close()`
/// fails the lookups in flight with `resolverClosed`; a resolver dropped without `close()`, or a loop shut down,
/// drops them without a word.
public final class DNSResolver {
    /// Counters for tests and benchmarks.
    public struct Statistics: Hashable, Sendable {
        /// Queries handed to c-ares (each may be several datagrams: retries, TCP after a truncated answer).
        public var queriesSent = 0
        /// Lookups answered from the cache.
        public var cacheHits = 0
        /// Lookups that joined an identical question already in flight.
        public var sharedLookups = 0
        /// Lookups refused at once because `maxLookupsInFlight` questions were in flight.
        public var refusedLookups = 0
    }

    /// A lookup's completion.
    public typealias LookupCompletion = (Result<DNSAnswer, DNSLookupFailure>) -> Void
    /// A location's completion.
    public typealias LocateCompletion = (Result<[SIPServerTarget], SIPLocationError>) -> Void

    /// One `locate` in progress: the procedure and who waits for it.
    private final class Location {
        var procedure: SIPServerLocation
        let completion: LocateCompletion
        init(_ procedure: SIPServerLocation, _ completion: @escaping LocateCompletion) {
            self.procedure = procedure
            self.completion = completion
        }
    }

    private let loop: EventLoop
    /// The configuration it was made with.
    public let configuration: DNSResolverConfiguration
    private let channel: AresChannel
    private let now: () -> ContinuousClock.Instant
    private var random: any RandomNumberGenerator
    private var cache: DNSCache
    /// Completions waiting for each question in flight (canonical questions).
    private var waiting: [DNSQuestion: [LookupCompletion]] = [:]
    private var closed = false
    private var counters = Statistics()

    /// A resolver on `loop` (made on its thread) asking `configuration.servers`. `now` is the clock the cache
    /// reads (tests pass a manual one); `random` orders SRV records of equal priority by weight (RFC 2782).
    public init(
        loop: EventLoop, configuration: DNSResolverConfiguration,
        now: @escaping () -> ContinuousClock.Instant = { ContinuousClock.now },
        random: any RandomNumberGenerator = SystemRandomNumberGenerator()
    ) throws(DNSResolverError) {
        precondition(loop.inEventLoop, "a DNSResolver is made on its event loop's thread")
        guard configuration.tries >= 1 else { throw .badSetting("tries must be at least 1") }
        guard configuration.timeout >= .milliseconds(1) else { throw .badSetting("timeout must be at least 1 ms") }
        guard configuration.maxLookupsInFlight >= 1 else { throw .badSetting("maxLookupsInFlight must be at least 1") }
        guard configuration.maxRecordsPerAnswer >= 1 else { throw .badSetting("maxRecordsPerAnswer must be at least 1") }
        guard configuration.maxCachedAnswers >= 0 else { throw .badSetting("maxCachedAnswers must not be negative") }
        self.loop = loop
        self.configuration = configuration
        self.now = now
        self.random = random
        cache = DNSCache(capacity: configuration.maxCachedAnswers)
        channel = try AresChannel(loop: loop, configuration: configuration)
        channel.deliver = { [weak self] batch in self?.finished(batch) }
    }

    /// The counters so far.
    public var statistics: Statistics {
        var counters = counters
        counters.queriesSent = channel.queriesSent
        return counters
    }

    /// Distinct questions in flight now.
    public var lookupsInFlight: Int { waiting.count }

    /// Answers in the cache now (expired ones included until they are next looked at).
    public var cachedAnswers: Int { cache.count }

    /// Looks `question` up: from the cache while its TTL lasts, else through c-ares (sharing a query with an
    /// identical question in flight). Beyond `maxLookupsInFlight` questions in flight it fails at once.
    public func lookup(_ question: DNSQuestion, completion: @escaping LookupCompletion) {
        precondition(loop.inEventLoop, "DNSResolver.lookup is called on its event loop's thread")
        let key = question.key
        guard !closed else { return later(completion, .failure(DNSLookupFailure(key, .resolverClosed))) }
        guard DNSName.isValid(key.name) else { return later(completion, .failure(DNSLookupFailure(key, .badName))) }
        if key.type == .a || key.type == .aaaa, let addresses = channel.hostsFileAddresses(key.name, ipv6: key.type == .aaaa) {
            return later(completion, .success(DNSAnswer(records: .addresses(addresses), ttl: 0)))
        }
        if let cached = cache.lookup(key, now: now()) {
            counters.cacheHits += 1
            return later(completion, cached)
        }
        if waiting[key] != nil {
            counters.sharedLookups += 1
            waiting[key]?.append(completion)
            return
        }
        guard waiting.count < configuration.maxLookupsInFlight else {
            counters.refusedLookups += 1
            let reason = DNSFailureReason.tooManyLookupsInFlight(limit: configuration.maxLookupsInFlight)
            return later(completion, .failure(DNSLookupFailure(key, reason)))
        }
        waiting[key] = [completion]
        channel.query(key)
    }

    /// Locates the SIP servers for `query` (RFC 3263 §4: NAPTR, SRV, A/AAAA as the URI calls for) and calls
    /// `completion` with the targets in failover order, or with every failure that left none.
    public func locate(
        _ query: SIPServerQuery, options: SIPLocationOptions = SIPLocationOptions(),
        completion: @escaping LocateCompletion
    ) {
        precondition(loop.inEventLoop, "DNSResolver.locate is called on its event loop's thread")
        let location = Location(SIPServerLocation(query, options: options), completion)
        let step = location.procedure.start()
        if case .finished(let result) = step { return loop.atEndOfTurn { completion(result) } }
        advance(location, step)
    }

    /// Fails the lookups in flight with `resolverClosed` (at the end of this turn) and closes c-ares' sockets;
    /// later lookups fail the same way. Idempotent.
    public func close() {
        precondition(loop.inEventLoop, "DNSResolver.close is called on its event loop's thread")
        guard !closed else { return }
        closed = true
        cache.removeAll()
        channel.close()
    }

    /// Forgets every cached answer (for a changed network, or tests).
    public func flushCache() { cache.removeAll() }

    // MARK: - Driving

    private func advance(_ location: Location, _ step: SIPServerLocation.Step) {
        switch step {
        case .ask(let questions):
            for question in questions {
                lookup(question) { [weak self] result in
                    guard let self, !location.procedure.isFinished else { return }
                    let next = location.procedure.receive(result.map(\.records), for: question, random: &random)
                    advance(location, next)
                }
            }
        case .wait:
            break
        case .finished(let result):
            location.completion(result)
        }
    }

    private func finished(_ batch: [AresChannel.Finished]) {
        let instant = now()
        for (key, outcome) in batch {
            let result: Result<DNSAnswer, DNSLookupFailure>
            switch outcome {
            case .answer(let answer):
                result = .success(answer)
                cache.store(key, result, ttl: answer.ttl, now: instant)
            case .failure(let reason, let negativeTTL):
                result = .failure(DNSLookupFailure(key, reason))
                if let negativeTTL, reason.meansNoRecords {
                    let cap = UInt32(clamping: configuration.maxTTL.clampedNanoseconds / 1_000_000_000)
                    cache.store(key, result, ttl: min(negativeTTL, cap), now: instant)
                }
            }
            for completion in waiting.removeValue(forKey: key) ?? [] { completion(result) }
        }
    }

    private func later(_ completion: @escaping LookupCompletion, _ result: Result<DNSAnswer, DNSLookupFailure>) {
        loop.atEndOfTurn { completion(result) }
    }
}
