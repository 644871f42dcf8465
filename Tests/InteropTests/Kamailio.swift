import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Kamailio 5.6 running the project's example configuration (Examples/kamailio/kamailio.cfg) on free loopback
/// ports: SIP on UDP and TCP at `port`, evapi at `evapiPort`, the dispatcher pool and the timers given as `-A`
/// defines. Its log (stderr) is collected; it is stopped by its PID (see ``stop()``). It may listen on another
/// `host` inside a network namespace a test made (`namespace`: run through `ip netns exec`, which execs it).
final class Kamailio {
    static let configuration = Interop.packageRoot.appending(path: "Examples/kamailio/kamailio.cfg")

    /// Timers and the pool, as the test wants them.
    struct Settings {
        /// Dispatcher set 1 (the service URI sip:support@…): parleyd ports.
        var pool: [UInt16] = []
        /// How long a pushed call is held (HOLD_MS).
        var holdMilliseconds = 15_000
        /// No reply from a next hop within this: 408 (FR_MS).
        var noReplyMilliseconds = 2_000
        /// OPTIONS to the pool every this many seconds (DS_PING_S).
        var pingSeconds = 1
        /// A domain it serves besides its address (`sip:USER@DOMAIN` is "myself"), if any.
        var domain: String?
    }

    let process: RunningProcess
    let host: String
    let port: UInt16
    let evapiPort: UInt16
    let directory: URL
    /// Kamailio's own PID, also its process group's id (`process` is its python3 parent).
    private var kamailioPID: Int32 = 0

