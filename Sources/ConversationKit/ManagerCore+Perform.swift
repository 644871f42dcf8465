import Foundation

/// A scratch copy of what a transaction touches, so every action is validated before any is applied.
/// Transactions are small: the first two conversations are stored inline (no allocation), more spill into an
/// array; lookups are linear.
struct TransactionPlan {
    struct Planned {
        let uuid: UUID
        /// The live conversation's slot; nil for one this transaction starts.
        let slot: Int?
        var lifecycle: ConversationLifecycle
        var capabilities: Conversation.Capabilities
        /// Verbs this transaction adds to the conversation, as bits (`1 << ActionVerb.bit`).
        var verbs: UInt16
    }
    private var first: Planned?
    private var second: Planned?
    private var rest: [Planned] = []
    var groups: GroupTable?

    var count: Int { first == nil ? 0 : second == nil ? 1 : 2 + rest.count }

    subscript(index: Int) -> Planned {
        get {
            switch index {
            case 0: first!
            case 1: second!
            default: rest[index - 2]
            }
        }
        set {
            switch index {
            case 0: first = newValue
            case 1: second = newValue
            default: rest[index - 2] = newValue
            }
        }
    }

    mutating func append(_ planned: Planned) -> Int {
        if first == nil { first = planned } else if second == nil { second = planned } else { rest.append(planned) }
        return count - 1
    }

    func index(_ uuid: UUID) -> Int? {
        if first?.uuid == uuid { return 0 }
        if second?.uuid == uuid { return 1 }
        return rest.firstIndex { $0.uuid == uuid }.map { $0 + 2 }
    }
}

extension ActionVerb {
    /// This verb's bit in a `UInt16` verb set.
    var bit: UInt16 {
        switch self {
        case .start: 1 << 0
        case .join: 1 << 1
        case .end: 1 << 2
        case .pause: 1 << 3
        case .resume: 1 << 4
        case .mute: 1 << 5
        case .playTone: 1 << 6
        case .merge: 1 << 7
        case .unmerge: 1 << 8
        case .transfer: 1 << 9
        }
    }

    /// The verbs that may not be pending twice on one conversation together with this one (none for tones,
    /// which queue).
    var exclusiveWith: UInt16 {
        switch self {
        case .pause, .resume: ActionVerb.pause.bit | ActionVerb.resume.bit
        case .playTone: 0
        case .start, .join, .end, .mute, .merge, .unmerge, .transfer: bit
        }
    }
}

extension ManagerCore {
    /// Validates every action against a scratch plan, then applies them all; on any error nothing is applied.
    mutating func perform(
        _ actions: [ConversationAction], now: Date, manager: ConversationManager
    ) throws(ConversationManagerError) {
        guard !isInvalidated else { throw .managerInvalidated }
        guard !actions.isEmpty else { throw .emptyTransaction }
        var plan = TransactionPlan()
        var claimed: [ConversationAction] = []
        do {
            for (position, action) in actions.enumerated() {
                try validate(action, earlier: actions[..<position], in: &plan, now: now, manager: manager, claimed: &claimed)
            }
        } catch {
            for action in claimed { action.releaseClaim() }
            throw error
        }
        for action in actions {
            let planned = plan.index(action.conversationUUID).flatMap { plan[$0].slot }
            commit(action, slot: planned, now: now, manager: manager)
        }
    }

    /// The planned copy of a conversation, made from the live entry on first use.
    private func planned(_ uuid: UUID, in plan: inout TransactionPlan) throws(ConversationManagerError) -> Int {
        if let index = plan.index(uuid) { return index }
        guard let slot = slotOf[UUIDKey(uuid)] else { throw missing(uuid) }
        return plan.append(
            .init(
                uuid: uuid, slot: slot, lifecycle: slots[slot].lifecycle,
                capabilities: slots[slot].conversation.capabilities, verbs: 0))
    }

    private func require(
        _ capability: Conversation.Capabilities, of planned: TransactionPlan.Planned
    ) throws(ConversationManagerError) {
        guard planned.capabilities.contains(capability) else {
            throw .missingCapability(conversation: planned.uuid, capability: capability)
        }
    }

