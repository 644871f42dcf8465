import ConversationKit
import Foundation
import Synchronization
import Testing

@Suite("Action settlement hooks")
struct ActionSettledTests {
    @Test("whenSettled hears the final state once: complete, failed, timed out; at once when already settled")
    func settled() throws {
        let harness = try Harness()
        try harness.ring(harness.A)
        try harness.ring(harness.B)
        let states = Mutex<[ConversationAction.State]>([])
        let join = ConversationAction.join(conversationUUID: harness.A)
        join.whenSettled { state in states.withLock { $0.append(state) } }
        try harness.manager.perform([join])
        #expect(states.withLock { $0 }.isEmpty, "not settled while running")
        join.fulfill()
        join.fulfill()
        harness.settlementQueue.sync {}  // the handlers queued so far have run
        #expect(states.withLock { $0 } == [.complete])

        let end = ConversationAction.end(conversationUUID: harness.B)
        end.whenSettled { state in states.withLock { $0.append(state) } }
        try harness.manager.perform([end])
        end.fail(reason: "no")
        harness.settlementQueue.sync {}  // the handlers queued so far have run
        #expect(states.withLock { $0 }.last == .failed(reason: "no"))

        let late = Mutex<ConversationAction.State?>(nil)
        join.whenSettled { state in late.withLock { $0 = state } }
        #expect(late.withLock { $0 } == .complete, "an already settled action answers at once")

        try harness.ring(harness.C)
        let slow = ConversationAction.join(conversationUUID: harness.C, timeoutDate: harness.clock.now().addingTimeInterval(5))
        slow.whenSettled { state in states.withLock { $0.append(state) } }
        try harness.manager.perform([slow])
        harness.clock.advance(by: 6)
        harness.settlementQueue.sync {}  // the handlers queued so far have run
        #expect(states.withLock { $0 }.last == .timedOut)
    }

    /// A harness whose manager tells a `SettlementLog`, with the first `count` of A, B, C ringing.
    private static func ringing(_ count: Int) throws -> (Harness, SettlementLog) {
        let harness = try Harness()
        let log = SettlementLog()
        harness.manager.delegate = log
        for uuid in [harness.A, harness.B, harness.C].prefix(count) { try harness.ring(uuid) }
        return (harness, log)
    }

    @Test("the delegate hears each settlement once, after the changes the action caused, with whenSettled's state")
    func delegateHearsSettlements() throws {
        let (harness, log) = try Self.ringing(3)

        let join = ConversationAction.join(conversationUUID: harness.A)
        try harness.manager.perform([join])
        #expect(log.settled.isEmpty, "nothing settled while the join runs")
        join.fulfill()
        join.fulfill()
        #expect(log.settled == ["join complete"], "told once, on the thread that settled it")

        let end = ConversationAction.end(conversationUUID: harness.B)
        try harness.manager.perform([end])
        end.fail(reason: "no")
        #expect(log.settled.last == "end failed(no)")

        // A Join that times out ends its conversation; the delegate hears of that change before the settlement.
        let slow = ConversationAction.join(conversationUUID: harness.C, timeoutDate: harness.clock.now().addingTimeInterval(5))
        let handled = Mutex<ConversationAction.State?>(nil)
        slow.whenSettled { state in handled.withLock { $0 = state } }
        try harness.manager.perform([slow])
        harness.clock.advance(by: 6)
        #expect(log.settled.last == "join timedOut")
        let lines = log.lines
        let left = try #require(lines.firstIndex(of: "changed \(harness.C) left"))
        let settled = try #require(lines.firstIndex(of: "settled join timedOut"))
        #expect(left < settled)
        harness.settlementQueue.sync {}
        #expect(handled.withLock { $0 } == .timedOut, "whenSettled handlers still hear it, on the settlement queue")
        #expect(log.settled.count == 3)
    }

    @Test("invalidating with actions pending: each settles as failed, and the delegate hears that before the reset")
    func invalidateSettlesBeforeReset() throws {
        let (harness, log) = try Self.ringing(2)
        try harness.manager.perform([ConversationAction.join(conversationUUID: harness.A)])
        try harness.manager.perform([ConversationAction.end(conversationUUID: harness.B)])
        harness.manager.invalidate()
        let lines = log.lines
        let reset = try #require(lines.firstIndex(of: "reset"))
        #expect(lines.filter { $0.hasPrefix("settled ") }.count == 2)
        #expect(lines.lastIndex { $0.hasPrefix("settled ") }! < reset, "\(lines)")
        #expect(reset == lines.count - 1, "nothing after the reset: \(lines)")
    }

    @Test("the recording delegate hears settlements too, one callback at a time")
    func recordingDelegateHearsSettlements() throws {
        let harness = try Harness()
        try harness.answered(harness.A)
        try harness.ring(harness.B)
        try harness.manager.perform([ConversationAction.end(conversationUUID: harness.B)])
        #expect(harness.delegate.settlements == ["join A complete"])
        harness.clock.advance(by: 31)  // past the End's default 30 s timeout
        #expect(harness.delegate.settlements == ["join A complete", "end B timedOut"])
        #expect(harness.delegate.overlaps.load(ordering: .relaxed) == 0)
    }
}

/// Records conversation changes and settlements in the order the manager tells them.
private final class SettlementLog: ConversationManagerDelegate {
    private let recorded = Mutex<[String]>([])

    var lines: [String] { recorded.withLock { $0 } }
    var settled: [String] { lines.filter { $0.hasPrefix("settled ") }.map { String($0.dropFirst("settled ".count)) } }

    func conversationManager(_ manager: ConversationManager, conversationChanged conversation: Conversation) {
        recorded.withLock { $0.append("changed \(conversation.uuid) \(conversation.state)") }
    }

    func conversationManager(_ manager: ConversationManager, perform action: ConversationAction) {}

    func conversationManagerDidReset(_ manager: ConversationManager) {
        recorded.withLock { $0.append("reset") }
    }

    func conversationManager(
        _ manager: ConversationManager, didSettle action: ConversationAction, as state: ConversationAction.State
    ) {
        recorded.withLock { $0.append("settled \(action.verb) \(state)") }
    }
}
