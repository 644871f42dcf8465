import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling

/// Actions from the manager's pipeline, whoever asked for them (a frontend, auto-answer, a push), turned into SIP.
extension SIPUserAgent {
    func perform(_ action: ConversationAction) {
        if case .start(let handles, _) = action.kind {
            start(action, handles: handles)
            return
        }
        guard let leg = legs[action.conversationUUID] else {
            if performForPushedCall(action) { return }
            // The conversation has no SIP side (it ended meanwhile): an End needs nothing more, others cannot run.
            if case .end = action.kind {
                _ = action.fulfill(at: environment.now)
            } else {
                _ = action.fail(reason: "the conversation has no SIP call")
            }
            return
        }
        switch action.kind {
        case .start:
            preconditionFailure("handled above")
        case .join:
            answer(leg, action: action)
        case .end:
            end(leg, action: action)
        case .pause(let isPaused):
            reinvite(leg, hold: isPaused, action: action)
        case .mute:
            // Media is local: muting changes what we send, not the signalling.
            _ = action.fulfill(at: environment.now)
        case .playTone(let digits, _):
            playTones(leg, digits: digits, action: action)
        case .merge, .unmerge:
            // Parley is the local focus of a merged group: each call keeps its own dialog, the manager keeps the
            // membership, and the mixing of media (when Parley carries media) happens here. Nothing to signal.
            _ = action.fulfill(at: environment.now)
        }
    }

    /// An action on a conversation announced by a push whose INVITE has not arrived: a Join waits for it, an End
    /// declines it now (the INVITE will be refused). False when the conversation is not such a one.
    private func performForPushedCall(_ action: ConversationAction) -> Bool {
        switch action.kind {
        case .join:
            return pushedCalls.update(uuid: action.conversationUUID) { $0.pendingJoin = action }
        case .end:
            guard pushedCalls.update(uuid: action.conversationUUID, { $0.declined = true }) else { return false }
            _ = action.fulfill(at: environment.now)
            return true
        case .mute:
            guard pushedCalls.contains(uuid: action.conversationUUID) else { return false }
            _ = action.fulfill(at: environment.now)
            return true
        case .start, .pause, .playTone, .merge, .unmerge:
            return false
        }
    }

    private func end(_ leg: CallLeg, action: ConversationAction) {
        if let join = leg.pendingJoin {
            leg.pendingJoin = nil
            _ = join.fail(reason: "ended")
        }
        switch leg.phase {
        case .ringing:
            refuse(leg, action: action)
        case .calling, .early:
            cancel(leg, action: action)
        case .awaitingACK, .confirmed:
            hangUp(leg, action: action)
        case .terminating:
            // Already on its way out (our CANCEL or BYE is out): done when that finishes.
            if leg.pendingEnd == nil { leg.pendingEnd = action } else { _ = action.fulfill(at: environment.now) }
        case .ended:
            _ = action.fulfill(at: environment.now)
        }
    }

    /// Ends every call on shutdown: BYE the connected ones, CANCEL the unanswered outgoing ones, refuse the ringing
    /// incoming ones with 480. Returns how many requests went out.
    func endAll() -> Int {
        var sent = 0
        for leg in Array(legs.values) {
            switch leg.phase {
            case .ringing:
                if let key = leg.inviteKey {
                    respond(to: leg.invite, key: key, status: 480, toTag: leg.localTag, reason: "Shutting Down")
                }
            case .calling:
                // Kept until a provisional response allows the CANCEL (or the INVITE times out).
                if leg.sawProvisional { sendCancel(leg) } else { leg.cancelWhenProvisional = true }
                continue
            case .early:
                sent += 1
                sendCancel(leg)
                continue
            case .awaitingACK, .confirmed:
                sent += 1
                sendBye(leg)
            case .terminating, .ended:
                break
            }
            forget(leg)
        }
        return sent
    }
}
