import CallHistory
import ControlProtocol
import ConversationKit
import Foundation
import ParleyEngine

/// Serves the control protocol against a running engine: every method becomes an action through the same manager
/// pipeline that network-caused actions use, and the answer goes out when the action has completed (or failed, or
/// timed out). Transport-agnostic: it takes a request line and gives response lines.
public final class ControlService: Sendable {
    /// The engine served.
    public let engine: ParleyEngine
    private let status: @Sendable () -> [String: Any]
    /// The call history, for the history methods (nil: they answer `refused`).
    let history: (any CallHistoryStore)?
    /// The contacts, for `contact`.
    let contacts: ContactDirectory?

    /// A service for `engine`; `status` adds the daemon's facts (versions, addresses, registration) to `status`.
    public init(
        engine: ParleyEngine, history: (any CallHistoryStore)? = nil, contacts: ContactDirectory? = nil,
        status: @escaping @Sendable () -> [String: Any]
    ) {
        self.engine = engine
        self.history = history
        self.contacts = contacts
        self.status = status
    }

    /// What the transport should do besides answering.
    public enum Directive: Sendable {
        /// Nothing more.
        case none
        /// Start sending events to this client.
        case subscribe
    }

    /// Handles one request line; `reply` is called exactly once, now or when the action completes.
    @discardableResult
    public func handle(_ line: Data, reply: @escaping @Sendable (Data) -> Void) -> Directive {
        let request: ControlRequest
        do {
            request = try ControlRequest.parse(line)
        } catch {
            reply(ControlEncoding.error(error.error, id: error.id))
            return .none
        }
        do {
            return try serve(request, reply: reply)
        } catch {
            reply(ControlEncoding.error(error, id: request.id))
            return .none
        }
    }

    private func serve(
        _ request: ControlRequest, reply: @escaping @Sendable (Data) -> Void
    ) throws(ControlError) -> Directive {
        let manager = engine.manager
        switch request.method {
        case "status":
            var result = status()
            result["conversations"] = manager.conversations.count
            result["protocol"] = ControlProtocol.version
            let statistics = engine.statistics
            result["counters"] = [
                "messagesReceived": statistics.messagesReceived, "malformedMessages": statistics.malformedMessages,
                "incomingCalls": statistics.incomingCalls, "outgoingCalls": statistics.outgoingCalls,
                "liveCalls": statistics.liveCalls, "liveTransactions": statistics.liveTransactions,
            ]
            result["registration"] = "\(engine.registrationState)"
            reply(ControlEncoding.result(result, id: request.id))
            return .none
        case "list":
            let conversations = manager.conversations.sorted { $0.createdAt < $1.createdAt }
                .map { ConversationEncoding.json($0, callID: engine.callID(of: $0.uuid)) }
            reply(ControlEncoding.result(["conversations": conversations], id: request.id))
            return .none
        case "subscribe":
            reply(ControlEncoding.result(["events": ControlEvent.allCases.map(\.rawValue)], id: request.id))
            return .subscribe
        case "start":
            let to = try Self.string("to", in: request.params)
            let isVideo = try Self.bool("video", in: request.params) ?? false
            let handle = Self.handle(for: to)
            try perform(.start(handles: [handle], isVideo: isVideo), request: request, reply: reply)
            return .none
        case "join":
            try perform(.join(conversationUUID: try conversation(in: request.params)), request: request, reply: reply)
            return .none
        case "end":
            try perform(.end(conversationUUID: try conversation(in: request.params)), request: request, reply: reply)
            return .none
        case "hold", "resume":
            let uuid = try conversation(in: request.params)
            try perform(.pause(conversationUUID: uuid, isPaused: request.method == "hold"), request: request, reply: reply)
            return .none
        case "mute":
            let uuid = try conversation(in: request.params)
            let muted = try Self.bool("muted", in: request.params) ?? true
            try perform(.mute(conversationUUID: uuid, isMuted: muted), request: request, reply: reply)
            return .none
        case "playTone":
            let uuid = try conversation(in: request.params)
            let digits = try Self.string("digits", in: request.params)
            guard !digits.isEmpty, digits.allSatisfy({ "0123456789*#ABCDabcd".contains($0) }) else {
                throw ControlError(.invalidParams, "\"digits\" takes keypad digits (0-9, *, #, A-D), got \(digits.debugDescription)")
            }
            try perform(.playTone(conversationUUID: uuid, digits: digits), request: request, reply: reply)
            return .none
        case "merge":
            let uuid = try conversation(in: request.params)
            let other = try conversation(in: request.params, key: "with")
            try perform(.merge(conversationUUID: uuid, with: other), request: request, reply: reply)
            return .none
        case "unmerge":
            try perform(.unmerge(conversationUUID: try conversation(in: request.params)), request: request, reply: reply)
            return .none
        case "contact":
            let handle = Self.handle(for: try Self.string("handle", in: request.params))
            let name = contacts?.displayName(for: handle)
            reply(ControlEncoding.result(
                ["handle": ConversationEncoding.json(handle), "displayName": name == handle.value ? NSNull() : (name ?? NSNull()) as Any],
                id: request.id))
            return .none
        case "history", "markRead", "deleteRecord", "redial":
            guard let history else { throw ControlError(.refused, "this parleyd keeps no call history (--no-history)") }
            _ = try serveHistory(request, history: history, reply: reply)
            return .none
        default:
            throw ControlError(
                .unknownMethod, "no method \(request.method.debugDescription)",
                details: ["methods": ControlMethod.all.map(\.name)])
        }
    }

