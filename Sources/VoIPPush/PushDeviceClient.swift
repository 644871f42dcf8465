import Foundation
import ParleyIO
import Synchronization

/// The waits between reconnection attempts: `initial`, doubling (by `multiplier`) up to `maximum`.
/// With the defaults: 0.2 s, 0.4 s, 0.8 s, 1.6 s, 3.2 s, then 5 s for good.
public struct PushBackoff: Sendable, Hashable {
    /// The first wait, in seconds.
    public var initial: TimeInterval
    /// The longest wait, in seconds.
    public var maximum: TimeInterval
    /// How much each wait grows.
    public var multiplier: Double

    /// A policy; traps on values that make no sense.
    public init(initial: TimeInterval = 0.2, maximum: TimeInterval = 5, multiplier: Double = 2) {
        precondition(initial > 0 && maximum >= initial && multiplier >= 1, "back-off must grow from a positive first wait")
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
    }

    /// The wait after `failures` failed attempts in a row (1 or more).
    public func delay(afterFailures failures: Int) -> TimeInterval {
        precondition(failures >= 1, "a delay follows at least one failure")
        var delay = initial
        for _ in 1..<min(failures, 64) {
            delay *= multiplier
            if delay >= maximum { return maximum }
        }
        return min(delay, maximum)
    }
}

/// The device side of the push channel: connects to the simulator, registers a token, hands every push to a
/// handler and sends the ack the handler returns; reconnects with exponential back-off (``PushBackoff``, 0.2 s
/// → 5 s) whenever the connection fails or drops, and registers again.
///
/// **Threading.** Everything — socket work, the handler, ``Event``s — runs on one ParleyIO event loop: the
/// configuration's `loop` if given, else the client's own (``loop``). The handler is called there, one push at
/// a time; the client reads nothing while it runs, and the moment it returns, its ``PushAck`` is written to the
/// simulator. That is the PushKit contract by construction: the handler must report the incoming conversation
/// to its engine *before returning* and say so with ``PushAck/reported``; returning ``PushAck/notReported(_:)``
/// (or taking longer than the simulator's ack timeout, 5 s by default) is a strike against the token, and
/// enough strikes disable it. Cancel pushes (``PushPayload/cancel``) are never strikes.
///
/// ```swift
/// let client = PushDeviceClient(
///     configuration: .init(endpoint: PushEndpoint("127.0.0.1:5070")!, token: "device-1")
/// ) { delivery in
///     engine.reportIncoming(delivery.payload)   // synchronously, before returning
///     return .reported
/// }
/// client.start()
/// ```
public final class PushDeviceClient: Sendable {
    /// Where to connect and how.
    public struct Configuration: Sendable {
        /// The simulator.
        public var endpoint: PushEndpoint
        /// The device token to register.
        public var token: String
        /// Waits between reconnection attempts.
        public var backoff: PushBackoff
        /// How long one connection attempt may take, in seconds.
        public var connectTimeout: TimeInterval
        /// Bytes that may wait to be written before the connection is dropped (and retried).
        public var maxQueuedBytes: Int
        /// The event loop the client and its handler run on; nil for one of the client's own.
        public var loop: EventLoop?

        /// A configuration with the documented defaults.
        public init(
            endpoint: PushEndpoint, token: String, backoff: PushBackoff = PushBackoff(), connectTimeout: TimeInterval = 5,
            maxQueuedBytes: Int = 256 * 1024, loop: EventLoop? = nil
        ) {
            self.endpoint = endpoint
            self.token = token
            self.backoff = backoff
            self.connectTimeout = connectTimeout
            self.maxQueuedBytes = maxQueuedBytes
            self.loop = loop
        }
    }

