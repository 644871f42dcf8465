import Foundation
import Synchronization

/// The conversation engine: it holds every live conversation, runs every action through one delegate pipeline,
/// and reports every change. Modelled on LiveCommunicationKit's `ConversationManager`.
///
/// - Requests from frontends (`perform`) and from the network (`reportNewIncomingConversation`,
///   `reportConversationEvent`) are validated first and either applied whole or refused with a
///   ``ConversationManagerError``.
/// - Each performed action reaches the delegate's `perform` and completes exactly once: fulfilled, failed, or
///   timed out at its timeout date.
/// - Delegate callbacks are delivered in order, one at a time, never under the manager's lock. Callbacks raised
///   before a delegate is attached wait for it.
/// - Safe to call from any thread. Time comes from an injected ``ConversationClock``.
///
/// Unlike LiveCommunicationKit, reports are synchronous: when `reportNewIncomingConversation` returns, the
/// conversation is ringing — the guarantee a VoIP push handler needs.
public final class ConversationManager: Sendable {
    /// The configuration the manager was created with.
    public let configuration: Configuration
    /// Where the manager reads the time.
    public let clock: any ConversationClock
    /// The serial queue that runs actions' settlement handlers (``ConversationAction/whenSettled(_:)``), in the order
    /// the actions settled.
    public let settlementQueue: DispatchQueue
    private let core: Mutex<ManagerCore>
    private let relay = WakeUpRelay()
    /// Mirrors the core's delegate generation, so delivery can notice a replaced delegate between callbacks
    /// without taking the lock.
    private let delegateGeneration = Atomic<Int>(0)

    /// Creates a manager; refuses a configuration with problems (see ``Configuration/problems``). Settlement
    /// handlers run on `settlementQueue` (a serial queue: tests pass their own and wait on it).
    public init(
        configuration: Configuration = Configuration(), clock: any ConversationClock = SystemClock(),
        settlementQueue: DispatchQueue = ConversationAction.defaultSettlementQueue
    ) throws(ConversationManagerError) {
        let problems = configuration.problems
        guard problems.isEmpty else { throw .invalidConfiguration(problems) }
        self.configuration = configuration
        self.clock = clock
        self.settlementQueue = settlementQueue
        self.core = Mutex(ManagerCore(configuration: configuration, settlementQueue: settlementQueue))
    }

    /// The delegate, held weakly. Attaching one sends it `conversationManagerDidBegin`, then any callbacks that
    /// were waiting.
    public var delegate: (any ConversationManagerDelegate)? {
        get { core.withLock { $0.delegate.value } }
        set {
            var claim = core.withLock { core -> DeliveryClaim? in
                core.delegate.value = newValue
                core.hasDelegate = newValue != nil
                core.delegateGeneration += 1
                delegateGeneration.store(core.delegateGeneration, ordering: .releasing)
                if newValue != nil { core.outbox.insert(.didBegin, at: 0) }
                return core.claimDelivery()
            }
            if claim != nil { deliver(&claim!) }
        }
    }

    /// The live conversations (every state but `left`), oldest first.
    public var conversations: [Conversation] {
        core.withLock { core in core.liveEntries.map(\.conversation) }
    }

    /// One page of the live conversations, oldest first: up to `limit` after `position` (from the oldest when nil),
    /// and where the next page starts (nil on the last). Costs the page, not the number of live conversations.
    public func conversations(after position: ConversationPosition?, limit: Int) -> ConversationPage {
        precondition(limit > 0, "a page holds at least one conversation")
        return core.withLock { core in
            let (entries, more) = core.liveEntries(after: position?.sequence, limit: limit)
            return ConversationPage(
                conversations: entries.map(\.conversation),
                next: more ? entries.last.map { ConversationPosition(sequence: $0.sequence) } : nil,
                total: core.liveCount)
        }
    }

    /// The live conversation with this uuid, if any.
    public func conversation(_ uuid: UUID) -> Conversation? {
        core.withLock { $0.entry(uuid)?.conversation }
    }

    /// How many conversations are live.
    public var conversationCount: Int { core.withLock { $0.liveCount } }

