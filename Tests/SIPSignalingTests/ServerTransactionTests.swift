import SIPMessages
import SIPSignaling
import Testing

@Suite("Server transactions (RFC 3261 §17.2)")
struct ServerTransactionTests {
    @Test("INVITE: 100 Trying goes out when the TU is silent for 200 ms, and retransmissions get it again")
    func automaticTrying() {
        let invite = Fixture.request(.invite)
        var (transaction, effects) = InviteServerTransaction.start(request: invite, transport: .unreliable)
        #expect(effects == [.deliverRequest(invite), .startTimer(.trying, after: .milliseconds(200))])
        var timeline = Timeline()
        timeline.apply(effects)
        #expect(transaction.receive(invite).isEmpty)  // nothing sent yet: nothing to resend
        timeline.fireNext(&transaction)
        let trying = invite.makeResponse(statusCode: 100)
        #expect(timeline.sent.map(\.message) == [.response(trying)])
        #expect(timeline.now == .milliseconds(200))
        #expect(transaction.state == .proceeding)
        #expect(transaction.receive(invite) == [.send(.response(trying))])
        // The TU's provisional replaces it; no timer is left to cancel.
        let ringing = invite.makeResponse(statusCode: 180, toTag: "a6c85cf")
        #expect(transaction.respond(ringing) == [.send(.response(ringing))])
        #expect(transaction.receive(invite) == [.send(.response(ringing))])
    }

    @Test("INVITE: a provisional within 200 ms cancels the 100; a 2xx is sent once and ends the transaction")
    func successfulAnswer() {
        let invite = Fixture.request(.invite)
        var (transaction, _) = InviteServerTransaction.start(request: invite, transport: .unreliable)
        let ringing = invite.makeResponse(statusCode: 180, toTag: "a6c85cf")
        #expect(transaction.respond(ringing) == [.cancelTimer(.trying), .send(.response(ringing))])
        #expect(transaction.receive(invite) == [.send(.response(ringing))])
        let ok = invite.makeResponse(statusCode: 200, toTag: "a6c85cf")
        #expect(transaction.respond(ok) == [.send(.response(ok)), .terminated])
        #expect(transaction.state == .terminated)
        // The dialog retransmits the 2xx and takes the ACK; the transaction is gone.
        #expect(transaction.receive(invite).isEmpty)
        #expect(transaction.receive(Fixture.request(.ack, toTag: "a6c85cf")).isEmpty)
        #expect(transaction.respond(ok).isEmpty)
    }

