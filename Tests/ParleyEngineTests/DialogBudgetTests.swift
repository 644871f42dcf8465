import Foundation
@testable import ParleyEngine
import ParleyTestSupport
import SIPMessages
import Testing

/// In-dialog limits (issue 48): an established call's MESSAGE and INFO requests are bounded in size and in rate.
@Suite("Engine: what one call may send in its dialog")
struct DialogBudgetTests {
    @Test("a budget admits 250 requests or 256 KiB a second, whichever comes first, and starts afresh the next second")
    func budget() {
        var budget = DialogBudget()
        let admitted = (0..<300).filter { _ in budget.admits(bodyBytes: 10, at: .seconds(5)) }.count
        #expect(admitted == DialogBudget.requestsPerSecond)
        let nextSecond = budget.admits(bodyBytes: 10, at: .milliseconds(6_000))
        #expect(nextSecond, "a new second")
        var large = DialogBudget()
        let big = (0..<40).filter { _ in large.admits(bodyBytes: 16 * 1_024, at: .zero) }.count
        #expect(big == DialogBudget.bytesPerSecond / (16 * 1_024))
    }

    @Test("a MESSAGE body over 16 KiB gets 413; a flood of INFO in one call gets 503 beyond the budget, and the call goes on")
    func flood() throws {
        let harness = try EngineHarness()
        let tag = try IncomingCallTests.answered(harness)
        _ = harness.sent()
        let large = String(repeating: "x", count: DialogBudget.maxBodyBytes + 1)
        harness.deliver(PeerMessages.inDialog("MESSAGE", localTag: tag, cseq: 2, branch: "z9hG4bK-big", contentType: "text/plain"), body: large)
        #expect(harness.sent().map(\.statusCode) == [413])
        for index in 0..<280 {
            harness.deliver(
                PeerMessages.inDialog("INFO", localTag: tag, cseq: 3 + index, branch: "z9hG4bK-info-\(index)", contentType: "application/dtmf-relay"),
                body: "Signal=1\nDuration=100\n")
        }
        // The 413's body spent one request and its bytes of the second's budget; once spent, the rest are refused
        // unread (503 written from their bytes).
        let admitted = DialogBudget.requestsPerSecond - 1
        let answers = harness.sent().compactMap(\.statusCode)
        #expect(answers.count == 280 && answers.filter { $0 == 503 }.count == 280 - admitted, "\(Set(answers))")
        #expect(harness.conversation?.state == .joined)
        harness.environment.advance(by: .seconds(1))
        harness.deliver(
            PeerMessages.inDialog("INFO", localTag: tag, cseq: 300, branch: "z9hG4bK-info-next", contentType: "application/dtmf-relay"),
            body: "Signal=2\nDuration=100\n")
        #expect(harness.sent().compactMap(\.statusCode) == [200], "a second later the call may send again")
        #expect(harness.engine.statistics.inDialogRequestsRefused == 1 + 280 - admitted, "the 413 and the 503s")
    }
}
