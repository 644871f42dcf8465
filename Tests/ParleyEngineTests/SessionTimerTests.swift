import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import SIPTransport
import Testing

/// RFC 4028 session timers on the manual timeline: the headers each side sends, the refresher's re-INVITE at half the
/// interval, the other side's BYE when no refresh comes, 422 both ways, peers without timers.
@Suite("Engine: RFC 4028 session timers")
struct SessionTimerTests {
    /// A call to Bob answered 200 with `extra` header lines; returns the INVITE (after the ACK was taken).
    static func connected(_ harness: EngineHarness, extra: String) throws -> SIPRequest {
        let invite = try OutgoingCallTests.started(harness)
        harness.deliver(PeerMessages.response(200, "OK", to: invite, sdp: true) + extra, body: PeerMessages.offer)
        #expect(harness.sent().map(\.method) == ["ACK"])
        #expect(harness.conversation?.state == .joined)
        return invite
    }

    /// An incoming call whose INVITE carries `extra` header lines, answered and acknowledged; returns our 200.
    static func answered(_ harness: EngineHarness, extra: String) throws -> SIPResponse {
        harness.deliver(PeerMessages.invite() + extra, body: PeerMessages.offer)
        let tag = try #require(harness.sent().first?.toTag)
        try harness.manager.perform([.join(conversationUUID: try #require(harness.conversation?.uuid))])
        let ok = try #require(harness.sent().first?.response)
        #expect(ok.statusCode == 200)
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 1, branch: "z9hG4bK-ack-1"))
        #expect(harness.conversation?.state == .joined)
        return ok
    }

    @Test("our INVITE says Supported: timer, Session-Expires 1800 (the refresher left to the answer) and Min-SE 90")
    func inviteHeaders() throws {
        let harness = try EngineHarness()
        let invite = try OutgoingCallTests.started(harness)
        #expect(invite.headers["Supported"]?.contains("timer") == true)
        #expect(invite.headers["Session-Expires"] == "1800")
        #expect(invite.headers["Min-SE"] == "90")
    }

    @Test("caller and refresher (refresher=uac): a re-INVITE with the same SDP every half interval, none before")
    func callerRefreshes() throws {
        let harness = try EngineHarness()
        let invite = try Self.connected(harness, extra: "\nSession-Expires: 1800;refresher=uac\nRequire: timer")
        harness.environment.advance(by: .seconds(899))
        #expect(harness.sent().isEmpty)
        harness.environment.advance(by: .seconds(1))
        let refresh = try #require(harness.sent().first?.request)
        #expect(refresh.method == .invite && refresh.headers.toTag == "callee-tag")
        #expect(refresh.headers.cseq?.number == 2)
        #expect(refresh.body == invite.body, "the same description, its version unchanged (RFC 4028 §7.4)")
        #expect(refresh.headers["Session-Expires"] == "1800;refresher=uac")
        #expect(refresh.headers["Min-SE"] == "90")
        harness.deliver(PeerMessages.response(200, "OK", to: refresh, toTag: nil, sdp: true), body: PeerMessages.offer)
        #expect(harness.sent().map(\.method) == ["ACK"])
        #expect(harness.conversation?.state == .joined)
        // The 2xx restarted the timers: the next refresh is 900 s after it, and the session never expires.
        harness.environment.advance(by: .seconds(899))
        #expect(harness.sent().isEmpty)
        harness.environment.advance(by: .seconds(1))
        let next = try #require(harness.sent().first?.request)
        #expect(next.method == .invite && next.headers.cseq?.number == 3)
    }

    @Test("callee, the peer refreshes (refresher=uac): our 2xx requires timer; no refresh in time: BYE, sessionExpired")
    func calleeWatches() throws {
        let harness = try EngineHarness()
        let ok = try Self.answered(harness, extra: "\nSupported: timer\nSession-Expires: 120;refresher=uac")
        #expect(ok.headers["Session-Expires"] == "120;refresher=uac")
        #expect(ok.headers["Require"] == "timer")
        #expect(ok.headers.values("Supported").contains("timer"))
        let tag = try #require(ok.headers.toTag)
        // A refresh at 60 s restarts the timer: no BYE at 88 s.
        harness.environment.advance(by: .seconds(60))
        harness.deliver(
            PeerMessages.inDialog("INVITE", localTag: tag, cseq: 2, branch: "z9hG4bK-refresh-1", contentType: "application/sdp")
                + "\nSupported: timer\nSession-Expires: 120;refresher=uac",
            body: PeerMessages.offer)
        let refreshed = try #require(harness.sent().first?.response)
        #expect(refreshed.statusCode == 200)
        #expect(refreshed.headers["Session-Expires"] == "120;refresher=uac")
        harness.deliver(PeerMessages.inDialog("ACK", localTag: tag, cseq: 2, branch: "z9hG4bK-ack-2"))
        harness.environment.advance(by: .seconds(87))
        #expect(harness.sent().isEmpty, "nothing of ours: the peer refreshes")
        #expect(harness.conversation?.state == .joined)
        // Then nothing: 120 − min(32, 40) = 88 s after the refresh, BYE.
        harness.environment.advance(by: .seconds(1))
        #expect(harness.sent().first?.method == "BYE")
        #expect(harness.transitions.states.last == "left(sessionExpired)")
    }

    @Test("callee, the peer asks us to refresh (refresher=uas): our refresh re-INVITE at half the interval")
    func calleeRefreshesWhenAsked() throws {
        let harness = try EngineHarness()
        let ok = try Self.answered(harness, extra: "\nSupported: timer\nSession-Expires: 600;refresher=uas")
        #expect(ok.headers["Session-Expires"] == "600;refresher=uas")
        #expect(ok.headers["Require"] == nil)
        harness.environment.advance(by: .seconds(299))
        #expect(harness.sent().isEmpty)
        harness.environment.advance(by: .seconds(1))
        let refresh = try #require(harness.sent().first?.request)
        #expect(refresh.method == .invite)
        #expect(refresh.headers["Session-Expires"] == "600;refresher=uac", "in our own request, we are the uac")
        #expect(refresh.body == ok.body, "our last description again")
    }

    @Test("a peer without timer support: as callee we refresh (refresher=uas, no Require); as caller too")
    func peerWithoutTimers() throws {
        let callee = try EngineHarness()
        let ok = try Self.answered(callee, extra: "")
        #expect(ok.headers["Session-Expires"] == "1800;refresher=uas")
        #expect(ok.headers["Require"] == nil)
        callee.environment.advance(by: .seconds(900))
        #expect(callee.sent().first?.method == "INVITE")

        let caller = try EngineHarness()
        _ = try Self.connected(caller, extra: "")
        caller.environment.advance(by: .seconds(899))
        #expect(caller.sent().isEmpty)
        caller.environment.advance(by: .seconds(1))
        let refresh = try #require(caller.sent().first?.request)
        #expect(refresh.headers["Session-Expires"] == "1800;refresher=uac")
    }

    @Test("caller, the peer refreshes (refresher=uas in its 2xx): no re-INVITE of ours; silence ends the call")
    func callerWatches() throws {
        let harness = try EngineHarness()
        _ = try Self.connected(harness, extra: "\nSession-Expires: 90;refresher=uas")
        harness.environment.advance(by: .seconds(59))
        #expect(harness.sent().isEmpty)
        #expect(harness.conversation?.state == .joined)
        harness.environment.advance(by: .seconds(1))
        #expect(harness.sent().first?.method == "BYE")
        #expect(harness.transitions.states.last == "left(sessionExpired)")
    }

    @Test("422 with Min-SE: the INVITE goes once more (CSeq 2, asking for the Min-SE); a second 422 ends the call")
    func retryAfter422() throws {
        let harness = try EngineHarness()
        let invite = try OutgoingCallTests.started(harness)
        harness.deliver(PeerMessages.response(422, "Session Interval Too Small", to: invite) + "\nMin-SE: 3600")
        let sent = harness.sent()
        #expect(sent.map(\.method) == ["ACK", "INVITE"])
        let again = try #require(sent.last?.request)
        #expect(again.headers.cseq?.number == 2)
        #expect(again.headers.callID == invite.headers.callID)
        #expect(again.headers.fromTag == invite.headers.fromTag)
        #expect(again.headers.topVia?.branch != invite.headers.topVia?.branch)
        #expect(again.headers["Session-Expires"] == "3600")
        #expect(again.headers["Min-SE"] == "3600")
        #expect(again.body == invite.body)
        #expect(harness.conversation?.state != .left, "still calling")
        harness.deliver(PeerMessages.response(200, "OK", to: again, sdp: true) + "\nSession-Expires: 3600;refresher=uac", body: PeerMessages.offer)
        let ack = try #require(harness.sent().first?.request)
        #expect(ack.method == .ack && ack.headers.cseq?.number == 2)
        #expect(harness.conversation?.state == .joined)
        #expect(harness.engine.finalStatus(of: try #require(harness.conversation?.uuid)) == nil, "the 422 is not the call's failure")
        harness.environment.advance(by: .seconds(1800))
        #expect(harness.sent().first?.request?.headers["Session-Expires"] == "3600;refresher=uac")

        let twice = try EngineHarness()
        let first = try OutgoingCallTests.started(twice)
        twice.deliver(PeerMessages.response(422, "Session Interval Too Small", to: first) + "\nMin-SE: 3600")
        let second = try #require(twice.sent().last?.request)
        twice.deliver(PeerMessages.response(422, "Session Interval Too Small", to: second) + "\nMin-SE: 7200")
        #expect(twice.sent().map(\.method) == ["ACK"])
        #expect(twice.transitions.states.last == "left(failed)")
    }

    @Test("callee: an INVITE asking for less than our Min-SE gets 422 with Min-SE 90; Require: timer is taken")
    func tooSmallIncoming() throws {
        let harness = try EngineHarness()
        harness.deliver(
            PeerMessages.invite() + "\nSupported: timer\nRequire: timer\nSession-Expires: 60", body: PeerMessages.offer)
        let refusal = try #require(harness.sent().first?.response)
        #expect(refusal.statusCode == 422)
        #expect(refusal.headers["Min-SE"] == "90")
        #expect(harness.conversation == nil)
        // Asked again with 90: it rings.
        harness.deliver(
            PeerMessages.invite(callID: "call-2@peer", branch: "z9hG4bK-in-2", cseq: 2)
                + "\nSupported: timer\nRequire: timer\nSession-Expires: 90\nMin-SE: 90",
            body: PeerMessages.offer)
        #expect(harness.sent().map(\.statusCode) == [180])
    }

    @Test("our refresh answered 481: BYE, and the call ends as failed (as any re-INVITE)")
    func refreshGets481() throws {
        let harness = try EngineHarness()
        _ = try Self.connected(harness, extra: "\nSession-Expires: 1800;refresher=uac")
        harness.environment.advance(by: .seconds(900))
        let refresh = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(481, "Call/Transaction Does Not Exist", to: refresh, toTag: nil))
        #expect(harness.sent().map(\.method).contains("BYE"))
        #expect(harness.transitions.states.last == "left(failed)")
    }

