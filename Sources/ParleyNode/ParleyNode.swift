import CallHistory
import ControlChannel
import ControlProtocol
import ConversationKit
import Dispatch
import Foundation
import Media
import ParleyControl
import ParleyDBus
import DNSResolver
import ParleyEngine
import ParleyIO
import PostgresHistory
import SIPTransport
import Synchronization
import SystemdSupport
import VoIPPush

/// Why a node could not start.
public struct NodeError: Error, CustomStringConvertible {
    /// For people.
    public let description: String

    init(_ description: String) { self.description = description }
}

/// One Parley endpoint, built from one ``NodeConfiguration``: its event loops (one for SIP, its timers and the push
/// channel — the engine's thread; one for the control API, whose requests may wait on the history database and must
/// not hold up SIP), the SIP transports, the conversation manager and the engine, the call history, the control
/// endpoints and the push device client, wired once here. `parleyd` is options → configuration → `ParleyNode` → ``run()``; tests and
/// benchmarks build nodes the same way.
///
/// Start-up order: everything that can fail (contacts, history, listeners, control socket and token) is in place
/// before ``start()`` registers anywhere or takes a push, so a node that failed to start has told no one it exists.
public final class ParleyNode: Sendable {
    /// What the node was built from.
    public let configuration: NodeConfiguration
    /// The engine's loop: SIP, its timers and the push channel.
    public let loop: EventLoop
    /// The control API's loop (nil without a control endpoint).
    private let controlLoop: EventLoop?
    /// The conversations.
    public let manager: ConversationManager
    /// The SIP engine.
    public let engine: ParleyEngine
    /// The call history, when kept: the SQLite file, or a shared PostgreSQL database.
    public let history: (any CallHistoryStore)?
    /// Hears the shared database's changes made by other instances (PostgreSQL only).
    private let historyListener: PostgresHistoryListener?
    /// The contacts that name people (reloaded on SIGHUP and by the `reloadContacts` method).
    public let contacts: ContactBook
    /// The addresses listened on, with the ports actually bound.
    public let listenAddresses: [ListenAddress]
    /// The WebSocket port actually bound, when the control API is served over WebSocket.
    public var webSocketPort: UInt16? { control?.webSocketPort }
    private let transport: SIPTransport
    private let control: ControlEndpoint?
    private let push: PushWakeUp?
    /// The session D-Bus service (nil: off, or no session bus).
    private let dbus: ParleyDBusService?
    /// logind and the kernel's routes, watched for the calls and registrations.
    private let machine: MachineWatch
    private let stopping = Atomic<Bool>(false)
    /// The signal sources, kept alive while the node serves.
    private let signalSources = SignalSources()

