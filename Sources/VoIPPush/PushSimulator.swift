import ConversationKit
import Foundation
import Glibc
import ParleyIO
import Synchronization

/// The "Apple" side of the VoIP push world: a ``PushService`` on a TCP listener. Devices connect and register
/// their tokens, senders connect and send pushes, anyone asks for the status; the service's rules decide the
/// rest and this class carries out its effects on sockets.
///
/// Every connection has its own frame decoder and a bounded outgoing queue: a frame that is not valid JSON (or
/// an unknown type, or a bad member) gets an `error` reply and the connection carries on; an oversize length
/// gets an `error` and the connection is closed cleanly (the stream is out of step); a peer that does not read
/// is closed when its queue overflows. None of it touches other connections.
///
/// All work happens on one ParleyIO event loop (the one given, or the simulator's own); ``log`` lines are passed to
/// the handler from it, in order.
public final class PushSimulator: Sendable {
    /// The simulator's settings.
    public struct Configuration: Sendable {
        /// The rules (strikes, ack timeout, storage).
        public var service: PushService.Configuration
        /// The largest frame body accepted (64 KiB).
        public var maxFrameLength: Int
        /// Bytes that may wait to be written to one connection before it is closed as a slow consumer (256 KiB).
        public var maxQueuedBytes: Int
        /// How long a connection being closed after an error may take to read that error (1 s).
        public var lingerTime: TimeInterval
        /// The kernel send buffer for accepted connections; nil keeps the system's. Tests shrink it so that a
        /// peer that does not read fills the outgoing queue quickly.
        public var socketSendBufferSize: Int?

        /// Settings; the defaults are those documented on each member.
        public init(
            service: PushService.Configuration = PushService.Configuration(), maxFrameLength: Int = PushFraming.defaultMaximumLength,
            maxQueuedBytes: Int = 256 * 1024, lingerTime: TimeInterval = 1, socketSendBufferSize: Int? = nil
        ) {
            self.service = service
            self.maxFrameLength = maxFrameLength
            self.maxQueuedBytes = maxQueuedBytes
            self.lingerTime = lingerTime
            self.socketSendBufferSize = socketSendBufferSize
        }
    }

    /// Where the simulator listens (with the real port when port 0 was asked for).
    public let endpoint: PushEndpoint
    private let loop: EventLoop
    /// The loop was made for this simulator: stopping it shuts the loop down.
    private let ownsLoop: Bool
    private let core: LoopBound<SimulatorCore>
    /// The status when the simulator stopped (its loop may be gone since).
    private let finalReport = Mutex<PushStatusReport?>(nil)

    deinit {
        let core = core
        loop.execute { core.value.stop() }
        if ownsLoop { loop.shutdownWithoutWaiting() }
    }

    /// Listens on `endpoint` and starts serving at once, on `loop` (a loop of its own when nil). `clock` gives the
    /// service its time and runs its timers (tests may pass a `ManualClock`); `log` receives one line per event.
    public init(
        listeningOn endpoint: PushEndpoint, configuration: Configuration = Configuration(),
        clock: any ConversationClock = SystemClock(), loop: EventLoop? = nil, log: @escaping @Sendable (String) -> Void
    ) throws(PushSocketError) {
        let listening: (fd: Int32, bound: SocketAddress)
        do {
            listening = try Socket.listening(on: endpoint.socketAddress, backlog: 128)
        } catch {
            throw PushSocketError(error)
        }
        guard let bound = PushEndpoint(listening.bound) else { preconditionFailure("a bound IP address is an endpoint") }
        self.endpoint = bound
        ownsLoop = loop == nil
        let running: EventLoop
        if let loop {
            running = loop
        } else {
            do throws(IOError) {
                running = try EventLoop(name: "parley-push-sim")
            } catch {
                Glibc.close(listening.fd)
                throw PushSocketError(error)
            }
        }
        self.loop = running
        let started = LoopBound(
            SimulatorCore(configuration: configuration, clock: clock, loop: running, log: log), identity: running.identity)
        core = started
        let failure = running.executeAndWait { () -> IOError? in
            do throws(IOError) {
                try started.value.start(listening: listening.fd)
                return nil
            } catch {
                return error
            }
        } ?? IOError("event loop", code: ECANCELED)
        if let failure {
            Glibc.close(listening.fd)
            if ownsLoop { running.shutdown() }
            throw PushSocketError(failure)
        }
    }

    /// Stops listening and closes every connection; returns once every socket is closed. Idempotent. Must not be
    /// called from a log handler.
    public func stop() {
        let core = core
        if let report = loop.executeAndWait({ () -> PushStatusReport in
            core.value.stop()
            return core.value.service.statusReport
        }) {
            finalReport.withLock { $0 = report }
        }
        if ownsLoop { loop.shutdown() }
    }

    /// Closes the connection holding `token`, as a network drop would (the device client reconnects).
    public func disconnect(token: String) {
        let core = core
        _ = loop.executeAndWait { core.value.apply(core.value.service.disconnect(token: token)) }
    }

