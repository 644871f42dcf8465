import CommandLineSupport
import Dispatch
import Foundation
import Glibc
import ParleyEngine
import ParleyIO
import SIPMessages
import SIPSignaling
import SIPTransport

/// `parley-bench-register --registrar HOST:PORT [--registrations N] [--in-flight K] [--user U] [--password P]`:
/// Parley's registration client (the engine's `RegistrationMachine`: REGISTER, answer the 401's digest challenge
/// through OpenSSL, REGISTER again, read the 200) run `N` times over real UDP on one event loop, `K` registrations at
/// once, each a fresh machine with its own Call-ID (a new registration, RFC 7502's shape). `Scripts/bench-register`
/// runs it against sipp as the registrar (Tests/Interop/sipp/registrar-digest.xml) beside sipp's own uac as the
/// baseline. Prints the rate and the CPU per registration of this process. A registration that gets no answer is a
/// loss: there are no retransmissions here (on loopback with large buffers none is needed), so a lost datagram shows
/// instead of being hidden.
struct Options {
    var registrar = SIPPeerAddress(host: "127.0.0.1", port: 5060)
    var registrations = 20_000
    var inFlight = 64
    var user = "alice"
    var password = "secret"

    static let usage = "usage: parley-bench-register --registrar HOST:PORT [--registrations N] [--in-flight K] "
        + "[--user U] [--password P]"

    init(_ arguments: [String]) throws(UsageError) {
        var arguments = Arguments(arguments)
        if arguments.flag("--help", "-h") {
            print(Self.usage)
            exit(0)
        }
        registrar = try arguments.option("--registrar", as: "HOST:PORT", Self.peer) ?? registrar
        registrations = try arguments.option("--registrations", as: "a count from 1", in: 1...10_000_000) ?? registrations
        inFlight = try arguments.option("--in-flight", as: "a count from 1 to 10000", in: 1...10_000) ?? inFlight
        user = try arguments.option("--user") ?? user
        password = try arguments.option("--password") ?? password
        try arguments.finish()
    }

    private static func peer(_ text: String) -> SIPPeerAddress? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        return SIPPeerAddress(host: String(text[..<colon]), port: port)
    }
}

/// Drives the registrations: starts them, sends what the machines ask, feeds the responses back by Call-ID.
// @unchecked Sendable: confined to the event loop's thread (the transport calls back there, the start runs there).
final class RegistrationDriver: RegistrationContext, @unchecked Sendable {
    private struct Running {
        var machine: RegistrationMachine
        var attempt: RegistrationAttempt?
    }

    let configuration: EngineConfiguration
    private let options: Options
    private let registration: RegistrationConfiguration
    private let registrar: SIPDestination
    private let local: ListenAddress
    private let transport: SIPTransport
    private var running: [String: Running] = [:]
    private var started = 0
    private(set) var registered = 0
    private(set) var failures: [String] = []
    private let finished: DispatchSemaphore

    init(options: Options, transport: SIPTransport, local: ListenAddress, finished: DispatchSemaphore) {
        self.options = options
        self.transport = transport
        self.local = local
        self.finished = finished
        configuration = EngineConfiguration(listenAddresses: [local])
        registrar = SIPDestination(kind: .udp, address: options.registrar, connection: nil)
        let registrarURI = SIPURI(scheme: "sip", host: options.registrar.host, port: Int(options.registrar.port))
        registration = RegistrationConfiguration(
            registrar: registrarURI,
            addressOfRecord: SIPURI(scheme: "sip", user: options.user, host: options.registrar.host),
            credentials: DigestCredentials(username: options.user, password: options.password), expires: 60)
    }

    var done: Int { registered + failures.count }

    /// Starts the first `inFlight` registrations.
    func start() {
        for _ in 0..<min(options.inFlight, options.registrations) { startOne() }
    }

    private func startOne() {
        guard started < options.registrations else { return }
        started += 1
        let callID = "reg-\(started)-\(getpid())@bench"
        var machine = RegistrationMachine(configuration: registration, callID: callID, localTag: "t\(started)")
        let effects = machine.register(in: self)
        running[callID] = Running(machine: machine)
        apply(effects, callID: callID)
    }