    /// Where the client is.
    public enum State: Sendable, Hashable, CustomStringConvertible {
        /// Created, not started.
        case idle
        /// Connection attempt `attempt` (1 for the first after a success or start) is under way.
        case connecting(attempt: Int)
        /// Connected; `register` sent, `registered` not yet received.
        case registering
        /// Registered: pushes can arrive. Carries the simulator's last word on strikes and disabling.
        case registered(PushRegistration)
        /// The last attempt failed (or the connection dropped) because of `lastError`; the next comes after
        /// `delay` seconds.
        case waitingToReconnect(delay: TimeInterval, failures: Int, lastError: String)
        /// Stopped for good.
        case stopped

        /// Whether the client is registered.
        public var isRegistered: Bool {
            switch self {
            case .registered: true
            case .idle, .connecting, .registering, .waitingToReconnect, .stopped: false
            }
        }

        /// For logs.
        public var description: String {
            switch self {
            case .idle: "idle"
            case .connecting(let attempt): "connecting (attempt \(attempt))"
            case .registering: "registering"
            case .registered(let registration):
                "registered (strikes \(registration.strikes)\(registration.disabled ? ", disabled" : ""))"
            case .waitingToReconnect(let delay, let failures, let lastError):
                "reconnecting in \(delay.formatted(.number.precision(.fractionLength(0...3)))) s after \(failures) failure\(failures == 1 ? "" : "s"): \(lastError)"
            case .stopped: "stopped"
            }
        }
    }

    /// What the client reports besides pushes, on its queue.
    public enum Event: Sendable, Hashable {
        /// The state changed.
        case stateChanged(State)
        /// The simulator sent an `error` (a `tokenDisabled` one also updates the state).
        case fault(PushFault)
        /// A push was handed to the handler, which returned `ack` (already sent).
        case acknowledged(PushDelivery, PushAck)
        /// The simulator sent something this client does not understand or expect; ignored.
        case ignored(String)
    }

    /// The event loop the client, its handler and its events run on.
    public let loop: EventLoop
    /// Where the client connects and which token it registers.
    public let configuration: Configuration
    /// The loop was made for this client: stopping it shuts the loop down.
    private let ownsLoop: Bool
    private let core: LoopBound<DeviceClientCore>
    /// Read from any thread (the core publishes into it).
    private let published: PublishedDeviceState

    /// A client that calls `handler` for each push (on ``loop``) and `onEvent` for everything else. Call
    /// ``start()`` to connect.
    public init(
        configuration: Configuration, onEvent: (@Sendable (Event) -> Void)? = nil,
        handler: @escaping @Sendable (PushDelivery) -> PushAck
    ) {
        ownsLoop = configuration.loop == nil
        let loop: EventLoop
        if let given = configuration.loop {
            loop = given
        } else {
            do throws(IOError) {
                loop = try EventLoop(name: "parley-push-device")
            } catch {
                // eventfd, epoll or a thread refused at start-up: the process has run out of what it needs to run.
                preconditionFailure("cannot start the push client's event loop: \(error)")
            }
        }
        self.loop = loop
        self.configuration = configuration
        let core = DeviceClientCore(configuration: configuration, loop: loop, handler: handler, onEvent: onEvent)
        published = core.published
        self.core = LoopBound(core, identity: loop.identity)
    }

    deinit {
        let core = core
        loop.execute { core.value.stop() }
        if ownsLoop { loop.shutdownWithoutWaiting() }
    }

    /// The current state (a snapshot; it may change at once).
    public var state: State { published.state.withLock { $0 } }

    /// Connects (and keeps reconnecting until ``stop()``). Idempotent.
    public func start() {
        let core = core
        loop.execute { core.value.start() }
    }

    /// Closes the connection and stops reconnecting. When called off the loop it returns once the client has
    /// stopped, so the handler is not called afterwards; called from the handler, the client stops once the
    /// handler's ack has been sent.
    public func stop() {
        let core = core
        if loop.inEventLoop {
            core.value.stop()
        } else {
            _ = loop.executeAndWait { core.value.stop() }
            if ownsLoop { loop.shutdown() }
        }
    }
}
