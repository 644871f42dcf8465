import ConversationKit
import Foundation
import Testing

/// The documented flows, through the full manager and delegate path, with every callback checked in order.
@Suite("Manager flows")
struct ManagerFlowTests {
    @Test("incoming conversation answered and ended locally")
    func incomingAnswered() throws {
        let h = try Harness()
        try h.ring(h.A)
        #expect(h.delegate.take() == ["changed A ringing"])
        #expect(h.manager.conversation(h.A)?.members == [h.alice])
        #expect(h.manager.conversation(h.A)?.direction == .incoming)

        let join = ConversationAction.join(conversationUUID: h.A)
        try h.manager.perform([join])
        #expect(join.state == .running)
        #expect(h.delegate.take() == ["perform join A"])
        #expect(h.manager.pendingActions.map(\.uuid) == [join.uuid])

        try h.manager.reportConversationEvent(.startedConnecting(h.clock.now()), for: h.A)
        #expect(h.delegate.take() == ["changed A joining", "activate A"])
        h.clock.advance(by: 2)
        try h.manager.reportConversationEvent(.connected(h.clock.now()), for: h.A)
        #expect(h.delegate.take() == ["changed A joined"])
        #expect(join.fulfill())
        #expect(join.state == .complete)
        #expect(h.delegate.take() == [])
        let joined = try #require(h.manager.conversation(h.A))
        #expect(joined.connectedAt == h.clock.now())
        #expect(joined.activeRemoteMembers == [h.alice])
        #expect(h.manager.pendingActions.isEmpty)

        let end = ConversationAction.end(conversationUUID: h.A)
        try h.manager.perform([end])
        #expect(h.delegate.take() == ["changed A leaving", "deactivate A", "perform end A"])
        #expect(end.fulfill())
        #expect(h.delegate.take() == ["changed A left"])
        #expect(h.manager.conversations.isEmpty)
        let last = try #require(h.delegate.last(h.A))
        #expect(last.endedReason == .localEnded)
        #expect(last.endedAt == h.clock.now())
        #expect(last.activeRemoteMembers.isEmpty)
    }

    @Test("incoming conversation declined while ringing never activates media")
    func incomingDeclined() throws {
        let h = try Harness()
        try h.ring(h.A)
        try h.performAndFulfil(.end(conversationUUID: h.A))
        #expect(h.delegate.take() == ["changed A ringing", "changed A leaving", "perform end A", "changed A left"])
        #expect(h.delegate.last(h.A)?.endedReason == .localEnded)
        #expect(h.delegate.last(h.A)?.hasConnected == false)
    }

    @Test("incoming conversation missed: the backend's ring timeout ends it unanswered")
    func incomingMissed() throws {
        let h = try Harness()
        try h.ring(h.A)
        h.clock.advance(by: 60)
        try h.manager.reportConversationEvent(.ended(h.clock.now(), .unanswered), for: h.A)
        #expect(h.delegate.take() == ["changed A ringing", "changed A left"])
        #expect(h.delegate.last(h.A)?.endedReason == .unanswered)
        #expect(managerError { try h.manager.perform([.join(conversationUUID: h.A)]) } == .conversationEnded(h.A))
    }

    @Test("outgoing conversation: Start → ringing → answered → remote ends")
    func outgoingAnswered() throws {
        let h = try Harness()
        let start = ConversationAction.start(conversationUUID: h.B, handles: [h.bob])
        try h.manager.perform([start])
        #expect(h.delegate.take() == ["changed B idle", "perform start B"])
        #expect(h.manager.conversation(h.B)?.state == .idle)
        #expect(start.fulfill())
        #expect(h.delegate.take() == ["changed B ringing"])
        try h.manager.reportConversationEvent(.connected(h.clock.now()), for: h.B)
        #expect(h.delegate.take() == ["changed B joined", "activate B"])
        let joined = try #require(h.manager.conversation(h.B))
        #expect(joined.startedConnectingAt == joined.connectedAt)
        try h.manager.reportConversationEvent(.ended(h.clock.now(), .remoteEnded), for: h.B)
        #expect(h.delegate.take() == ["changed B left", "deactivate B"])
        #expect(h.delegate.last(h.B)?.endedReason == .remoteEnded)
    }

