import CallHistory
import ConversationKit
import Foundation

/// A desktop notification Parley posts about a call (org.freedesktop.Notifications' `Notify`), before it is sent.
struct CallNotice: Sendable, Hashable {
    /// Which of the two notices.
    enum Kind: String, Sendable, Hashable {
        /// The call rings here: `call.incoming`, critical, resident, with Answer and Decline.
        case incoming
        /// Nobody answered it here: `call.unanswered`, with Call back.
        case missed
    }

    let kind: Kind
    let summary: String
    let body: String
    /// The action keys and labels, in pairs as Notify takes them.
    let actions: [String]
    let category: String
    /// 1 normal, 2 critical (does not expire).
    let urgency: UInt8
    let resident: Bool
    /// Milliseconds before the server may withdraw it: 0 never, -1 the server's default.
    let timeout: Int32
}

/// What the desktop should show about calls, decided from the calls' changes and the notification server's answers
/// (pure: inputs in, effects out; `CallNotifications` does the D-Bus calls).
///
/// ```
///   incoming call rings ──► post incoming ──posted(id)──► shown ──stops ringing──► withdraw(id)
///        │                      │ stops ringing before the id came: withdraw it as soon as it comes
///        │                      └─ failed: forgotten (no server: said once)
///   ActionInvoked(id, accept|decline) ──► answer | decline the call
///   ended unanswered here (missed) ──► post missed ──posted(id)──► ActionInvoked(id, callback) ──► call back
///   NotificationClosed(id) ──► forgotten (the user dismissed it; nothing is withdrawn later)
/// ```
struct CallNotificationPlan {
    /// An input: a call changed, the server answered a Notify, or it sent a signal.
    enum Input: Sendable {
        /// A conversation's new snapshot and the name to show for its caller.
        case changed(Conversation, name: String)
        /// The server took the notice of `kind` for `call` and numbered it `id`.
        case posted(call: UUID, kind: CallNotice.Kind, id: UInt32)
        /// The server refused it or never answered; `noServer` when none is on the bus.
        case postFailed(call: UUID, kind: CallNotice.Kind, noServer: Bool, reason: String)
        /// `ActionInvoked(id, key)`.
        case actionInvoked(id: UInt32, key: String)
        /// `NotificationClosed(id, reason)`.
        case closed(id: UInt32)
    }

    /// What to do.
    enum Effect: Sendable, Hashable {
        /// `Notify` this notice for `call`.
        case post(CallNotice, call: UUID)
        /// `CloseNotification(id)`.
        case withdraw(UInt32)
        /// Answer (join) the call, as the Answer button asks.
        case answer(UUID)
        /// Decline (end) the call.
        case decline(UUID)
        /// Place a new call to `handle` (the missed caller).
        case callBack(Handle)
        /// Say this in the log.
        case log(String)
    }

    /// Where an incoming call's notice is.
    private enum Incoming {
        /// Asked for; the id has not come. `withdraw`: the call stopped ringing meanwhile.
        case posting(withdraw: Bool)
        /// On screen as `id`.
        case shown(UInt32)
        /// Not on screen (the user dismissed it, or the server did not take it): not posted again while it rings.
        case gone
    }

    /// The most missed-call notices remembered for their Call back (older ones are forgotten, not withdrawn).
    static let maxMissed = 64

    private var incoming: [UUID: Incoming] = [:]
    /// Missed calls' callers by the call, until the notice's id comes, then by id.
    private var missedPosting: [UUID: Handle] = [:]
    private var missed: [(id: UInt32, caller: Handle)] = []
    /// Calls whose end was already handled (a late change of one is ignored).
    private var finished: [UUID] = []
    private var saidNoServer = false
    private var saidFailure = false

    /// Takes `input`; the effects to carry out, in order.
    mutating func take(_ input: Input) -> [Effect] {
        switch input {
        case .changed(let conversation, let name): return changed(conversation, name: name)
        case .posted(let call, let kind, let id): return posted(call, kind, id)
        case .postFailed(let call, let kind, let noServer, let reason): return postFailed(call, kind, noServer, reason)
        case .actionInvoked(let id, let key): return invoked(id, key)
        case .closed(let id):
            missed.removeAll { $0.id == id }
            if let call = call(shown: id) { incoming[call] = .gone }
            return []
        }
    }

