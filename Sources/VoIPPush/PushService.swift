import Foundation

/// The push simulator's rules as a pure state machine: inputs in (a connection opened or closed, a message
/// received, a frame rejected, a timer fired), effects out (send this message to that connection, close it,
/// start or cancel a timer, log a line). It does no I/O and reads no clock: every input carries `now`.
///
/// ```
///  send ──► unknown token ─────────────────────────────► outcome unknownToken
///     │     disabled token ────────────────────────────► outcome tokenDisabled
///     │     expired (expiresAt ≤ now) ─────────────────► outcome expired
///     ├───► device connected ─► push ─► in flight ─┬─ ack reported ──────► outcome delivered, reported
///     │                                            ├─ ack not reported ──► outcome delivered, not reported + strike
///     │                                            ├─ ack timeout ───────► (the same, as a timeout)
///     │                                            └─ device disconnects ► (the same, as lost)
///     └───► device offline ─► stored (outcome stored) ─┬─ device registers ─► push ─► in flight (no sender waits)
///                                                      ├─ newer push, same collapse id ─► replaced
///                                                      └─ expiry ─► dropped
///  strikes ≥ maxFailures ─► token disabled: stored pushes dropped, device told (error now, registered later)
/// ```
///
/// A cancel push (``PushPayload/cancel``) never earns a strike: there is no conversation to report.
/// Strikes accumulate for the simulator's lifetime (a reported push does not clear them), as do tokens.
public struct PushService: Sendable {
    /// One token ever registered.
    struct Device: Sendable {
        /// The connection holding the token now, if any.
        var connection: PushConnectionID?
        var strikes = 0
        var disabled = false
        /// Pushes waiting for the device, oldest first.
        var stored: [StoredPush] = []
    }

    /// A push waiting for an offline device.
    struct StoredPush: Sendable {
        let id: String
        let payload: PushPayload
        let collapseID: String?
        /// The earlier of the payload's expiry and the sender's `expiration`.
        let until: Date
    }

    /// A push written to a device and not yet acked.
    struct InFlight: Sendable {
        let delivery: PushDelivery
        let connection: PushConnectionID
        /// The sender waiting for the outcome; nil for pushes delivered from storage (their sender already had
        /// `stored`) or when the sender has gone.
        var sender: PushConnectionID?
    }

    /// The rules in force.
    public let configuration: Configuration
    /// What has happened so far.
    public internal(set) var counters = PushCounters()

    var devices: [String: Device] = [:]
    var inFlight: [String: InFlight] = [:]
    /// The token each stored push waits for, by push id.
    var storedTokens: [String: String] = [:]
    var tokensByConnection: [PushConnectionID: Set<String>] = [:]
    var peers: [PushConnectionID: String] = [:]
    private var nextPushNumber = 1

    /// A service with no tokens known.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    // MARK: Inputs

    /// A connection was accepted from `peer` (an address, for logs).
    public mutating func connectionOpened(_ connection: PushConnectionID, peer: String) -> [Effect] {
        peers[connection] = peer
        return [.log("connection \(connection) from \(peer)")]
    }

    /// A message arrived on `connection`.
    public mutating func receive(_ message: PushMessage, from connection: PushConnectionID, now: Date) -> [Effect] {
        switch message {
        case .register(let token): return register(token: token, from: connection, now: now)
        case .send(let request): return send(request, from: connection, now: now)
        case .ack(let pushID, let ack): return acknowledge(pushID: pushID, ack, from: connection, now: now)
        case .status: return [.send(.statusReport(statusReport(fittingIn: PushFraming.defaultMaximumLength)), to: connection)]
        case .error(let fault):
            return [.log("error from \(name(connection)): \(fault.code.rawValue.clipped()): \(fault.message.clipped(to: 256))")]
        case .registered, .push, .outcome, .statusReport:
            counters.protocolErrors += 1
            let fault = PushFault(
                code: .unexpectedMessage, message: "the simulator does not accept '\(message.kind.rawValue)' messages")
            return [.send(.error(fault), to: connection), .log("unexpected \(message.kind.rawValue) from \(name(connection))")]
        }
    }

    /// A frame from `connection` could not be read: answer with `fault`, and close the connection when the
    /// stream is out of step (`closing`, e.g. an oversize length).
    public mutating func rejectFrame(from connection: PushConnectionID, fault: PushFault, closing: Bool) -> [Effect] {
        counters.protocolErrors += 1
        var effects: [Effect] = [
            .send(.error(fault), to: connection),
            .log("malformed frame from \(name(connection)): \(fault.message)" + (closing ? " (closing)" : "")),
        ]
        if closing { effects.append(.close(connection, reason: fault.message)) }
        return effects
    }