    /// Builds the node: loads contacts, opens the history, binds every listener, opens the control endpoints.
    /// Nothing is announced to anyone until ``start()``.
    public init(configuration: NodeConfiguration) throws {
        self.configuration = configuration
        let log = configuration.log
        let normalizer = configuration.manager.handleNormalizer
        let load = configuration.contactsFile.map { path in
            { @Sendable () throws -> ContactDirectory in
                try ContactDirectory.load(contentsOf: URL(fileURLWithPath: path), normalizer: normalizer)
            }
        }
        let contacts = ContactBook(try load?(), source: load)
        self.contacts = contacts
        let history = try Self.openHistory(configuration)
        self.history = history
        let journal = try Self.openJournal(configuration, history)
        let manager = try ConversationManager(configuration: configuration.manager)
        self.manager = manager
        let loop = try EventLoop(name: "parley-node")
        self.loop = loop
        let environment = LoopEnvironment(loop: loop)
        let engineBox = EngineBox(loop: loop)
        let transport = SIPTransport(
            loop: loop, tls: configuration.tls, limits: configuration.transportLimits,
            sendsDatagramsOnThread: configuration.sendsOnThread
        ) { inbound in
            engineBox.engine?.receive(inbound)
        }
        self.transport = transport
        environment.attach(transport)
        do {
            let bound = try configuration.listen.map { try transport.listenSync($0) }
            listenAddresses = bound
            var engineConfiguration = configuration.engineConfiguration(listeningOn: bound)
            engineConfiguration.maxRingingPerSource = configuration.maxRingingPerSource
            engineConfiguration.maxRequestsPerSource = configuration.maxRequestsPerSource
            engineConfiguration.groupMessagesPerSecond = configuration.groupMessagesPerSecond
            engineConfiguration.sourceBan = configuration.sourceBan
            engineConfiguration.exemptSources = configuration.exemptSources
            if !configuration.overloadControl { engineConfiguration.overload = nil }
            engineConfiguration.parsesOnThread = configuration.parsesOnThread
            engineConfiguration.recordsBlockedCalls = configuration.recordsBlockedCalls
            switch configuration.acceptRefer {
            case .always: engineConfiguration.transferrers = .anyone
            case .contacts: engineConfiguration.transferrers = .contacts(contacts)
            case .never: engineConfiguration.transferrers = nil
            }
            engineConfiguration.forwarding = configuration.forwarding
            if configuration.keepsIdentity {
                if let tightened = try configuration.dataDirectory.create() { log.info(tightened) }
                let store = IdentityStore(dataDirectory: configuration.dataDirectory)
                let (key, created) = try store.loadOrCreateKey()
                if created { log.info("made this device's collaboration key in \(store.keyPath)") }
                engineConfiguration.deviceKey = key
                engineConfiguration.otherDevices = try store.otherDevices()
            }
            switch configuration.acceptFrom {
            case .anyone: engineConfiguration.callers = .anyone
            case .contacts: engineConfiguration.callers = .contacts(contacts)
            case .only(let handles): engineConfiguration.callers = .only(handles, configuration.manager.handleNormalizer)
            }
            guard engineConfiguration.problems.isEmpty else {
                throw NodeError(engineConfiguration.problems.joined(separator: "; "))
            }
            let recorder = history.map { HistoryRecorder(store: $0, configuration: configuration.manager, contacts: contacts) }
            var audio: CallAudio?
            var handler: CallMediaHandler?
            if configuration.externalMedia {
                guard configuration.media == nil else { throw NodeError("external media excludes parleyd's own audio") }
                handler = ExternalMedia()
                // What a call offers when the frontend named no endpoint: the discard port.
                engineConfiguration.mediaPort = 9
                log.info("audio: carried by the frontend (the endpoints it names in join and start)")
            } else if let media = configuration.media {
                audio = try CallAudio(
                    media, host: engineConfiguration.listenAddresses[0].host, certificate: try Self.dtlsCertificate(configuration, log: log),
                    loop: loop, log: log)
                handler = audio
                // What a call offers when no RTP port is free: the discard port, outside any range of the pool.
                engineConfiguration.mediaPort = 9
                let headless = MediaConfiguration.hasSoundServer ? "" : " (no sound server here)"
                log.info(
                    "audio: \(media.source) → \(media.sink)\(headless)\(Self.deviceSummary(media)), RTP ports \(media.ports.lowerBound)–\(media.ports.upperBound)")
                for line in media.iceSummary { log.info(line) }
            }
            let locator = DNSServerLocator(loop: loop, servers: configuration.dnsServers)
            let engine = ParleyEngine(
                configuration: engineConfiguration, manager: manager, environment: environment, history: recorder,
                journal: journal, media: handler, locator: locator, log: log)
            self.engine = engine
            engineBox.set(engine, on: loop)
            if let media = configuration.media, media.rings, let ringer = DesktopRinger(media.ringtone, device: media.device, log: log) {
                engine.setRinger(ringer)
            }
            audio?.onTonesReceived = { [weak engine] conversation, digit in
                engine?.receivedTonesInStream(String(digit), for: conversation)
            }
            audio?.onStatistics = { [weak engine] conversation, quality in
                engine?.receivedStatistics(quality, for: conversation)
            }
            audio?.levels = (
                wanted: { [weak engine] in engine?.wantsAudioLevels ?? false },
                reported: { [weak engine] conversation, heard, said in
                    engine?.receivedAudioLevels(heard: heard, said: said, for: conversation)
                })
            audio?.onSecurityFailure = { [weak engine] conversation, why in engine?.mediaSecurityFailed(why, for: conversation) }
            audio?.onICEFailure = { [weak engine] conversation, why in engine?.iceFailed(why, for: conversation) }
            audio?.onICERestart = { [weak engine] conversation, why in engine?.iceRestarted(why, for: conversation) }
            if let audio {
                // Merged calls' audio: the bridge follows each conversation's group and state.
                let feed = AudioFeed(audio)
                engine.observeEvents { [loop] event in
                    guard case .conversationChanged(let transition) = event else { return }
                    loop.execute { feed.audio?.conversationChanged(transition.conversation) }
                }
            }
            audio?.onICEPair = { [weak engine] conversation, pair, state in
                engine?.icePathChanged(
                    ICEPath(
                        state: state.rawValue, localType: pair?.localType.rawValue, local: pair?.local,
                        remoteType: pair?.remoteType.rawValue, remote: pair?.remote),
                    for: conversation)
            }
            loop.execute {
                transport.onSendFailure = { destination, error in
                    engineBox.engine?.transportFailed(towards: destination, reason: "\(error)")
                }
            }
            if configuration.control {
                let controlLoop = try EventLoop(name: "parley-control")
                self.controlLoop = controlLoop
                do {
                    control = try Self.controlEndpoint(configuration, engine, history, contacts, bound, controlLoop)
                } catch ControlServerError.alreadyInUse(let path) where configuration.controlIsOptional {
                    log.info("control socket \(path) is served by another parleyd: this scripted run has no control API")
                    control = nil
                } catch {
                    controlLoop.shutdown()
                    throw error
                }
            } else {
                Self.closePassedSockets(configuration)
                controlLoop = nil
                control = nil
            }
            push = configuration.pushService.map { endpoint in
                PushWakeUp(endpoint: endpoint, token: configuration.effectivePushToken, engine: engine, loop: loop, log: log)
            }
            historyListener = try Self.listenForOtherInstances(history, control?.service, log: log)
            if let audio { Self.carryBrowserAudio(audio, for: control?.service, engine: engine, loop: loop) }
            dbus = Self.dbusService(configuration, engine, history, contacts, on: controlLoop ?? loop)
            machine = MachineWatch(configuration, engine: engine, loop: loop, busLoop: controlLoop ?? loop)
        } catch {
            loop.shutdown()
            throw error
        }
    }

