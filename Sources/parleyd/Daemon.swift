import CallHistory
import ConversationKit
import Foundation
import ParleyEngine
import ParleyIO
import SIPTransport
import Synchronization

/// The running daemon: the event loop, its transports, the manager and the engine, the history, signal handling,
/// the optional call script and the `--exit-after` count.
final class Daemon: Sendable {
    let options: DaemonOptions
    let loop: EventLoop
    let environment: LoopEnvironment
    let manager: ConversationManager
    let log: EngineLog
    let history: SQLiteCallHistory?
    let contacts: ContactDirectory?
    private let state = Mutex(State())
    private let stopping = Atomic<Bool>(false)

    private struct State {
        var engine: ParleyEngine?
        var transport: SIPTransport?
        var ended = 0
        var scripted: Set<UUID> = []
        var push: PushWakeUp?
        var control: ControlEndpoint?
    }

    init(options: DaemonOptions) throws {
        self.options = options
        let level = options.logLevel
        log = EngineLog(level: level) { level, message in DaemonOutput.line(level, message) }
        let configuration = ConversationManager.Configuration()
        if let file = options.contactsFile {
            contacts = try ContactDirectory.load(
                contentsOf: URL(fileURLWithPath: file), normalizer: configuration.handleNormalizer)
        } else {
            contacts = nil
        }
        if options.recordsHistory {
            let directory = options.dataDirectory ?? Self.defaultDataDirectory()
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            history = try SQLiteCallHistory(
                path: (directory as NSString).appendingPathComponent("history.sqlite"),
                normalizer: configuration.handleNormalizer)
        } else {
            history = nil
        }
        manager = try ConversationManager(configuration: configuration)
        loop = try EventLoop(name: "parleyd-loop")
        environment = LoopEnvironment(loop: loop)
    }

