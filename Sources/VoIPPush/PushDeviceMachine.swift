import Foundation

/// The device side of the push channel as a pure state machine: inputs (start, stop, the connection's events, the
/// simulator's messages, the handler's ack, the reconnect timer) in, effects out (connect, send, close, arm or cancel
/// the reconnect timer, hand a push to the handler, report an event). No sockets, no clock: ``DeviceClientCore`` is
/// its driver on an event loop.
///
/// ```
///  idle ─start─► connecting ─connected─► registering ─registered─► registered
///                  │  ▲                      │                        │
///     fail/timeout │  │ back-off             │ drop                   │ drop
///                  ▼  │                      ▼                        ▼
///               waitingToReconnect ◄─────────┴────────────────────────┘
///  any ─stop─► stopped
/// ```
/// The states are ``PushDeviceClient/State``'s.
struct PushDeviceMachine {
    /// What happened.
    enum Input: Equatable {
        /// The owner started the client.
        case start
        /// The owner stopped it.
        case stop
        /// The connection is up.
        case connected
        /// The connection attempt failed (refused, timed out), in words.
        case connectFailed(String)
        /// The connection dropped, in words.
        case dropped(String)
        /// The simulator sent a message.
        case received(PushMessage)
        /// The simulator sent a frame that is not a message.
        case undecodable(String)
        /// The handler answered a push.
        case handled(PushDelivery, PushAck)
        /// The back-off wait is over.
        case reconnectDue
    }

    /// What the driver does.
    enum Effect: Equatable {
        /// Open a connection to the simulator.
        case connect
        /// Send a message on the connection.
        case send(PushMessage)
        /// Close the connection (flushing), for this reason.
        case close(String)
        /// Feed ``Input/reconnectDue`` after this many seconds.
        case scheduleReconnect(after: TimeInterval)
        /// The reconnect timer is no longer wanted.
        case cancelReconnect
        /// Call the handler with this push, synchronously, and feed its ack back as ``Input/handled(_:_:)``.
        case deliver(PushDelivery)
        /// Tell the owner.
        case event(PushDeviceClient.Event)
    }

    /// An ack's reason is cut to this many bytes so that the ack always fits in a frame.
    static let maxReasonBytes = 4096

    /// Where the client is.
    private(set) var state = PushDeviceClient.State.idle
    /// The token it registers.
    let token: String
    /// The waits between attempts.
    let backoff: PushBackoff
    /// Failed attempts since the last registration.
    private var failures = 0

    init(token: String, backoff: PushBackoff) {
        self.token = token
        self.backoff = backoff
    }

    /// Whether a connection exists or is being made (connecting, registering or registered).
    var hasConnection: Bool {
        switch state {
        case .connecting, .registering, .registered: true
        case .idle, .waitingToReconnect, .stopped: false
        }
    }

    /// The one transition function.
    mutating func handle(_ input: Input) -> [Effect] {
        switch (input, state) {
        case (_, .stopped):
            return []
        case (.stop, _):
            return [.cancelReconnect] + (hasConnection ? [.close("stopped")] : []) + enter(.stopped)
        case (.start, .idle):
            return connect()
        case (.start, _):
            return []
        case (.connected, .connecting):
            return enter(.registering) + [.send(.register(token: token))]
        case (.connectFailed(let reason), .connecting):
            return retry(after: reason)
        case (.dropped(let reason), .registering), (.dropped(let reason), .registered):
            return retry(after: reason)
        case (.reconnectDue, .waitingToReconnect):
            return connect()
        case (.received(let message), .registering), (.received(let message), .registered):
            return received(message)
        case (.undecodable(let what), .registering), (.undecodable(let what), .registered):
            return [.event(.ignored("unreadable frame: \(what)"))]
        case (.handled(let delivery, var ack), .registering), (.handled(let delivery, var ack), .registered):
            if let reason = ack.reason, reason.utf8.count > Self.maxReasonBytes {
                ack.reason = String(decoding: reason.utf8.prefix(Self.maxReasonBytes), as: UTF8.self) + "…"
            }
            return [.send(.ack(pushID: delivery.id, ack)), .event(.acknowledged(delivery, ack))]
        case (.connected, _), (.connectFailed, _), (.dropped, _), (.reconnectDue, _), (.received, _),
            (.undecodable, _), (.handled, _):
            // Late news of a connection or timer this state no longer has.
            return []
        }
    }

    private mutating func connect() -> [Effect] {
        enter(.connecting(attempt: failures + 1)) + [.connect]
    }

    private mutating func retry(after problem: String) -> [Effect] {
        failures += 1
        let delay = backoff.delay(afterFailures: failures)
        return enter(.waitingToReconnect(delay: delay, failures: failures, lastError: problem))
            + [.scheduleReconnect(after: delay)]
    }

    private mutating func received(_ message: PushMessage) -> [Effect] {
        switch message {
        case .registered(let registration):
            failures = 0
            return enter(.registered(registration))
        case .push(let delivery):
            return [.deliver(delivery)]
        case .error(let fault):
            var effects: [Effect] = []
            if fault.code == .tokenDisabled, case .registered(var registration) = state {
                registration.disabled = true
                effects = enter(.registered(registration))
            }
            return effects + [.event(.fault(fault))]
        case .register, .ack, .send, .outcome, .status, .statusReport:
            return [.event(.ignored("unexpected '\(message.kind.rawValue)' message"))]
        }
    }

    /// Moves to `new`, reporting it when it differs.
    private mutating func enter(_ new: PushDeviceClient.State) -> [Effect] {
        guard new != state else { return [] }
        state = new
        return [.event(.stateChanged(new))]
    }
}
