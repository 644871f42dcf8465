import ConversationKit
import Foundation

/// What a call the user places or answers does to the calls that are up (`parleyd --on-new-call`).
public enum NewCallPolicy: String, Sendable, CaseIterable {
    /// They are held first (LiveCommunicationKit's behaviour for a new call that is not merged in): the microphone
    /// goes to the new call alone, and the user hears it alone.
    case hold
    /// They stay as they are (each call hears the microphone; the user hears them all).
    case none
}

/// Call waiting (issue 44): the actions that make room for a new call, performed through the manager like any other,
/// before the call's own Start or Join.
///
/// ```
///   the user places or answers a call ──► every other joined call: pause (--on-new-call hold), or nothing (none)
///   that call ends without ever connecting ──► the calls held for it resume
///   the user answers with endOthers ("End & Answer") ──► every other joined or held call: end
///   the user merges calls ──► the members that were held resume (a merged group talks together)
/// ```
extension ParleyEngine {
    /// The actions that make room for `action`, a Start or a Join the user asked for: the other calls that are up
    /// held (or, `endingOthers`, the other joined or held calls ended). Empty for any other action, or when
    /// nothing is up. Calls the new one is merged with are left alone; so are calls still ringing.
    public func makingRoom(for action: ConversationAction, endingOthers: Bool = false) -> [ConversationAction] {
        switch action.kind {
        case .start, .join: break
        default: return []
        }
        let others = manager.conversations.filter { $0.uuid != action.conversationUUID }
        if endingOthers {
            return others.filter { [.joined, .paused].contains($0.state) }.map { .end(conversationUUID: $0.uuid) }
        }
        guard configuration.onNewCall == .hold else { return [] }
        let group = manager.conversation(action.conversationUUID)?.groupUUID
        return others.filter { $0.state == .joined && (group == nil || $0.groupUUID != group) }
            .map { .pause(conversationUUID: $0.uuid, isPaused: true) }
    }
}

extension ParleyEngine {
    /// Performs the user's `action` (a Start or a Join) through the manager with ``makingRoom(for:endingOthers:)``'s
    /// actions before it, in one transaction: when the manager refuses the new call, nothing is held or ended. A
    /// step the manager refuses on its own (a hold already on its way) is left out; the rest are done. The calls
    /// held for the new call are remembered: if it ends without ever connecting (refused, unanswered, failed), they
    /// resume.
    public func perform(_ action: ConversationAction, makingRoom endingOthers: Bool) throws(ConversationManagerError) {
        let room = makingRoom(for: action, endingOthers: endingOthers)
        var done = room
        do {
            try manager.perform(room + [action])
        } catch {
            guard !room.isEmpty else { throw error }
            try manager.perform([action])
            done = room.filter { step in
                do {
                    try manager.perform([step])
                    return true
                } catch {
                    log.info("\(step.conversationUUID): left as it is for the new call: \(error)")
                    return false
                }
            }
        }
        let held = done.filter { if case .pause = $0.kind { true } else { false } }.map(\.conversationUUID)
        guard !held.isEmpty else { return }
        let newCall = UUIDKey(action.conversationUUID)
        withAgent { [held] in $0.heldForNewCall[newCall] = held }
    }
}

extension SIPUserAgent {
    /// A conversation changed: its group session follows it, and call waiting.
    func follow(_ conversation: Conversation) {
        groups.conversationChanged(conversation)
        newCallChanged(conversation)
        // A call a peer's REFER asked for that ended by any path (before its INVITE went out too): the peer hears
        // its outcome, and the referrer's leg may take another REFER (nothing when it was told already).
        if conversation.state == .left, referredCalls[UUIDKey(conversation.uuid)] != nil {
            let status = referredStatus[UUIDKey(conversation.uuid)] ?? SIPFinalStatus(code: 503, reason: "Service Unavailable")
            referredCallFailed(conversation.uuid, status)
        }
    }

    /// A conversation changed: a new call that connected keeps the calls held for it held; one that ended without
    /// connecting resumes them (those still held).
    func newCallChanged(_ conversation: Conversation) {
        let key = UUIDKey(conversation.uuid)
        guard let held = heldForNewCall[key] else { return }
        if conversation.state == .joined { heldForNewCall[key] = nil }
        guard conversation.state == .left else { return }
        heldForNewCall[key] = nil
        environment.atEndOfTurn { [weak self] in
            guard let self else { return }
            for uuid in held where self.manager.conversation(uuid)?.state == .paused {
                self.log.info("\(uuid): resumed: the call it was held for (\(conversation.uuid)) never connected")
                try? self.manager.perform([.pause(conversationUUID: uuid, isPaused: false)])
            }
        }
    }

    /// A merge went through: its members that were held resume (a merged group talks together, as CallKit's merge
    /// does), through the manager after this turn; a member whose hold is still on its way (call waiting held it
    /// just before the merge) resumes once that hold is done.
    func resumeMerged(_ action: ConversationAction) {
        guard case .merge(let other) = action.kind else { return }
        environment.atEndOfTurn { [weak self] in
            guard let self else { return }
            let members = [action.conversationUUID, other].compactMap(self.manager.conversation).flatMap { conversation in
                conversation.groupUUID.map { group in self.manager.conversations.filter { $0.groupUUID == group } } ?? [conversation]
            }
            for member in Set(members.map(\.uuid)) {
                let holding = self.manager.pendingActions(for: member).first {
                    if case .pause(true) = $0.kind { return true } else { return false }
                }
                if holding != nil {
                    self.resumeAfterHold.insert(UUIDKey(member))
                } else if self.manager.conversation(member)?.state == .paused {
                    self.resumeForMerge(member)
                }
            }
        }
    }

    /// A hold was done: a merge that went through while it was on its way resumes the call now (after this turn).
    func holdSettled(_ action: ConversationAction) {
        guard case .pause(true) = action.kind, resumeAfterHold.remove(UUIDKey(action.conversationUUID)) != nil else { return }
        environment.atEndOfTurn { [weak self] in self?.resumeForMerge(action.conversationUUID) }
    }

    /// Resumes a held member of a merged group.
    private func resumeForMerge(_ member: UUID) {
        guard let conversation = manager.conversation(member), conversation.state == .paused, conversation.groupUUID != nil else { return }
        do {
            try manager.perform([.pause(conversationUUID: member, isPaused: false)])
        } catch {
            log.info("\(member): not resumed for its merge: \(error)")
        }
    }
}