    private mutating func changed(_ conversation: Conversation, name: String) -> [Effect] {
        let uuid = conversation.uuid
        guard conversation.direction == .incoming, !finished.contains(uuid) else { return [] }
        var effects: [Effect] = []
        if conversation.state == .ringing {
            if incoming[uuid] == nil {
                incoming[uuid] = .posting(withdraw: false)
                effects.append(.post(Self.incomingNotice(name), call: uuid))
            }
        } else if let shown = incoming[uuid] {
            switch shown {
            case .posting: incoming[uuid] = .posting(withdraw: true)
            case .shown(let id):
                incoming[uuid] = nil
                effects.append(.withdraw(id))
            case .gone: incoming[uuid] = nil
            }
        }
        if conversation.state == .left {
            finished.append(uuid)
            if finished.count > 1_024 { finished.removeFirst(finished.count - 1_024) }
            if let reason = conversation.endedReason, let caller = CallProperties.remote(of: conversation),
                CallStatus(direction: .incoming, connected: conversation.hasConnected, reason: reason) == .missed
            {
                missedPosting[uuid] = caller
                effects.append(.post(Self.missedNotice(name), call: uuid))
            }
        }
        return effects
    }

    private mutating func posted(_ call: UUID, _ kind: CallNotice.Kind, _ id: UInt32) -> [Effect] {
        switch kind {
        case .incoming:
            guard case .posting(let withdraw)? = incoming[call] else { return [.withdraw(id)] }
            if withdraw {
                incoming[call] = nil
                return [.withdraw(id)]
            }
            incoming[call] = .shown(id)
        case .missed:
            guard let caller = missedPosting.removeValue(forKey: call) else { return [] }
            missed.append((id, caller))
            if missed.count > Self.maxMissed { missed.removeFirst(missed.count - Self.maxMissed) }
        }
        return []
    }

    private mutating func postFailed(_ call: UUID, _ kind: CallNotice.Kind, _ noServer: Bool, _ reason: String) -> [Effect] {
        switch kind {
        case .incoming:
            if case .posting(withdraw: false)? = incoming[call] { incoming[call] = .gone } else { incoming[call] = nil }
        case .missed: missedPosting[call] = nil
        }
        if noServer {
            guard !saidNoServer else { return [] }
            saidNoServer = true
            return [.log("notifications: no notification server on the session bus (\(reason)); calls ring without them")]
        }
        guard !saidFailure else { return [] }
        saidFailure = true
        return [.log("notifications: the notification server did not take one (\(reason)); calls go on (said once)")]
    }

    private mutating func invoked(_ id: UInt32, _ key: String) -> [Effect] {
        if let call = call(shown: id) {
            switch key {
            case "accept": return [.answer(call)]
            case "decline": return [.decline(call)]
            default: return []
            }
        }
        if key == "callback", let index = missed.firstIndex(where: { $0.id == id }) {
            let caller = missed.remove(at: index).caller
            return [.callBack(caller)]
        }
        return []
    }

    /// The call whose incoming notice is on screen as `id`.
    private func call(shown id: UInt32) -> UUID? {
        incoming.first { if case .shown(id) = $0.value { true } else { false } }?.key
    }

    /// The incoming call's notice: the caller's name, Answer and Decline.
    static func incomingNotice(_ name: String) -> CallNotice {
        CallNotice(
            kind: .incoming, summary: "Incoming call", body: name, actions: ["accept", "Answer", "decline", "Decline"],
            category: "call.incoming", urgency: 2, resident: true, timeout: 0)
    }

    /// The missed call's notice: who called, Call back.
    static func missedNotice(_ name: String) -> CallNotice {
        CallNotice(
            kind: .missed, summary: "Missed call", body: name, actions: ["callback", "Call back"],
            category: "call.unanswered", urgency: 1, resident: false, timeout: -1)
    }
}
