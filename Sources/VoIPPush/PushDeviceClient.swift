import Dispatch
import Foundation
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
/// **Threading.** Everything — socket work, the handler, ``Event``s — runs on one serial Dispatch queue: the
/// configuration's `queue` if given, else a private one (``queue``). The handler is called there, one push at
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
        /// The serial queue the client and its handler run on; nil for a private one.
        public var queue: DispatchQueue?

        /// A configuration with the documented defaults.
        public init(
            endpoint: PushEndpoint, token: String, backoff: PushBackoff = PushBackoff(), connectTimeout: TimeInterval = 5,
            maxQueuedBytes: Int = 256 * 1024, queue: DispatchQueue? = nil
        ) {
            self.endpoint = endpoint
            self.token = token
            self.backoff = backoff
            self.connectTimeout = connectTimeout
            self.maxQueuedBytes = maxQueuedBytes
            self.queue = queue
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

    /// The serial queue the client, its handler and its events run on.
    public let queue: DispatchQueue
    /// Where the client connects and which token it registers.
    public let configuration: Configuration
    private let core: DeviceClientCore

    /// A client that calls `handler` for each push (on ``queue``) and `onEvent` for everything else. Call
    /// ``start()`` to connect.
    public init(
        configuration: Configuration, onEvent: (@Sendable (Event) -> Void)? = nil,
        handler: @escaping @Sendable (PushDelivery) -> PushAck
    ) {
        let queue = configuration.queue ?? DispatchQueue(label: "parley.push-device.\(configuration.token)")
        self.queue = queue
        self.configuration = configuration
        core = DeviceClientCore(configuration: configuration, queue: queue, handler: handler, onEvent: onEvent)
    }

    deinit {
        let core = core
        queue.async { core.stop() }
    }

    /// The current state (a snapshot; it may change at once).
    public var state: State { core.published.withLock { $0 } }

    /// Connects (and keeps reconnecting until ``stop()``). Idempotent.
    public func start() {
        let core = core
        queue.async { core.start() }
    }

    /// Closes the connection and stops reconnecting. When called off the queue it returns once the client has
    /// stopped, so the handler is not called afterwards; called from the handler, the client stops once the
    /// handler's ack has been sent.
    public func stop() {
        if DispatchQueue.getSpecific(key: core.queueKey) == core.queueIdentity {
            core.stop()
        } else {
            queue.sync { core.stop() }
        }
    }
}
