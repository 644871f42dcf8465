import SIPMessages

/// The non-INVITE client transaction of RFC 3261 §17.1.2, as a pure value: inputs go in, effects come out.
///
/// ```
///            start: send request, E (unreliable), F
///                      |
///   E: resend,         v         F / transport error
///   min(2·E, T2) +-- trying --------------------------+
///                +-->  |  \ 1xx: deliver              |
///                      |   v                          |
///                      | proceeding -- E: resend, T2  |
///     200-699: deliver,|  |  \_________ F / transport |
///     K (unreliable)   v  v 200-699: deliver, K  error|
///                  completed -- responses absorbed    |
///                      | K                            v
///                      +------------------------> terminated
/// ```
/// On a reliable transport K is zero: a final response moves the transaction straight to terminated.
public struct NonInviteClientTransaction: Sendable {
    /// The state, with only the data valid in it.
    private enum State: Sendable {
        /// The request went out; `retransmitInterval` is timer E's current interval.
        case trying(retransmitInterval: Duration)
        /// A provisional response arrived; E now runs at T2.
        case proceeding
        /// A final response arrived; retransmissions of it are absorbed until K fires.
        case completed
        /// Over.
        case terminated
    }

    /// The request this transaction sends.
    public let request: SIPRequest
    /// The transport's reliability.
    public let transport: TransactionTransport
    /// The timer constants.
    public let timers: TransactionTimers
    private var current: State

    /// A transaction for `request` (neither INVITE nor ACK; a programming error otherwise) and the effects that
    /// start it: send the request, start E (unreliable transports) and F.
    public static func start(
        request: SIPRequest, transport: TransactionTransport, timers: TransactionTimers = TransactionTimers()
    ) -> (transaction: NonInviteClientTransaction, effects: [TransactionEffect]) {
        precondition(request.method != .invite && request.method != .ack, "INVITE and ACK are not non-INVITE requests")
        precondition(request.headers.topVia != nil, "A client transaction's request has a Via")
        let transaction = NonInviteClientTransaction(
            request: request, transport: transport, timers: timers, current: .trying(retransmitInterval: timers.timerE))
        let effects = clientStartEffects(
            request, transport: transport, retransmit: (.e, timers.timerE), timeout: (.f, timers.timerF))
        return (transaction, effects)
    }

    private init(request: SIPRequest, transport: TransactionTransport, timers: TransactionTimers, current: State) {
        self.request = request
        self.transport = transport
        self.timers = timers
        self.current = current
    }

    /// The RFC 3261 state.
    public var state: TransactionState {
        switch current {
        case .trying: .trying
        case .proceeding: .proceeding
        case .completed: .completed
        case .terminated: .terminated
        }
    }

    /// A response that matched this transaction (RFC 3261 §17.1.3) arrived.
    public mutating func receive(_ response: SIPResponse) -> [TransactionEffect] {
        switch current {
        case .trying, .proceeding:
            if response.isProvisional {
                current = .proceeding
                return [.deliverResponse(response)]
            }
            var effects: [TransactionEffect] = transport == .unreliable ? [.cancelTimer(.e)] : []
            effects += [.cancelTimer(.f), .deliverResponse(response)]
            if transport == .reliable {
                current = .terminated
                return effects + [.terminated]
            }
            current = .completed
            return effects + [.startTimer(.k, after: timers.timerK(transport))]
        case .completed, .terminated:
            return []
        }
    }

    /// A timer this transaction started fired.
    public mutating func timerFired(_ timer: TransactionTimer) -> [TransactionEffect] {
        switch timer {
        case .e:
            switch current {
            case .trying(let interval):
                let next = min(interval * 2, timers.t2)
                current = .trying(retransmitInterval: next)
                return [.send(.request(request)), .startTimer(.e, after: next)]
            case .proceeding:
                return [.send(.request(request)), .startTimer(.e, after: timers.t2)]
            case .completed, .terminated:
                return []
            }
        case .f:
            switch current {
            case .trying, .proceeding:
                current = .terminated
                return [.cancelTimer(.e), .timeout, .terminated]
            case .completed, .terminated:
                return []
            }
        case .k:
            guard case .completed = current else { return [] }
            current = .terminated
            return [.terminated]
        case .a, .b, .d, .g, .h, .i, .j, .trying:
            // Not timers of a non-INVITE client transaction: it never starts them.
            return []
        }
    }

    /// The transport could not send the request (RFC 3261 §17.1.4).
    public mutating func transportFailed() -> [TransactionEffect] {
        switch current {
        case .trying, .proceeding:
            current = .terminated
            return [.transportError, .terminated]
        case .completed, .terminated:
            return []
        }
    }
}
