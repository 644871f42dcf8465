import Foundation

extension PushService {
    /// How an in-flight push ended without the device saying it reported the conversation.
    private enum Failure {
        case notReported(reason: String?)
        case timedOut
        case lost

        var detail: String {
            switch self {
            case .notReported(let reason): "the device did not report the conversation" + (reason.map { ": \($0)" } ?? "")
            case .timedOut: "no ack within the ack timeout: counted as not reported"
            case .lost: "the device disconnected before acking: counted as not reported"
            }
        }
    }

    /// The device on `connection` acks push `pushID`.
    public mutating func acknowledge(pushID: String, _ ack: PushAck, from connection: PushConnectionID, now: Date) -> [Effect] {
        guard let flight = inFlight[pushID], flight.connection == connection else {
            counters.protocolErrors += 1
            let fault = PushFault(
                code: .unknownPush, message: "push \(pushID) is not waiting for an ack from this connection (unknown, already acked or timed out)")
            return [.send(.error(fault), to: connection), .log("stray ack for push=\(pushID) from \(name(connection))")]
        }
        inFlight[pushID] = nil
        var effects: [Effect] = [.cancelTimer(.ackTimeout(pushID: pushID))]
        let delivery = flight.delivery
        if ack.reported {
            counters.reported += 1
            effects.append(.log("delivered push=\(pushID) token=\(delivery.token) reported=true"))
            if let sender = flight.sender {
                let outcome = PushOutcome(
                    token: delivery.token, pushID: pushID, result: .delivered, reported: true,
                    detail: "the device reported the conversation")
                effects.append(.send(.outcome(outcome), to: sender))
            }
            return effects
        }
        counters.notReported += 1
        let reason = ack.reason.map { $0.clipped(to: 256) }
        effects.append(.log("delivered push=\(pushID) token=\(delivery.token) reported=false" + (reason.map { " reason=\"\($0)\"" } ?? "")))
        return effects + fail(flight, .notReported(reason: reason))
    }

    /// A timer the service started is due (one that was cancelled or already handled is ignored).
    public mutating func timerFired(_ timer: PushTimer, now: Date) -> [Effect] {
        switch timer {
        case .ackTimeout(let pushID):
            guard let flight = inFlight.removeValue(forKey: pushID) else { return [] }
            counters.ackTimeouts += 1
            let seconds = configuration.ackTimeout.formatted(.number.precision(.fractionLength(0...3)))
            return [.log("ack timeout push=\(pushID) token=\(flight.delivery.token) after \(seconds)s: not reported")]
                + fail(flight, .timedOut)
        case .storedExpiry(let pushID):
            guard let token = storedTokens.removeValue(forKey: pushID),
                let index = devices[token]?.stored.firstIndex(where: { $0.id == pushID })
            else { return [] }
            devices[token]?.stored.remove(at: index)
            counters.expired += 1
            return [.log("expired push=\(pushID) token=\(token) (stored, never delivered)")]
        }
    }

    /// `connection` has closed (whoever closed it, for `reason`): its tokens go offline, and pushes it had not acked count as
    /// not reported.
    public mutating func connectionClosed(_ connection: PushConnectionID, reason: String, now: Date) -> [Effect] {
        var effects: [Effect] = [.log("connection \(name(connection)) closed: \(reason)")]
        for token in (tokensByConnection.removeValue(forKey: connection) ?? []).sorted() where devices[token]?.connection == connection {
            devices[token]?.connection = nil
            effects.append(.log("offline token=\(token)"))
        }
        for pushID in inFlight.keys.sorted(by: Self.pushOrder) {
            guard let flight = inFlight[pushID] else { continue }
            if flight.connection == connection {
                inFlight[pushID] = nil
                counters.lostInFlight += 1
                effects.append(.cancelTimer(.ackTimeout(pushID: pushID)))
                effects.append(.log("lost push=\(pushID) token=\(flight.delivery.token): \(connection) closed before acking"))
                effects += fail(flight, .lost)
            } else if flight.sender == connection {
                inFlight[pushID]?.sender = nil
            }
        }
        peers[connection] = nil
        return effects
    }

