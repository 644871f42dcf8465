import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import SIPTransport
import Testing

/// Two engines wired to each other in memory: what one sends, the other receives (as if from its address), on one
/// shared manual timeline. The call-leg machines of both sides run against each other, with no socket and no sleep.
final class EnginePair {
    let alice: EngineHarness
    let bob: EngineHarness
    /// Messages the network loses (none unless a test says so).
    var loses: (SIPMessage) -> Bool = { _ in false }

    init(configure: (inout EngineConfiguration) -> Void = { _ in }) throws {
        alice = try EngineHarness(local: ListenAddress(kind: .udp, host: "127.0.0.1", port: 5071)) {
            $0.userName = "alice"
            configure(&$0)
        }
        bob = try EngineHarness(local: ListenAddress(kind: .udp, host: "127.0.0.1", port: 5072)) {
            $0.userName = "bob"
            configure(&$0)
        }
    }

    /// Carries what `sender` has sent so far to the other side, and nothing back; returns the start lines.
    @discardableResult
    func carry(from sender: EngineHarness) -> [String] {
        let (name, receiver) = sender === alice ? ("alice", bob) : ("bob", alice)
        return sender.environment.takeSent().map { sent in
            deliver(sent.message, from: sender, to: receiver)
            return "\(name) → " + Self.startLine(sent.message)
        }
    }

    /// Carries every message sent on either side to the other until both are quiet; returns the start lines seen.
    @discardableResult
    func pump() -> [String] {
        var seen: [String] = []
        while true {
            let fromAlice = alice.environment.takeSent()
            let fromBob = bob.environment.takeSent()
            if fromAlice.isEmpty && fromBob.isEmpty { return seen }
            for sent in fromAlice { seen.append("alice → " + Self.startLine(sent.message)); deliver(sent.message, from: alice, to: bob) }
            for sent in fromBob { seen.append("bob → " + Self.startLine(sent.message)); deliver(sent.message, from: bob, to: alice) }
        }
    }

    /// Moves both timelines forward together (in small steps, so their timers interleave in order), pumping.
    func advance(by duration: Duration) {
        var left = duration
        let step: Duration = .milliseconds(10)
        while left > .zero {
            let now = min(step, left)
            alice.environment.advance(by: now)
            bob.environment.advance(by: now)
            pump()
            left -= now
        }
    }

    private func deliver(_ message: SIPMessage, from sender: EngineHarness, to receiver: EngineHarness) {
        if loses(message) { return }
        let source = SIPPeerAddress(host: sender.local.host, port: sender.local.port)
        receiver.engine.receive(InboundSIPMessage(
            bytes: message.serialize(), kind: .udp, source: source, connection: nil, local: receiver.local))
    }

    private static func startLine(_ message: SIPMessage) -> String {
        switch message {
        case .request(let request): "\(request.method)"
        case .response(let response): "\(response.statusCode) \(response.headers.cseq?.method.description ?? "")"
        }
    }
}

@Suite("Engine: two engines against each other in memory")
struct EnginePairTests {
    @Test("alice calls bob: rings, bob answers, alice holds and resumes, bob sends tones, alice hangs up")
    func wholeCall() throws {
        let pair = try EnginePair()
        let call = UUID()
        try pair.alice.manager.perform([.start(conversationUUID: call, handles: [
            Handle(kind: .generic, value: "sip:bob@127.0.0.1:5072", displayName: "Bob"),
        ])])
        #expect(pair.pump() == ["alice → INVITE", "bob → 180 INVITE"])
        #expect(pair.alice.conversation?.state == .ringing)
        let bobsCall = try #require(pair.bob.conversation)
        #expect(bobsCall.state == .ringing)

        try pair.bob.manager.perform([.join(conversationUUID: bobsCall.uuid)])
        #expect(pair.pump() == ["bob → 200 INVITE", "alice → ACK"])
        #expect(pair.alice.conversation?.state == .joined)
        #expect(pair.bob.conversation?.state == .joined)

        try pair.alice.manager.perform([.pause(conversationUUID: call, isPaused: true)])
        #expect(pair.pump() == ["alice → INVITE", "bob → 200 INVITE", "alice → ACK"])
        #expect(pair.alice.conversation?.state == .paused)
        #expect(pair.bob.conversation?.activeRemoteMembers.isEmpty == true)
        try pair.alice.manager.perform([.pause(conversationUUID: call, isPaused: false)])
        pair.pump()
        #expect(pair.alice.conversation?.state == .joined)
        #expect(pair.bob.conversation?.activeRemoteMembers.count == 1)

        let tones = ConversationAction.playTone(conversationUUID: bobsCall.uuid, digits: "4#")
        try pair.bob.manager.perform([tones])
        #expect(pair.pump() == ["bob → INFO", "alice → 200 INFO", "bob → INFO", "alice → 200 INFO"])
        #expect(tones.state == .complete)

        try pair.alice.manager.perform([.end(conversationUUID: call)])
        #expect(pair.pump() == ["alice → BYE", "bob → 200 BYE"])
        #expect(pair.alice.transitions.states.last == "left(localEnded)")
        #expect(pair.bob.transitions.states.last == "left(remoteEnded)")
        pair.advance(by: .seconds(40))  // every transaction and timer of both sides runs out
        #expect(pair.alice.environment.pendingTimers == 0)
        #expect(pair.bob.environment.pendingTimers == 0)
    }

