import SIPMessages

/// The RFC 3261 §17 timer constants and the timer durations derived from them (RFC 3261 Table 4).
///
/// Durations that the RFC sets to zero on a reliable transport (D, I, J, K) are not started there: the machine moves
/// to terminated at once instead of scheduling a zero timer.
public struct TransactionTimers: Sendable, Hashable {
    /// T1: the round-trip time estimate, 500 ms by default.
    public var t1: Duration
    /// T2: the longest retransmission interval for non-INVITE requests and INVITE responses, 4 s by default.
    public var t2: Duration
    /// T4: the longest time a message stays in the network, 5 s by default.
    public var t4: Duration
    /// How long an INVITE server transaction waits for the TU's provisional response before it sends
    /// 100 Trying itself (RFC 3261 §17.2.1: 200 ms).
    public var tryingDelay: Duration

    /// Timers with these constants; the defaults are RFC 3261's.
    public init(
        t1: Duration = .milliseconds(500), t2: Duration = .seconds(4), t4: Duration = .seconds(5),
        tryingDelay: Duration = .milliseconds(200)
    ) {
        self.t1 = t1
        self.t2 = t2
        self.t4 = t4
        self.tryingDelay = tryingDelay
    }

    /// Timer A's first interval (INVITE request retransmission): T1, doubling each time.
    public var timerA: Duration { t1 }
    /// Timer B (INVITE transaction timeout): 64·T1.
    public var timerB: Duration { t1 * 64 }
    /// Timer D (wait for response retransmissions): at least 32 s on an unreliable transport, zero on a reliable one.
    public func timerD(_ transport: TransactionTransport) -> Duration {
        transport == .reliable ? .zero : max(.seconds(32), t1 * 64)
    }
    /// Timer E's first interval (non-INVITE request retransmission): T1, doubling up to T2.
    public var timerE: Duration { t1 }
    /// Timer F (non-INVITE transaction timeout): 64·T1.
    public var timerF: Duration { t1 * 64 }
    /// Timer G's first interval (INVITE final response retransmission): T1, doubling up to T2.
    public var timerG: Duration { t1 }
    /// Timer H (wait for ACK): 64·T1.
    public var timerH: Duration { t1 * 64 }
    /// Timer I (wait for ACK retransmissions): T4 on an unreliable transport, zero on a reliable one.
    public func timerI(_ transport: TransactionTransport) -> Duration { transport == .reliable ? .zero : t4 }
    /// Timer J (wait for non-INVITE request retransmissions): 64·T1 unreliable, zero reliable.
    public func timerJ(_ transport: TransactionTransport) -> Duration { transport == .reliable ? .zero : t1 * 64 }
    /// Timer K (wait for response retransmissions): T4 unreliable, zero reliable.
    public func timerK(_ transport: TransactionTransport) -> Duration { transport == .reliable ? .zero : t4 }
}

/// Whether the transport under a transaction retransmits for us (RFC 3261 §17: TCP, TLS, SCTP) or not (UDP).
public enum TransactionTransport: Sendable, Hashable {
    /// TCP, TLS, SCTP, WebSocket: no retransmissions, and D, I, J, K are zero.
    case reliable
    /// UDP: requests and INVITE final responses are retransmitted.
    case unreliable

    /// The reliability of a Via transport token: UDP (and DTLS-less datagram transports) is unreliable, others are
    /// reliable.
    public init(viaTransport: String) {
        self = viaTransport.uppercased() == "UDP" ? .unreliable : .reliable
    }
}

/// The timers of RFC 3261 §17, named as the RFC names them.
public enum TransactionTimer: Sendable, Hashable, CaseIterable {
    /// INVITE client: retransmit the INVITE (unreliable transports only).
    case a
    /// INVITE client: give up waiting for a response.
    case b
    /// INVITE client: stop absorbing final response retransmissions.
    case d
    /// Non-INVITE client: retransmit the request (unreliable transports only).
    case e
    /// Non-INVITE client: give up waiting for a final response.
    case f
    /// INVITE server: retransmit the non-2xx final response (unreliable transports only).
    case g
    /// INVITE server: give up waiting for the ACK.
    case h
    /// INVITE server: stop absorbing ACK retransmissions.
    case i
    /// Non-INVITE server: stop absorbing request retransmissions.
    case j
    /// Non-INVITE client: stop absorbing response retransmissions.
    case k
    /// INVITE server: send 100 Trying when the TU has not sent a provisional response in time (§17.2.1).
    case trying
}

/// What a transaction asks its driver to do, in order.
///
/// Once a machine returns `terminated` it has no running timers the driver needs to keep: the driver drops the
/// transaction and any timers it still holds for it.
public enum TransactionEffect: Sendable, Hashable {
    /// Send this message over the transaction's transport (first transmission or retransmission).
    case send(SIPMessage)
    /// Start (or restart) the timer; it fires once, after the duration, unless cancelled first.
    case startTimer(TransactionTimer, after: Duration)
    /// Stop the timer if it is running.
    case cancelTimer(TransactionTimer)
    /// Pass this response to the transaction user (client transactions).
    case deliverResponse(SIPResponse)
    /// Pass this request to the transaction user (server transactions: the request that created them).
    case deliverRequest(SIPRequest)
    /// Tell the transaction user that the transaction timed out (timer B, F or H).
    case timeout
    /// Tell the transaction user that the transport failed to send (RFC 3261 §17.1.4, §17.2.4).
    case transportError
    /// The transaction is over; the driver forgets it.
    case terminated
}

/// The states of RFC 3261 §17 transactions, as the RFC names them.
public enum TransactionState: Sendable, Hashable {
    /// INVITE client: the INVITE went out, no response yet.
    case calling
    /// Non-INVITE client and server: the request went out (or came in), no response yet.
    case trying
    /// A provisional response was received (client) or sent (server).
    case proceeding
    /// A final response was received (client) or sent (server); retransmissions are absorbed.
    case completed
    /// INVITE server: the ACK for a non-2xx final response arrived.
    case confirmed
    /// The transaction is over.
    case terminated
}

/// The effects that start a client transaction: send the request, arm its retransmission timer (unreliable
/// transports only: A for INVITE, E otherwise) and its timeout timer (B or F).
func clientStartEffects(
    _ request: SIPRequest, transport: TransactionTransport,
    retransmit: (timer: TransactionTimer, after: Duration), timeout: (timer: TransactionTimer, after: Duration)
) -> [TransactionEffect] {
    var effects: [TransactionEffect] = [.send(.request(request))]
    if transport == .unreliable { effects.append(.startTimer(retransmit.timer, after: retransmit.after)) }
    effects.append(.startTimer(timeout.timer, after: timeout.after))
    return effects
}