    /// Starts Kamailio (on `port` and `evapiPort` when given, else free ones); returns once its first SIP worker is
    /// up.
    init(
        _ settings: Settings = Settings(), port: UInt16? = nil, evapiPort: UInt16? = nil, host: String = "127.0.0.1",
        namespace: String? = nil
    ) throws {
        self.host = host
        self.port = port ?? Interop.freePort()
        self.evapiPort = evapiPort ?? Interop.freePort()
        directory = FileManager.default.temporaryDirectory.appending(path: "kamailio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let list = directory.appending(path: "dispatcher.list")
        // An empty set would leave the dispatcher without data: a member nobody listens on stands in.
        let members = settings.pool.isEmpty ? [Interop.freePort()] : settings.pool
        try members.map { "1 sip:127.0.0.1:\($0)\n" }.joined().write(to: list, atomically: true, encoding: .utf8)
        let arguments = [
            "-f", Self.configuration.path, "-DD", "-E", "-m", "64", "-M", "8", "-x", "tlsf", "-X", "tlsf",
            "-Y", directory.path, "-w", directory.path,
            "-A", "LISTEN_UDP=udp:\(host):\(self.port)", "-A", "LISTEN_TCP=tcp:\(host):\(self.port)",
            "-A", "EVAPI_BIND=\"127.0.0.1:\(self.evapiPort)\"", "-A", "DISPATCHER_LIST=\"\(list.path)\"",
            "-A", "HOLD_MS=\(settings.holdMilliseconds)", "-A", "FR_MS=\(settings.noReplyMilliseconds)",
            "-A", "DS_PING_S=\(settings.pingSeconds)",
        ] + (settings.domain.map { ["-A", "DOMAIN=\($0)"] } ?? [])
        // Kamailio closes every descriptor it inherits (a shielded child); it gets a process group of its own (its
        // shutdown signals its whole group), so stop() can end any worker that outlives it by that group's id.
        let command = (namespace.map { ["/usr/sbin/ip", "netns", "exec", $0] } ?? []) + [try Interop.tool("kamailio").path]
        (process, kamailioPID) = try RunningProcess.shielded(command + arguments, name: "kamailio", directory: directory)
        try waitForLog("its first worker", timeout: .seconds(15)) { $0.contains("kamailio ready") }
    }

    /// The registrar's URI.
    var uri: String { "sip:\(host):\(port)" }

    /// `sip:USER@` this proxy.
    func address(_ user: String) -> String { "sip:\(user)@\(host):\(port)" }

    /// Its log lines so far.
    var log: [String] { process.standardError.split(separator: "\n").map(String.init) }

    /// Waits (polling every 20 ms) until a log line satisfies `matches`; throws after `timeout`.
    @discardableResult
    func waitForLog(_ description: String, timeout: Duration = .seconds(15), _ matches: (String) -> Bool) throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = log.first(where: matches) { return line }
            if !process.process.isRunning {
                throw InteropError("kamailio exited (\(process.process.terminationStatus)) before logging \(description)\n"
                    + log.suffix(40).joined(separator: "\n"))
            }
            usleep(20_000)
        }
        throw InteropError("kamailio did not log \(description) within \(timeout)\n" + log.suffix(40).joined(separator: "\n"))
    }

    /// Stops it: SIGTERM to Kamailio's PID (it ends its workers), a wait of at most 5 s for the exit, then SIGKILL to
    /// Kamailio's process group (its id is Kamailio's PID) for any worker still there (one that blocks SIGTERM would
    /// otherwise outlive the test).
    func stop() {
        guard kamailioPID > 0 else { return }
        kill(kamailioPID, SIGTERM)
        _ = try? process.waitForExit(timeout: .seconds(5))
        kill(-kamailioPID, SIGKILL)
        if process.process.isRunning { _ = try? process.waitForExit(timeout: .seconds(5)) }
        kamailioPID = 0
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// `parley push-sim` and `parley push-gateway` between it and a Kamailio.
struct PushPath {
    let simulator: RunningProcess
    let simulatorPort: UInt16
    let gateway: RunningProcess

    /// Starts the simulator on a free port and the gateway towards `evapiPort`; returns once the gateway is connected
    /// (unless `waitForConnection` is false: Kamailio is not there yet).
    init(evapiPort: UInt16, waitForConnection: Bool = true) throws {
        (simulator, simulatorPort) = try PushInteropTests.simulator()
        gateway = try RunningProcess(
            try Interop.binary("parley"),
            ["push-gateway", "--evapi", "127.0.0.1:\(evapiPort)", "--push-service", "127.0.0.1:\(simulatorPort)"],
            name: "push-gateway")
        if waitForConnection {
            try gateway.waitForLine("its evapi connection") { $0.contains("connected to evapi") }
        }
    }

    /// A parleyd for `user` registered at `kamailio` with the push token `token` (RFC 8599 pn-* in its Contact),
    /// returned once both registrations are done.
    func device(_ user: String, token: String, at kamailio: Kamailio, _ extra: [String] = []) throws -> Parleyd {
        let device = try Parleyd(
            ["--user", user, "--register", kamailio.uri, "--push-service", "127.0.0.1:\(simulatorPort)", "--push-token", token]
                + extra)
        try device.process.waitForLine("its registration") { $0.contains("registration: registered") }
        try device.process.waitForLine("its push registration") { $0.contains("push channel: registered") }
        return device
    }

    /// Puts `device` to sleep the way a phone's OS does: killed at once, so its binding stays at the registrar and
    /// its token stays known (offline) at the simulator.
    func sleep(_ device: Parleyd, token: String) throws {
        kill(device.process.process.processIdentifier, SIGKILL)
        _ = try device.process.waitForExit(timeout: .seconds(5))
        try simulator.waitForLine("the token going offline") { $0.contains("offline token=\(token)") }
    }

    /// Stops the gateway, then the simulator.
    func stop() {
        _ = try? gateway.stop()
        _ = try? simulator.stop()
    }
}

extension Parleyd {
    /// The SIP Call-IDs of its conversations, in order of first appearance.
    var callIDs: [String] {
        var result: [String] = []
        for line in process.lines {
            guard let range = line.range(of: " call-id "), line.contains("conversation ") else { continue }
            let id = String(line[range.upperBound...].prefix { $0 != ":" && $0 != " " })
            if id != "-" && !result.contains(id) { result.append(id) }
        }
        return result
    }

    /// The uuids of its conversations, in order of first appearance.
    var conversationUUIDs: [String] {
        var result: [String] = []
        for line in process.lines {
            guard let range = line.range(of: "conversation ") else { continue }
            let uuid = String(line[range.upperBound...].prefix(36))
            if uuid.count == 36 && !result.contains(uuid) { result.append(uuid) }
        }
        return result
    }
}
