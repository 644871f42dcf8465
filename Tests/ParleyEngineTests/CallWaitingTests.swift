import ConversationKit
import Foundation
import ParleyEngine
import Testing

/// Call waiting's rule in the engine (`makingRoom(for:endingOthers:)`): what a new call the user places or answers
/// does to the calls that are up, by `onNewCall`.
@Suite("Engine: call waiting")
struct CallWaitingTests {
    /// An engine with one incoming call answered (joined) and a second one ringing.
    static func twoCalls(_ policy: NewCallPolicy = .hold) throws -> (EngineHarness, up: UUID, ringing: UUID) {
        let harness = try EngineHarness { $0.onNewCall = policy }
        harness.deliver(PeerMessages.invite(callID: "up@peer", branch: "z9hG4bK-up"), body: PeerMessages.offer)
        let up = try #require(harness.manager.conversations.first?.uuid)
        try harness.manager.perform([.join(conversationUUID: up)])
        let ok = try #require(harness.sent().first { $0.statusCode == 200 })
        harness.deliver(PeerMessages.inDialog("ACK", localTag: try #require(ok.toTag), cseq: 1, branch: "z9hG4bK-ack", callID: "up@peer"))
        harness.deliver(PeerMessages.invite(callID: "second@peer", branch: "z9hG4bK-second"), body: PeerMessages.offer)
        let ringing = try #require(harness.manager.conversations.first { $0.uuid != up }?.uuid)
        #expect(harness.manager.conversation(up)?.state == .joined && harness.manager.conversation(ringing)?.state == .ringing)
        return (harness, up, ringing)
    }

    @Test("answering (or placing) a call holds the call that is up; End & Answer ends it; only Start and Join make room")
    func holdOrEnd() throws {
        let (harness, up, ringing) = try Self.twoCalls()
        let answer = ConversationAction.join(conversationUUID: ringing)
        #expect(harness.engine.makingRoom(for: answer).map(\.kind) == [.pause(isPaused: true)])
        #expect(harness.engine.makingRoom(for: answer).map(\.conversationUUID) == [up])
        #expect(harness.engine.makingRoom(for: answer, endingOthers: true).map(\.kind) == [.end])
        let place = ConversationAction.start(handles: [Handle(kind: .generic, value: "sip:carol@127.0.0.1")], isVideo: false)
        #expect(harness.engine.makingRoom(for: place).map(\.conversationUUID) == [up])
        #expect(harness.engine.makingRoom(for: .end(conversationUUID: ringing)).isEmpty)
    }

    @Test("a new call the manager refuses holds nothing (one transaction); a hold already on its way is left out, the answer goes on")
    func refusedNewCall() throws {
        let (harness, up, ringing) = try Self.twoCalls()
        let video = ConversationAction.start(handles: [Handle(kind: .generic, value: "sip:carol@127.0.0.1")], isVideo: true)
        #expect(throws: ConversationManagerError.videoNotSupported) { try harness.engine.perform(video, makingRoom: false) }
        #expect(harness.manager.conversation(up)?.state == .joined && harness.manager.pendingActions(for: up).isEmpty,
                "the call that is up was not held for a call that never existed")
        try harness.manager.perform([.pause(conversationUUID: up, isPaused: true)])
        try harness.engine.perform(.join(conversationUUID: ringing), makingRoom: false)
        #expect(harness.manager.conversation(ringing)?.state == .joining, "answered although its hold step was refused")
        #expect(harness.manager.pendingActions(for: up).count == 1, "the hold that was on its way, alone")
    }

    @Test("--on-new-call none leaves the call that is up; a ringing call is never held")
    func noneAndRinging() throws {
        let (none, _, ringing) = try Self.twoCalls(.none)
        #expect(none.engine.makingRoom(for: .join(conversationUUID: ringing)).isEmpty)
        #expect(none.engine.makingRoom(for: .join(conversationUUID: ringing), endingOthers: true).count == 1, "End & Answer still ends it")
        let (harness, up, _) = try Self.twoCalls()
        #expect(harness.engine.makingRoom(for: .join(conversationUUID: up)).isEmpty, "the other call only rings: nothing to hold")
    }
}
