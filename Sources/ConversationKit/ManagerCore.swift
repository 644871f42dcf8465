import Foundation

/// A delegate callback waiting in the outbox.
enum DelegateCallback: Sendable {
    case didBegin
    case didReset
    case changed(Conversation)
    case perform(ConversationAction)
    case timedOut(ConversationAction)
    case activateMedia(Conversation)
    case deactivateMedia(Conversation)
    case settled(ConversationAction, ConversationAction.State)
}

/// The right to deliver callbacks, held by one thread at a time: a batch taken from the outbox and the
/// delegate to hand it to.
struct DeliveryClaim: Sendable {
    var batch: [DelegateCallback]
    var delegate: (any ConversationManagerDelegate)?
    var generation: Int
}

/// Holds the delegate weakly.
struct WeakDelegate: Sendable {
    weak var value: (any ConversationManagerDelegate)?
}

/// Everything the manager knows, guarded by its lock. Mutations run here, on the value; delegate callbacks are
/// queued in `outbox` and delivered by the manager after the lock is released.
///
/// Live conversations sit in `slots` (found through `slotOf`) so each operation hashes a uuid once and then
/// mutates its entry in place.
struct ManagerCore: Sendable {
    struct PendingAction: Sendable {
        let action: ConversationAction
        let deadline: Date
        let sequence: UInt64
    }

    struct Entry: Sendable {
        var conversation: Conversation
        var lifecycle: ConversationLifecycle
        var pendingActions: [PendingAction] = []
        let sequence: UInt64