    @Test("glare: both hold at once; each gets 491, the callee retries first (0–2 s), then the caller (2.1–4 s)")
    func glare() throws {
        let pair = try EnginePair()
        let (call, bobsCall) = try Self.connected(pair)

        // Both re-INVITEs leave before either arrives.
        try pair.alice.manager.perform([.pause(conversationUUID: call, isPaused: true)])
        try pair.bob.manager.perform([.pause(conversationUUID: bobsCall, isPaused: true)])
        let crossing = pair.pump()
        #expect(crossing.filter { $0.hasSuffix("491 INVITE") }.count == 2)
        #expect(pair.alice.conversation?.state == .joined)
        #expect(pair.bob.conversation?.state == .joined)

        pair.advance(by: .seconds(2))
        #expect(pair.bob.conversation?.state == .paused)
        #expect(pair.alice.conversation?.state == .joined)
        pair.advance(by: .seconds(2))
        #expect(pair.alice.conversation?.state == .paused)
        #expect(pair.bob.conversation?.state == .paused)
    }

    /// Alice calls bob and bob answers. Returns both uuids.
    static func connected(_ pair: EnginePair) throws -> (alice: UUID, bob: UUID) {
        let call = UUID()
        try pair.alice.manager.perform([.start(conversationUUID: call, handles: [
            Handle(kind: .generic, value: "sip:bob@127.0.0.1:5072", displayName: "Bob"),
        ])])
        pair.pump()
        let bobsCall = try #require(pair.bob.conversation?.uuid)
        try pair.bob.manager.perform([.join(conversationUUID: bobsCall)])
        pair.pump()
        return (call, bobsCall)
    }

    /// Alice calls bob, bob answers, alice holds: the call as the resume tests start from. Returns both uuids.
    static func aliceHolds(_ pair: EnginePair) throws -> (alice: UUID, bob: UUID) {
        let (call, bobsCall) = try connected(pair)
        try pair.alice.manager.perform([.pause(conversationUUID: call, isPaused: true)])
        pair.pump()
        #expect(pair.alice.conversation?.state == .paused)
        #expect(pair.bob.conversation?.activeRemoteMembers.isEmpty == true)
        return (call, bobsCall)
    }

    @Test("alice resumes and bob holds before her ACK reaches him: bob's hold waits for the ACK (RFC 3261 §14.1), then completes")
    func holdRightAfterThePeersResume() throws {
        let pair = try EnginePair()
        let (call, bobsCall) = try Self.aliceHolds(pair)
        try pair.alice.manager.perform([.pause(conversationUUID: call, isPaused: false)])
        #expect(pair.carry(from: pair.alice) == ["alice → INVITE"])
        #expect(pair.carry(from: pair.bob) == ["bob → 200 INVITE"])
        #expect(pair.alice.conversation?.state == .joined)

        // Alice's ACK is on its way, not yet at bob, when bob holds.
        let hold = ConversationAction.pause(conversationUUID: bobsCall, isPaused: true)
        try pair.bob.manager.perform([hold])
        #expect(pair.bob.environment.sent.isEmpty, "no re-INVITE while alice's is open")
        #expect(hold.state == .running, "the hold waits, it does not fail: \(hold.state)")

        #expect(pair.carry(from: pair.alice) == ["alice → ACK"])
        #expect(pair.pump() == ["bob → INVITE", "alice → 200 INVITE", "bob → ACK"])
        #expect(hold.state == .complete)
        #expect(pair.bob.conversation?.state == .paused)
        #expect(pair.bob.conversation?.activeRemoteMembers.count == 1, "alice resumed")
        #expect(pair.alice.conversation?.activeRemoteMembers.isEmpty == true, "bob holds alice")
    }

    @Test("alice's ACK never reaches bob: bob's waiting hold fails saying why, and the call ends as failed after 64·T1")
    func holdWaitingForAnACKThatNeverComes() throws {
        // T1 of 100 ms: 64·T1 is 6.4 s, within the action's own 30 s.
        let pair = try EnginePair { $0.timers.t1 = .milliseconds(100) }
        let (call, bobsCall) = try Self.aliceHolds(pair)
        pair.loses = { message in message.request?.method == .ack }
        try pair.alice.manager.perform([.pause(conversationUUID: call, isPaused: false)])
        pair.pump()
        let hold = ConversationAction.pause(conversationUUID: bobsCall, isPaused: true)
        try pair.bob.manager.perform([hold])
        pair.advance(by: .seconds(7))
        guard case .failed(let reason) = hold.state else {
            Issue.record("the hold should have failed, not \(hold.state)")
            return
        }
        #expect(reason.contains("never acknowledged"), "\(reason)")
        #expect(pair.bob.transitions.states.last == "left(failed)")
    }

    @Test("alice cancels before bob answers: bob's conversation ends cancelled, alice's localEnded")
    func cancelBeforeAnswer() throws {
        let pair = try EnginePair()
        let call = UUID()
        try pair.alice.manager.perform([.start(conversationUUID: call, handles: [
            Handle(kind: .generic, value: "sip:bob@127.0.0.1:5072", displayName: "Bob"),
        ])])
        pair.pump()
        try pair.alice.manager.perform([.end(conversationUUID: call)])
        #expect(pair.pump() == ["alice → CANCEL", "bob → 200 CANCEL", "bob → 487 INVITE", "alice → ACK"])
        #expect(pair.alice.transitions.states.last == "left(localEnded)")
        #expect(pair.bob.transitions.states.last == "left(cancelled)")
    }
}