    /// The current status, as a `status` request would get it.
    public func statusReport() -> PushStatusReport {
        let core = core
        return loop.executeAndWait { core.value.service.statusReport } ?? finalReport.withLock { $0 } ?? PushStatusReport(devices: [], counters: PushCounters())
    }
}

/// The simulator's state on its loop: the service's rules, the connections' server, and the service's timers.
/// Loop-confined (reached through `LoopBound`).
final class SimulatorCore: StreamServerDelegate {
    typealias Codec = FrameDecoder

    var service: PushService
    private let configuration: PushSimulator.Configuration
    private let clock: any ConversationClock
    private let loop: EventLoop
    private let log: @Sendable (String) -> Void
    private var server: StreamServer<SimulatorCore>?
    /// The generation of each pending timer: a wake-up whose generation is not current is stale.
    private var timers: [PushTimer: UInt64] = [:]
    private var timerGeneration: UInt64 = 0
    private var pendingEffects: [PushService.Effect] = []
    private var applying = false
    private var stopped = false
    private let encoder: FrameEncoder

    init(
        configuration: PushSimulator.Configuration, clock: any ConversationClock, loop: EventLoop,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.configuration = configuration
        self.service = PushService(configuration: configuration.service)
        self.clock = clock
        self.loop = loop
        self.log = log
        self.encoder = FrameEncoder(maximumLength: max(configuration.maxFrameLength, PushFraming.defaultMaximumLength))
    }

    func start(listening fd: Int32) throws(IOError) {
        let channel = StreamChannelOptions(
            maxQueuedBytes: configuration.maxQueuedBytes,
            lingerTime: .seconds(atLeastAMillisecond: configuration.lingerTime))
        let limits = StreamServer<SimulatorCore>.Limits(
            maxClients: .max, helloTimeout: nil, channel: channel,
            socketSendBufferSize: configuration.socketSendBufferSize)
        let maxFrameLength = configuration.maxFrameLength
        server = try StreamServer(
            loop: loop, listening: fd, limits: limits, makeCodec: { FrameDecoder(maximumLength: maxFrameLength) },
            delegate: self)
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        server?.stop(reason: "the simulator is stopping")
        server = nil
        timers = [:]
        pendingEffects = []
    }

    // MARK: StreamServerDelegate

    func server(_ server: StreamServer<SimulatorCore>, accepted client: StreamClientID, from peer: SocketAddress?) {
        apply(service.connectionOpened(PushConnectionID(client), peer: peer?.description ?? "unknown peer"))
    }

    func server(_ server: StreamServer<SimulatorCore>, turnedAway client: StreamClientID) {
        server.close(client, reason: "turned away")  // never: the simulator has no cap
    }

    func server(_ server: StreamServer<SimulatorCore>, received frame: Data, from client: StreamClientID) {
        let id = PushConnectionID(client)
        do {
            let message = try PushCodec.decode(frame)
            apply(service.receive(message, from: id, now: clock.now()))
        } catch {
            apply(service.rejectFrame(from: id, fault: error, closing: false))
        }
    }

    func server(_ server: StreamServer<SimulatorCore>, failedToDecode failure: FrameError, from client: StreamClientID) {
        let fault = PushFault(code: .frameTooLarge, message: failure.description)
        apply(service.rejectFrame(from: PushConnectionID(client), fault: fault, closing: true))
    }

    func server(_ server: StreamServer<SimulatorCore>, helloTimedOut client: StreamClientID) {}

    func server(
        _ server: StreamServer<SimulatorCore>, closed client: StreamClientID, stage: StreamClientStage,
        reason: StreamCloseReason
    ) {
        apply(service.connectionClosed(PushConnectionID(client), reason: reason.description, now: clock.now()))
    }

    // MARK: Effects

    /// Carries out effects in order. Effects produced while doing so (a close reports the connection closed)
    /// are queued behind the rest rather than run in the middle.
    func apply(_ effects: [PushService.Effect]) {
        guard !stopped else { return }
        pendingEffects += effects
        guard !applying else { return }
        applying = true
        defer { applying = false }
        while !pendingEffects.isEmpty, !stopped {
            let effect = pendingEffects.removeFirst()
            switch effect {
            case .send(let message, let id):
                do {
                    server?.send(try encoder.frame(message), to: id.rawValue)
                } catch {
                    preconditionFailure("the simulator built a frame over its own limit: \(error)")
                }
            case .close(let id, let reason):
                server?.close(id.rawValue, reason: reason)
            case .startTimer(let timer, let date):
                timerGeneration += 1
                let generation = timerGeneration
                timers[timer] = generation
                let core = LoopWeak(self, identity: loop.identity)
                clock.wakeUp(at: date) { [loop] in
                    loop.execute { core.value?.timerDue(timer, generation: generation) }
                }
            case .cancelTimer(let timer):
                timers[timer] = nil
            case .log(let line):
                log(line)
            }
        }
    }

    private func timerDue(_ timer: PushTimer, generation: UInt64) {
        guard !stopped, timers[timer] == generation else { return }
        timers[timer] = nil
        apply(service.timerFired(timer, now: clock.now()))
    }
}