    /// Closes the connection holding `token` (a simulated network drop); nothing if none does.
    public func disconnect(token: String) -> [Effect] {
        guard let connection = devices[token]?.connection else { return [] }
        return [.close(connection, reason: "disconnected by the simulator"), .log("disconnecting token=\(token) on \(connection)")]
    }

    /// Every known token and the counters.
    public var statusReport: PushStatusReport {
        let lines = devices.keys.sorted().compactMap { token in
            devices[token].map {
                PushStatusReport.Device(
                    token: token, connected: $0.connection != nil, strikes: $0.strikes, disabled: $0.disabled,
                    queued: $0.stored.count)
            }
        }
        return PushStatusReport(devices: lines, counters: counters)
    }

    /// The status report, its device list cut (and the cut counted in `omittedDevices`) so that its message
    /// encodes in at most `limit` bytes.
    public func statusReport(fittingIn limit: Int) -> PushStatusReport {
        var report = statusReport
        func fits(_ report: PushStatusReport) -> Bool { PushCodec.encode(.statusReport(report)).count <= limit }
        guard !fits(report) else { return report }
        let all = report.devices
        var low = 0, high = all.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            report.devices = Array(all.prefix(middle))
            report.omittedDevices = all.count - middle
            if fits(report) { low = middle } else { high = middle - 1 }
        }
        report.devices = Array(all.prefix(low))
        report.omittedDevices = all.count - low
        return report
    }

    /// `p2` before `p10`.
    static func pushOrder(_ a: String, _ b: String) -> Bool {
        (Int(a.dropFirst()) ?? 0, a) < (Int(b.dropFirst()) ?? 0, b)
    }

    // MARK: Strikes

    /// Tells the waiting sender, and gives a strike unless the push was a cancel push.
    private mutating func fail(_ flight: InFlight, _ failure: Failure) -> [Effect] {
        let delivery = flight.delivery
        var effects: [Effect] = []
        var detail = failure.detail
        if delivery.payload.cancel {
            detail += " (a cancel push: not a strike)"
            effects.append(.log("cancel push=\(delivery.id) token=\(delivery.token) not reported: not a strike"))
        } else {
            let (strikeEffects, note) = strike(delivery.token, pushID: delivery.id)
            effects += strikeEffects
            detail += "; \(note)"
        }
        if let sender = flight.sender {
            let outcome = PushOutcome(
                token: delivery.token, pushID: delivery.id, result: .delivered, reported: false, detail: detail)
            effects.append(.send(.outcome(outcome), to: sender))
        }
        return effects
    }

    /// One strike against `token`; disables it at `maxFailures`. Returns the effects and a note for the sender.
    private mutating func strike(_ token: String, pushID: String) -> ([Effect], String) {
        guard var device = devices[token] else {
            preconditionFailure("a push was in flight for token \(token), which the service does not know")
        }
        guard !device.disabled else {
            return ([.log("token=\(token) already disabled: push=\(pushID) adds no strike")], "token already disabled")
        }
        let limit = configuration.maxFailures
        device.strikes += 1
        counters.strikes += 1
        var effects: [Effect] = [.log("strike \(device.strikes)/\(limit) token=\(token) push=\(pushID)")]
        guard device.strikes >= limit else {
            devices[token] = device
            return (effects, "strike \(device.strikes)/\(limit)")
        }
        device.disabled = true
        counters.disabledTokens += 1
        effects.append(.log("token \(token) disabled after \(device.strikes) strikes"))
        for push in device.stored {
            storedTokens[push.id] = nil
            counters.droppedStored += 1
            effects += [.cancelTimer(.storedExpiry(pushID: push.id)),
                        .log("dropped push=\(push.id) token=\(token): token disabled")]
        }
        device.stored = []
        if let connection = device.connection {
            let fault = PushFault(
                code: .tokenDisabled,
                message: "token \(token) is disabled: the device failed to report \(device.strikes) pushes")
            effects.append(.send(.error(fault), to: connection))
        }
        devices[token] = device
        return (effects, "strike \(device.strikes)/\(limit): token disabled")
    }
}
