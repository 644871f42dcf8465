import SIPMessages
import SIPSignaling
import Testing

@Suite("Client transactions (RFC 3261 §17.1)")
struct ClientTransactionTests {
    @Test("INVITE over UDP: A doubles 0.5, 1, 2, 4… until B at 64·T1 times out")
    func inviteRetransmissionSchedule() {
        let invite = Fixture.request(.invite)
        var (transaction, effects) = InviteClientTransaction.start(request: invite, transport: .unreliable)
        var timeline = Timeline()
        timeline.apply(effects)
        #expect(timeline.runningTimers == [.a: .milliseconds(500), .b: .seconds(32)])
        timeline.runToEnd(&transaction)
        #expect(timeline.sent.map(\.at) == Fixture.seconds(0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5))
        #expect(timeline.sent.allSatisfy { $0.message == .request(invite) })
        #expect(timeline.reports() == [.timeout, .terminated])
        #expect(timeline.now == .seconds(32))
        #expect(transaction.state == .terminated)
        effects = transaction.receive(invite.makeResponse(statusCode: 200, toTag: "late"))
        #expect(effects.isEmpty)
    }

    @Test("INVITE over TCP: sent once, no A, B still times out")
    func inviteReliable() {
        var (transaction, effects) = InviteClientTransaction.start(request: Fixture.request(.invite), transport: .reliable)
        var timeline = Timeline()
        timeline.apply(effects)
        #expect(timeline.runningTimers == [.b: .seconds(32)])
        timeline.runToEnd(&transaction)
        #expect(timeline.sent.count == 1)
        #expect(timeline.reports() == [.timeout, .terminated])
        effects = []
    }

    @Test("INVITE: 1xx delivered in proceeding, 2xx delivered and ends the transaction without an ACK")
    func inviteSuccess() {
        let invite = Fixture.request(.invite)
        var (transaction, effects) = InviteClientTransaction.start(request: invite, transport: .unreliable)
        var timeline = Timeline()
        timeline.apply(effects)
        timeline.fireNext(&transaction)  // A once
        let ringing = invite.makeResponse(statusCode: 180, toTag: "a6c85cf")
        effects = transaction.receive(ringing)
        #expect(effects == [.cancelTimer(.a), .cancelTimer(.b), .deliverResponse(ringing)])
        #expect(transaction.state == .proceeding)
        timeline.apply(effects)
        #expect(timeline.runningTimers.isEmpty)
        let ok = invite.makeResponse(statusCode: 200, toTag: "a6c85cf")
        effects = transaction.receive(ok)
        #expect(effects == [.deliverResponse(ok), .terminated])
        #expect(transaction.state == .terminated)
    }

