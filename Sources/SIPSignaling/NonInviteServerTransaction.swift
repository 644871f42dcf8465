import SIPMessages

/// The non-INVITE server transaction of RFC 3261 §17.2.2, as a pure value: inputs go in, effects come out.
///
/// ```
///        request received: deliver to TU
///                      |
///                      v   retransmission: absorbed
///                   trying
///        1xx from TU:  |  \  200-699 from TU: send, J
///        send          v   \
///                 proceeding -- retransmission: resend last 1xx
///                      |    \ transport error
///   200-699 from TU:   v     \
///   send, J        completed -- retransmission: resend final
///                      | J         \
///                      v            v
///                  terminated <-----+
/// ```
/// On a reliable transport J is zero: the final response moves the transaction straight to terminated.
public struct NonInviteServerTransaction: Sendable {
    /// The state, with only the data valid in it.
    private enum State: Sendable {
        /// The request arrived; the TU has not answered.
        case trying
        /// The TU sent `lastProvisional`.
        case proceeding(lastProvisional: SIPResponse)
        /// The TU sent `final`; request retransmissions get it again until J fires.
        case completed(final: SIPResponse)
        /// Over.
        case terminated
    }

    /// The transport's reliability.
    public let transport: TransactionTransport
    /// The timer constants.
    public let timers: TransactionTimers
    private var current: State

    /// A transaction for a received request (neither INVITE nor ACK: a programming error) and the effect that
    /// starts it: pass the request to the TU.
    public static func start(
        request: SIPRequest, transport: TransactionTransport, timers: TransactionTimers = TransactionTimers()
    ) -> (transaction: NonInviteServerTransaction, effects: [TransactionEffect]) {
        precondition(request.method != .invite && request.method != .ack, "INVITE and ACK are not non-INVITE requests")
        // The request itself is not kept: nothing after `deliverRequest` needs it, and a finished transaction waits
        // 64·T1 for timer J, so what it holds is held for every request of the last 32 s.
        let transaction = NonInviteServerTransaction(transport: transport, timers: timers, current: .trying)
        return (transaction, [.deliverRequest(request)])
    }

    private init(transport: TransactionTransport, timers: TransactionTimers, current: State) {
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

    /// A retransmission of the request arrived (RFC 3261 §17.2.3 matched it to this transaction).
    public mutating func receive(_ retransmission: SIPRequest) -> [TransactionEffect] {
        switch current {
        case .trying, .terminated:
            return []
        case .proceeding(let lastProvisional):
            return [.send(.response(lastProvisional))]
        case .completed(let final):
            return [.send(.response(final))]
        }
    }

    /// The TU sends `response` to the request. Responses after the final one are dropped.
    public mutating func respond(_ response: SIPResponse) -> [TransactionEffect] {
        switch current {
        case .trying, .proceeding:
            if response.isProvisional {
                current = .proceeding(lastProvisional: response)
                return [.send(.response(response))]
            }
            if transport == .reliable {
                current = .terminated
                return [.send(.response(response)), .terminated]
            }
            current = .completed(final: response)
            return [.send(.response(response)), .startTimer(.j, after: timers.timerJ(transport))]
        case .completed, .terminated:
            return []
        }
    }

    /// A timer this transaction started fired.
    public mutating func timerFired(_ timer: TransactionTimer) -> [TransactionEffect] {
        switch timer {
        case .j:
            guard case .completed = current else { return [] }
            current = .terminated
            return [.terminated]
        case .a, .b, .d, .e, .f, .g, .h, .i, .k, .trying:
            // Not timers of a non-INVITE server transaction: it never starts them.
            return []
        }
    }

    /// The transport could not send a response (RFC 3261 §17.2.4).
    public mutating func transportFailed() -> [TransactionEffect] {
        switch current {
        case .trying, .proceeding, .completed:
            current = .terminated
            return [.transportError, .terminated]
        case .terminated:
            return []
        }
    }
}