        /// What a freed slot holds until it is reused.
        static let vacant = Entry(
            conversation: Conversation(
                uuid: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), direction: .incoming,
                createdAt: .distantPast, capabilities: []),
            lifecycle: ConversationLifecycle(direction: .incoming, state: .left), sequence: 0)
    }

    let configuration: ConversationManager.Configuration
    /// Where settled actions' handlers run (the manager's settlement queue).
    let settlementQueue: DispatchQueue
    var delegate = WeakDelegate()
    var hasDelegate = false
    var delegateGeneration = 0
    private(set) var slots: [Entry] = []
    private(set) var slotOf: [UUIDKey: Int] = [:]
    private var freeSlots: [Int] = []
    /// Live conversations by sequence (oldest first), with the entries of ended ones left behind until they are
    /// half of it: listing and paging need no sort.
    private var order: [(key: UUIDKey, sequence: UInt64)] = []
    private var endedInOrder = 0
    var pendingUUIDs: Set<UUIDKey> = []
    /// How many pending actions are merges (so ending a conversation only looks for merges into it when any exist).
    var pendingMergeCount = 0
    var groups = GroupTable()
    var deadlines = DeadlineHeap()
    var scheduledWakeUp: Date?
    var wakeUpRequest: Date?
    var outbox: [DelegateCallback] = []
    var spareOutbox: [DelegateCallback] = []
    /// Actions settled by the current mutation, told to the delegate after its other callbacks (so a conversation's
    /// change comes before the settlement of the action that caused it).
    var settlements: [DelegateCallback] = []
    var isDelivering = false
    var isInvalidated = false
    /// Whether the wake-up relay currently holds the manager (it does while actions are pending).
    var relayHoldsManager = false
    var recentlyEnded = RecentlyEnded(capacity: 4096)
    private(set) var nextSequence: UInt64 = 0

    init(configuration: ConversationManager.Configuration, settlementQueue: DispatchQueue) {
        self.settlementQueue = settlementQueue
        self.configuration = configuration
    }

    var groupLimits: GroupTable.Limits {
        .init(
            maximumGroups: configuration.maximumConversationGroups,
            maximumPerGroup: configuration.maximumConversationsPerConversationGroup)
    }

    mutating func takeSequence() -> UInt64 {
        nextSequence += 1
        return nextSequence
    }

    // MARK: Entries

    /// The live entries, oldest first.
    var liveEntries: [Entry] { order.compactMap(liveEntry) }

    /// Up to `limit` live entries created after the one with sequence `after` (from the oldest when nil), oldest
    /// first, and whether more follow.
    func liveEntries(after: UInt64?, limit: Int) -> (entries: [Entry], more: Bool) {
        var index = 0
        if let after {
            var (low, high) = (0, order.count)
            while low < high {
                let middle = (low + high) / 2
                if order[middle].sequence <= after { low = middle + 1 } else { high = middle }
            }
            index = low
        }
        var entries: [Entry] = []
        while index < order.count {
            defer { index += 1 }
            guard let entry = liveEntry(order[index]) else { continue }
            if entries.count == limit { return (entries, true) }
            entries.append(entry)
        }
        return (entries, false)
    }

    /// The entry an `order` element names, unless that conversation has ended.
    private func liveEntry(_ element: (key: UUIDKey, sequence: UInt64)) -> Entry? {
        guard let slot = slotOf[element.key], slots[slot].sequence == element.sequence else { return nil }
        return slots[slot]
    }

    var liveCount: Int { slotOf.count }

    func entry(_ uuid: UUID) -> Entry? { slotOf[UUIDKey(uuid)].map { slots[$0] } }

    /// The slot of a live conversation, or the error for a uuid that names none.
    func slot(_ uuid: UUID) throws(ConversationManagerError) -> Int {
        guard let slot = slotOf[UUIDKey(uuid)] else { throw missing(uuid) }
        return slot
    }

    func missing(_ uuid: UUID) -> ConversationManagerError {
        recentlyEnded.contains(uuid) ? .conversationEnded(uuid) : .unknownConversation(uuid)
    }

    mutating func insert(_ entry: Entry) -> Int {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = entry
        } else {
            slot = slots.count
            slots.append(entry)
        }
        let key = UUIDKey(entry.conversation.uuid)
        slotOf[key] = slot
        // Sequences are taken as entries are inserted, so `order` stays sorted by appending.
        precondition(order.last.map { $0.sequence < entry.sequence } ?? true, "entries are inserted in sequence order")
        order.append((key, entry.sequence))
        return slot
    }

    private mutating func remove(slot: Int) -> Entry {
        let entry = slots[slot]
        precondition(slotOf[UUIDKey(entry.conversation.uuid)] == slot, "slot \(slot) is vacant")
        slots[slot] = .vacant
        slotOf[UUIDKey(entry.conversation.uuid)] = nil
        freeSlots.append(slot)
        recentlyEnded.insert(entry.conversation.uuid)
        endedInOrder += 1
        if endedInOrder > 64 && endedInOrder * 2 > order.count {
            let (slots, slotOf) = (self.slots, self.slotOf)
            order.removeAll { element in slotOf[element.key].map { slots[$0].sequence != element.sequence } ?? true }
            endedInOrder = 0
        }
        return entry
    }

    func checkHandles(_ handles: some Sequence<Handle>) throws(ConversationManagerError) {
        for handle in handles where !configuration.supportedHandleTypes.contains(handle.kind) {
            throw .unsupportedHandleKind(handle.kind)
        }
    }

    // MARK: Applying lifecycle inputs

    /// The one place where a lifecycle input is applied to a live conversation and its effects carried out:
    /// state and timestamps, `mutate` (for payload changes such as mute or members), then the callbacks:
    /// changed, media activation/deactivation, and on `finish` the end of the conversation.
    @discardableResult
    mutating func apply(
        _ input: LifecycleInput, slot: Int, at date: Date, cause: ConversationAction? = nil,
        mutate: (inout Conversation) -> Bool = { _ in false }
    ) throws(LifecycleRejection) -> LifecycleTransition {
        let transition = try slots[slot].lifecycle.handle(input)
        let payloadChanged = Self.record(transition, at: date, in: &slots[slot].conversation, mutate: mutate)
        let effects = transition.effects
        if effects.contains(.finish) {
            let entry = remove(slot: slot)
            outbox.append(.changed(entry.conversation))
            if effects.contains(.deactivateMedia) { outbox.append(.deactivateMedia(entry.conversation)) }
            finish(entry, cause: cause)
            return transition
        }
        if transition.changesState || payloadChanged || effects.contains(.activateMedia)
            || effects.contains(.deactivateMedia)
        {
            let conversation = slots[slot].conversation
            if transition.changesState || payloadChanged { outbox.append(.changed(conversation)) }
            if effects.contains(.activateMedia) { outbox.append(.activateMedia(conversation)) }
            if effects.contains(.deactivateMedia) { outbox.append(.deactivateMedia(conversation)) }
        }
        return transition
    }

    /// Writes a transition into the conversation value; returns whether `mutate` changed anything.
    private static func record(
        _ transition: LifecycleTransition, at date: Date, in conversation: inout Conversation,
        mutate: (inout Conversation) -> Bool
    ) -> Bool {
        conversation.state = transition.to
        let effects = transition.effects
        if effects.contains(.markStartedConnecting), conversation.startedConnectingAt == nil {
            conversation.startedConnectingAt = date
        }
        if effects.contains(.markConnected), conversation.connectedAt == nil {
            conversation.connectedAt = date
            if conversation.startedConnectingAt == nil { conversation.startedConnectingAt = date }
            if conversation.activeRemoteMembers.isEmpty && !conversation.members.isEmpty {
                var remote = conversation.members
                if let local = conversation.localMember { remote.remove(local) }
                conversation.activeRemoteMembers = remote
            }
        }
        let changed = mutate(&conversation)
        if effects.contains(.finish) {
            conversation.endedReason = transition.endedReason
            conversation.endedAt = date
            if !conversation.activeRemoteMembers.isEmpty { conversation.activeRemoteMembers = [] }
        }
        return changed
    }

    /// Ends an entry that has just been removed: completes its other pending actions, takes it out of its group.
    private mutating func finish(_ entry: Entry, cause: ConversationAction?) {
        let reason = entry.conversation.endedReason ?? .failed
        for waiting in entry.pendingActions where waiting.action !== cause {
            pendingUUIDs.remove(UUIDKey(waiting.action.uuid))
            if case .merge = waiting.action.kind { pendingMergeCount -= 1 }
            // An End whose conversation ended anyway reached its goal; anything else can no longer happen.
            let state: ConversationAction.State =
                waiting.action.verb == .end ? .complete : .failed(reason: "conversation ended (\(reason))")
            settle(waiting.action, as: state)
        }
        regroup(groups.remove(entry.conversation.uuid), except: entry.conversation.uuid)
        failMerges(into: entry.conversation.uuid)
    }

    /// Fails pending merges of other conversations with one that has just ended: they can no longer happen,
    /// and must stop counting against the group limits.
    private mutating func failMerges(into ended: UUID) {
        guard pendingMergeCount > 0 else { return }
        for slot in slotOf.values {
            let doomed = slots[slot].pendingActions.filter {
                if case .merge(let other) = $0.action.kind { other == ended } else { false }
            }
            guard !doomed.isEmpty else { continue }
            slots[slot].pendingActions.removeAll { waiting in doomed.contains { $0.action === waiting.action } }
            for waiting in doomed {
                pendingUUIDs.remove(UUIDKey(waiting.action.uuid))
                pendingMergeCount -= 1
                settle(waiting.action, as: .failed(reason: "conversation \(ended) ended before the merge completed"))
            }
        }
    }

    /// Refreshes `groupUUID` of conversations whose group changed and tells the delegate.
    mutating func regroup(_ changed: [UUID], except skipped: UUID?) {
        for other in changed where other != skipped {
            guard let slot = slotOf[UUIDKey(other)] else { continue }
            let group = groups.groupOf[other]
            guard slots[slot].conversation.groupUUID != group else { continue }
            slots[slot].conversation.groupUUID = group
            outbox.append(.changed(slots[slot].conversation))
        }
    }

    // MARK: Pending actions and deadlines

    mutating func addPending(_ pending: PendingAction, slot: Int, now: Date) {
        slots[slot].pendingActions.append(pending)
        pendingUUIDs.insert(UUIDKey(pending.action.uuid))
        if case .merge = pending.action.kind { pendingMergeCount += 1 }
        deadlines.push(.init(deadline: pending.deadline, sequence: pending.sequence, action: pending.action))
        scheduleDeadline(pending.deadline, now: now)
    }

    /// Finds and removes `action` from its conversation's pending list.
    mutating func takePending(_ action: ConversationAction) -> (PendingAction, slot: Int)? {
        guard let slot = slotOf[UUIDKey(action.conversationUUID)],
            let index = slots[slot].pendingActions.firstIndex(where: { $0.action === action })
        else { return nil }
        let pending = slots[slot].pendingActions.remove(at: index)
        pendingUUIDs.remove(UUIDKey(action.uuid))
        if case .merge = action.kind { pendingMergeCount -= 1 }
        return (pending, slot)
    }

    /// Every pending action, oldest first.
    var allPending: [PendingAction] {
        slotOf.values.flatMap { slots[$0].pendingActions }.sorted { $0.sequence < $1.sequence }
    }

    /// Asks for a wake-up at `deadline` unless one at or before it is still to come. A wake-up whose time has
    /// passed is not counted on (it may have fired while the relay held no manager, or be late), and one that
    /// fires early is cleared by `processDueTimeouts(now:wokenFor:)`, so a needed wake-up is never missing.
    mutating func scheduleDeadline(_ deadline: Date, now: Date) {
        if let scheduled = scheduledWakeUp, scheduled > now, scheduled <= deadline { return }
        scheduledWakeUp = deadline
        wakeUpRequest = min(wakeUpRequest ?? deadline, deadline)
    }

    /// Takes the outbox for delivery unless another thread is delivering or there is no delegate. A delegate
    /// that has gone away (it is held weakly) counts as none: its callbacks wait for the next one.
    mutating func claimDelivery() -> DeliveryClaim? {
        queueSettlements()
        guard !isDelivering, hasDelegate, !outbox.isEmpty else { return nil }
        guard let current = delegate.value else {
            hasDelegate = false
            return nil
        }
        isDelivering = true
        var claim = DeliveryClaim(batch: [], delegate: current, generation: delegateGeneration)
        swap(&claim.batch, &spareOutbox)
        swap(&outbox, &claim.batch)
        return claim
    }

    /// Takes a delivered claim back: `claim.batch` holds what was not delivered (because the delegate was
    /// replaced meanwhile), which goes back to the front of the outbox. Refills the claim with the next batch
    /// for the current delegate; returns false (giving up the claim) when there is nothing more to deliver.
    mutating func continueDelivery(_ claim: inout DeliveryClaim) -> Bool {
        if !claim.batch.isEmpty {
            // After any didBegin the new delegate was queued (it comes first), before everything newer.
            var position = 0
            while position < outbox.count, case .didBegin = outbox[position] { position += 1 }
            outbox.insert(contentsOf: claim.batch, at: position)
            claim.batch.removeAll(keepingCapacity: true)
        }
        if claim.generation != delegateGeneration {
            // Loading a weak reference is costly; only when the delegate was replaced.
            claim.delegate = delegate.value
            claim.generation = delegateGeneration
        }
        if claim.delegate == nil { hasDelegate = false }
        queueSettlements()
        guard !outbox.isEmpty, hasDelegate else {
            isDelivering = false
            swap(&claim.batch, &spareOutbox)
            claim.delegate = nil
            return false
        }
        swap(&outbox, &claim.batch)
        return true
    }

    /// Settles `action`: its own `whenSettled` handlers run on the settlement queue, and the delegate hears of it
    /// (`didSettle`) after the rest of this mutation's callbacks.
    mutating func settle(_ action: ConversationAction, as state: ConversationAction.State) {
        action.settle(state, on: settlementQueue)
        settlements.append(.settled(action, state))
    }

    /// Moves the settlements of the mutation that just ran to the end of the outbox.
    mutating func queueSettlements() {
        guard !settlements.isEmpty else { return }
        outbox += settlements
        settlements.removeAll(keepingCapacity: true)
    }

    mutating func takeWakeUpRequest() -> Date? {
        defer { wakeUpRequest = nil }
        return wakeUpRequest
    }
}
