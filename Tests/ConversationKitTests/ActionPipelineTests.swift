import ConversationKit
import Foundation
import Synchronization
import Testing

/// The action pipeline: validation before application, exactly-once completion, timeouts on an injected clock.
@Suite("Action pipeline")
struct ActionPipelineTests {
    @Test("a transaction with one invalid action applies none of them")
    func atomicTransaction() throws {
        let h = try Harness()
        try h.ring(h.A)
        try h.ring(h.B)
        _ = h.delegate.take()
        let joinA = ConversationAction.join(conversationUUID: h.A)
        let error = managerError {
            try h.manager.perform([joinA, .end(conversationUUID: h.B), .join(conversationUUID: h.C)])
        }
        #expect(error == .unknownConversation(h.C))
        #expect(joinA.state == .idle)
        #expect(h.manager.pendingActions.isEmpty)
        #expect(h.manager.conversation(h.B)?.state == .ringing)
        #expect(h.delegate.take() == [])
        try h.manager.perform([joinA])
        #expect(h.delegate.take() == ["perform join A"])
    }

    @Test("actions later in a transaction see the effect of earlier ones")
    func sequentialValidation() throws {
        let h = try Harness()
        try h.manager.perform([
            .start(conversationUUID: h.A, handles: [h.alice]), .mute(conversationUUID: h.A, isMuted: true),
        ])
        #expect(h.delegate.take() == ["changed A idle", "perform start A", "perform mute A"])
        try h.ring(h.B)
        #expect(managerError { try h.manager.perform([.end(conversationUUID: h.B), .join(conversationUUID: h.B)]) }?.code
            == "illegalTransition")
        #expect(h.manager.conversation(h.B)?.state == .ringing)
    }

    @Test("typed errors for bad requests")
    func badRequests() throws {
        let h = try Harness(.init(supportedHandleTypes: [.phoneNumber]))
        #expect(managerError { try h.manager.perform([]) } == .emptyTransaction)
        #expect(managerError { try h.manager.perform([.start(conversationUUID: h.A, handles: [])]) } == .noHandles)
        #expect(managerError { try h.manager.perform([.start(conversationUUID: h.A, handles: [h.bob])]) }
            == .unsupportedHandleKind(.emailAddress))
        #expect(managerError { try h.manager.perform([.start(conversationUUID: h.A, handles: [h.alice], isVideo: true)]) }
            == .videoNotSupported)
        #expect(managerError { try h.manager.reportNewIncomingConversation(uuid: h.A, update: .init(members: [h.carol])) }
            == .unsupportedHandleKind(.generic))
        #expect(managerError { try h.manager.reportConversationEvent(.connected(h.clock.now()), for: h.D) }
            == .unknownConversation(h.D))
        try h.ring(h.A)
        #expect(managerError { try h.ring(h.A) } == .conversationAlreadyExists(h.A))
        #expect(managerError { try h.manager.perform([.start(conversationUUID: h.A, handles: [h.alice])]) }
            == .conversationAlreadyExists(h.A))
        let join = ConversationAction.join(conversationUUID: h.A)
        #expect(managerError { try h.manager.perform([join, join]) } == .duplicateActionUUID(join.uuid))
        try h.manager.perform([join])
        #expect(managerError { try h.manager.perform([join]) } == .actionAlreadyPerformed(join.uuid))
        let twin = ConversationAction(uuid: join.uuid, conversationUUID: h.A, kind: .end)
        #expect(managerError { try h.manager.perform([twin]) } == .duplicateActionUUID(join.uuid))
        #expect(managerError { try h.manager.perform([.join(conversationUUID: h.A)]) }
            == .actionAlreadyPending(conversation: h.A, verb: .join))
        #expect(managerError { try h.manager.reportConversationEvent(.ended(h.clock.now(), .localEnded), for: h.A) }?.code
            == "illegalTransition")
        #expect(throws: ConversationManagerError.self) {
            try ConversationManager(configuration: .init(maximumConversationGroups: -1))
        }
    }

    @Test("a capability the conversation lacks refuses the action")
    func capabilities() throws {
        let h = try Harness()
        try h.manager.reportNewIncomingConversation(uuid: h.A, update: .init(members: [h.alice], capabilities: []))
        try h.performAndFulfil(.join(conversationUUID: h.A))
        #expect(managerError { try h.manager.perform([.pause(conversationUUID: h.A, isPaused: true)]) }
            == .missingCapability(conversation: h.A, capability: .pausing))
        #expect(managerError { try h.manager.perform([.playTone(conversationUUID: h.A, digits: "1")]) }
            == .missingCapability(conversation: h.A, capability: .playingTones))
        try h.answered(h.B)
        #expect(managerError { try h.manager.perform([.merge(conversationUUID: h.B, with: h.A)]) }
            == .missingCapability(conversation: h.A, capability: .merging))
    }

    @Test("fulfill and fail count once; the first call wins")
    func exactlyOnce() throws {
        let h = try Harness()
        try h.ring(h.A)
        let join = ConversationAction.join(conversationUUID: h.A)
        #expect(!join.fulfill(), "an action never performed cannot be fulfilled")
        try h.manager.perform([join])
        #expect(join.fail(reason: "no media"))
        #expect(!join.fulfill())
        #expect(!join.fail(reason: "again"))
        #expect(join.state == .failed(reason: "no media"))
        #expect(h.delegate.last(h.A)?.endedReason == .failed)
    }

    @Test("a Start that is never fulfilled times out, tells the delegate and ends its conversation as failed")
    func startTimesOut() throws {
        let h = try Harness(.init(defaultActionTimeout: 10))
        let start = ConversationAction.start(conversationUUID: h.A, handles: [h.alice])
        try h.manager.perform([start])
        #expect(start.timeoutDate == h.clock.now().addingTimeInterval(10))
        h.clock.advance(by: 9.9)
        #expect(start.state == .running)
        h.clock.advance(by: 0.1)
        #expect(start.state == .timedOut)
        #expect(h.delegate.take() == ["changed A idle", "perform start A", "timedOut start A", "changed A left"])
        #expect(h.delegate.last(h.A)?.endedReason == .failed)
        #expect(!start.fulfill())
        #expect(!start.fail())
    }

    @Test("fulfilling at the timeout date fails even when the wake-up has not run")
    func fulfilAfterDeadline() throws {
        let clock = SteppedClock()
        let manager = try ConversationManager(configuration: .init(), clock: clock)
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        let uuid = UUID()
        try manager.reportNewIncomingConversation(uuid: uuid, update: .init())
        let end = ConversationAction.end(conversationUUID: uuid, timeoutDate: clock.now().addingTimeInterval(5))
        try manager.perform([end])
        clock.set(clock.now().addingTimeInterval(5))  // time moves, no wake-up fires
        #expect(!end.fulfill())
        #expect(end.state == .timedOut)
        #expect(manager.conversations.isEmpty)
        #expect(delegate.last(uuid)?.endedReason == .failed)
    }

    @Test("a timeout date that is not in the future is refused, and nothing is applied")
    func invalidTimeoutDate() throws {
        let h = try Harness()
        try h.ring(h.A)
        _ = h.delegate.take()
        let join = ConversationAction.join(conversationUUID: h.A, timeoutDate: h.clock.now())
        #expect(managerError { try h.manager.perform([join]) } == .invalidTimeoutDate(join.uuid, h.clock.now()))
        #expect(join.state == .idle)
        let nan = ConversationAction.join(conversationUUID: h.A, timeoutDate: Date(timeIntervalSinceReferenceDate: .nan))
        #expect(managerError { try h.manager.perform([nan]) }?.code == "invalidTimeoutDate")
        #expect(h.delegate.take() == [])
        let start = ConversationAction.start(conversationUUID: h.B, handles: [h.bob], timeoutDate: h.clock.now() - 1)
        #expect(managerError { try h.manager.perform([start]) }?.code == "invalidTimeoutDate")
        #expect(h.manager.conversation(h.B) == nil, "no conversation was created")
    }

    @Test("an early wake-up (a stepped clock) does not switch timeouts off")
    func earlyWakeUp() throws {
        let clock = SteppedClock()
        let manager = try ConversationManager(configuration: .init(defaultActionTimeout: 30), clock: clock)
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        let uuid = UUID()
        try manager.reportNewIncomingConversation(uuid: uuid, update: .init())
        let join = ConversationAction.join(conversationUUID: uuid)
        try manager.perform([join])
        let start = clock.now()
        #expect(clock.requested == [start + 30])
        clock.set(start + 29.9999)
        clock.fireAll()  // early
        #expect(join.state == .running)
        #expect(clock.requested == [start + 30], "the manager asks again")
        clock.set(start + 3600)
        clock.fireAll()
        #expect(join.state == .timedOut)
        #expect(manager.conversations.isEmpty)
    }

    @Test("an action can be performed by one manager only; a refused transaction gives its actions back")
    func oneManagerPerAction() throws {
        let first = try Harness()
        let second = try Harness()
        try first.ring(first.A)
        try second.ring(second.A)
        let join = ConversationAction.join(conversationUUID: first.A)
        #expect(managerError { try first.manager.perform([join, .join(conversationUUID: first.C)]) } == .unknownConversation(first.C))
        #expect(join.state == .idle)
        let elsewhere = ConversationAction(uuid: join.uuid, conversationUUID: second.A, kind: .join)
        try second.manager.perform([elsewhere])
        try first.manager.perform([join])
        #expect(managerError { try second.manager.perform([join]) } == .actionAlreadyPerformed(join.uuid))
        #expect(join.fulfill())
        #expect(first.manager.conversation(first.A)?.state == .joined)
        #expect(second.manager.pendingActions.map(\.uuid) == [elsewhere.uuid])
    }

    @Test("resuming needs no pausing capability (it may have been withdrawn while paused)")
    func resumeWithoutCapability() throws {
        let h = try Harness()
        try h.answered(h.A)
        try h.performAndFulfil(.pause(conversationUUID: h.A, isPaused: true))
        try h.manager.reportConversationEvent(.updated(.init(capabilities: [])), for: h.A)
        #expect(managerError { try h.manager.perform([.pause(conversationUUID: h.A, isPaused: true)]) }?.code
            == "illegalTransition")
        try h.performAndFulfil(.pause(conversationUUID: h.A, isPaused: false))
        #expect(h.manager.conversation(h.A)?.state == .joined)
    }

    @Test("timeouts of other actions leave the conversation as it is")
    func muteTimesOut() throws {
        let h = try Harness()
        try h.answered(h.A)
        let mute = ConversationAction.mute(conversationUUID: h.A, isMuted: true, timeoutDate: h.clock.now() + 5)
        try h.manager.perform([mute])
        h.clock.advance(by: 30)
        #expect(mute.state == .timedOut)
        #expect(h.manager.conversation(h.A)?.state == .joined)
        #expect(h.manager.conversation(h.A)?.isMuted == false)
    }

    @Test("many deadlines: each action times out at its own date")
    func manyDeadlines() throws {
        let h = try Harness()
        var actions: [ConversationAction] = []
        for offset in [30.0, 10, 20, 5, 25] {
            let uuid = UUID()
            try h.manager.reportNewIncomingConversation(uuid: uuid, update: .init())
            let join = ConversationAction.join(conversationUUID: uuid, timeoutDate: h.clock.now() + offset)
            try h.manager.perform([join])
            actions.append(join)
        }
        h.clock.advance(by: 15)
        #expect(actions.map { $0.state == .timedOut } == [false, true, false, true, false])
        h.clock.advance(by: 15)
        #expect(actions.allSatisfy { $0.state == .timedOut })
        #expect(h.manager.conversations.isEmpty)
    }

    @Test("the delegate may fulfil inside perform; callbacks stay in order and never overlap")
    func reentrantDelegate() throws {
        let h = try Harness()
        let manager = h.manager
        let clock = h.clock
        h.delegate.onPerform { action in
            if case .start = action.kind {
                _ = action.fulfill()
                try? manager.reportConversationEvent(.connected(clock.now()), for: action.conversationUUID)
            }
        }
        try h.manager.perform([.start(conversationUUID: h.A, handles: [h.alice])])
        #expect(h.delegate.take() == [
            "changed A idle", "perform start A", "changed A ringing", "changed A joined", "activate A",
        ])
        #expect(h.delegate.overlaps.load(ordering: .relaxed) == 0)
    }

    @Test("callbacks raised before a delegate is attached wait for it")
    func noDelegateYet() throws {
        #expect(try callbacksForLateDelegate(attachingThrowawayFirst: false) == ["begin", "changed A ringing", "perform join A"])
    }

    @Test("invalidate ends everything, fails pending actions and resets")
    func invalidate() throws {
        let h = try Harness()
        try h.answered(h.A)
        try h.ring(h.B)
        let join = ConversationAction.join(conversationUUID: h.B)
        try h.manager.perform([join])
        _ = h.delegate.take()
        h.manager.invalidate()
        #expect(join.state == .failed(reason: "the manager was invalidated"))
        #expect(h.delegate.take() == ["changed A left", "deactivate A", "changed B left", "reset"])
        #expect(h.manager.conversations.isEmpty)
        #expect(h.manager.isInvalidated)
        #expect(managerError { try h.ring(h.C) } == .managerInvalidated)
        #expect(!join.fulfill())
    }

    @Test("concurrent callers from many threads: every action completes once, callbacks never overlap")
    func concurrentCallers() async throws {
        let manager = try ConversationManager(configuration: .init(), clock: SystemClock())
        let delegate = RecordingDelegate()
        delegate.onPerform { action in _ = action.fulfill() }
        manager.delegate = delegate
        // A caller's callbacks may be delivered by whichever thread is delivering at the time, so completion
        // is checked once every caller has returned (and with it every delivery loop).
        let actions = await withTaskGroup(of: [ConversationAction].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var actions: [ConversationAction] = []
                    for _ in 0..<200 {
                        let uuid = UUID()
                        let start = ConversationAction.start(conversationUUID: uuid, handles: [.init(kind: .generic, value: "x")])
                        try? manager.perform([start])
                        try? manager.reportConversationEvent(.connected(Date()), for: uuid)
                        let end = ConversationAction.end(conversationUUID: uuid)
                        try? manager.perform([end])
                        actions += [start, end]
                    }
                    return actions
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(actions.count == 3200)
        #expect(actions.allSatisfy { $0.state == .complete })
        #expect(manager.conversations.isEmpty)
        #expect(manager.pendingActions.isEmpty)
        #expect(delegate.overlaps.load(ordering: .relaxed) == 0)
        let log = delegate.take()
        #expect(log.filter { $0.hasPrefix("perform") }.count == 3200)
        #expect(log.filter { $0.hasSuffix(" left") }.count == 1600)
    }
}