    /// Actions performed and not yet completed, oldest first.
    public var pendingActions: [ConversationAction] {
        core.withLock { core in core.allPending.map(\.action) }
    }

    /// Pending actions on one conversation, oldest first.
    public func pendingActions(for conversationUUID: UUID) -> [ConversationAction] {
        core.withLock { core in (core.entry(conversationUUID)?.pendingActions ?? []).map(\.action) }
    }

    /// The current groups, oldest first, with their members.
    public var groups: [ConversationGroup] {
        core.withLock { core in
            core.groups.order.map { groupUUID in
                let uuids = core.groups.groups[groupUUID] ?? []
                let conversations = uuids.compactMap { core.entry($0)?.conversation }
                return ConversationGroup(
                    uuid: groupUUID, conversationUUIDs: uuids,
                    members: conversations.reduce(into: Set()) { $0.formUnion($1.members) },
                    activeRemoteMembers: conversations.reduce(into: Set()) { $0.formUnion($1.activeRemoteMembers) })
            }
        }
    }

    /// Whether ``invalidate()`` was called.
    public var isInvalidated: Bool { core.withLock { $0.isInvalidated } }

    /// Validates all `actions`, then applies them all and hands each to the delegate; applies none if any is
    /// invalid. A Start creates its conversation (in `idle`).
    public func perform(_ actions: [ConversationAction]) throws(ConversationManagerError) {
        try mutate { core, now throws(ConversationManagerError) in try core.perform(actions, now: now, manager: self) }
    }

    /// Reports a conversation the network brought: it is `ringing` when this returns. The caller's handle goes
    /// in `update.members`; capabilities default to `configuration.defaultCapabilities`.
    public func reportNewIncomingConversation(uuid: UUID, update: Conversation.Update) throws(ConversationManagerError) {
        try mutate { core, now throws(ConversationManagerError) in try core.reportIncoming(uuid: uuid, update: update, now: now) }
    }

    /// Reports what happened to a conversation; an event the lifecycle refuses is an error and changes nothing.
    public func reportConversationEvent(_ event: Conversation.Event, for conversationUUID: UUID) throws(ConversationManagerError) {
        try mutate { core, _ throws(ConversationManagerError) in try core.report(event, for: conversationUUID) }
    }

    /// Reports an event for `conversation` (LiveCommunicationKit's spelling).
    public func reportConversationEvent(_ event: Conversation.Event, for conversation: Conversation) throws(ConversationManagerError) {
        try reportConversationEvent(event, for: conversation.uuid)
    }

    /// Ends every conversation (as failed) and fails every pending action, then tells the delegate
    /// `conversationManagerDidReset`. The manager accepts nothing afterwards.
    public func invalidate() {
        mutate { core, now in core.invalidate(now: now) }
    }

    /// Times out the actions whose deadline has come. The clock's wake-ups do this; a driver may too.
    public func processDueTimeouts() {
        mutate { core, now in core.processDueTimeouts(now: now, wokenFor: nil) }
    }

    /// A clock wake-up asked for `deadline` has fired (perhaps early: the clock may be stepped).
    func wokeUp(for deadline: Date) {
        mutate { core, now in core.processDueTimeouts(now: now, wokenFor: deadline) }
    }

    func complete(_ action: ConversationAction, with outcome: ActionOutcome) -> Bool {
        mutate { core, now in core.complete(action, with: outcome, now: now) }
    }

