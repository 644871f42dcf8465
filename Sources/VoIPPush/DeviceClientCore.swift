import Dispatch
import Foundation
import Glibc
import Synchronization

/// The device client's machinery, confined to its queue.
///
/// ```
///  idle ─start─► connecting ─connected─► registering ─registered─► registered
///                  │  ▲                      │                        │
///     fail/timeout │  │ back-off             │ drop                   │ drop
///                  ▼  │                      ▼                        ▼
///               waitingToReconnect ◄─────────┴────────────────────────┘
///  any ─stop─► stopped
/// ```
// @unchecked Sendable: every mutable member other than `published` (a Mutex) is touched only on `queue`: the public
// entry points dispatch onto it (`stop` checks the queue-specific key and runs inline only when already on it),
// and the channel's, connect source's and timers' handlers are all submitted to that serial queue.
final class DeviceClientCore: @unchecked Sendable {
    /// How a pending connect ended, read by its source's cancel handler.
    private enum ConnectEnd {
        /// Still waiting for the socket to become writable.
        case pending
        /// Writable: the connect finished, well or badly (`SO_ERROR` says which).
        case ready
        /// The connect timeout passed first.
        case timedOut
        /// The client was stopped meanwhile.
        case abandoned
    }

    private enum Phase {
        /// Not started.
        case idle
        /// A non-blocking connect is under way on `fd`, watched by `source`.
        case connecting(fd: Int32, source: any DispatchSourceWrite)
        /// Connected (registering or registered).
        case connected(FramedChannel)
        /// Between attempts: a reconnect is scheduled.
        case waiting
        /// Stopped for good.
        case stopped
    }

    let queue: DispatchQueue
    let queueKey = DispatchSpecificKey<UInt64>()
    let queueIdentity = UInt64.random(in: 1...UInt64.max)
    /// The state as readers on any thread see it.
    let published = Mutex<PushDeviceClient.State>(.idle)
    private let configuration: PushDeviceClient.Configuration
    private let handler: @Sendable (PushDelivery) -> PushAck
    private let onEvent: (@Sendable (PushDeviceClient.Event) -> Void)?
    private var phase = Phase.idle
    private var state = PushDeviceClient.State.idle
    /// Failed attempts since the last registration.
    private var failures = 0
    /// Bumped whenever a pending timer (connect timeout, reconnect) must be ignored.
    private var generation: UInt64 = 0
    private var connectEnd = ConnectEnd.pending
    /// The handler is running; a ``stop()`` it calls waits until its ack is sent.
    private var handlingPush = false
    private var stopAfterPush = false
    private let encoder = FrameEncoder()
    /// An ack's reason is cut to this many bytes so that the ack always fits in a frame.
    static let maxReasonBytes = 4096

    init(
        configuration: PushDeviceClient.Configuration, queue: DispatchQueue,
        handler: @escaping @Sendable (PushDelivery) -> PushAck, onEvent: (@Sendable (PushDeviceClient.Event) -> Void)?
    ) {
        self.configuration = configuration
        self.queue = queue
        self.handler = handler
        self.onEvent = onEvent
        queue.setSpecific(key: queueKey, value: queueIdentity)
    }

    func start() {
        guard case .idle = phase else { return }
        connect()
    }

    func stop() {
        if handlingPush {
            stopAfterPush = true
            return
        }
        generation += 1
        let previous = phase
        phase = .stopped
        switch previous {
        case .idle, .waiting: break
        case .connecting(_, let source):
            connectEnd = .abandoned
            source.cancel()
        case .connected(let channel):
            channel.close(flushing: true, reason: "stopped")
        case .stopped: return
        }
        setState(.stopped)
    }

    // MARK: Connecting

