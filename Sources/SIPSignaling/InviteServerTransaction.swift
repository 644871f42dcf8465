import SIPMessages

/// The INVITE server transaction of RFC 3261 §17.2.1, as a pure value: inputs go in, effects come out.
///
/// ```
///        INVITE received: deliver to TU, start "trying" (200 ms)
///                      |
///   trying: send 100   v        INVITE: resend last provisional
///   1xx from TU: send  proceeding ---+
///                      |  |    <-----+          2xx from TU: send
///     300-699 from TU: |  +---------------------------------------+
///     send, G, H       v                                           |
///                  completed --- INVITE: resend final; G: resend,  |
///                      |  \          min(2·G, T2)                  |
///                  ACK |   \ H: timeout / transport error          |
///                      v    \                                      v
///                  confirmed ---- I ------------------------> terminated
/// ```
/// After a 2xx the transaction ends: the TU (the dialog) retransmits the 2xx and receives the ACK. On a reliable
/// transport G is not started and I is zero (the ACK moves the transaction straight to terminated).
public struct InviteServerTransaction: Sendable {
    /// The state, with only the data valid in it.
    private enum State: Sendable {
        /// The INVITE arrived; `lastProvisional` is the latest 1xx sent, if any.
        case proceeding(lastProvisional: SIPResponse?)
        /// A 300–699 `final` went out; `retransmitInterval` is timer G's current interval.
        case completed(final: SIPResponse, retransmitInterval: Duration)
        /// The ACK arrived; ACK retransmissions are absorbed until I fires.
        case confirmed
        /// Over.
        case terminated
    }

    /// The INVITE that created this transaction.
    public let request: SIPRequest
    /// The transport's reliability.
    public let transport: TransactionTransport
    /// The timer constants.
    public let timers: TransactionTimers
    private var current: State

    /// A transaction for a received INVITE (a programming error for other methods) and the effects that start it:
    /// pass the INVITE to the TU and start the 200 ms timer after which 100 Trying goes out.
    public static func start(
        request: SIPRequest, transport: TransactionTransport, timers: TransactionTimers = TransactionTimers()
    ) -> (transaction: InviteServerTransaction, effects: [TransactionEffect]) {
        precondition(request.method == .invite, "An INVITE server transaction is created by an INVITE")
        let transaction = InviteServerTransaction(
            request: request, transport: transport, timers: timers, current: .proceeding(lastProvisional: nil))
        return (transaction, [.deliverRequest(request), .startTimer(.trying, after: timers.tryingDelay)])
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
        case .proceeding: .proceeding
        case .completed: .completed
        case .confirmed: .confirmed
        case .terminated: .terminated
        }
    }

    /// A request that matched this transaction (RFC 3261 §17.2.3) arrived: a retransmitted INVITE or the ACK for a
    /// non-2xx final response. Other methods (CANCEL) have transactions of their own and are ignored here.
    public mutating func receive(_ incoming: SIPRequest) -> [TransactionEffect] {
        switch incoming.method {
        case .invite:
            switch current {
            case .proceeding(let lastProvisional):
                return lastProvisional.map { [.send(.response($0))] } ?? []
            case .completed(let final, _):
                return [.send(.response(final))]
            case .confirmed, .terminated:
                return []
            }
        case .ack:
            guard case .completed = current else { return [] }
            var effects: [TransactionEffect] = transport == .unreliable ? [.cancelTimer(.g)] : []
            effects.append(.cancelTimer(.h))
            if transport == .reliable {
                current = .terminated
                return effects + [.terminated]
            }
            current = .confirmed
            return effects + [.startTimer(.i, after: timers.timerI(transport))]
        case .bye, .cancel, .options, .register, .prack, .subscribe, .notify, .publish, .info, .refer, .message,
            .update, .extension:
            return []
        }
    }

    /// The TU sends `response` to the INVITE. Responses after the final one are dropped (the TU retransmits a 2xx
    /// itself, outside the transaction).
    public mutating func respond(_ response: SIPResponse) -> [TransactionEffect] {
        guard case .proceeding(let lastProvisional) = current else { return [] }
        var effects: [TransactionEffect] = lastProvisional == nil ? [.cancelTimer(.trying)] : []
        effects.append(.send(.response(response)))
        if response.isProvisional {
            current = .proceeding(lastProvisional: response)
            return effects
        }
        if response.isSuccess {
            current = .terminated
            return effects + [.terminated]
        }
        current = .completed(final: response, retransmitInterval: timers.timerG)
        if transport == .unreliable { effects.append(.startTimer(.g, after: timers.timerG)) }
        return effects + [.startTimer(.h, after: timers.timerH)]
    }

    /// A timer this transaction started fired.
    public mutating func timerFired(_ timer: TransactionTimer) -> [TransactionEffect] {
        switch timer {
        case .trying:
            guard case .proceeding(nil) = current else { return [] }
            let trying = request.makeResponse(statusCode: 100)
            current = .proceeding(lastProvisional: trying)
            return [.send(.response(trying))]
        case .g:
            guard case .completed(let final, let interval) = current else { return [] }
            let next = min(interval * 2, timers.t2)
            current = .completed(final: final, retransmitInterval: next)
            return [.send(.response(final)), .startTimer(.g, after: next)]
        case .h:
            guard case .completed = current else { return [] }
            current = .terminated
            return [.cancelTimer(.g), .timeout, .terminated]
        case .i:
            guard case .confirmed = current else { return [] }
            current = .terminated
            return [.terminated]
        case .a, .b, .d, .e, .f, .j, .k:
            // Not timers of an INVITE server transaction: it never starts them.
            return []
        }
    }

    /// The transport could not send a response (RFC 3261 §17.2.4).
    public mutating func transportFailed() -> [TransactionEffect] {
        switch current {
        case .proceeding, .completed:
            current = .terminated
            return [.transportError, .terminated]
        case .confirmed, .terminated:
            return []
        }
    }
}
