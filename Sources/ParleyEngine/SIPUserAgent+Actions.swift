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
        guard legs.index(forKey: UUIDKey(action.conversationUUID)) != nil else {
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
        case .join where legMedia[UUIDKey(action.conversationUUID)]?.endpoint?.ice != nil:
            // An answer carries every candidate: it waits for the servers' (bounded by the gathering timeout).
            media?.whenEndpointReady(for: action.conversationUUID) { [weak self] _ in
                guard let self, !action.isComplete else { return }
                self.drive(action.conversationUUID) { leg, context in leg.perform(action, in: context) }
            }
        case .join, .end, .pause, .playTone:
            drive(action.conversationUUID) { leg, context in leg.perform(action, in: context) }
        case .mute(let isMuted):
            // Media is local: muting changes what we send, not the signalling.
            media?.muteChanged(isMuted, for: action.conversationUUID)
            _ = action.fulfill(at: environment.now)
        case .transfer(let handle):
            transfer(action, to: handle)
        case .merge, .unmerge:
            // Parley is the local focus of a merged group: each call keeps its own dialog, the manager keeps the
            // membership, and the mixing of media (when Parley carries media) happens here. Nothing to signal but
            // the held members' resume.
            _ = action.fulfill(at: environment.now)
            resumeMerged(action)
        }
    }

    /// A blind transfer: the target handle as a SIP URI (as a Start would call it; a phone number through
    /// `--phone-domain`), then the leg's REFER.
    private func transfer(_ action: ConversationAction, to handle: Handle) {
        switch HandleMapping.uri(for: handle, phoneDomain: configuration.phoneDomain(through: nil)) {
        case .success(let uri):
            drive(action.conversationUUID) { leg, context in leg.transfer(action, to: uri, in: context) }
        case .failure(let problem):
            _ = action.fail(reason: "\(handle.value) cannot be a transfer target: \(problem)")
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
        case .start, .pause, .playTone, .merge, .unmerge, .transfer:
            return false
        }
    }
}
