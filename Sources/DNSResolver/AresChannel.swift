internal import CAres
import Glibc
internal import ParleyIO

/// One c-ares channel driven by an `EventLoop`, never by a thread of its own and never blocking: c-ares reports each
/// socket it opens, and what it waits for, through its socket-state callback, and each becomes a `DescriptorWatch`
/// on the loop; c-ares' next timeout (`ares_timeout`) is one loop timer. Readiness and the timer both call
/// `ares_process_fd`, which reads answers, retries and times queries out. Answers are read inside c-ares'
/// callback (the buffer lives only there) and handed to `deliver` once c-ares has returned, so code the answers
/// run never re-enters c-ares. Loop-confined.
final class AresChannel {
    /// A finished query: the question as asked (canonical) and what came of it.
    typealias Finished = (question: DNSQuestion, outcome: DNSOutcome)

    /// The object c-ares' callbacks find: a weak way back to the channel, so callbacks made while the channel is
    /// being deinitialised (c-ares closes its sockets and fails its queries in `ares_destroy`) do nothing.
    private final class Link {
        weak var channel: AresChannel?
        let question: DNSQuestion
        init(_ channel: AresChannel?, _ question: DNSQuestion) {
            self.channel = channel
            self.question = question
        }
    }

    private let loop: EventLoop
    private let configuration: DNSResolverConfiguration
    private var channel: OpaquePointer?
    /// The socket-state callback's data (its `question` unused).
    private let socketLink: Link
    private var watches: [Int32: DescriptorWatch] = [:]
    private var timer: LoopTimer?
    private var finished: [Finished] = []
    private var deliveryScheduled = false
    /// Where finished queries go, after c-ares returned.
    var deliver: ([Finished]) -> Void = { _ in }
    /// Queries handed to c-ares (for statistics and tests).
    private(set) var queriesSent = 0
    /// Sockets c-ares has open now.
    var openSockets: Int { watches.count }

    private static let libraryStatus = ares_library_init(ARES_LIB_INIT_ALL)

    init(loop: EventLoop, configuration: DNSResolverConfiguration) throws(DNSResolverError) {
        self.loop = loop
        self.configuration = configuration
        socketLink = Link(nil, DNSQuestion(".", .a))
        guard Self.libraryStatus == ARES_SUCCESS else { throw .resolverFailure(Self.message(Self.libraryStatus)) }
        let csv: String
        switch configuration.serversCSV() {
        case .success(let text): csv = text
        case .failure(let error): throw error
        }
        var options = ares_options()
        options.flags = ARES_FLAG_EDNS | ARES_FLAG_NOSEARCH
        options.ednspsz = 1232
        options.timeout = Int32(clamping: max(1, configuration.timeout.clampedNanoseconds / 1_000_000))
        options.tries = Int32(configuration.tries)
        options.sock_state_cb = { data, fd, readable, writable in
            guard let data else { return }
            Unmanaged<Link>.fromOpaque(data).takeUnretainedValue().channel?.socketState(fd, readable != 0, writable != 0)
        }
        options.sock_state_cb_data = Unmanaged.passUnretained(socketLink).toOpaque()
        let mask = ARES_OPT_FLAGS | ARES_OPT_EDNSPSZ | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_SOCK_STATE_CB
        var made: OpaquePointer?
        let status = ares_init_options(&made, &options, Int32(mask))
        guard status == ARES_SUCCESS, let made else { throw .resolverFailure(Self.message(status)) }
        if !csv.isEmpty {
            let set = ares_set_servers_ports_csv(made, csv)
            guard set == ARES_SUCCESS else {
                ares_destroy(made)
                throw .resolverFailure("servers \(csv): \(Self.message(set))")
            }
        }
        channel = made
        socketLink.channel = self
    }

    deinit {
        // The links' weak references are nil by now, so c-ares' callbacks during `ares_destroy` do nothing.
        guard let channel else { return }
        ares_destroy(channel)
        guard loop.inEventLoop else { return }
        for watch in watches.values { watch.cancel() }
        if let timer { loop.cancel(timer) }
    }