    /// A device registers `token` on `connection`: the token becomes known (for good), the connection holds it
    /// (taking it from any other), and stored pushes that have not expired are delivered.
    public mutating func register(token: String, from connection: PushConnectionID, now: Date) -> [Effect] {
        if let problem = Self.tokenProblem(token) {
            counters.protocolErrors += 1
            let fault = PushFault(code: .badField, message: "token: \(problem)", path: "token")
            return [.send(.error(fault), to: connection), .log("bad register from \(name(connection)): token: \(problem)")]
        }
        var effects: [Effect] = []
        var device = devices[token] ?? Device()
        if let previous = device.connection, previous != connection {
            tokensByConnection[previous]?.remove(token)
            let fault = PushFault(code: .replaced, message: "token \(token) was registered again by another connection")
            effects += [.send(.error(fault), to: previous), .log("token=\(token) moves from \(previous) to \(connection)")]
        }
        device.connection = connection
        tokensByConnection[connection, default: []].insert(token)
        counters.registrations += 1
        let waiting = device.stored
        device.stored = []
        devices[token] = device
        effects.append(.send(.registered(PushRegistration(token: token, strikes: device.strikes, disabled: device.disabled)), to: connection))
        effects.append(.log(
            "registered token=\(token) connection=\(name(connection)) strikes=\(device.strikes)/\(configuration.maxFailures) disabled=\(device.disabled)"))
        for push in waiting {
            storedTokens[push.id] = nil
            effects.append(.cancelTimer(.storedExpiry(pushID: push.id)))
            if push.until <= now {
                counters.expired += 1
                effects.append(.log("expired push=\(push.id) token=\(token) (stored, never delivered)"))
            } else {
                let delivery = PushDelivery(id: push.id, token: token, payload: push.payload, collapseID: push.collapseID)
                effects += deliver(delivery, to: connection, sender: nil, now: now, fromStorage: true)
            }
        }
        return effects
    }

    /// A sender on `connection` asks for a push. The outcome is sent at once, except for a push delivered to a
    /// connected device, whose outcome waits for the ack (or its timeout).
    public mutating func send(_ request: PushSendRequest, from connection: PushConnectionID, now: Date) -> [Effect] {
        counters.sendRequests += 1
        let token = request.token
        if let problem = Self.requestProblem(request) {
            counters.invalid += 1
            return refuse(request, .invalid, problem, from: connection, log: "invalid send from \(name(connection)): \(problem)")
        }
        guard var device = devices[token] else {
            counters.unknownToken += 1
            return refuse(request, .unknownToken, "no device ever registered token \(token)", from: connection,
                          log: "unknown token=\(token): push refused")
        }
        guard !device.disabled else {
            counters.tokenDisabled += 1
            return refuse(request, .tokenDisabled, "token \(token) was disabled after \(device.strikes) strikes",
                          from: connection, log: "token=\(token) is disabled: push refused")
        }
        let payload = request.payload
        guard !payload.isExpired(at: now) else {
            counters.expired += 1
            return refuse(request, .expired, "the payload expired at \(WireDate.text(payload.expiresAt))", from: connection,
                          log: "expired push for token=\(token) call-id=\(payload.callID): dropped at send")
        }
        let id = "p\(nextPushNumber)"
        nextPushNumber += 1
        if let deviceConnection = device.connection {
            let delivery = PushDelivery(id: id, token: token, payload: payload, collapseID: request.collapseID)
            return deliver(delivery, to: deviceConnection, sender: connection, now: now, fromStorage: false)
        }
        if request.expiration == 0 {
            counters.expired += 1
            return refuse(request, .expired, "expiration 0 and the device is offline: not stored", from: connection,
                          log: "expired push for token=\(token) call-id=\(payload.callID): offline and expiration 0")
        }
        var effects: [Effect] = []
        if let collapseID = request.collapseID, let index = device.stored.firstIndex(where: { $0.collapseID == collapseID }) {
            let old = device.stored.remove(at: index)
            storedTokens[old.id] = nil
            counters.collapsed += 1
            effects += [.cancelTimer(.storedExpiry(pushID: old.id)),
                        .log("collapsed push=\(old.id) into push=\(id) token=\(token) collapse-id=\(collapseID)")]
        }
        if device.stored.count >= configuration.maxStoredPerToken {
            let oldest = device.stored.removeFirst()
            storedTokens[oldest.id] = nil
            counters.droppedStored += 1
            effects += [.cancelTimer(.storedExpiry(pushID: oldest.id)),
                        .log("dropped push=\(oldest.id) token=\(token): more than \(configuration.maxStoredPerToken) stored")]
        }
        var until = payload.expiresAt
        if let expiration = request.expiration { until = min(until, now.addingTimeInterval(expiration)) }
        device.stored.append(StoredPush(id: id, payload: payload, collapseID: request.collapseID, until: until))
        devices[token] = device
        storedTokens[id] = token
        counters.stored += 1
        let outcome = PushOutcome(
            token: token, pushID: id, result: .stored, detail: "device offline: stored until \(WireDate.text(until))")
        effects += [
            .startTimer(.storedExpiry(pushID: id), at: until),
            .send(.outcome(outcome), to: connection),
            .log("stored push=\(id) token=\(token) until \(WireDate.text(until)) (device offline)"),
        ]
        return effects
    }

