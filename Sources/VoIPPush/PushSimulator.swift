import ConversationKit
import Dispatch
import Foundation
import Glibc

/// The "Apple" side of the VoIP push world: a ``PushService`` on a TCP listener. Devices connect and register
/// their tokens, senders connect and send pushes, anyone asks for the status; the service's rules decide the
/// rest and this class carries out its effects on sockets.
///
/// Every connection has its own frame decoder and a bounded outgoing queue: a frame that is not valid JSON (or
/// an unknown type, or a bad member) gets an `error` reply and the connection carries on; an oversize length
/// gets an `error` and the connection is closed cleanly (the stream is out of step); a peer that does not read
/// is closed when its queue overflows. None of it touches other connections.
///
/// All work happens on one private serial queue; ``log`` lines are passed to the handler from it, in order.
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
    private let core: SimulatorCore

    deinit {
        let core = core
        core.queue.async { core.stop() }
    }

    /// Listens on `endpoint` and starts serving at once. `clock` gives the service its time and runs its timers
    /// (tests may pass a `ManualClock`); `log` receives one line per event.
    public init(
        listeningOn endpoint: PushEndpoint, configuration: Configuration = Configuration(),
        clock: any ConversationClock = SystemClock(), log: @escaping @Sendable (String) -> Void
    ) throws(PushSocketError) {
        let (fd, bound) = try Sockets.listen(on: endpoint)
        self.endpoint = bound
        core = SimulatorCore(configuration: configuration, clock: clock, log: log)
        core.queue.sync { core.start(listener: fd) }
    }

    /// Stops listening and closes every connection; returns once every socket is closed (or after 2 s).
    /// Idempotent. Must not be called from a log handler.
    public func stop() {
        core.queue.sync { core.stop() }
        _ = core.socketsClosed.wait(timeout: .now() + 2)
    }

    /// Closes the connection holding `token`, as a network drop would (the device client reconnects).
    public func disconnect(token: String) {
        core.queue.sync { core.apply(core.service.disconnect(token: token)) }
    }

    /// The current status, as a `status` request would get it.
    public func statusReport() -> PushStatusReport {
        core.queue.sync { core.service.statusReport }
    }
}

/// The simulator's state, confined to its queue.
// @unchecked Sendable: every mutable member is touched only on `queue`. The public entry points reach it through
// `queue.sync`; the listener's and channels' Dispatch handlers are installed on `queue`; timer wake-ups from the clock
// (any thread) hop onto `queue` with `queue.async` before touching anything. `socketsClosed` is a DispatchGroup,
// itself thread-safe.
final class SimulatorCore: @unchecked Sendable {
    let queue = DispatchQueue(label: "parley.push-simulator")
    let socketsClosed = DispatchGroup()
    var service: PushService
    private let configuration: PushSimulator.Configuration
    private let clock: any ConversationClock
    private let log: @Sendable (String) -> Void
    private var listener: (any DispatchSourceRead)?
    /// Whether `listener` is suspended (accepting paused after an accept error).
    private var listenerSuspended = false
    private var connections: [PushConnectionID: FramedChannel] = [:]
    /// Connections closed but still flushing their last frames; `stop` cuts them short.
    private var lingering: [PushConnectionID: FramedChannel] = [:]
    private var nextConnection: UInt64 = 1
    /// The generation of each pending timer: a wake-up whose generation is not current is stale.
    private var timers: [PushTimer: UInt64] = [:]
    private var timerGeneration: UInt64 = 0
    private var pendingEffects: [PushService.Effect] = []
    private var applying = false
    private var stopped = false
    private let encoder: FrameEncoder

    init(configuration: PushSimulator.Configuration, clock: any ConversationClock, log: @escaping @Sendable (String) -> Void) {
        self.configuration = configuration
        self.service = PushService(configuration: configuration.service)
        self.clock = clock
        self.log = log
        self.encoder = FrameEncoder(maximumLength: max(configuration.maxFrameLength, PushFraming.defaultMaximumLength))
    }