    @Test("outgoing conversation unanswered, busy and failed")
    func outgoingNotAnswered() throws {
        let h = try Harness()
        try h.performAndFulfil(.start(conversationUUID: h.A, handles: [h.alice]))
        try h.manager.reportConversationEvent(.ended(h.clock.now(), .unanswered), for: h.A)
        try h.performAndFulfil(.start(conversationUUID: h.B, handles: [h.bob]))
        try h.manager.reportConversationEvent(.ended(h.clock.now(), .busy), for: h.B)
        let start = ConversationAction.start(conversationUUID: h.C, handles: [h.carol])
        try h.manager.perform([start])
        #expect(start.fail(reason: "503 Service Unavailable"))
        #expect(start.state == .failed(reason: "503 Service Unavailable"))
        #expect(h.delegate.last(h.A)?.endedReason == .unanswered)
        #expect(h.delegate.last(h.B)?.endedReason == .busy)
        #expect(h.delegate.last(h.C)?.endedReason == .failed)
        #expect(h.manager.conversations.isEmpty)
    }

    @Test("hold and resume; mute; tones")
    func holdResume() throws {
        let h = try Harness()
        try h.answered(h.A)
        _ = h.delegate.take()
        let pause = ConversationAction.pause(conversationUUID: h.A, isPaused: true)
        try h.manager.perform([pause])
        #expect(h.manager.conversation(h.A)?.state == .joined, "paused only once the delegate fulfils")
        #expect(managerError { try h.manager.perform([.pause(conversationUUID: h.A, isPaused: true)]) }
            == .actionAlreadyPending(conversation: h.A, verb: .pause))
        #expect(pause.fulfill())
        #expect(h.manager.conversation(h.A)?.state == .paused)
        #expect(managerError { try h.manager.perform([.playTone(conversationUUID: h.A, digits: "1")]) }?.code
            == "illegalTransition")
        try h.performAndFulfil(.pause(conversationUUID: h.A, isPaused: false))
        #expect(h.manager.conversation(h.A)?.state == .joined)
        try h.performAndFulfil(.mute(conversationUUID: h.A, isMuted: true))
        #expect(h.manager.conversation(h.A)?.isMuted == true)
        let tones = [
            ConversationAction.playTone(conversationUUID: h.A, digits: "12"),
            ConversationAction.playTone(conversationUUID: h.A, digits: "#", tone: .softPause),
        ]
        try h.manager.perform(tones)
        #expect(h.delegate.take() == [
            "perform pause A", "changed A paused", "perform resume A", "changed A joined", "perform mute A",
            "changed A joined", "perform playTone A", "perform playTone A",
        ])
        #expect(managerError { try h.manager.perform([.playTone(conversationUUID: h.A, digits: "12x")]) }
            == .invalidToneDigits("12x"))
    }

    @Test("a failed pause leaves the conversation joined")
    func pauseFails() throws {
        let h = try Harness()
        try h.answered(h.A)
        let pause = ConversationAction.pause(conversationUUID: h.A, isPaused: true)
        try h.manager.perform([pause])
        #expect(pause.fail(reason: "491 Request Pending"))
        #expect(h.manager.conversation(h.A)?.state == .joined)
    }

    @Test("updates apply deltas: nil keeps, values replace; video upgrade needs supportsVideo")
    func updates() throws {
        let h = try Harness(.init(supportsVideo: true))
        try h.answered(h.A)
        let before = try #require(h.manager.conversation(h.A))
        try h.manager.reportConversationEvent(.updated(.init(capabilities: before.capabilities.union(.video))), for: h.A)
        let after = try #require(h.manager.conversation(h.A))
        #expect(after.isVideo)
        #expect(after.members == before.members)
        #expect(after.state == .joined)
        try h.manager.reportConversationEvent(.updated(.init(members: [h.alice, h.bob])), for: h.A)
        #expect(h.manager.conversation(h.A)?.members == [h.alice, h.bob])
        #expect(h.manager.conversation(h.A)?.isVideo == true)

        let audioOnly = try Harness()
        try audioOnly.answered(audioOnly.A)
        #expect(managerError {
            try audioOnly.manager.reportConversationEvent(.updated(.init(capabilities: [.video])), for: audioOnly.A)
        } == .videoNotSupported)
        #expect(audioOnly.manager.conversation(audioOnly.A)?.isVideo == false)
    }

    @Test("an End racing a remote hang-up completes the End")
    func endRacesRemoteEnd() throws {
        let h = try Harness()
        try h.answered(h.A)
        let end = ConversationAction.end(conversationUUID: h.A)
        let mute = ConversationAction.mute(conversationUUID: h.A, isMuted: true)
        try h.manager.perform([mute])
        try h.manager.perform([end])
        try h.manager.reportConversationEvent(.ended(h.clock.now(), .remoteEnded), for: h.A)
        #expect(end.state == .complete)
        #expect(mute.state == .failed(reason: "conversation ended (remoteEnded)"))
        #expect(!end.fulfill())
        #expect(!mute.fulfill())
        #expect(h.delegate.last(h.A)?.endedReason == .remoteEnded)
    }
}
