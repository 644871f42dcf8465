import CallHistory
import ConversationKit
import Dispatch
import Foundation
import ParleyEngine
import SystemdSupport

extension ParleyDBusService {
    /// The most Recents lines one call returns.
    static let maxRecents = 500

    /// `Dial(s uri) → o`: the same checks as the control API's `start` (``DialTarget``); a refusal is
    /// `org.parley.Parley.Error.InvalidURI` and places nothing. Answered with the call's object at once, as `start`
    /// is answered once its conversation exists.
    func dial(_ call: BusMethodCall) {
        let text = call.arguments.first?.text ?? ""
        let handle: Handle
        switch DialTarget.handle(for: text, configuration: engine.configuration) {
        case .success(let found): handle = found
        case .failure(let problem): return call.fail(BusError(ParleyBus.Error.invalidURI, problem.message))
        }
        let start = ConversationAction.start(handles: [handle], isVideo: false)
        do {
            try engine.perform(start, makingRoom: false)
        } catch {
            return call.fail(BusError(ParleyBus.Error.refused, "Can't place the call: \(error)."))
        }
        log.info("D-Bus: \(call.sender) dialled \(handle.value) (conversation \(start.conversationUUID.uuidString))")
        guard let conversation = engine.manager.conversation(start.conversationUUID) else {
            return call.fail(BusError(ParleyBus.Error.failed, "The call ended at once."))
        }
        call.reply([.objectPath(add(conversation).path)])
    }

    /// `Recents(u limit) → a(sssssxub)`: the history's Recents lines, newest first (read off the loop).
    func recents(_ call: BusMethodCall) {
        guard let history else {
            return call.fail(BusError(ParleyBus.Error.noHistory, "This parleyd keeps no call history (it runs with --no-history)."))
        }
        var requested = 20
        if case .uint32(let asked)? = call.arguments.first { requested = Int(asked) }
        let limit = max(1, min(requested, Self.maxRecents))
        DispatchQueue.global().async {
            do {
                let lines = try history.recents(limit: limit).map(Self.recentsLine)
                call.reply([.array(elementSignature: String(ParleyBus.recentsSignature.dropFirst()), lines)])
            } catch {
                call.fail(BusError(ParleyBus.Error.failed, "The call history could not be read: \(error)"))
            }
        }
    }

    static func recentsLine(_ entry: RecentsEntry) -> BusValue {
        let record = entry.latest
        let remote = record.remoteHandles.first?.handle
        return .structure([
            .string(record.uuid.uuidString), .string(remote?.value ?? ""), .string(record.displayName),
            .string(record.direction.rawValue), .string(record.status.rawValue),
            .int64(Int64(record.startedAt.timeIntervalSince1970)), .uint32(UInt32(clamping: entry.count)), .bool(entry.hasUnread),
        ])
    }

    /// Performs a desktop user's `action` through the manager's pipeline: a Start or a Join (`callWaiting`) making
    /// room as call waiting does (the calls that are up are held), anything else as it is.
    func perform(_ action: ConversationAction, callWaiting: Bool) throws(ConversationManagerError) {
        if callWaiting {
            try engine.perform(action, makingRoom: false)
        } else {
            try engine.manager.perform([action])
        }
    }

    /// A method of a call object, through the manager's pipeline; answered when the action settles.
    func act(_ call: BusMethodCall, on object: CallObject) {
        let uuid = object.uuid
        guard calls[uuid] != nil, engine.manager.conversation(uuid) != nil else {
            return call.fail(.unknownObject("The call \(object.path) has ended."))
        }
        let action: ConversationAction
        var callWaiting = false
        switch call.member {
        case "Accept":
            action = .join(conversationUUID: uuid)
            callWaiting = true
        case "Hangup": action = .end(conversationUUID: uuid)
        case "Hold": action = .pause(conversationUUID: uuid, isPaused: true)
        case "Resume": action = .pause(conversationUUID: uuid, isPaused: false)
        case "Mute":
            guard case .bool(let muted) = call.arguments.first else { return call.fail(.invalidArguments("Mute takes a boolean.")) }
            action = .mute(conversationUUID: uuid, isMuted: muted)
        case "SendDtmf":
            let digits = call.arguments.first?.text ?? ""
            guard !digits.isEmpty, digits.count <= 64, digits.allSatisfy({ "0123456789*#ABCDabcd".contains($0) }) else {
                return call.fail(.invalidArguments("SendDtmf takes 1 to 64 of 0-9, *, # and A-D, got \(digits.debugDescription)."))
            }
            action = .playTone(conversationUUID: uuid, digits: digits.uppercased())
        case "Merge":
            guard let path = call.arguments.first?.text, let other = paths[path], other != uuid else {
                return call.fail(.invalidArguments("Merge takes another live call's object path."))
            }
            action = .merge(conversationUUID: uuid, with: other)
        case "Transfer":
            // The outcome may take the target's ringing: the leg waits 90 s after the REFER is accepted.
            guard let text = call.arguments.first?.text, case .success(let target) = DialTarget.handle(for: text, configuration: engine.configuration) else {
                return call.fail(.invalidArguments("Transfer takes a SIP URI or a phone number."))
            }
            action = .transfer(conversationUUID: uuid, to: target, timeoutDate: engine.manager.clock.now().addingTimeInterval(100))
        case "Silence":
            // The call's ringtone (or ringback) stops; the call keeps ringing. A call that does not ring has none.
            engine.silenceRinging(uuid)
            return call.reply()
        default:
            return call.fail(.failed("No method \(call.member)."))
        }
        do {
            try perform(action, callWaiting: callWaiting)
        } catch {
            return call.fail(BusError(ParleyBus.Error.refused, "Can't \(call.member.lowercased()) \(object.path): \(error)."))
        }
        action.whenSettled { state in
            switch state {
            case .complete: call.reply()
            case .failed(let reason): call.fail(BusError(ParleyBus.Error.failed, "\(call.member) did not work: \(reason)."))
            case .timedOut: call.fail(BusError(ParleyBus.Error.failed, "\(call.member) timed out."))
            case .idle, .running: break
            }
        }
    }
}