    /// The addresses the hosts file (/etc/hosts, through c-ares) gives `name`, IPv4 or IPv6; nil when it names none.
    /// A small local file read at once, as getaddrinfo reads it before DNS: `localhost` and a machine's own names.
    func hostsFileAddresses(_ name: String, ipv6: Bool) -> [String]? {
        guard let channel else { return nil }
        var entry: UnsafeMutablePointer<hostent>?
        guard ares_gethostbyname_file(channel, name, ipv6 ? AF_INET6 : AF_INET, &entry) == ARES_SUCCESS, let entry else {
            return nil
        }
        defer { ares_free_hostent(entry) }
        var addresses: [String] = []
        var index = 0
        while let raw = entry.pointee.h_addr_list?[index] {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if inet_ntop(entry.pointee.h_addrtype, raw, &text, socklen_t(text.count)) != nil {
                addresses.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            index += 1
        }
        return addresses.isEmpty ? nil : addresses
    }

    /// Sends `question`; its outcome reaches `deliver` later, never during this call.
    func query(_ question: DNSQuestion) {
        guard let channel else {
            finish(question, .failure(.resolverClosed, negativeTTL: nil))
            return scheduleDelivery()
        }
        queriesSent += 1
        let link = Unmanaged.passRetained(Link(self, question)).toOpaque()
        ares_query(channel, question.name, 1 /* ns_c_in */, question.type.code, { arg, status, _, answer, length in
            guard let arg else { return }
            let link = Unmanaged<Link>.fromOpaque(arg).takeRetainedValue()
            guard let channel = link.channel else { return }
            let bytes = answer.map { UnsafeBufferPointer(start: $0, count: Int(max(length, 0))) }
            channel.answered(link.question, status: status, bytes: bytes)
        }, link)
        rearmTimer()
        // c-ares fails some queries inside ares_query itself (a bad name, no server): deliver those at the end of
        // the turn, outside the caller's call.
        if !finished.isEmpty { scheduleDelivery() }
    }

    /// Fails every query in flight (`resolverClosed`, delivered at the end of this turn) and closes c-ares' sockets.
    /// Idempotent.
    func close() {
        guard let channel else { return }
        ares_destroy(channel)
        self.channel = nil
        for watch in watches.values { watch.cancel() }
        watches.removeAll()
        if let timer { loop.cancel(timer) }
        timer = nil
        scheduleDelivery()
    }

    // MARK: - c-ares' callbacks and the loop's

    private func answered(_ question: DNSQuestion, status: Int32, bytes: UnsafeBufferPointer<UInt8>?) {
        let outcome = DNSAnswerReader.read(
            status: status, question: question, answer: bytes, recordLimit: configuration.maxRecordsPerAnswer,
            maxTTL: UInt32(clamping: configuration.maxTTL.clampedNanoseconds / 1_000_000_000))
        finish(question, outcome)
    }

    private func finish(_ question: DNSQuestion, _ outcome: DNSOutcome) {
        finished.append((question, outcome))
    }

    /// c-ares opened, changed or is about to close a socket.
    private func socketState(_ fd: Int32, _ readable: Bool, _ writable: Bool) {
        guard readable || writable else {
            watches.removeValue(forKey: fd)?.cancel()
            return
        }
        if let watch = watches[fd] { return watch.update(readable: readable, writable: writable) }
        do {
            watches[fd] = try DescriptorWatch(
                loop: loop, fd: fd, readable: readable, writable: writable,
                onReady: { [weak self] ready in self?.process(fd, ready) },
                onLoopShutdown: { [weak self] in self?.loopShutDown() })
        } catch {
            // epoll refused the socket (kernel memory): the query on it ends by its timeout, through the timer.
        }
    }

    private func process(_ fd: Int32, _ ready: DescriptorWatch.Readiness) {
        guard let channel else { return }
        ares_process_fd(channel, ready.readable ? fd : ARES_SOCKET_BAD, ready.writable ? fd : ARES_SOCKET_BAD)
        rearmTimer()
        deliverFinished()
    }

    private func timerFired() {
        timer = nil
        guard let channel else { return }
        ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD)
        rearmTimer()
        deliverFinished()
    }

    /// One loop timer at c-ares' next timeout, or none when nothing waits.
    private func rearmTimer() {
        if let timer { loop.cancel(timer) }
        timer = nil
        guard let channel else { return }
        var next = timeval()
        guard let due = ares_timeout(channel, nil, &next) else { return }
        let delay = Duration.seconds(Int64(due.pointee.tv_sec)) + .microseconds(Int64(due.pointee.tv_usec))
        timer = loop.schedule(after: delay) { [weak self] in self?.timerFired() }
    }

    /// The loop is shutting down: c-ares is destroyed quietly (nothing runs on a loop that has stopped).
    private func loopShutDown() {
        guard let channel else { return }
        deliver = { _ in }
        for watch in watches.values { watch.cancel() }
        watches.removeAll()
        timer = nil
        self.channel = nil
        ares_destroy(channel)
        finished.removeAll()
    }

    private func scheduleDelivery() {
        guard !deliveryScheduled else { return }
        deliveryScheduled = true
        loop.atEndOfTurn { [weak self] in
            self?.deliveryScheduled = false
            self?.deliverFinished()
        }
    }

    private func deliverFinished() {
        guard !finished.isEmpty else { return }
        let batch = finished
        finished.removeAll()
        deliver(batch)
    }

    private static func message(_ status: Int32) -> String { String(cString: ares_strerror(status)) }
}