    /// A datagram from the registrar.
    func receive(_ inbound: InboundSIPMessage) {
        guard let response = (try? SIPMessage.parse(inbound.bytes))?.response, !response.isProvisional,
            let callID = response.headers.callID, var entry = running[callID], let attempt = entry.attempt
        else { return }
        let effects = entry.machine.receive(.response(response), for: attempt, in: self)
        running[callID] = entry
        apply(effects, callID: callID)
        switch entry.machine.state {
        case .registered: finish(callID, failure: nil)
        case .failed(let reason): finish(callID, failure: reason)
        case .registering, .unregistered: break
        }
    }

    private func apply(_ effects: [RegistrationMachine.Effect], callID: String) {
        for effect in effects {
            switch effect {
            case .send(let request, let attempt, let destination):
                running[callID]?.attempt = attempt
                transport.send(request.serialize(), to: destination)
            case .startTimer, .cancelTimer, .log:
                break  // the refresh and retry timers: each registration here ends at its first answer
            }
        }
    }

    private func finish(_ callID: String, failure: String?) {
        running[callID] = nil
        if let failure { failures.append(failure) } else { registered += 1 }
        if done == options.registrations { finished.signal() } else { startOne() }
    }

    // MARK: RegistrationContext

    var now: Date { Date() }
    func outOfDialogDestination(for uri: SIPURI) -> Result<SIPDestination, HandleDialError> { .success(registrar) }
    let preloadedRoute: String? = nil
    func localContact(for destination: SIPDestination, secure: Bool) -> SIPAddress {
        SIPAddress(uri: SIPURI(scheme: "sip", user: options.user, host: local.host, port: Int(local.port)))
    }
    func newVia(for destination: SIPDestination) -> SIPVia {
        SIPVia(transport: "UDP", host: local.host, port: Int(local.port),
            branch: SIPVia.magicCookie + SecureRandom.token(16), parameters: [SIPParameter(name: "rport")])
    }
    func cnonce() -> String { SecureRandom.token(16) }
    var digestHash: DigestHash { openSSLDigestHash }
}

/// This process's CPU time (user + system).
func cpuTime() -> Duration {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    let micros = Int64(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1_000_000
        + Int64(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec)
    return .microseconds(micros)
}

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("parley-bench-register: \(error)\n\(Options.usage)\n".utf8))
    exit(ExitCode.usage.rawValue)
}
let loop = try EventLoop(name: "bench-register")
let finished = DispatchSemaphore(value: 0)
// nonisolated(unsafe): written once on the main thread before the first registration starts (the loop's `execute`
// below orders it), read only on the loop thread after that.
nonisolated(unsafe) var driver: RegistrationDriver?
let transport = SIPTransport(loop: loop, tls: nil, limits: TransportLimits()) { inbound in driver?.receive(inbound) }
let local = try transport.listenSync(ListenAddress(kind: .udp, host: options.registrar.host, port: 0))
let made = RegistrationDriver(options: options, transport: transport, local: local, finished: finished)
driver = made
let cpuBefore = cpuTime(), wallBefore = ContinuousClock.now
loop.execute { made.start() }
let deadline = DispatchTime.now() + .seconds(30 + options.registrations / 200)
let completed = finished.wait(timeout: deadline) == .success
let wall = ContinuousClock.now - wallBefore, cpu = cpuTime() - cpuBefore
let (registered, failures) = loop.executeAndWait { (made.registered, made.failures) } ?? (0, [])
loop.shutdown()

let seconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
let cpuMicros = Double(cpu.components.seconds) * 1e6 + Double(cpu.components.attoseconds) / 1e12
print("registrations: \(registered) of \(options.registrations) (\(options.inFlight) in flight)")
print("failed: \(failures.count)" + (failures.first.map { " (first: \($0))" } ?? ""))
print("lost: \(options.registrations - registered - failures.count)")
print(String(format: "seconds: %.3f", seconds))
print(String(format: "registrations_per_second: %.0f", Double(registered) / seconds))
print(String(format: "cpu_us_per_registration: %.1f", registered > 0 ? cpuMicros / Double(registered) : 0))
exit(completed && failures.isEmpty && registered == options.registrations ? 0 : 1)
