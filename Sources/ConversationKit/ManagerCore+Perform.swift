import Foundation

/// A scratch copy of what a transaction touches, so every action is validated before any is applied.
/// Transactions are small: plain arrays, searched linearly.
struct TransactionPlan {
    struct Planned {
        let uuid: UUID
        /// The live conversation's slot; nil for one this transaction starts.
        let slot: Int?
        var lifecycle: ConversationLifecycle
        var capabilities: Conversation.Capabilities
        var verbs: [ActionVerb]
    }
    var conversations: [Planned] = []
    var groups: GroupTable?

    func index(_ uuid: UUID) -> Int? { conversations.firstIndex { $0.uuid == uuid } }
}

extension ManagerCore {
    /// Validates every action against a scratch plan, then applies them all; on any error nothing is applied.
    mutating func perform(
        _ actions: [ConversationAction], now: Date, manager: ConversationManager
    ) throws(ConversationManagerError) {
        guard !isInvalidated else { throw .managerInvalidated }
        guard !actions.isEmpty else { throw .emptyTransaction }
        var plan = TransactionPlan()
        for (position, action) in actions.enumerated() {
            try validate(action, earlier: actions[..<position], in: &plan)
        }
        for action in actions { commit(action, now: now, manager: manager) }
    }

    /// The planned copy of a conversation, made from the live entry on first use.
    private func planned(_ uuid: UUID, in plan: inout TransactionPlan) throws(ConversationManagerError) -> Int {
        if let index = plan.index(uuid) { return index }
        guard let slot = slotOf[uuid] else { throw missing(uuid) }
        plan.conversations.append(
            .init(
                uuid: uuid, slot: slot, lifecycle: slots[slot].lifecycle,
                capabilities: slots[slot].conversation.capabilities, verbs: []))
        return plan.conversations.count - 1
    }

    private func require(
        _ capability: Conversation.Capabilities, of planned: TransactionPlan.Planned
    ) throws(ConversationManagerError) {
        guard planned.capabilities.contains(capability) else {
            throw .missingCapability(conversation: planned.uuid, capability: capability)
        }
    }

    /// The groups as they will be once every pending merge/unmerge and this transaction's earlier ones complete.
    private func projectedGroups(_ plan: inout TransactionPlan) -> GroupTable {
        if let groups = plan.groups { return groups }
        var projection = groups
        for waiting in allPending {
            switch waiting.action.kind {
            case .merge(let other):
                _ = try? projection.merge(
                    waiting.action.conversationUUID, with: other, limits: groupLimits, newGroupUUID: RandomUUID.make)
            case .unmerge:
                _ = try? projection.unmerge(waiting.action.conversationUUID)
            case .start, .join, .end, .pause, .mute, .playTone:
                break
            }
        }
        plan.groups = projection
        return projection
    }

    private func validate(
        _ action: ConversationAction, earlier: ArraySlice<ConversationAction>, in plan: inout TransactionPlan
    ) throws(ConversationManagerError) {
        guard !action.wasPerformed else { throw .actionAlreadyPerformed(action.uuid) }
        guard !pendingUUIDs.contains(action.uuid), !earlier.contains(where: { $0.uuid == action.uuid }) else {
            throw .duplicateActionUUID(action.uuid)
        }
        let uuid = action.conversationUUID
        let verb = action.verb

        if case .start(let handles, let isVideo) = action.kind {
            guard slotOf[uuid] == nil, plan.index(uuid) == nil, !recentlyEnded.contains(uuid) else {
                throw .conversationAlreadyExists(uuid)
            }
            guard !handles.isEmpty else { throw .noHandles }
            try checkHandles(handles)
            if isVideo && !configuration.supportsVideo { throw .videoNotSupported }
            var lifecycle = ConversationLifecycle(direction: .outgoing)
            do { try lifecycle.handle(.perform(.start)) } catch { throw .illegalTransition(error) }
            plan.conversations.append(
                .init(
                    uuid: uuid, slot: nil, lifecycle: lifecycle,
                    capabilities: configuration.defaultCapabilities.union(isVideo ? .video : []), verbs: [.start]))
            return
        }

        let index = try planned(uuid, in: &plan)
        var lifecycle = plan.conversations[index].lifecycle
        do { try lifecycle.handle(.perform(verb)) } catch { throw .illegalTransition(error) }

        if verb != .playTone {
            let sameFamily: (ActionVerb) -> Bool =
                verb == .pause || verb == .resume ? { $0 == .pause || $0 == .resume } : { $0 == verb }
            let live = plan.conversations[index].slot.flatMap { slots[$0].pendingActions.first { sameFamily($0.action.verb) } }
            if let clash = live?.action.verb ?? plan.conversations[index].verbs.first(where: sameFamily) {
                throw .actionAlreadyPending(conversation: uuid, verb: clash)
            }
        }

        let subject = plan.conversations[index]
        switch action.kind {
        case .start:
            preconditionFailure("Start is validated above")
        case .join, .end, .mute:
            break
        case .pause:
            try require(.pausing, of: subject)
        case .playTone(let digits, _):
            try require(.playingTones, of: subject)
            guard !digits.isEmpty, digits.allSatisfy(ConversationAction.toneCharacters.contains) else {
                throw .invalidToneDigits(digits)
            }
        case .merge(let otherUUID):
            guard otherUUID != uuid else { throw .cannotMergeWithItself(uuid) }
            try require(.merging, of: subject)
            let other = plan.conversations[try planned(otherUUID, in: &plan)]
            do { _ = try other.lifecycle.peek(.perform(.merge)) } catch { throw .illegalTransition(error) }
            try require(.merging, of: other)
            var projection = projectedGroups(&plan)
            try projection.merge(uuid, with: otherUUID, limits: groupLimits, newGroupUUID: RandomUUID.make)
            plan.groups = projection
        case .unmerge:
            try require(.unmerging, of: subject)
            var projection = projectedGroups(&plan)
            try projection.unmerge(uuid)
            plan.groups = projection
        }
        plan.conversations[index].lifecycle = lifecycle
        plan.conversations[index].verbs.append(verb)
    }

    /// Applies a validated action: creates the conversation for a Start, registers the action as pending with
    /// its deadline, moves the lifecycle and queues the callbacks.
    private mutating func commit(_ action: ConversationAction, now: Date, manager: ConversationManager) {
        let uuid = action.conversationUUID
        let slot: Int
        if case .start(let handles, let isVideo) = action.kind {
            var conversation = Conversation(
                uuid: uuid, direction: .outgoing, createdAt: now,
                capabilities: configuration.defaultCapabilities.union(isVideo ? .video : []))
            conversation.members = Set(handles)
            slot = insert(
                Entry(conversation: conversation, lifecycle: ConversationLifecycle(direction: .outgoing),
                      sequence: takeSequence()))
            outbox.append(.changed(conversation))
        } else {
            guard let existing = slotOf[uuid] else { preconditionFailure("validated action on a missing conversation") }
            slot = existing
        }
        let sequence = takeSequence()
        let deadline = action.begin(
            with: manager, sequence: sequence, defaultDeadline: now.addingTimeInterval(configuration.defaultActionTimeout))
        addPending(PendingAction(action: action, deadline: deadline, sequence: sequence), slot: slot, now: now)
        do {
            try apply(.perform(action.verb), slot: slot, at: now)
        } catch {
            preconditionFailure("validated action \(action) was rejected on commit: \(error)")
        }
        outbox.append(.perform(action))
    }
}