/// The delegate's lifetime and replacement.
@Suite("Delegate delivery")
struct DelegateDeliveryTests {
    @Test("a delegate that went away loses nothing: the next one gets what was waiting")
    func deallocatedDelegate() throws {
        #expect(try callbacksForLateDelegate(attachingThrowawayFirst: true) == ["begin", "changed A ringing", "perform join A"])
    }

    @Test("a delegate replaced in the middle of a batch: the new one gets the rest, after its begin")
    func replacedMidBatch() throws {
        let clock = ManualClock()
        let manager = try ConversationManager(configuration: .init(), clock: clock)
        let uuid = UUID()
        try manager.perform([.start(conversationUUID: uuid, handles: [.init(kind: .generic, value: "x")])])
        let second = RecordingDelegate()
        second.name(uuid, "A")
        let first = HandingOverDelegate(to: second)
        manager.delegate = first
        #expect(first.seen.withLock { $0 } == ["begin", "changed idle"])
        #expect(second.take() == ["begin", "perform start A"])
        _ = manager.pendingActions.first?.fulfill()
        #expect(second.take() == ["changed A ringing"])
        #expect(first.seen.withLock { $0 }.count == 2)
    }

    @Test("a manager is freed once nothing is pending, even with a wake-up a day away")
    func managerIsFreed() throws {
        weak var weakManager: ConversationManager?
        do {
            let manager = try ConversationManager(configuration: .init(), clock: SystemClock())
            let delegate = RecordingDelegate()
            manager.delegate = delegate
            let uuid = UUID()
            try manager.reportNewIncomingConversation(uuid: uuid, update: .init())
            let end = ConversationAction.end(conversationUUID: uuid, timeoutDate: Date().addingTimeInterval(86_400))
            try manager.perform([end])
            #expect(end.fulfill())
            weakManager = manager
        }
        #expect(weakManager == nil)
    }
}