    /// What the log says of device audio: PulseAudio's phone role or GStreamer's automatic choice, and echo
    /// cancellation.
    private static func deviceSummary(_ media: MediaConfiguration) -> String {
        let usesDevice = if case .device = media.source { true } else if case .device = media.sink { true } else { false }
        guard usesDevice else { return "" }
        return media.device.pulse
            ? " (PulseAudio streams with the phone role, echo cancellation \(media.device.echoCancellation))"
            : " (autoaudio: no PulseAudio server here, echo cancellation \(media.device.echoCancellation))"
    }

    /// The node's DTLS-SRTP certificate: kept in the data directory when the node keeps its identity (parleyd),
    /// else made for this run; nil when this GStreamer has no DTLS elements (calls then answer DTLS offers with 488).
    private static func dtlsCertificate(_ configuration: NodeConfiguration, log: EngineLog) throws -> DTLSCertificate? {
        guard MediaSupport.dtlsProblem == nil else { return nil }
        guard configuration.keepsIdentity else { return try DTLSCertificate.generate() }
        if let tightened = try configuration.dataDirectory.create() { log.info(tightened) }
        let (certificate, note) = try DTLSCertificateStore(dataDirectory: configuration.dataDirectory).loadOrCreate()
        if let note { log.info(note) }
        return certificate
    }

    private static func controlEndpoint(
        _ configuration: NodeConfiguration, _ engine: ParleyEngine, _ history: (any CallHistoryStore)?,
        _ contacts: ContactBook, _ bound: [ListenAddress], _ loop: EventLoop
    ) throws -> ControlEndpoint {
        let pushToken: String? = configuration.pushService == nil ? nil : configuration.effectivePushToken
        // Who we are, as others dial us: the default account's address of record, else our SIP URI on the first
        // listener.
        let host = bound.first.map { $0.host.contains(":") ? "[\($0.host)]:\($0.port)" : "\($0.host):\($0.port)" }
        let user = (configuration.accounts.first?.registration ?? configuration.registration)?.addressOfRecord.description
            ?? host.map { "sip:\(configuration.userName)@\($0)" }
        let facts = DaemonFacts(
            version: configuration.version, user: user, listening: bound.map(\.description), pushToken: pushToken)
        if let tightened = try configuration.dataDirectory.create() { configuration.log.info(tightened) }
        let passed = try Self.passedControlSocket(configuration)
        let directory = passed.map { ControlDirectory(path: ($0.path as NSString).deletingLastPathComponent, source: "the passed socket") }
            ?? configuration.dataDirectory.control
        if directory.path != configuration.dataDirectory.path, let tightened = try directory.create() {
            configuration.log.info(tightened)
        }
        return try ControlEndpoint(
            directory: directory.path, passedSocket: passed, engine: engine, history: history, contacts: contacts,
            webSocket: configuration.webSocket.map { ($0.host, $0.port, $0.allowedOrigins, $0.site, $0.tls) },
            limits: configuration.controlLimits, loop: loop, log: configuration.log, facts: { facts })
    }

    /// Reads the contacts file again (as SIGHUP does); live conversations are renamed in their events.
    public func reloadContacts() throws(ControlError) -> ReloadContactsResult {
        guard let control else { throw ControlError(.unavailable, "This node has no control API.") }
        return try control.service.reloadContacts()
    }

    /// Where the push client is (nil without a push service).
    public var pushState: PushDeviceClient.State? { push?.state }

    /// Calls `observer` with every state the push client enters (on the node's loop); nothing without a push service.
    public func observePushState(_ observer: @escaping @Sendable (PushDeviceClient.State) -> Void) {
        push?.observe(observer)
    }