    // MARK: Helpers

    /// Writes a push to a device and starts its ack timer.
    mutating func deliver(
        _ delivery: PushDelivery, to connection: PushConnectionID, sender: PushConnectionID?, now: Date, fromStorage: Bool
    ) -> [Effect] {
        inFlight[delivery.id] = InFlight(delivery: delivery, connection: connection, sender: sender)
        counters.pushed += 1
        let kind = delivery.payload.cancel ? "cancel " : ""
        return [
            .send(.push(delivery), to: connection),
            .startTimer(.ackTimeout(pushID: delivery.id), at: now.addingTimeInterval(configuration.ackTimeout)),
            .log("pushed \(kind)push=\(delivery.id) token=\(delivery.token) to \(connection) call-id=\(delivery.payload.callID)"
                 + (fromStorage ? " (stored)" : "")),
        ]
    }

    /// An outcome that refuses the request at once.
    private func refuse(
        _ request: PushSendRequest, _ result: PushOutcome.Result, _ detail: String, from connection: PushConnectionID,
        log line: String
    ) -> [Effect] {
        let token = request.token.utf8.count > 256 ? request.token.clipped() : request.token
        return [.send(.outcome(PushOutcome(token: token, result: result, detail: detail)), to: connection), .log(line)]
    }

    /// `#3 (127.0.0.1:41234)`.
    func name(_ connection: PushConnectionID) -> String {
        peers[connection].map { "\(connection) (\($0))" } ?? connection.description
    }

    /// Why `token` is unusable: empty, over 256 bytes, or containing white space or control characters (tokens
    /// appear as `token=…` in logs).
    public static func tokenProblem(_ token: String) -> String? {
        if token.isEmpty { return "empty" }
        if token.utf8.count > 256 { return "longer than 256 bytes" }
        if token.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }) {
            return "contains white space or control characters"
        }
        return nil
    }

    /// The longest call id, handle value or display name a push may carry, in bytes of UTF-8 (so that every push
    /// fits in a frame whatever the sender wrote).
    public static let maxFieldBytes = 1024

    /// Why a send request's values are unusable, naming the member: `payload.callID: empty`. Strings are
    /// bounded (``maxFieldBytes``, 256-byte tokens, 64-byte collapse ids) so that every push fits in a frame.
    public static func requestProblem(_ request: PushSendRequest) -> String? {
        if let problem = tokenProblem(request.token) { return "token: \(problem)" }
        let payload = request.payload
        if payload.callID.isEmpty { return "payload.callID: empty" }
        if payload.handle.value.isEmpty { return "payload.handle.value: empty" }
        for (path, text) in [("payload.callID", payload.callID), ("payload.handle.value", payload.handle.value),
                             ("payload.handle.displayName", payload.handle.displayName)] where text.utf8.count > maxFieldBytes {
            return "\(path): longer than \(maxFieldBytes) bytes"
        }
        if payload.expiresAt < payload.sentAt { return "payload.expiresAt: before payload.sentAt" }
        if let collapseID = request.collapseID {
            if collapseID.isEmpty { return "collapseID: empty" }
            if collapseID.utf8.count > 64 { return "collapseID: longer than 64 bytes" }
        }
        if let expiration = request.expiration, !(expiration >= 0 && expiration.isFinite) {
            return "expiration: must be a number of seconds, 0 or more"
        }
        return nil
    }
}
