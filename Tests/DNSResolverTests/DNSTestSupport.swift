import DNSResolver
import Foundation
import Glibc
import ParleyIO
import ParleyTestSupport
import Synchronization

/// A clock the test moves by hand: the cache's only notion of time.
final class ManualClock: Sendable {
    private let start = ContinuousClock.now
    private let offset = Mutex<Duration>(.zero)
    var now: ContinuousClock.Instant { start.advanced(by: offset.withLock { $0 }) }
    func advance(by duration: Duration) { offset.withLock { $0 += duration } }
}

/// A resolver on a loop of its own, with a manual clock, and calls that wait (boundedly) for its answers.
final class ResolverHarness: Sendable {
    let loop: EventLoop
    let clock = ManualClock()
    private let resolver: LoopBound<DNSResolver>

    init(_ configuration: DNSResolverConfiguration, seed: UInt64 = 1) throws {
        let loop = try EventLoop(name: "dns-test")
        self.loop = loop
        let clock = clock
        let made = loop.executeAndWait { () -> Result<LoopBound<DNSResolver>, DNSResolverError> in
            Result { () throws(DNSResolverError) in
                let resolver = try DNSResolver(
                    loop: loop, configuration: configuration, now: { clock.now }, random: SeededGenerator(seed: seed))
                return LoopBound(resolver, identity: loop.identity)
            }
        }
        guard let made else { throw TestFailure("the loop did not make the resolver") }
        resolver = try made.get()
    }

    /// Runs `body` with the resolver on the loop thread and returns its result.
    func onLoop<Value: Sendable>(_ body: @escaping @Sendable (DNSResolver) -> Value) -> Value {
        let resolver = self.resolver
        return loop.executeAndWait { body(resolver.value) }!
    }

    /// Starts a location; its result lands in the recorder returned.
    func startLocate(_ query: SIPServerQuery, options: SIPLocationOptions = SIPLocationOptions())
        -> EventRecorder<Result<[SIPServerTarget], SIPLocationError>>
    {
        let recorder = EventRecorder<Result<[SIPServerTarget], SIPLocationError>>()
        let resolver = self.resolver
        loop.execute { resolver.value.locate(query, options: options) { recorder.record($0) } }
        return recorder
    }

    /// Locates and waits for the result (at most `patience`).
    func locate(_ query: SIPServerQuery, options: SIPLocationOptions = SIPLocationOptions()) throws
        -> Result<[SIPServerTarget], SIPLocationError>
    {
        guard let result = startLocate(query, options: options).first() else { throw TestFailure("no result for \(query)") }
        return result
    }

    /// Starts a lookup; its result lands in the recorder returned.
    func startLookup(_ question: DNSQuestion) -> EventRecorder<Result<DNSAnswer, DNSLookupFailure>> {
        let recorder = EventRecorder<Result<DNSAnswer, DNSLookupFailure>>()
        let resolver = self.resolver
        loop.execute { resolver.value.lookup(question) { recorder.record($0) } }
        return recorder
    }

    /// Looks up and waits for the result (at most `patience`).
    func lookup(_ question: DNSQuestion) throws -> Result<DNSAnswer, DNSLookupFailure> {
        guard let result = startLookup(question).first() else { throw TestFailure("no answer for \(question)") }
        return result
    }

    var statistics: DNSResolver.Statistics { onLoop { $0.statistics } }

    /// Closes the resolver and stops the loop.
    func shutdown() {
        let resolver = self.resolver
        _ = loop.executeAndWait { resolver.value.close() }
        loop.shutdown()
    }
}

/// A set-up failure, with its reason.
struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A DNS server process the test started (dnsmasq, or the misbehaving Python one) on 127.0.0.1, stopped by PID.
final class DNSServerProcess {
    let port: UInt16
    let process = Process()
    private let log: URL

    /// Starts `executable ARGUMENTS` (which must listen on 127.0.0.1:`port`) and waits until the UDP port is taken.
    init(_ executable: String, _ arguments: [String], port: UInt16) throws {
        self.port = port
        log = FileManager.default.temporaryDirectory.appending(path: "parley-dns-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        let deadline = ContinuousClock.now + .seconds(5)
        while LoopbackPort.isFree(port, type: Int32(SOCK_DGRAM.rawValue)) {
            guard process.isRunning, ContinuousClock.now < deadline else {
                stop()
                throw TestFailure("\(executable) did not listen on 127.0.0.1:\(port): \(output)")
            }
            usleep(10_000)
        }
    }

    /// What it printed.
    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// `127.0.0.1:PORT`, as the resolver's configuration names it.
    var address: String { "127.0.0.1:\(port)" }

    /// Kills it by PID and waits for it to end. SIGKILL: neither server keeps state, and a dnsmasq started from the
    /// test runner did not act on SIGTERM (the runner's blocked signals are inherited), so SIGTERM would only wait.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: log)
    }

    /// dnsmasq on 127.0.0.1 at a free port, answering only from `records` (its options: `--srv-host=…`,
    /// `--naptr-record=…`, `--host-record=…`, `--cname=…`), authoritative for `example.test` (so unknown names there
    /// are NXDOMAIN), with a TTL of 60 s on everything, no upstream, no /etc/hosts, no configuration file.
    static func dnsmasq(_ records: [String]) throws -> DNSServerProcess {
        let port = freePort()
        return try DNSServerProcess("/usr/sbin/dnsmasq", [
            "--keep-in-foreground", "--port=\(port)", "--listen-address=127.0.0.1", "--bind-interfaces",
            "--no-resolv", "--no-hosts", "--conf-file=/dev/null", "--pid-file", "--local=/example.test/",
            "--local-ttl=60", "--log-facility=-", "--log-queries",
        ] + records, port: port)
    }

    /// A port free for UDP and TCP on 127.0.0.1 a moment ago.
    private static func freePort() -> UInt16 {
        for _ in 0..<100 {
            let port = UInt16.random(in: 20_000...59_000)
            if LoopbackPort.isFree(port) { return port }
        }
        fatalError("no free loopback port found")
    }

    /// The misbehaving server (Tests/Interop/dns/bad-dns-server.py) at a free port.
    static func badServer() throws -> DNSServerProcess {
        let port = freePort()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "Interop/dns/bad-dns-server.py").path
        return try DNSServerProcess("/usr/bin/python3", ["-u", script, String(port)], port: port)
    }
}