    /// Performs `action` through the manager and answers when it settles.
    func perform(
        _ action: ConversationAction, request: ControlRequest, reply: @escaping @Sendable (Data) -> Void
    ) throws(ControlError) {
        do {
            try engine.manager.perform([action])
        } catch {
            throw ControlError(.refused, "\(error)", details: ["action": action.kind.name])
        }
        let id = request.id
        let engine = engine
        // The answer goes when the action settles (the manager times it out if the engine never does).
        action.whenSettled { state in
            switch state {
            case .complete:
                var result: [String: Any] = ["action": action.kind.name, "state": "complete"]
                if let conversation = engine.manager.conversation(action.conversationUUID) {
                    result["conversation"] = ConversationEncoding.json(
                        conversation, callID: engine.callID(of: conversation.uuid))
                } else {
                    result["conversation"] = ["uuid": action.conversationUUID.uuidString, "state": "left"]
                }
                reply(ControlEncoding.result(result, id: id))
            case .failed(let reason):
                reply(ControlEncoding.error(ControlError(.failed, reason, details: ["action": action.kind.name]), id: id))
            case .timedOut:
                reply(ControlEncoding.error(ControlError(.timedOut, "the \(action.kind.name) action timed out"), id: id))
            case .idle, .running:
                preconditionFailure("an action settles only as complete, failed or timed out")
            }
        }
    }

    /// The conversation a parameter names: a full uuid or a unique prefix of a live one.
    private func conversation(in params: [String: Any], key: String = "conversation") throws(ControlError) -> UUID {
        let text = try Self.string(key, in: params).lowercased()
        if let uuid = UUID(uuidString: text), engine.manager.conversation(uuid) != nil { return uuid }
        let matches = engine.manager.conversations.filter { $0.uuid.uuidString.lowercased().hasPrefix(text) }
        switch matches.count {
        case 1: return matches[0].uuid
        case 0: throw ControlError(.notFound, "no live conversation \(text.debugDescription)")
        default:
            throw ControlError(
                .notFound, "\(text.debugDescription) names \(matches.count) conversations; give more of the uuid",
                details: ["matches": matches.map(\.uuid.uuidString)])
        }
    }

    /// A SIP URI as a generic handle; digits (with + and separators) as a phone number.
    static func handle(for text: String) -> Handle {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let isNumber = !trimmed.isEmpty && trimmed.allSatisfy { $0.isNumber || "+-(). ".contains($0) }
        return Handle(kind: isNumber ? .phoneNumber : .generic, value: trimmed, displayName: trimmed)
    }

    static func string(_ key: String, in params: [String: Any]) throws(ControlError) -> String {
        guard let value = params[key] else { throw ControlError(.invalidParams, "missing \"\(key)\"") }
        guard let string = value as? String, !string.isEmpty else {
            throw ControlError(.invalidParams, "\"\(key)\" must be a non-empty string")
        }
        return string
    }

    static func bool(_ key: String, in params: [String: Any]) throws(ControlError) -> Bool? {
        guard let value = params[key] else { return nil }
        guard let bool = value as? Bool else { throw ControlError(.invalidParams, "\"\(key)\" must be true or false") }
        return bool
    }

    /// The event line for an engine event.
    public static func event(for event: EngineEvent) -> Data {
        switch event {
        case .conversationChanged(let transition):
            return Self.event(for: transition)
        case .historyRecorded(let uuid):
            return ControlEncoding.event(ControlEvent.historyChanged.rawValue, data: ["conversation": uuid.uuidString])
        case .registrationChanged(let state):
            return ControlEncoding.event(ControlEvent.registrationChanged.rawValue, data: ["state": "\(state)"])
        case .pushHandled(let callID, let handling):
            return ControlEncoding.event(
                ControlEvent.pushReceived.rawValue, data: ["callID": callID, "handling": "\(handling)"])
        case .actionSettled(let action, let state):
            var data: [String: Any] = [
                "action": action.kind.name, "conversation": action.conversationUUID.uuidString,
                "uuid": action.uuid.uuidString,
            ]
            switch state {
            case .complete: data["state"] = "complete"
            case .failed(let reason):
                data["state"] = "failed"
                data["reason"] = reason
            case .timedOut: data["state"] = "timedOut"
            case .idle, .running: data["state"] = "\(state)"
            }
            return ControlEncoding.event(ControlEvent.actionSettled.rawValue, data: data)
        }
    }

    /// The event line for a transition.
    public static func event(for transition: ConversationTransition) -> Data {
        var data: [String: Any] = [
            "conversation": ConversationEncoding.json(transition.conversation, callID: transition.callID)
        ]
        data["from"] = transition.from.map { "\($0)" } ?? NSNull()
        return ControlEncoding.event(ControlEvent.conversationChanged.rawValue, data: data)
    }
}