    /// Starts what the node does on its own: registering (when configured) and taking pushes. Logs
    /// "parleyd VERSION listening on …" once everything is ready — with `stoppingOnSignals`, only after SIGINT and
    /// SIGTERM stop the node cleanly (BYEs, un-REGISTER, the history flushed; a second signal exits at once), so
    /// that whoever waits for that line may signal at once.
    public func start(stoppingOnSignals: Bool = false) {
        if stoppingOnSignals { installSignalHandlers() }
        if configuration.doNotDisturb { engine.setDoNotDisturb(true) }
        if !configuration.forwarding.isOff { configuration.log.info(configuration.forwarding.description) }
        engine.start()
        let listening = "listening on " + listenAddresses.map(\.description).joined(separator: " ")
        configuration.log.info(
            "parleyd \(configuration.version) \(listening)" + (history.map { " history \(Self.describe($0))" } ?? " (no history)"))
        announceReadiness(listening)
        push?.start()
        machine.start()
    }

    /// Stops the node: the push client and the control endpoints close, every call ends (BYE, CANCEL or a
    /// refusal) through the manager, the registration is removed, the history is flushed and the loop stops.
    /// Idempotent: returns false when another stop is already under way.
    @discardableResult
    public func stop(grace: Duration = .seconds(2)) -> Bool {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return false }
        ServiceManager.stopping()
        push?.stop()
        historyListener?.stop()
        dbus?.stop()
        machine.stop()
        control?.stop()
        controlLoop?.shutdown()
        engine.shutdown(grace: grace)
        loop.shutdown()
        // The calls' pipelines stop on their own queues: recordings complete before the process goes.
        if configuration.media != nil, !MediaSession.waitForAll(timeout: .seconds(3)) {
            configuration.log.error("audio: a media pipeline did not stop within 3 s")
        }
        return true
    }

    /// Serves until the node is stopped (by a signal, when started with `stoppingOnSignals`), then exits. Never
    /// returns.
    public func run() -> Never {
        dispatchMain()
    }

    private func installSignalHandlers() {
        let sources = [SIGINT, SIGTERM].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                configuration.log.info("signal \(number == SIGINT ? "SIGINT" : "SIGTERM"): ending calls and stopping")
                exit(afterStopping: 0)
            }
            source.resume()
            return source
        }
        signal(SIGHUP, SIG_IGN)
        let hangUp = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        hangUp.setEventHandler { [self] in
            do {
                let result = try reloadContacts()
                configuration.log.info("signal SIGHUP: \(result.contacts) contacts loaded again")
            } catch {
                configuration.log.error("signal SIGHUP: contacts not reloaded: \(error)")
            }
        }
        hangUp.resume()
        signalSources.keep(sources + [hangUp])
    }

    /// Stops the node and exits with `code`; asked again while stopping (a second Ctrl-C), leaves at once.
    public func exit(afterStopping code: Int32) -> Never {
        guard stop() else { _exit(1) }
        Foundation.exit(code)
    }
}

/// Holds the signal sources so that they live as long as the node.
// @unchecked Sendable: `sources` is written once, by `keep` from `start` before any of these signals can be
// handled, and never read again: the box only keeps the sources (which deliver on their own queue) alive.
private final class SignalSources: @unchecked Sendable {
    private var sources: [any DispatchSourceSignal] = []
    func keep(_ new: [any DispatchSourceSignal]) { sources = new }
}

/// The engine, set once after the transport (whose handlers need it) exists. Set and read on the loop thread only
/// (the transport's handlers run there), so reading it for every inbound message takes no lock: a Mutex's cmpxchg
/// was 0.7 % of the loop's samples, and an `AtomicLazyReference`'s unspecialised load looked up generic metadata.
// @unchecked Sendable: `audio` is set once, before the engine can report a transition, and read only on the node's
// loop (the transition observer hops there first), where CallAudio lives.
private final class AudioFeed: @unchecked Sendable {
    weak var audio: CallAudio?
    init(_ audio: CallAudio) { self.audio = audio }
}

// @unchecked Sendable: `stored` is written by `set`, which hops onto the loop, and read through `engine`, which traps
// off the loop thread.
private final class EngineBox: @unchecked Sendable {
    private var stored: ParleyEngine?
    private let loopThread: LoopThreadIdentity

    init(loop: EventLoop) { loopThread = loop.identity }

    /// The engine, once set (loop thread only).
    var engine: ParleyEngine? {
        precondition(loopThread.isCurrent, "the engine box is read on its loop")
        return stored
    }

    /// Sets the engine on the loop thread, after what the loop runs now.
    func set(_ engine: ParleyEngine, on loop: EventLoop) {
        loop.execute { [self] in
            precondition(stored == nil, "the engine is set once")
            stored = engine
        }
    }
}
