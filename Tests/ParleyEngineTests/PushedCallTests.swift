import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import Testing

@Suite("Engine: calls announced by VoIP push")
struct PushedCallTests {
    static let alice = Handle(kind: .generic, value: "sip:alice@127.0.0.1:5062", displayName: "Alice")

    static func push(_ harness: EngineHarness, uuid: UUID = UUID(), callID: String = "call-1@peer", expiresIn: TimeInterval = 30, cancel: Bool = false) -> PushHandling {
        harness.engine.handlePush(PushedCall(
            uuid: uuid, handle: alice, callID: callID, isVideo: false,
            expiresAt: harness.environment.now.addingTimeInterval(expiresIn), isCancel: cancel))
    }

    @Test("push, then INVITE: one conversation, ringing from the push; the INVITE joins it; answered over SIP")
    func pushThenInvite() throws {
        let harness = try EngineHarness()
        let uuid = UUID()
        #expect(Self.push(harness, uuid: uuid) == .reported(uuid))
        #expect(harness.conversation?.state == .ringing, "ringing before handlePush returned")
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let tag = try #require(harness.sent().first?.toTag)
        #expect(harness.manager.conversations.map(\.uuid) == [uuid])
        try harness.manager.perform([.join(conversationUUID: uuid)])
        #expect(harness.sent().map(\.statusCode) == [200])
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack"))
        #expect(harness.transitions.states == ["ringing", "joining", "joined"])
        #expect(harness.engine.callID(of: uuid) == "call-1@peer")
    }

    @Test("INVITE, then push (or the same push twice): no second conversation")
    func inviteThenPush() throws {
        let harness = try EngineHarness()
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let uuid = try #require(harness.conversation?.uuid)
        #expect(Self.push(harness) == .alreadyReported(uuid))
        #expect(Self.push(harness) == .alreadyReported(uuid))
        #expect(harness.manager.conversations.count == 1)
    }

    @Test("the same push delivered twice reports once")
    func duplicatePush() throws {
        let harness = try EngineHarness()
        let uuid = UUID()
        #expect(Self.push(harness, uuid: uuid) == .reported(uuid))
        #expect(Self.push(harness, uuid: uuid) == .alreadyReported(uuid))
        #expect(harness.manager.conversations.count == 1)
    }

    @Test("a push with no INVITE ends as failed after the configured wait")
    func pushWithoutInvite() throws {
        let harness = try EngineHarness { $0.pushInviteWait = .seconds(3) }
        _ = Self.push(harness)
        harness.environment.advance(by: .milliseconds(2_999))
        #expect(harness.conversation?.state == .ringing)
        harness.environment.advance(by: .milliseconds(1))
        #expect(harness.transitions.states == ["ringing", "left(failed)"])
    }

    @Test("a cancel push before the INVITE ends it unanswered; the late INVITE is refused, not rung")
    func cancelPush() throws {
        let harness = try EngineHarness()
        let uuid = UUID()
        _ = Self.push(harness, uuid: uuid)
        #expect(Self.push(harness, cancel: true) == .cancelled(uuid))
        #expect(harness.transitions.states == ["ringing", "left(unanswered)"])
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        #expect(harness.sent().map(\.statusCode) == [486])
        #expect(harness.manager.conversations.isEmpty)
    }

    @Test("answered before the INVITE arrives: the 200 goes out as soon as it does")
    func joinBeforeInvite() throws {
        let harness = try EngineHarness()
        let uuid = UUID()
        _ = Self.push(harness, uuid: uuid)
        try harness.manager.perform([.join(conversationUUID: uuid)])
        #expect(harness.sent().isEmpty)
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        let sent = harness.sent()
        #expect(sent.map(\.statusCode) == [180, 200])
        let tag = try #require(sent.first?.toTag)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack"))
        #expect(harness.conversation?.state == .joined)
    }

    @Test("declined before the INVITE arrives: the INVITE is refused")
    func endBeforeInvite() throws {
        let harness = try EngineHarness()
        let uuid = UUID()
        _ = Self.push(harness, uuid: uuid)
        try harness.manager.perform([.end(conversationUUID: uuid)])
        #expect(harness.transitions.states == ["ringing", "leaving", "left(localEnded)"])
        harness.deliver(PeerMessages.invite(), body: PeerMessages.offer)
        #expect(harness.sent().map(\.statusCode) == [486])
        #expect(harness.manager.conversations.isEmpty)
    }

    @Test("unusable pushes are reported and ended at once as failed (no strike for the device)")
    func unusable() throws {
        let harness = try EngineHarness()
        let expired = Self.push(harness, callID: "old@peer", expiresIn: -1)
        guard case .reportedAndEnded(_, let reason) = expired else {
            Issue.record("expected reportedAndEnded, got \(expired)")
            return
        }
        #expect(reason.contains("expired"))
        let badCallID = Self.push(harness, callID: "has space")
        guard case .reportedAndEnded = badCallID else {
            Issue.record("expected reportedAndEnded, got \(badCallID)")
            return
        }
        let uuid = UUID()
        _ = Self.push(harness, uuid: uuid, callID: "first@peer")
        let reused = Self.push(harness, uuid: uuid, callID: "second@peer")
        guard case .reportedAndEnded(let fresh, let why) = reused else {
            Issue.record("expected reportedAndEnded, got \(reused)")
            return
        }
        #expect(fresh != uuid && why.contains("refused"), "\(why)")
        #expect(expired.reported && badCallID.reported && reused.reported)
        #expect(harness.transitions.all.filter { $0.conversation.state == .left }.allSatisfy { $0.conversation.endedReason == .failed })
        #expect(harness.manager.conversations.map(\.uuid) == [uuid])
    }
}
