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
}
