import ConversationKit
import Foundation
import Synchronization
import Testing

@Suite("Action settlement hooks")
struct ActionSettledTests {
    /// Waits up to 5 s for `count` recorded states.
    static func wait(_ states: borrowing Mutex<[ConversationAction.State]>, count: Int) {
        let deadline = Date().addingTimeInterval(5)
        while states.withLock({ $0.count }) < count && Date() < deadline { usleep(1_000) }
    }

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
        Self.wait(states, count: 1)
        #expect(states.withLock { $0 } == [.complete])

        let end = ConversationAction.end(conversationUUID: harness.B)
        end.whenSettled { state in states.withLock { $0.append(state) } }
        try harness.manager.perform([end])
        end.fail(reason: "no")
        Self.wait(states, count: 2)
        #expect(states.withLock { $0 }.last == .failed(reason: "no"))

        let late = Mutex<ConversationAction.State?>(nil)
        join.whenSettled { state in late.withLock { $0 = state } }
        #expect(late.withLock { $0 } == .complete, "an already settled action answers at once")

        try harness.ring(harness.C)
        let slow = ConversationAction.join(conversationUUID: harness.C, timeoutDate: harness.clock.now().addingTimeInterval(5))
        slow.whenSettled { state in states.withLock { $0.append(state) } }
        try harness.manager.perform([slow])
        harness.clock.advance(by: 6)
        Self.wait(states, count: 3)
        #expect(states.withLock { $0 }.last == .timedOut)
    }
}