    func start(listener fd: Int32) {
        socketsClosed.enter()
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in acceptConnections(fd) }
        source.setCancelHandler { [self] in
            close(fd)
            socketsClosed.leave()
        }
        listener = source
        source.resume()
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        listener?.cancel()
        if listenerSuspended {
            listener?.resume()  // a suspended source never runs its cancel handler (and must not be released so)
            listenerSuspended = false
        }
        listener = nil
        let open = Array(connections.values) + Array(lingering.values)
        connections = [:]
        lingering = [:]
        for channel in open { channel.abort(reason: "the simulator is stopping") }
        timers = [:]
        pendingEffects = []
    }

    // MARK: Connections

    private func acceptConnections(_ listener: Int32) {
        for _ in 0..<64 {
            switch Sockets.accept(listener) {
            case .none: return
            case .failed(let error):
                log("accept failed: \(error)")
                // Out of descriptors, say: pause accepting instead of spinning on a readable listener.
                guard !listenerSuspended else { return }
                self.listener?.suspend()
                listenerSuspended = true
                queue.asyncAfter(deadline: .now() + 0.1) { [self] in
                    guard !stopped, listenerSuspended else { return }
                    self.listener?.resume()
                    listenerSuspended = false
                }
                return
            case .connection(let fd, let peer):
                open(fd, peer: peer)
            }
        }
    }

    private func open(_ fd: Int32, peer: String) {
        if let size = configuration.socketSendBufferSize { Sockets.setSendBuffer(fd, bytes: size) }
        let id = PushConnectionID(nextConnection)
        nextConnection += 1
        let limits = FramedChannel.Limits(
            maxFrameLength: configuration.maxFrameLength, maxQueuedBytes: configuration.maxQueuedBytes,
            lingerTime: configuration.lingerTime)
        let channel = FramedChannel(fd: fd, queue: queue, limits: limits, closedGroup: socketsClosed)
        connections[id] = channel
        channel.start(FramedChannel.Handlers(
            onFrame: { [weak self] body in self?.received(body, from: id) },
            onFrameError: { [weak self] error in
                guard let self else { return }
                let fault = PushFault(code: .frameTooLarge, message: error.description)
                apply(service.rejectFrame(from: id, fault: fault, closing: true))
            },
            onClose: { [weak self] reason in
                guard let self else { return }
                if let channel = connections.removeValue(forKey: id), !channel.isFinished { lingering[id] = channel }
                lingering = lingering.filter { !$0.value.isFinished }
                apply(service.connectionClosed(id, reason: reason, now: clock.now()))
            }))
        apply(service.connectionOpened(id, peer: peer))
    }

    private func received(_ body: Data, from id: PushConnectionID) {
        do {
            let message = try PushCodec.decode(body)
            apply(service.receive(message, from: id, now: clock.now()))
        } catch {
            apply(service.rejectFrame(from: id, fault: error, closing: false))
        }
    }

    // MARK: Effects

    /// Carries out effects in order. Effects produced while doing so (a close reports the connection closed)
    /// are queued behind the rest rather than run in the middle.
    func apply(_ effects: [PushService.Effect]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped else { return }
        pendingEffects += effects
        guard !applying else { return }
        applying = true
        defer { applying = false }
        while !pendingEffects.isEmpty, !stopped {
            let effect = pendingEffects.removeFirst()
            switch effect {
            case .send(let message, let id):
                guard let channel = connections[id] else { continue }
                do {
                    channel.send(try encoder.frame(message))
                } catch {
                    preconditionFailure("the simulator built a frame over its own limit: \(error)")
                }
            case .close(let id, let reason):
                connections[id]?.close(flushing: true, reason: reason)
            case .startTimer(let timer, let date):
                timerGeneration += 1
                let generation = timerGeneration
                timers[timer] = generation
                clock.wakeUp(at: date) { [weak self] in
                    guard let self else { return }
                    queue.async { self.timerDue(timer, generation: generation) }
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