    /// Runs `body` under the lock, then asks the clock for any wake-up it needs and delivers the callbacks.
    private func mutate<T: Sendable, E: Error>(
        _ body: (inout ManagerCore, Date) throws(E) -> T
    ) throws(E) -> T {
        let now = clock.now()
        var claim: DeliveryClaim?
        let (result, wakeUp): (T, Date?) = try core.withLock { core throws(E) in
            // A body that throws has changed nothing (every check comes before the first change), so it has neither
            // callbacks nor settlements waiting to be delivered.
            let result = try body(&core, now)
            claim = core.claimDelivery()
            // The relay keeps the manager alive exactly while actions are pending (their timeouts need it),
            // and lets it go when none are, so wake-ups still queued in the clock never pin it.
            let pending = !core.pendingUUIDs.isEmpty && !core.isInvalidated
            if pending != core.relayHoldsManager {
                relay.hold(pending ? self : nil)
                core.relayHoldsManager = pending
            }
            return (result, core.takeWakeUpRequest())
        }
        if let wakeUp {
            let relay = relay
            clock.wakeUp(at: wakeUp) { relay.fire(deadline: wakeUp) }
        }
        if claim != nil { deliver(&claim!) }
        return result
    }

    /// Delivers queued callbacks in order. Only the thread holding the claim delivers; callbacks queued
    /// meanwhile (also by the delegate calling back in) are picked up by that thread before it lets go. When
    /// the delegate is replaced mid-batch, the rest of the batch goes to the new one.
    private func deliver(_ claim: inout DeliveryClaim) {
        while true {
            var delivered = claim.batch.count
            if let delegate = claim.delegate {
                let generation = claim.generation
                // The batch is this thread's own (re-entrant calls queue into the core's outbox), so it is
                // read in place rather than copied out callback by callback.
                claim.batch.withUnsafeBufferPointer { batch in
                    for index in batch.indices {
                        if delegateGeneration.load(ordering: .acquiring) != generation {
                            delivered = index
                            return
                        }
                        deliver(batch[index], to: delegate)
                    }
                }
            }
            claim.batch.removeFirst(delivered)
            let more = core.withLock { core in core.continueDelivery(&claim) }
            guard more else { return }
        }
    }

    private func deliver(_ callback: DelegateCallback, to delegate: any ConversationManagerDelegate) {
        switch callback {
        case .didBegin: delegate.conversationManagerDidBegin(self)
        case .didReset: delegate.conversationManagerDidReset(self)
        case .changed(let conversation): delegate.conversationManager(self, conversationChanged: conversation)
        case .perform(let action): delegate.conversationManager(self, perform: action)
        case .timedOut(let action): delegate.conversationManager(self, timedOutPerforming: action)
        case .activateMedia(let conversation): delegate.conversationManager(self, didActivateMediaFor: conversation)
        case .deactivateMedia(let conversation): delegate.conversationManager(self, didDeactivateMediaFor: conversation)
        case .settled(let action, let state): delegate.conversationManager(self, didSettle: action, as: state)
        }
    }
}

/// What a clock wake-up calls: it reaches the manager only while the manager has pending actions. Holding the
/// manager strongly here (rather than capturing it weakly) keeps weak references — and their slow refcounting
/// path — off the manager entirely.
final class WakeUpRelay: Sendable {
    private let target = Mutex<ConversationManager?>(nil)

    /// Holds `manager` (or lets go with nil).
    func hold(_ manager: ConversationManager?) {
        target.withLock { $0 = manager }
    }

    /// Tells the held manager, if any, that the wake-up for `deadline` fired.
    func fire(deadline: Date) {
        let manager = target.withLock { $0 }
        manager?.wokeUp(for: deadline)
    }
}

/// Where a page of the live conversations ended: the order in which the manager took them in, so that a page
/// starts right after the last one seen even when that conversation has ended since.
public struct ConversationPosition: Sendable, Hashable, CustomStringConvertible {
    /// The manager's creation counter of the last conversation seen.
    public let sequence: UInt64

    /// A position from its counter.
    public init(sequence: UInt64) { self.sequence = sequence }

    /// The counter in decimal, as a control cursor carries it.
    public var description: String { String(sequence) }

    /// Reads `description`; nil for anything else.
    public init?(_ text: String) {
        guard let sequence = UInt64(text), String(sequence) == text else { return nil }
        self.sequence = sequence
    }
}

/// One page of the live conversations.
public struct ConversationPage: Sendable {
    /// Oldest first.
    public let conversations: [Conversation]
    /// Where the next page starts; nil on the last.
    public let next: ConversationPosition?
    /// Live conversations in all.
    public let total: Int
}
