import ConversationKit
import Foundation
import SIPMessages
import Testing

@testable import ParleyEngine

/// Our own re-INVITEs against the peer's, on the call-leg machine driven by hand (a fixed context, timers fired by
/// the test): RFC 3261 §14.1 — no re-INVITE of ours while another INVITE transaction of the dialog is in progress.
@Suite("Call leg: our offers wait for the offer in progress")
struct CallLegOfferTests {
    let context = CallLegTable.TableContext()

    /// A confirmed callee leg whose peer has just resumed by re-INVITE (CSeq 4): our 200 waits for its ACK.
    func peerResumedUnacknowledged() -> CallLeg {
        var leg = CallLegTable.representative(.confirmed, in: context)
        let resume = CallLegTable.peerRequest(
            .invite, to: leg, cseq: 4, contentType: CallLeg.sdpType,
            body: CallLegTable.TableContext.peerOffer(hold: false).serialize())
        let answered = leg.receiveReinvite(resume, key: CallLegTable.TableContext.requestKey, in: context)
        #expect(answered.contains { if case .respond(let ok, _) = $0 { ok.statusCode == 200 } else { false } })
        #expect(answered.contains(.startTimer(.ackTimeout, after: context.configuration.timers.t1 * 64)))
        #expect(leg.unacknowledgedSuccess?.cseq == 4)
        return leg
    }

    /// The re-INVITEs among `effects`, with their CSeq.
    static func reinvites(_ effects: [CallLegEffect]) -> [(request: SIPRequest, cseq: UInt32)] {
        effects.compactMap { if case .send(let request, .reinvite(let cseq), _) = $0 { (request, cseq) } else { nil } }
    }

    /// The SDP direction our offer asks for.
    static func direction(of request: SIPRequest) -> String? {
        let body = String(decoding: request.body, as: UTF8.self)
        return ["sendonly", "sendrecv", "recvonly", "inactive"].first { body.contains("a=\($0)") }
    }

    /// Whether `effects` settle `action` at all (fulfil or fail).
    static func settles(_ effects: [CallLegEffect], _ action: ConversationAction) -> Bool {
        effects.contains { effect in
            if case .fulfil(let settled) = effect { return settled == ActionRef(action) }
            if case .fail(let settled, _, _) = effect { return settled == ActionRef(action) }
            return false
        }
    }

    @Test("the peer's re-INVITE is open: our hold waits, goes when the ACK comes, and completes on its 200")
    func holdWaitsForTheACK() throws {
        var leg = peerResumedUnacknowledged()
        let hold = ConversationAction.pause(conversationUUID: leg.uuid, isPaused: true)
        let performed = leg.perform(hold, in: context)
        #expect(Self.reinvites(performed).isEmpty, "no re-INVITE while the peer's is open: \(performed)")
        #expect(!Self.settles(performed, hold), "the hold waits, it does not fail: \(performed)")

        // Our 2xx goes again meanwhile; the hold still waits.
        let again = leg.timerFired(.retransmitSuccess, in: context)
        #expect(again.contains { if case .sendStateless(.response(let ok), _) = $0 { ok.statusCode == 200 } else { false } })
        #expect(Self.reinvites(again).isEmpty)

        let acknowledged = leg.receiveACK(CallLegTable.peerRequest(.ack, to: leg, cseq: 4), in: context)
        #expect(acknowledged.starts(with: [.cancelTimer(.retransmitSuccess), .cancelTimer(.ackTimeout)]))
        let reinvite = try #require(Self.reinvites(acknowledged).first, "the ACK lets our re-INVITE go: \(acknowledged)")
        #expect(Self.reinvites(acknowledged).count == 1)
        #expect(Self.direction(of: reinvite.request) == "sendonly")
        #expect(!Self.settles(acknowledged, hold))

        let answered = leg.receive(CallLegTable.response(200, to: reinvite.request), to: .reinvite(cseq: reinvite.cseq), in: context)
        #expect(answered.contains(.fulfil(ActionRef(hold))), "\(answered)")
        #expect(answered.contains { if case .sendStateless(.request(let ack), _) = $0 { ack.method == .ack } else { false } })
        #expect(leg.descriptions?.localHold == true)
        #expect(leg.stateName == .confirmed)
    }

