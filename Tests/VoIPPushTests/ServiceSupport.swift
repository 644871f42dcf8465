import ConversationKit
import Foundation
import Testing

@testable import VoIPPush

/// A `PushService` on a manual clock: time moves only when a test says so, and due timers fire as it does.
struct ServiceHarness {
    var service: PushService
    var now = Date(timeIntervalSince1970: 1_767_225_600)
    /// Timers the service asked for and has not cancelled.
    var timers: [PushTimer: Date] = [:]
    /// Every effect so far.
    var history: [PushService.Effect] = []

    static let device = PushConnectionID(1)
    static let sender = PushConnectionID(2)
    static let otherDevice = PushConnectionID(3)

    init(_ configuration: PushService.Configuration = PushService.Configuration()) {
        service = PushService(configuration: configuration)
    }

    /// Runs an input, tracks its timers and returns its effects.
    mutating func run(_ input: (inout PushService, Date) -> [PushService.Effect]) -> [PushService.Effect] {
        let effects = input(&service, now)
        for effect in effects {
            switch effect {
            case .startTimer(let timer, let date): timers[timer] = date
            case .cancelTimer(let timer): timers[timer] = nil
            case .send, .close, .log: break
            }
        }
        history += effects
        return effects
    }

    mutating func register(_ token: String, on connection: PushConnectionID = device) -> [PushService.Effect] {
        run { $0.register(token: token, from: connection, now: $1) }
    }

    mutating func send(_ request: PushSendRequest, from connection: PushConnectionID = sender) -> [PushService.Effect] {
        run { $0.send(request, from: connection, now: $1) }
    }

    mutating func ack(_ pushID: String, _ ack: PushAck, from connection: PushConnectionID = device) -> [PushService.Effect] {
        run { $0.acknowledge(pushID: pushID, ack, from: connection, now: $1) }
    }

    mutating func close(_ connection: PushConnectionID) -> [PushService.Effect] {
        run { $0.connectionClosed(connection, reason: "test", now: $1) }
    }

    /// Moves time on, firing due timers in deadline order; returns the effects of those that fired.
    mutating func advance(by seconds: TimeInterval) -> [PushService.Effect] {
        let target = now.addingTimeInterval(seconds)
        var effects: [PushService.Effect] = []
        while let (timer, date) = timers.filter({ $0.value <= target }).min(by: { $0.value < $1.value }) {
            timers[timer] = nil
            now = date
            effects += run { $0.timerFired(timer, now: $1) }
        }
        now = target
        return effects
    }

    /// A send request for `token` whose payload expires `ttl` seconds from now.
    func request(
        _ token: String = "d1", callID: String = "call-1", ttl: TimeInterval = 60, cancel: Bool = false,
        collapseID: String? = nil, expiration: TimeInterval? = nil
    ) -> PushSendRequest {
        let payload = PushPayload(
            handle: Handle(kind: .generic, value: "sip:alice@127.0.0.1:5062", displayName: "Alice"), callID: callID,
            sentAt: now, expiresAt: now.addingTimeInterval(ttl), cancel: cancel)
        return PushSendRequest(token: token, payload: payload, collapseID: collapseID, expiration: expiration)
    }
}

extension Array where Element == PushService.Effect {
    /// Messages sent to `connection`, in order.
    func messages(to connection: PushConnectionID) -> [PushMessage] {
        compactMap { effect in
            if case .send(let message, let target) = effect, target == connection { return message }
            return nil
        }
    }

    /// Outcomes sent to anyone.
    var outcomes: [PushOutcome] {
        compactMap { effect in
            if case .send(.outcome(let outcome), _) = effect { return outcome }
            return nil
        }
    }

    /// Pushes sent to anyone.
    var pushes: [PushDelivery] {
        compactMap { effect in
            if case .send(.push(let delivery), _) = effect { return delivery }
            return nil
        }
    }

    /// Error replies sent to anyone.
    var faults: [PushFault] {
        compactMap { effect in
            if case .send(.error(let fault), _) = effect { return fault }
            return nil
        }
    }

    /// Log lines.
    var logs: [String] {
        compactMap { effect in
            if case .log(let line) = effect { return line }
            return nil
        }
    }
}