    private func connect() {
        setState(.connecting(attempt: failures + 1))
        let started: (fd: Int32, connected: Bool)
        do {
            started = try Sockets.startConnect(to: configuration.endpoint)
        } catch {
            retry(after: error.description)
            return
        }
        guard !started.connected else {
            connected(started.fd)
            return
        }
        let fd = started.fd
        let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        connectEnd = .pending
        source.setEventHandler { [self] in
            connectEnd = .ready
            source.cancel()
        }
        source.setCancelHandler { [self] in connectSourceCancelled(fd) }
        phase = .connecting(fd: fd, source: source)
        generation += 1
        let attempt = generation
        queue.asyncAfter(deadline: .now() + configuration.connectTimeout) { [self] in
            guard attempt == generation, case .connecting(_, let source) = phase else { return }
            connectEnd = .timedOut
            source.cancel()
        }
        source.resume()
    }

    /// The connect source is done with `fd`: use it or close it.
    private func connectSourceCancelled(_ fd: Int32) {
        switch connectEnd {
        case .ready:
            let code = Sockets.pendingError(fd)
            guard code == 0 else {
                close(fd)
                retry(after: PushSocketError("connect \(configuration.endpoint)", code: code).description)
                return
            }
            connected(fd)
        case .timedOut:
            close(fd)
            retry(after: "connect \(configuration.endpoint): timed out after \(configuration.connectTimeout) s")
        case .abandoned, .pending:
            close(fd)
        }
    }

    private func connected(_ fd: Int32) {
        let limits = FramedChannel.Limits(maxQueuedBytes: configuration.maxQueuedBytes)
        let channel = FramedChannel(fd: fd, queue: queue, limits: limits)
        phase = .connected(channel)
        channel.start(FramedChannel.Handlers(
            onFrame: { [weak self] body in self?.received(body) },
            onFrameError: { _ in },  // the channel closes itself; onClose retries
            onClose: { [weak self] reason in self?.dropped(reason) }))
        setState(.registering)
        send(.register(token: configuration.token), on: channel)
    }

    /// Waits, then connects again.
    private func retry(after problem: String) {
        failures += 1
        let delay = configuration.backoff.delay(afterFailures: failures)
        phase = .waiting
        setState(.waitingToReconnect(delay: delay, failures: failures, lastError: problem))
        generation += 1
        let attempt = generation
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, attempt == generation, case .waiting = phase else { return }
            connect()
        }
    }

    private func dropped(_ reason: String) {
        guard case .connected = phase else { return }
        retry(after: reason)
    }

    // MARK: Messages

    private func received(_ body: Data) {
        guard case .connected(let channel) = phase else { return }
        let message: PushMessage
        do {
            message = try PushCodec.decode(body)
        } catch {
            onEvent?(.ignored("unreadable frame: \(error.message)"))
            return
        }
        switch message {
        case .registered(let registration):
            failures = 0
            setState(.registered(registration))
        case .push(let delivery):
            handlingPush = true
            var ack = handler(delivery)
            handlingPush = false
            if let reason = ack.reason, reason.utf8.count > Self.maxReasonBytes {
                ack.reason = String(decoding: reason.utf8.prefix(Self.maxReasonBytes), as: UTF8.self) + "…"
            }
            send(.ack(pushID: delivery.id, ack), on: channel)
            onEvent?(.acknowledged(delivery, ack))
            if stopAfterPush { stop() }
        case .error(let fault):
            if fault.code == .tokenDisabled, case .registered(var registration) = state {
                registration.disabled = true
                setState(.registered(registration))
            }
            onEvent?(.fault(fault))
        case .register, .ack, .send, .outcome, .status, .statusReport:
            onEvent?(.ignored("unexpected '\(message.kind.rawValue)' message"))
        }
    }

    private func send(_ message: PushMessage, on channel: FramedChannel) {
        do {
            channel.send(try encoder.frame(message))
        } catch {
            // An ack or register is a few hundred bytes; only a handler's enormous `reason` could get here.
            onEvent?(.ignored("could not send '\(message.kind.rawValue)': \(error)"))
        }
    }

    private func setState(_ new: PushDeviceClient.State) {
        guard new != state else { return }
        state = new
        published.withLock { $0 = new }
        onEvent?(.stateChanged(new))
    }
}