    @Test("INVITE over UDP: a 486 is retransmitted with G (T1 doubling to T2) until H times out")
    func finalRetransmissionsUntilTimeout() {
        let invite = Fixture.request(.invite)
        var (transaction, effects) = InviteServerTransaction.start(request: invite, transport: .unreliable)
        let busy = invite.makeResponse(statusCode: 486, toTag: "a6c85cf")
        effects += transaction.respond(busy)
        var timeline = Timeline()
        timeline.apply(effects)
        #expect(transaction.state == .completed)
        #expect(timeline.runningTimers == [.g: .milliseconds(500), .h: .seconds(32)])
        #expect(transaction.receive(invite) == [.send(.response(busy))])
        timeline.runToEnd(&transaction)
        #expect(timeline.sent.map(\.at)
            == Fixture.seconds(0, 0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5))
        #expect(timeline.sent.allSatisfy { $0.message == .response(busy) })
        #expect(timeline.reports() == [.deliverRequest(invite), .timeout, .terminated])
    }

    @Test("INVITE over UDP: the ACK confirms, I absorbs ACK and INVITE retransmissions, then terminates")
    func ackConfirms() {
        let invite = Fixture.request(.invite)
        var (transaction, effects) = InviteServerTransaction.start(request: invite, transport: .unreliable)
        let decline = invite.makeResponse(statusCode: 603, toTag: "a6c85cf")
        effects += transaction.respond(decline)
        var timeline = Timeline()
        timeline.apply(effects)
        timeline.fireNext(&transaction)  // G once at 0.5 s
        let ack = Fixture.request(.ack, toTag: "a6c85cf")
        effects = transaction.receive(ack)
        #expect(effects == [.cancelTimer(.g), .cancelTimer(.h), .startTimer(.i, after: .seconds(5))])
        timeline.apply(effects)
        #expect(transaction.state == .confirmed)
        #expect(transaction.receive(ack).isEmpty)
        #expect(transaction.receive(invite).isEmpty)
        timeline.runToEnd(&transaction)
        #expect(timeline.now == .milliseconds(5500))
        #expect(timeline.sent.count == 2)
        #expect(timeline.reports() == [.deliverRequest(invite), .terminated])
    }

    @Test("INVITE over TCP: no G, only H; the ACK terminates at once (I = 0)")
    func inviteReliable() {
        let invite = Fixture.request(.invite, transport: "TCP")
        var (transaction, _) = InviteServerTransaction.start(request: invite, transport: .reliable)
        let busy = invite.makeResponse(statusCode: 486, toTag: "t")
        #expect(transaction.respond(busy) == [
            .cancelTimer(.trying), .send(.response(busy)), .startTimer(.h, after: .seconds(32)),
        ])
        #expect(transaction.receive(Fixture.request(.ack, transport: "TCP", toTag: "t"))
            == [.cancelTimer(.h), .terminated])
    }

    @Test("non-INVITE over UDP: retransmissions absorbed in trying, answered with the last response after")
    func nonInviteUnreliable() {
        let options = Fixture.request(.options)
        var (transaction, effects) = NonInviteServerTransaction.start(request: options, transport: .unreliable)
        #expect(effects == [.deliverRequest(options)])
        #expect(transaction.receive(options).isEmpty)
        let trying = options.makeResponse(statusCode: 100)
        #expect(transaction.respond(trying) == [.send(.response(trying))])
        #expect(transaction.state == .proceeding)
        #expect(transaction.receive(options) == [.send(.response(trying))])
        let ok = options.makeResponse(statusCode: 200, toTag: "x")
        effects = transaction.respond(ok)
        #expect(effects == [.send(.response(ok)), .startTimer(.j, after: .seconds(32))])
        var timeline = Timeline()
        timeline.apply(effects)
        #expect(transaction.receive(options) == [.send(.response(ok))])
        #expect(transaction.respond(options.makeResponse(statusCode: 500)).isEmpty)
        timeline.runToEnd(&transaction)
        #expect(timeline.now == .seconds(32))
        #expect(transaction.state == .terminated)
        #expect(transaction.receive(options).isEmpty)
    }

    @Test("non-INVITE over TCP: the final response terminates at once (J = 0)")
    func nonInviteReliable() {
        let bye = Fixture.request(.bye, transport: "TCP", toTag: "x")
        var (transaction, _) = NonInviteServerTransaction.start(request: bye, transport: .reliable)
        let ok = bye.makeResponse(statusCode: 200)
        #expect(transaction.respond(ok) == [.send(.response(ok)), .terminated])
    }

    @Test("transport errors end server transactions with a report")
    func serverTransportErrors() {
        let invite = Fixture.request(.invite)
        var (transaction, _) = InviteServerTransaction.start(request: invite, transport: .unreliable)
        _ = transaction.respond(invite.makeResponse(statusCode: 486, toTag: "t"))
        #expect(transaction.transportFailed() == [.transportError, .terminated])
        #expect(transaction.timerFired(.g).isEmpty)
        var (options, _) = NonInviteServerTransaction.start(request: Fixture.request(.options), transport: .reliable)
        #expect(options.transportFailed() == [.transportError, .terminated])
        #expect(options.transportFailed().isEmpty)
    }

    @Test("timers follow RFC 3261 Table 4 and can be configured")
    func timerTable() {
        let timers = TransactionTimers(t1: .milliseconds(100), t2: .seconds(1), t4: .seconds(2))
        #expect(timers.timerB == .milliseconds(6400))
        #expect(timers.timerD(.unreliable) == .seconds(32))
        #expect(TransactionTimers().timerD(.unreliable) == .seconds(32))
        #expect(TransactionTimers(t1: .seconds(1)).timerD(.unreliable) == .seconds(64))
        for zero in [timers.timerD(.reliable), timers.timerI(.reliable), timers.timerJ(.reliable), timers.timerK(.reliable)] {
            #expect(zero == .zero)
        }
        #expect(timers.timerI(.unreliable) == .seconds(2))
        #expect(timers.timerJ(.unreliable) == .milliseconds(6400))
        #expect(TransactionTransport(viaTransport: "udp") == .unreliable)
        #expect(TransactionTransport(viaTransport: "TLS") == .reliable)

        let options = Fixture.request(.options)
        var (transaction, effects) = NonInviteClientTransaction.start(
            request: options, transport: .unreliable, timers: timers)
        var timeline = Timeline()
        timeline.apply(effects)
        timeline.runToEnd(&transaction)
        #expect(timeline.sent.map(\.at).prefix(6) == Fixture.seconds(0, 0.1, 0.3, 0.7, 1.5, 2.5)[...])
        #expect(timeline.now == .milliseconds(6400))
        effects = []
    }
}