/// Records what it is told, and on its second callback hands the manager over to another delegate.
final class HandingOverDelegate: ConversationManagerDelegate {
    let seen = Mutex<[String]>([])
    let next: RecordingDelegate
    init(to next: RecordingDelegate) { self.next = next }

    private func note(_ line: String, _ manager: ConversationManager) {
        let count = seen.withLock { seen in
            seen.append(line)
            return seen.count
        }
        if count == 2 { manager.delegate = next }
    }
    func conversationManagerDidBegin(_ manager: ConversationManager) { note("begin", manager) }
    func conversationManager(_ manager: ConversationManager, conversationChanged conversation: Conversation) {
        note("changed \(conversation.state)", manager)
    }
    func conversationManager(_ manager: ConversationManager, perform action: ConversationAction) {
        note("perform \(action.verb)", manager)
    }
}

/// Rings a conversation and performs a Join — with no delegate, or after attaching one that is released at once
/// (the manager keeps only a weak reference) — then attaches a delegate; returns what that one was told.
func callbacksForLateDelegate(attachingThrowawayFirst: Bool) throws -> [String] {
    let manager = try ConversationManager(configuration: .init(), clock: ManualClock())
    if attachingThrowawayFirst { manager.delegate = RecordingDelegate() }
    let uuid = UUID()
    try manager.reportNewIncomingConversation(uuid: uuid, update: .init())
    try manager.perform([.join(conversationUUID: uuid)])
    let delegate = RecordingDelegate()
    delegate.name(uuid, "A")
    manager.delegate = delegate
    return delegate.take()
}