    @Test("the ACK never comes: the waiting hold fails, saying so, before the dialog is given up; no re-INVITE goes")
    func noACKFailsTheWaitingHold() throws {
        var leg = peerResumedUnacknowledged()
        let hold = ConversationAction.pause(conversationUUID: leg.uuid, isPaused: true)
        _ = leg.perform(hold, in: context)
        var effects: [CallLegEffect] = []
        for _ in 0..<6 { effects += leg.timerFired(.retransmitSuccess, in: context) }
        effects += leg.timerFired(.ackTimeout, in: context)
        #expect(Self.reinvites(effects).isEmpty, "\(effects)")
        let failure = try #require(effects.firstIndex {
            if case .fail(let action, let reason, nil) = $0 { action == ActionRef(hold) && reason.contains("never acknowledged") } else { false }
        }, "\(effects)")
        let forget = try #require(effects.firstIndex(of: .forget))
        #expect(failure < forget, "the hold fails with its own reason before the leg ends")
        #expect(effects.contains { if case .send(let bye, .bye, _) = $0 { bye.method == .bye } else { false } })
        #expect(effects.contains(.report(.ended(context.now, .failed))))
        #expect(leg.stateName == .ended)
    }

    @Test("hold, then resume while the hold's re-INVITE is out: the resume waits, goes after the hold's 200; never two out")
    func resumeWaitsForTheHold() throws {
        var leg = CallLegTable.representative(.confirmed, in: context)
        let hold = ConversationAction.pause(conversationUUID: leg.uuid, isPaused: true)
        let held = try #require(Self.reinvites(leg.perform(hold, in: context)).first)
        #expect(Self.direction(of: held.request) == "sendonly")

        let resume = ConversationAction.pause(conversationUUID: leg.uuid, isPaused: false)
        let waiting = leg.perform(resume, in: context)
        #expect(Self.reinvites(waiting).isEmpty, "one re-INVITE of ours at a time: \(waiting)")
        #expect(!Self.settles(waiting, resume) && !Self.settles(waiting, hold))

        let holdAnswered = leg.receive(CallLegTable.response(200, to: held.request), to: .reinvite(cseq: held.cseq), in: context)
        #expect(holdAnswered.contains(.fulfil(ActionRef(hold))))
        let ack = try #require(holdAnswered.firstIndex { if case .sendStateless(.request(let ack), _) = $0 { ack.method == .ack } else { false } })
        let resumed = try #require(Self.reinvites(holdAnswered).first, "\(holdAnswered)")
        let sent = try #require(holdAnswered.firstIndex { if case .send(_, .reinvite, _) = $0 { true } else { false } })
        #expect(ack < sent, "the hold's transaction is over (ACK) before the resume goes")
        #expect(resumed.cseq > held.cseq)
        #expect(Self.direction(of: resumed.request) == "sendrecv")

        let resumeAnswered = leg.receive(CallLegTable.response(200, to: resumed.request), to: .reinvite(cseq: resumed.cseq), in: context)
        #expect(resumeAnswered.contains(.fulfil(ActionRef(resume))))
        #expect(Self.reinvites(resumeAnswered).isEmpty)
        #expect(leg.descriptions?.localHold == false)
    }

    @Test("a newer request supersedes the one waiting: the older fails saying so; a refusal of ours still lets the newest go")
    func newestWins() throws {
        var leg = CallLegTable.representative(.confirmed, in: context)
        let hold = ConversationAction.pause(conversationUUID: leg.uuid, isPaused: true)
        let held = try #require(Self.reinvites(leg.perform(hold, in: context)).first)
        let resume = ConversationAction.pause(conversationUUID: leg.uuid, isPaused: false)
        _ = leg.perform(resume, in: context)
        let holdAgain = ConversationAction.pause(conversationUUID: leg.uuid, isPaused: true)
        let superseding = leg.perform(holdAgain, in: context)
        #expect(superseding.contains {
            if case .fail(let action, let reason, nil) = $0 { action == ActionRef(resume) && reason.contains("superseded") } else { false }
        }, "\(superseding)")
        #expect(Self.reinvites(superseding).isEmpty)

        // The first hold is refused: it fails with the peer's status, and the newest request goes.
        let refused = leg.receive(CallLegTable.response(488, to: held.request), to: .reinvite(cseq: held.cseq), in: context)
        #expect(refused.contains(.fail(
            ActionRef(hold), reason: "488 Not Acceptable Here", status: SIPFinalStatus(code: 488, reason: "Not Acceptable Here"))))
        let next = try #require(Self.reinvites(refused).first, "\(refused)")
        #expect(Self.direction(of: next.request) == "sendonly")
        #expect(!Self.settles(refused, holdAgain))
        #expect(leg.stateName == .confirmed)
    }

    @Test("after 491 the glare timer finds the peer's re-INVITE open: ours waits for its ACK instead of failing")
    func glareRetryWaitsForTheACK() throws {
        var leg = CallLegTable.representative(.confirmed, in: context)
        let hold = ConversationAction.pause(conversationUUID: leg.uuid, isPaused: true)
        let first = try #require(Self.reinvites(leg.perform(hold, in: context)).first)
        let glare = leg.receive(CallLegTable.response(491, to: first.request), to: .reinvite(cseq: first.cseq), in: context)
        #expect(glare.contains(.startTimer(.glareRetry, after: .seconds(1))))

        let resume = CallLegTable.peerRequest(
            .invite, to: leg, cseq: 4, contentType: CallLeg.sdpType,
            body: CallLegTable.TableContext.peerOffer(hold: false).serialize())
        _ = leg.receiveReinvite(resume, key: CallLegTable.TableContext.requestKey, in: context)
        let retried = leg.timerFired(.glareRetry, in: context)
        #expect(Self.reinvites(retried).isEmpty && !Self.settles(retried, hold), "\(retried)")

        let acknowledged = leg.receiveACK(CallLegTable.peerRequest(.ack, to: leg, cseq: 4), in: context)
        let second = try #require(Self.reinvites(acknowledged).first, "\(acknowledged)")
        #expect(second.cseq > first.cseq)
        let answered = leg.receive(CallLegTable.response(200, to: second.request), to: .reinvite(cseq: second.cseq), in: context)
        #expect(answered.contains(.fulfil(ActionRef(hold))))
    }

    @Test("a tone's INFO refused: the PlayTone fails with the peer's status as a value")
    func toneRefusalCarriesTheStatus() throws {
        var leg = CallLegTable.representative(.confirmed, in: context)
        let tones = ConversationAction.playTone(conversationUUID: leg.uuid, digits: "1")
        let sent = leg.perform(tones, in: context)
        let info = try #require(sent.lazy.compactMap { if case .send(let request, .info, _) = $0 { request } else { nil } }.first)
        let refused = leg.receive(CallLegTable.response(415, to: info), to: .info("1"), in: context)
        #expect(refused == [.fail(
            ActionRef(tones), reason: "tone 1 refused: 415 Unsupported Media Type",
            status: SIPFinalStatus(code: 415, reason: "Unsupported Media Type"))])
    }
}
