import ControlProtocol
import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Synchronization
import Testing

/// The peer's refusal of an action's own request, as the control API reports it: `details.sipStatus` and `sipReason`
/// from the status the engine kept, not from the failure's text.
@Suite("Control protocol: failed actions carry the peer's SIP status")
struct ControlFailureStatusTests {
    /// A request whose reply comes later (an action answered when it settles); `wait` waits up to 5 s for it.
    final class PendingReply: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let box = Mutex<Data?>(nil)

        init(_ probe: ServiceProbe, _ line: String) {
            _ = probe.service.handle(Data(line.utf8)) { [self] reply in
                box.withLock { $0 = reply }
                done.signal()
            }
        }

        func wait() throws -> [String: Any] {
            guard done.wait(timeout: .now() + 5) == .success, let data = box.withLock({ $0 }) else {
                throw ServiceProbe.ProbeError.noReply("a settled action")
            }
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
    }

    @Test("a tone's INFO refused 415 and a hold's re-INVITE refused 488: the answer and actionSettled carry the status",
        arguments: [
            ("playTone", #""digits":"1""#, "INFO", 415, "Unsupported Media Type"),
            ("hold", "", "INVITE", 488, "Not Acceptable Here"),
        ])
    func refusal(method: String, params: String, request: String, status: Int, reason: String) throws {
        let harness = try EngineHarness()
        let probe = ServiceProbe(harness)
        _ = try IncomingCallTests.answered(harness)
        let uuid = try #require(harness.conversation?.uuid)
        let extra = params.isEmpty ? "" : "," + params
        let reply = PendingReply(probe, #"{"v":1,"id":7,"method":"\#(method)","params":{"conversation":"\#(uuid.uuidString)"\#(extra)}}"#)
        let sent = try #require(harness.sent().first?.request)
        #expect(sent.method.description == request)
        harness.deliver(PeerMessages.response(status, reason, to: sent, toTag: nil))

        let error = try #require(try reply.wait()["error"] as? [String: Any])
        let details = try #require(error["details"] as? [String: Any], "\(error)")
        #expect(error["code"] as? String == "failed")
        #expect(details["sipStatus"] as? Int == status, "\(error)")
        #expect(details["sipReason"] as? String == reason, "\(error)")
        #expect(details["action"] as? String == method)
        #expect((error["message"] as? String)?.contains("SIP \(status)") == true, "\(error)")

        var settled: ActionSettled?
        #expect(probe.events.wait(until: { events in
            settled = events.lazy.compactMap { if case .actionSettled(let settled) = $0 { settled } else { nil } }
                .first { $0.action == method }
            return settled != nil
        }))
        #expect(settled?.state == "failed")
        #expect(settled?.error?.details?.sipStatus == status, "\(String(describing: settled))")
        #expect(settled?.error?.details?.sipReason == reason)
        // The call goes on: a refused tone or hold does not end it.
        #expect(harness.conversation?.state == .joined)
    }

    @Test("a failure without a SIP answer (no INFO answer at all) says no status")
    func noStatusWithoutAnAnswer() throws {
        let harness = try EngineHarness()
        let probe = ServiceProbe(harness)
        _ = try IncomingCallTests.answered(harness)
        let uuid = try #require(harness.conversation?.uuid)
        let reply = PendingReply(probe, #"{"v":1,"id":8,"method":"playTone","params":{"conversation":"\#(uuid.uuidString)","digits":"2"}}"#)
        #expect(harness.sent().first?.request?.method == .info)
        harness.environment.advance(by: .seconds(33))  // timer F: the INFO is never answered
        let error = try #require(try reply.wait()["error"] as? [String: Any])
        let details = error["details"] as? [String: Any]
        #expect(error["code"] as? String == "failed", "\(error)")
        #expect(details?["sipStatus"] == nil, "\(error)")
        #expect((details?["technical"] as? String)?.contains("not answered") == true, "\(error)")
    }
}