    @Test("our refresh glares (491): it goes again after the glare wait")
    func refreshGlare() throws {
        let harness = try EngineHarness()
        _ = try Self.connected(harness, extra: "\nSession-Expires: 1800;refresher=uac")
        harness.environment.advance(by: .seconds(900))
        let refresh = try #require(harness.sent().first?.request)
        harness.deliver(PeerMessages.response(491, "Request Pending", to: refresh, toTag: nil))
        #expect(harness.sent().map(\.method) == ["ACK"])
        harness.environment.advance(by: .seconds(5))
        let again = try #require(harness.sent().first?.request)
        #expect(again.method == .invite && again.headers.cseq?.number == 3)
        #expect(again.body == refresh.body)
    }

    @Test("off: no timer headers, no refresh, and Require: timer is refused with 420")
    func off() throws {
        let harness = try EngineHarness { $0.sessionTimer = nil }
        let invite = try OutgoingCallTests.started(harness)
        #expect(invite.headers["Session-Expires"] == nil && invite.headers["Supported"] == nil)
        harness.deliver(PeerMessages.invite(callID: "call-9@peer") + "\nRequire: timer", body: PeerMessages.offer)
        let refusal = try #require(harness.sent().first?.response)
        #expect(refusal.statusCode == 420 && refusal.headers["Unsupported"] == "timer")
    }

    @Test("the configuration's problems: Min-SE under 90, an interval under the Min-SE")
    func problems() {
        var configuration = EngineConfiguration(listenAddresses: [ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070)])
        #expect(configuration.problems.isEmpty)
        configuration.sessionTimer = SessionTimerConfiguration(interval: 1800, minimum: 60)
        #expect(configuration.problems.count == 1)
        configuration.sessionTimer = SessionTimerConfiguration(interval: 100, minimum: 120)
        #expect(configuration.problems.count == 1)
    }
}
