import Foundation

/// How the delegate completed an action.
enum ActionOutcome: Sendable {
    case fulfilled(Date?)
    case failed(String)
}

extension ManagerCore {
    /// Completes a pending action once. Returns whether this call counted as the caller meant it: false when
    /// the action was not pending, had timed out, or (for a fulfil) could not be applied any more — a merge
    /// whose partner ended or whose group limits no longer hold; the action's state then says why.
    mutating func complete(_ action: ConversationAction, with outcome: ActionOutcome, now: Date) -> Bool {
        guard let (waiting, slot) = takePending(action) else { return false }
        if now >= waiting.deadline {
            timeOut(waiting, slot: slot, now: now)
            return false
        }
        let applied: Bool
        switch outcome {
        case .failed(let reason):
            settle(action, as: .failed(reason: reason))
            applyOwnInput(.fail(action.verb), slot: slot, at: now, cause: action)
            applied = true
        case .fulfilled(let date):
            applied = fulfil(action, slot: slot, at: date ?? now, now: now)
        }
        deadlines.compact(liveCount: pendingUUIDs.count)
        return applied
    }

    /// Applies a fulfilled action; false when the manager had to fail it instead.
    private mutating func fulfil(_ action: ConversationAction, slot: Int, at date: Date, now: Date) -> Bool {
        let uuid = action.conversationUUID
        var regrouped: [UUID] = []
        switch action.kind {
        case .merge(let other):
            guard slotOf[UUIDKey(other)] != nil else {
                failOnCompletion(action, slot: slot, reason: "conversation \(other) ended before the merge completed", now: now)
                return false
            }
            do {
                regrouped = try groups.merge(uuid, with: other, limits: groupLimits, newGroupUUID: RandomUUID.make)
            } catch {
                failOnCompletion(action, slot: slot, reason: error.description, now: now)
                return false
            }
        case .unmerge:
            // Out of its group already (its partner ended and the group dissolved): the goal is reached.
            regrouped = groups.groupOf[uuid] == nil ? [] : groups.remove(uuid)
        case .start, .join, .end, .pause, .mute, .playTone, .transfer:
            break
        }
        settle(action, as: .complete)
        let mutedTo: Bool? = if case .mute(let isMuted) = action.kind { isMuted } else { nil }
        let regroups = !regrouped.isEmpty
        let group = regroups ? groups.groupOf[uuid] : nil
        applyOwnInput(.fulfill(action.verb), slot: slot, at: date, cause: action) { conversation in
            var changed = false
            if let mutedTo, conversation.isMuted != mutedTo {
                conversation.isMuted = mutedTo
                changed = true
            }
            if regroups, conversation.groupUUID != group {
                conversation.groupUUID = group
                changed = true
            }
            return changed
        }
        if regroups { regroup(regrouped, except: uuid) }
        return true
    }

    /// The delegate fulfilled an action the manager can no longer carry out (its group rules changed meanwhile).
    private mutating func failOnCompletion(_ action: ConversationAction, slot: Int, reason: String, now: Date) {
        settle(action, as: .failed(reason: reason))
        applyOwnInput(.fail(action.verb), slot: slot, at: now, cause: action)
    }

    /// Applies an input the manager derived from its own bookkeeping; a rejection here is a broken invariant.
    private mutating func applyOwnInput(
        _ input: LifecycleInput, slot: Int, at date: Date, cause: ConversationAction?,
        mutate: (inout Conversation) -> Bool = { _ in false }
    ) {
        do {
            try apply(input, slot: slot, at: date, cause: cause, mutate: mutate)
        } catch {
            preconditionFailure("the manager's own input was rejected: \(error)")
        }
    }

    /// Marks an action timed out, tells the delegate, and lets the lifecycle react (Start/Join/End end the conversation).
    private mutating func timeOut(_ waiting: PendingAction, slot: Int, now: Date) {
        settle(waiting.action, as: .timedOut)
        outbox.append(.timedOut(waiting.action))
        applyOwnInput(.timeOut(waiting.action.verb), slot: slot, at: now, cause: waiting.action)
    }

    /// Times out every action whose deadline has come and asks for the next wake-up. `deadline` is the
    /// deadline of the wake-up that called (nil for a driver's own call): once it has fired it is no longer
    /// scheduled, even if it fired early, so the next one is asked for.
    mutating func processDueTimeouts(now: Date, wokenFor deadline: Date?) {
        if let deadline, scheduledWakeUp == deadline { scheduledWakeUp = nil }
        while let due = deadlines.popDue(at: now) {
            guard due.action.isPending(sequence: due.sequence), let (waiting, slot) = takePending(due.action) else {
                continue
            }
            timeOut(waiting, slot: slot, now: now)
        }
        if let next = deadlines.earliest { scheduleDeadline(next, now: now) }
    }

    /// Reports a new incoming conversation: it is ringing when this returns.
    mutating func reportIncoming(
        uuid: UUID, update: Conversation.Update, now: Date
    ) throws(ConversationManagerError) {
        guard !isInvalidated else { throw .managerInvalidated }
        guard slotOf[UUIDKey(uuid)] == nil, !recentlyEnded.contains(uuid) else { throw .conversationAlreadyExists(uuid) }
        try checkHandles(update.allHandles)
        let capabilities = update.capabilities ?? configuration.defaultCapabilities
        if capabilities.contains(.video) && !configuration.supportsVideo { throw .videoNotSupported }
        var conversation = Conversation(uuid: uuid, direction: .incoming, createdAt: now, capabilities: capabilities)
        conversation.apply(update)
        let slot = insert(
            Entry(conversation: conversation, lifecycle: ConversationLifecycle(direction: .incoming),
                  sequence: takeSequence()))
        applyOwnInput(.reportIncoming, slot: slot, at: now, cause: nil)
    }

    /// Applies a backend event.
    mutating func report(_ event: Conversation.Event, for uuid: UUID) throws(ConversationManagerError) {
        guard !isInvalidated else { throw .managerInvalidated }
        let slot = try slot(uuid)
        do {
            switch event {
            case .startedConnecting(let date):
                try apply(.startedConnecting, slot: slot, at: date)
            case .connected(let date):
                try apply(.connected, slot: slot, at: date)
            case .ended(let date, let reason):
                try apply(.ended(reason), slot: slot, at: date)
            case .updated(let update):
                try checkUpdate(update)
                try apply(.updated, slot: slot, at: slots[slot].conversation.createdAt) { conversation in
                    let before = conversation
                    conversation.apply(update)
                    return conversation != before
                }
            }
        } catch let error as LifecycleRejection {
            throw .illegalTransition(error)
        } catch let error as ConversationManagerError {
            throw error
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
    }

    private func checkUpdate(_ update: Conversation.Update) throws(ConversationManagerError) {
        try checkHandles(update.allHandles)
        if let capabilities = update.capabilities, capabilities.contains(.video), !configuration.supportsVideo {
            throw .videoNotSupported
        }
    }

    /// Ends everything: fails every pending action, ends every conversation as failed, then resets.
    mutating func invalidate(now: Date) {
        guard !isInvalidated else { return }
        isInvalidated = true
        for waiting in allPending {
            _ = takePending(waiting.action)
            settle(waiting.action, as: .failed(reason: "the manager was invalidated"))
        }
        for entry in liveEntries {
            guard let slot = slotOf[UUIDKey(entry.conversation.uuid)] else { continue }
            applyOwnInput(.ended(.failed), slot: slot, at: now, cause: nil)
        }
        // The delegate hears every settlement before the reset, after which it hears nothing more.
        queueSettlements()
        outbox.append(.didReset)
    }
}