    @Test("INVITE: a 486 is acknowledged by the transaction with the RFC 3261 §17.1.1.3 ACK")
    func nonSuccessAcknowledgement() throws {
        let routes = ["<sip:proxy1.example.com;lr>", "<sip:proxy2.example.com;lr>"]
        let invite = Fixture.request(.invite, cseq: 7, routes: routes)
        var (transaction, effects) = InviteClientTransaction.start(request: invite, transport: .unreliable)
        var timeline = Timeline()
        timeline.apply(effects)
        let busy = invite.makeResponse(statusCode: 486, toTag: "a6c85cf")
        effects = transaction.receive(busy)
        timeline.apply(effects)
        #expect(transaction.state == .completed)
        let ack = try #require(effects.compactMap { effect -> SIPRequest? in
            if case .send(.request(let request)) = effect { return request }
            return nil
        }.first)
        #expect(effects.contains(.deliverResponse(busy)))
        #expect(timeline.runningTimers == [.d: .seconds(32)])

        #expect(ack.method == .ack)
        #expect(ack.uri == invite.uri)
        #expect(ack.headers.vias == [invite.headers.topVia!])
        #expect(ack.headers.topVia?.branch == "z9hG4bK776asdhds")
        #expect(ack.headers.to?.tag == "a6c85cf")
        #expect(ack.headers.from == invite.headers.from)
        #expect(ack.headers.callID == invite.headers.callID)
        #expect(ack.headers.cseq == SIPCSeq(number: 7, method: .ack))
        #expect(ack.headers.values("Route") == routes)
        #expect(ack.body.isEmpty)
        #expect(try SIPMessage.parse(ack.serialize()) == .request(ack))
        #expect(ack == InviteClientTransaction.acknowledgement(of: invite, for: busy))

        // Retransmitted finals get the ACK again and are not delivered twice.
        #expect(transaction.receive(busy) == [.send(.request(ack))])
        #expect(transaction.receive(invite.makeResponse(statusCode: 180)).isEmpty)
        timeline.runToEnd(&transaction)
        #expect(timeline.now == .seconds(32))
        #expect(timeline.reports() == [.deliverResponse(busy), .terminated])
    }

    @Test("INVITE over TCP: a 603 is acknowledged and the transaction ends at once (D = 0)")
    func nonSuccessReliable() {
        let invite = Fixture.request(.invite, transport: "TCP")
        var (transaction, _) = InviteClientTransaction.start(request: invite, transport: .reliable)
        let decline = invite.makeResponse(statusCode: 603, toTag: "x1")
        let ack = InviteClientTransaction.acknowledgement(of: invite, for: decline)
        #expect(transaction.receive(decline) == [
            .cancelTimer(.b), .send(.request(ack)), .deliverResponse(decline), .terminated,
        ])
    }

    @Test("non-INVITE over UDP: E doubles up to T2, F times out at 64·T1")
    func nonInviteSchedule() {
        let options = Fixture.request(.options)
        var (transaction, effects) = NonInviteClientTransaction.start(request: options, transport: .unreliable)
        var timeline = Timeline()
        timeline.apply(effects)
        #expect(timeline.runningTimers == [.e: .milliseconds(500), .f: .seconds(32)])
        timeline.runToEnd(&transaction)
        #expect(timeline.sent.map(\.at)
            == Fixture.seconds(0, 0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5))
        #expect(timeline.reports() == [.timeout, .terminated])
        #expect(transaction.state == .terminated)
        effects = []
    }

    @Test("non-INVITE: after a 1xx, E retransmits every T2; a final response starts K and is absorbed after")
    func nonInviteProceedingAndCompleted() {
        let bye = Fixture.request(.bye, toTag: "a6c85cf")
        var (transaction, effects) = NonInviteClientTransaction.start(request: bye, transport: .unreliable)
        var timeline = Timeline()
        timeline.apply(effects)
        timeline.fireNext(&transaction)  // E at 0.5 s, next in 1 s
        let trying = bye.makeResponse(statusCode: 100)
        timeline.apply(transaction.receive(trying))
        #expect(transaction.state == .proceeding)
        timeline.fireNext(&transaction)  // E at 1.5 s
        #expect(timeline.runningTimers[.e] == .seconds(4))
        let ok = bye.makeResponse(statusCode: 200)
        effects = transaction.receive(ok)
        #expect(effects == [.cancelTimer(.e), .cancelTimer(.f), .deliverResponse(ok), .startTimer(.k, after: .seconds(5))])
        timeline.apply(effects)
        #expect(transaction.receive(ok).isEmpty)
        timeline.runToEnd(&transaction)
        #expect(timeline.now == .milliseconds(6500))
        #expect(timeline.reports() == [.deliverResponse(trying), .deliverResponse(ok), .terminated])
    }

    @Test("non-INVITE over TLS: one send, and a final response ends the transaction at once (K = 0)")
    func nonInviteReliable() {
        let register = Fixture.request(.register, transport: "TLS")
        var (transaction, effects) = NonInviteClientTransaction.start(request: register, transport: .reliable)
        #expect(effects == [.send(.request(register)), .startTimer(.f, after: .seconds(32))])
        let ok = register.makeResponse(statusCode: 200)
        effects = transaction.receive(ok)
        #expect(effects == [.cancelTimer(.f), .deliverResponse(ok), .terminated])
    }

    @Test("transport errors end client transactions with a report")
    func clientTransportErrors() {
        var (invite, _) = InviteClientTransaction.start(request: Fixture.request(.invite), transport: .unreliable)
        #expect(invite.transportFailed() == [.cancelTimer(.a), .cancelTimer(.b), .transportError, .terminated])
        #expect(invite.transportFailed().isEmpty)
        var (options, _) = NonInviteClientTransaction.start(request: Fixture.request(.options), transport: .reliable)
        #expect(options.transportFailed() == [.transportError, .terminated])
        #expect(options.state == .terminated)
    }

    @Test("stale timers (already cancelled, or of another kind) are ignored")
    func staleTimers() {
        var (transaction, _) = InviteClientTransaction.start(request: Fixture.request(.invite), transport: .unreliable)
        _ = transaction.receive(Fixture.request(.invite).makeResponse(statusCode: 180))
        for timer in TransactionTimer.allCases {
            #expect(transaction.timerFired(timer).isEmpty)
        }
        #expect(transaction.state == .proceeding)
    }
}