    /// The groups as they would be if every pending merge and this transaction's earlier group changes
    /// succeeded (pending unmerges are not counted on: they may fail).
    private func projectedGroups(_ plan: inout TransactionPlan) -> GroupTable {
        if let groups = plan.groups { return groups }
        var projection = groups
        for waiting in allPending {
            switch waiting.action.kind {
            case .merge(let other):
                _ = try? projection.merge(
                    waiting.action.conversationUUID, with: other, limits: groupLimits, newGroupUUID: RandomUUID.make)
            case .unmerge, .start, .join, .end, .pause, .mute, .playTone, .transfer:
                // Pending unmerges may still fail, so the limits do not count on them.
                break
            }
        }
        plan.groups = projection
        return projection
    }

    private func validate(
        _ action: ConversationAction, earlier: ArraySlice<ConversationAction>, in plan: inout TransactionPlan,
        now: Date, manager: ConversationManager, claimed: inout [ConversationAction]
    ) throws(ConversationManagerError) {
        guard !earlier.contains(where: { $0 === action }) else { throw .duplicateActionUUID(action.uuid) }
        guard action.claim(for: manager) else { throw .actionAlreadyPerformed(action.uuid) }
        claimed.append(action)
        guard !pendingUUIDs.contains(UUIDKey(action.uuid)), !earlier.contains(where: { $0.uuid == action.uuid }) else {
            throw .duplicateActionUUID(action.uuid)
        }
        if let timeout = action.timeoutDate, !(timeout > now) {
            throw .invalidTimeoutDate(action.uuid, timeout)
        }
        let uuid = action.conversationUUID
        let verb = action.verb

        if case .start(let handles, let isVideo) = action.kind {
            guard slotOf[UUIDKey(uuid)] == nil, plan.index(uuid) == nil, !recentlyEnded.contains(uuid) else {
                throw .conversationAlreadyExists(uuid)
            }
            guard !handles.isEmpty else { throw .noHandles }
            try checkHandles(handles)
            if isVideo && !configuration.supportsVideo { throw .videoNotSupported }
            var lifecycle = ConversationLifecycle(direction: .outgoing)
            do { try lifecycle.handle(.perform(.start)) } catch { throw .illegalTransition(error) }
            _ = plan.append(
                .init(
                    uuid: uuid, slot: nil, lifecycle: lifecycle,
                    capabilities: configuration.defaultCapabilities.union(isVideo ? .video : []),
                    verbs: ActionVerb.start.bit))
            return
        }

        let index = try planned(uuid, in: &plan)
        var lifecycle = plan[index].lifecycle
        do { try lifecycle.handle(.perform(verb)) } catch { throw .illegalTransition(error) }

        let exclusive = verb.exclusiveWith
        if exclusive != 0 {
            let live = plan[index].slot.flatMap { slot in
                slots[slot].pendingActions.first { $0.action.verb.bit & exclusive != 0 }?.action.verb
            }
            if let live { throw .actionAlreadyPending(conversation: uuid, verb: live) }
            if exclusive & plan[index].verbs != 0 {
                let clash = ActionVerb.allCases.first { $0.bit & exclusive & plan[index].verbs != 0 }!
                throw .actionAlreadyPending(conversation: uuid, verb: clash)
            }
        }

        let subject = plan[index]
        switch action.kind {
        case .start:
            preconditionFailure("Start is validated above")
        case .join, .end, .mute, .transfer:
            break
        case .pause(let isPaused):
            // Resuming is always allowed: a conversation whose pausing capability went away while it was
            // paused must not be stuck on hold.
            if isPaused { try require(.pausing, of: subject) }
        case .playTone(let digits, _):
            try require(.playingTones, of: subject)
            guard !digits.isEmpty, digits.allSatisfy(ConversationAction.toneCharacters.contains) else {
                throw .invalidToneDigits(digits)
            }
        case .merge(let otherUUID):
            guard otherUUID != uuid else { throw .cannotMergeWithItself(uuid) }
            try require(.merging, of: subject)
            let other = plan[try planned(otherUUID, in: &plan)]
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
        plan[index].lifecycle = lifecycle
        plan[index].verbs |= verb.bit
    }

    /// Applies a validated action: creates the conversation for a Start, registers the action as pending with
    /// its deadline, moves the lifecycle and queues the callbacks.
    private mutating func commit(
        _ action: ConversationAction, slot planned: Int?, now: Date, manager: ConversationManager
    ) {
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
            // A conversation this same transaction started has no planned slot yet.
            guard let existing = planned ?? slotOf[UUIDKey(uuid)] else {
                preconditionFailure("validated action on a missing conversation")
            }
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
