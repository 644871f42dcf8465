import SIPMessages

/// The INVITE client transaction of RFC 3261 §17.1.1, as a pure value: inputs go in, effects come out.
///
/// ```
///              start: send INVITE, A (unreliable), B
///                      |
///   A: resend, 2·A     v        B / transport error
///        +-------- calling ---------------------------+
///        +-------->  |   \ 1xx: deliver               |
///                    |    v                           |
///          2xx:      | proceeding --+ 1xx: deliver    |
///          deliver   |  |  |        |                 |
///                    |  |  +<-------+                 |
///       300-699: ACK,|  | 300-699: ACK, deliver, D    |
///       deliver, D   v  v                             |
///                  completed -- 300-699: resend ACK   |
///                     | D / transport error           |
///                     v                               v
///    (2xx) ------> terminated <-----------------------+
/// ```
/// A 2xx ends the transaction: the TU (the dialog) sends the ACK for it. For 300–699 the transaction builds and sends
/// the ACK itself (§17.1.1.3) and resends it for every retransmitted final response until timer D fires.
public struct InviteClientTransaction: Sendable {
    /// The state, with only the data valid in it.
    private enum State: Sendable {
        /// The INVITE went out; `retransmitInterval` is timer A's current interval.
        case calling(retransmitInterval: Duration)
        /// A provisional response arrived.
        case proceeding
        /// A non-2xx final response arrived and was acknowledged with `ack`.
        case completed(ack: SIPRequest)
        /// Over.
        case terminated
    }

    /// The INVITE this transaction sends.
    public let request: SIPRequest
    /// The transport's reliability.
    public let transport: TransactionTransport
    /// The timer constants.
    public let timers: TransactionTimers
    private var current: State

    /// A transaction for `request` (an INVITE with a top Via; a programming error otherwise) and the effects that
    /// start it: send the INVITE, start A (unreliable transports) and B.
    public static func start(
        request: SIPRequest, transport: TransactionTransport, timers: TransactionTimers = TransactionTimers()
    ) -> (transaction: InviteClientTransaction, effects: [TransactionEffect]) {
        precondition(request.method == .invite, "An INVITE client transaction sends an INVITE")
        precondition(request.headers.topVia != nil, "A client transaction's request has a Via")
        let transaction = InviteClientTransaction(
            request: request, transport: transport, timers: timers,
            current: .calling(retransmitInterval: timers.timerA))
        let effects = clientStartEffects(
            request, transport: transport, retransmit: (.a, timers.timerA), timeout: (.b, timers.timerB))
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
        case .calling: .calling
        case .proceeding: .proceeding
        case .completed: .completed
        case .terminated: .terminated
        }
    }

    /// A response that matched this transaction (RFC 3261 §17.1.3) arrived.
    public mutating func receive(_ response: SIPResponse) -> [TransactionEffect] {
        switch current {
        case .calling, .proceeding:
            var effects = leavingCalling()
            if response.isProvisional {
                current = .proceeding
                return effects + [.deliverResponse(response)]
            }
            if response.isSuccess {
                current = .terminated
                return effects + [.deliverResponse(response), .terminated]
            }
            let ack = Self.acknowledgement(of: request, for: response)
            effects += [.send(.request(ack)), .deliverResponse(response)]
            if transport == .reliable {
                current = .terminated
                return effects + [.terminated]
            }
            current = .completed(ack: ack)
            return effects + [.startTimer(.d, after: timers.timerD(transport))]
        case .completed(let ack):
            // Only final-response retransmissions get the ACK again; late 1xx/2xx are absorbed.
            return response.isProvisional || response.isSuccess ? [] : [.send(.request(ack))]
        case .terminated:
            return []
        }
    }

    /// A timer this transaction started fired.
    public mutating func timerFired(_ timer: TransactionTimer) -> [TransactionEffect] {
        switch timer {
        case .a:
            guard case .calling(let interval) = current else { return [] }
            let next = interval * 2
            current = .calling(retransmitInterval: next)
            return [.send(.request(request)), .startTimer(.a, after: next)]
        case .b:
            guard case .calling = current else { return [] }
            current = .terminated
            return [.cancelTimer(.a), .timeout, .terminated]
        case .d:
            guard case .completed = current else { return [] }
            current = .terminated
            return [.terminated]
        case .e, .f, .g, .h, .i, .j, .k, .trying:
            // Not timers of an INVITE client transaction: it never starts them.
            return []
        }
    }

    /// The transport could not send the INVITE or the ACK (RFC 3261 §17.1.4).
    public mutating func transportFailed() -> [TransactionEffect] {
        switch current {
        case .calling, .proceeding, .completed:
            let effects = leavingCalling()
            current = .terminated
            return effects + [.transportError, .terminated]
        case .terminated:
            return []
        }
    }

    /// Cancels A and B when the transaction leaves calling; nothing otherwise.
    private func leavingCalling() -> [TransactionEffect] {
        guard case .calling = current else { return [] }
        return transport == .unreliable ? [.cancelTimer(.a), .cancelTimer(.b)] : [.cancelTimer(.b)]
    }

    /// The ACK for a 300–699 response (RFC 3261 §17.1.1.3): the INVITE's Request-URI, its top Via only, From and
    /// Call-ID, the response's To (with its tag), the INVITE's CSeq number with method ACK, and its Route headers.
    public static func acknowledgement(of invite: SIPRequest, for response: SIPResponse) -> SIPRequest {
        var headers = SIPHeaders()
        if let via = invite.headers.topVia { headers.append("Via", via.headerValue) }
        headers.append("Max-Forwards", "70")
        if let to = response.headers["To"] ?? invite.headers["To"] { headers.append("To", to) }
        if let from = invite.headers["From"] { headers.append("From", from) }
        if let callID = invite.headers["Call-ID"] { headers.append("Call-ID", callID) }
        let number = invite.headers.cseq?.number ?? 0
        headers.append("CSeq", SIPCSeq(number: number, method: .ack).headerValue)
        for route in invite.headers.values("Route") { headers.append("Route", route) }
        return SIPRequest(method: .ack, uri: invite.uri, headers: headers)
    }
}