    /// `$PARLEY_DATA_DIR`, else `$XDG_DATA_HOME/parley`, else `~/.local/share/parley` (as `parley history` reads).
    static func defaultDataDirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let dir = environment["PARLEY_DATA_DIR"], !dir.isEmpty { return dir }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg + "/parley" }
        return NSHomeDirectory() + "/.local/share/parley"
    }

    /// Listens, wires the engine, places the `--call` calls and installs the signal handlers (returned: the caller
    /// keeps them alive).
    func start() throws -> [DispatchSourceSignal] {
        let tls = TLSConfiguration(
            certificatePath: options.tlsCertificate, privateKeyPath: options.tlsKey, verifyPeer: options.tlsVerify,
            caFilePath: options.tlsCA)
        let engineBox = EngineBox()
        let transport = SIPTransport(loop: loop, tls: tls) { inbound in engineBox.engine?.receive(inbound) }
        environment.attach(transport)
        var bound: [ListenAddress] = []
        for address in options.listen {
            bound.append(try transport.listenSync(address))
        }
        let configuration = EngineConfiguration(
            userName: options.userName,
            displayName: options.displayName ?? (options.userName == "parley" ? "Parley" : options.userName.capitalized),
            listenAddresses: bound, declineStatus: options.declineStatus,
            ringTimeout: options.ringTimeout, autoAnswerDelay: options.autoAnswer, phoneDomain: options.phoneDomain,
            product: "Parley/\(DaemonVersion.current)", registration: options.registration,
            pushInviteWait: options.pushInviteWait)
        let problems = configuration.problems
        guard problems.isEmpty else { throw DaemonError(problems.joined(separator: "; ")) }
        let recorder = history.map {
            HistoryRecorder(store: $0, configuration: manager.configuration, contacts: contacts)
        }
        let engine = ParleyEngine(
            configuration: configuration, manager: manager, environment: environment, history: recorder, log: log)
        engineBox.set(engine)
        loop.execute {
            transport.onSendFailure = { destination, error in
                engineBox.engine?.transportFailed(towards: destination, reason: "\(error)")
            }
        }
        state.withLock {
            $0.engine = engine
            $0.transport = transport
        }
        engine.observeTransitions { [weak self] transition in self?.observe(transition) }
        let signalSources = installSignalHandlers()
        if options.control {
            let directory = options.dataDirectory ?? Self.defaultDataDirectory()
            let control = try ControlEndpoint(
                directory: directory, engine: engine, history: history, contacts: contacts,
                webSocket: options.webSocket.map { ($0.host, $0.port, options.allowedOrigins) }, log: log,
                status: { [options, bound] in
                    [
                        "version": DaemonVersion.current, "listening": bound.map(\.description),
                        "user": options.userName, "pushToken": options.pushService == nil ? NSNull() : (options.pushToken ?? "parleyd-\(options.userName)") as Any,
                    ]
                })
            state.withLock { $0.control = control }
        }
        // Only now, with everything that can fail at start-up in place, does the engine register anywhere.
        engine.start()
        // "listening on" means ready: transports, control socket and token are all in place.
        log.info("parleyd \(DaemonVersion.current) listening on " + bound.map(\.description).joined(separator: " ")
            + (history.map { " history \($0.path)" } ?? " (no history)"))
        if let endpoint = options.pushService {
            let push = PushWakeUp(
                endpoint: endpoint, token: options.pushToken ?? "parleyd-\(options.userName)", engine: engine, log: log)
            state.withLock { $0.push = push }
            push.start()
        }
        for target in options.calls {
            let handle = Handle(kind: .generic, value: target, displayName: target)
            let uuid = RandomUUID.make()
            if let callID = options.callID { engine.assignCallID(callID, toOutgoing: uuid) }
            do {
                try manager.perform([.start(conversationUUID: uuid, handles: [handle])])
            } catch {
                log.error("cannot call \(target): \(error)")
            }
        }
        return signalSources
    }

    private func observe(_ transition: ConversationTransition) {
        let conversation = transition.conversation
        if conversation.state == .joined, let script = options.script {
            let first = state.withLock { $0.scripted.insert(conversation.uuid).inserted }
            if first { ScriptRunner(manager: manager, loop: loop, log: log).run(script, on: conversation.uuid) }
        }
        if conversation.state == .left { state.withLock { _ = $0.scripted.remove(conversation.uuid) } }
        guard conversation.state == .left, let limit = options.exitAfter else { return }
        let ended = state.withLock { state -> Int in
            state.ended += 1
            return state.ended
        }
        if ended == limit {
            log.info("\(limit) conversation(s) ended; exiting")
            DispatchQueue.global().async { self.stop(exitCode: 0) }
        }
    }

    private func installSignalHandlers() -> [DispatchSourceSignal] {
        var sources: [DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [weak self] in
                self?.log.info("signal \(number == SIGINT ? "SIGINT" : "SIGTERM"): ending calls and stopping")
                self?.stop(exitCode: 0)
            }
            source.resume()
            sources.append(source)
        }
        return sources
    }

    /// Ends every call (BYE to connected ones), flushes the history, stops the loop and exits.
    func stop(exitCode: Int32) -> Never {
        if stopping.exchange(true, ordering: .acquiringAndReleasing) {
            // Asked again while stopping (a second Ctrl-C): leave at once.
            _exit(1)
        }
        let (engine, push, control) = state.withLock { ($0.engine, $0.push, $0.control) }
        push?.stop()
        control?.stop()
        engine?.shutdown(grace: .seconds(2))
        loop.shutdown()
        exit(exitCode)
    }
}

/// The engine, set once after the transport (whose handler needs it) exists.
private final class EngineBox: Sendable {
    private let value = Mutex<ParleyEngine?>(nil)
    var engine: ParleyEngine? { value.withLock { $0 } }
    func set(_ engine: ParleyEngine) { value.withLock { $0 = engine } }
}

/// A start-up failure with its reason.
struct DaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
