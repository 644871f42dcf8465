import ConversationKit
import Foundation
import Synchronization
import Testing

/// A delegate that records every callback as a short line ("changed A ringing", "perform join A"…) and can
/// react to performed actions through `onPerform`.
final class RecordingDelegate: ConversationManagerDelegate {
    private struct State {
        var log: [String] = []
        var names: [UUID: String] = [:]
        var onPerform: (@Sendable (ConversationAction) -> Void)?
        var lastSeen: [UUID: Conversation] = [:]
        /// Settlements (`didSettle`), kept apart from `log` so that the logs the tests compare stay as they are.
        var settled: [String] = []
    }
    private let state = Mutex(State())
    private let inCallback = Atomic<Bool>(false)
    let overlaps = Atomic<Int>(0)

    func name(_ uuid: UUID, _ name: String) { state.withLock { $0.names[uuid] = name } }

    func onPerform(_ handler: @escaping @Sendable (ConversationAction) -> Void) {
        state.withLock { $0.onPerform = handler }
    }

    /// Returns the lines recorded since the last call and forgets them.
    func take() -> [String] {
        state.withLock { state in
            defer { state.log.removeAll() }
            return state.log
        }
    }

    func last(_ uuid: UUID) -> Conversation? { state.withLock { $0.lastSeen[uuid] } }

    /// The settlements told so far, as "verb name state".
    var settlements: [String] { state.withLock { $0.settled } }

    private func record(_ line: (borrowing [UUID: String]) -> String) {
        state.withLock { $0.log.append(line($0.names)) }
    }

    private func enter() {
        if inCallback.exchange(true, ordering: .acquiringAndReleasing) { overlaps.add(1, ordering: .relaxed) }
    }
    private func leave() { inCallback.store(false, ordering: .releasing) }

    func conversationManagerDidBegin(_ manager: ConversationManager) {
        enter(); defer { leave() }
        record { _ in "begin" }
    }
    func conversationManagerDidReset(_ manager: ConversationManager) {
        enter(); defer { leave() }
        record { _ in "reset" }
    }
    func conversationManager(_ manager: ConversationManager, conversationChanged conversation: Conversation) {
        enter(); defer { leave() }
        state.withLock { $0.lastSeen[conversation.uuid] = conversation }
        record { "changed \($0[conversation.uuid] ?? conversation.uuid.uuidString) \(conversation.state)" }
    }
    func conversationManager(_ manager: ConversationManager, perform action: ConversationAction) {
        enter()
        record { "perform \(action.verb) \($0[action.conversationUUID] ?? "?")" }
        let handler = state.withLock { $0.onPerform }
        leave()
        handler?(action)
    }
    func conversationManager(_ manager: ConversationManager, timedOutPerforming action: ConversationAction) {
        enter(); defer { leave() }
        record { "timedOut \(action.verb) \($0[action.conversationUUID] ?? "?")" }
    }
    func conversationManager(_ manager: ConversationManager, didActivateMediaFor conversation: Conversation) {
        enter(); defer { leave() }
        record { "activate \($0[conversation.uuid] ?? "?")" }
    }
    func conversationManager(_ manager: ConversationManager, didDeactivateMediaFor conversation: Conversation) {
        enter(); defer { leave() }
        record { "deactivate \($0[conversation.uuid] ?? "?")" }
    }
    func conversationManager(
        _ manager: ConversationManager, didSettle action: ConversationAction, as settled: ConversationAction.State
    ) {
        enter(); defer { leave() }
        state.withLock { state in
            state.settled.append("\(action.verb) \(state.names[action.conversationUUID] ?? "?") \(settled)")
        }
    }
}

/// A manager on a manual clock with a recording delegate and named conversations A, B, C…
struct Harness {
    let clock = ManualClock()
    /// Where the manager runs settlement handlers: `settlementQueue.sync {}` waits for those queued so far.
    let settlementQueue = DispatchQueue(label: "test.settlement")
    let manager: ConversationManager
    let delegate = RecordingDelegate()
    let alice = Handle(kind: .phoneNumber, value: "+14155550100", displayName: "Alice")
    let bob = Handle(kind: .emailAddress, value: "bob@example.com")
    let carol = Handle(kind: .generic, value: "sip:carol@127.0.0.1")
    let A = UUID(), B = UUID(), C = UUID(), D = UUID()

    init(_ configuration: ConversationManager.Configuration = .init()) throws {
        manager = try ConversationManager(configuration: configuration, clock: clock, settlementQueue: settlementQueue)
        manager.delegate = delegate
        for (uuid, name) in [(A, "A"), (B, "B"), (C, "C"), (D, "D")] { delegate.name(uuid, name) }
        _ = delegate.take()
    }

    func state(_ uuid: UUID) -> Conversation.State? { manager.conversation(uuid)?.state ?? delegate.last(uuid)?.state }

    /// Reports an incoming conversation from `handle`.
    func ring(_ uuid: UUID, from handle: Handle? = nil) throws {
        try manager.reportNewIncomingConversation(uuid: uuid, update: .init(members: [handle ?? alice]))
    }

    /// Brings `uuid` to joined through the incoming path, fulfilling the Join.
    func answered(_ uuid: UUID, from handle: Handle? = nil) throws {
        try ring(uuid, from: handle)
        let join = ConversationAction.join(conversationUUID: uuid)
        try manager.perform([join])
        try manager.reportConversationEvent(.startedConnecting(clock.now()), for: uuid)
        try manager.reportConversationEvent(.connected(clock.now()), for: uuid)
        #expect(join.fulfill())
    }

    /// Performs one action and fulfils it.
    @discardableResult
    func performAndFulfil(_ action: ConversationAction) throws -> ConversationAction {
        try manager.perform([action])
        #expect(action.fulfill(), "fulfil \(action)")
        return action
    }
}

/// The error thrown by `body`, if it is a ConversationManagerError.
func managerError(_ body: () throws -> Void) -> ConversationManagerError? {
    do {
        try body()
        return nil
    } catch let error as ConversationManagerError {
        return error
    } catch {
        Issue.record("unexpected error type: \(error)")
        return nil
    }
}

/// A clock the test steps by hand; wake-ups are recorded and fired only when the test says so (early or
/// late), like a wall clock that can jump.
final class SteppedClock: ConversationClock {
    private struct State {
        var now = Date(timeIntervalSince1970: 1_767_225_600)
        var wakeUps: [(Date, @Sendable () -> Void)] = []
    }
    private let state = Mutex(State())

    func now() -> Date { state.withLock { $0.now } }
    func set(_ date: Date) { state.withLock { $0.now = date } }
    func wakeUp(at deadline: Date, _ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.wakeUps.append((deadline, handler)) }
    }
    /// The deadlines of wake-ups asked for and not fired yet.
    var requested: [Date] { state.withLock { $0.wakeUps.map(\.0) } }
    /// Fires every recorded wake-up now, whatever its deadline.
    func fireAll() {
        let due = state.withLock { state in
            defer { state.wakeUps.removeAll() }
            return state.wakeUps.map(\.1)
        }
        for handler in due { handler() }
    }
}
