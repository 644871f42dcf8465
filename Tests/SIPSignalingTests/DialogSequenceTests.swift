import Foundation
import SIPMessages
import SIPSignaling
import Testing

@Suite("Dialog sequence numbers, target refresh, glare and termination (RFC 3261 §12.2, §14, §15)")
struct DialogSequenceTests {
    typealias F = DialogFixture

    @Test("each new request counts CSeq up by one; ACK and CANCEL reuse the INVITE's number")
    func localSequence() throws {
        var dialog = try F.alicesDialog(cseq: 10)
        let info = dialog.makeRequest(.info, via: F.via("z9hG4bK1"))
        #expect(info.headers.cseq == SIPCSeq(number: 11, method: .info))
        let reinvite = dialog.makeRequest(.invite, via: F.via("z9hG4bK2"))
        #expect(reinvite.headers.cseq == SIPCSeq(number: 12, method: .invite))
        #expect(dialog.inviteInProgress == .sent(cseq: 12))
        let cancel = reinvite.makeCancel()
        #expect(cancel.headers.cseq == SIPCSeq(number: 12, method: .cancel))
        dialog.receive(response: try F.responseFromBob(to: reinvite, statusCode: 200))
        #expect(dialog.inviteInProgress == nil)
        let ack = dialog.makeACK(forInviteCSeq: 12, via: F.via("z9hG4bK3"))
        #expect(ack.headers.cseq == SIPCSeq(number: 12, method: .ack))
        #expect(dialog.localSequence == 12)
        #expect(dialog.makeRequest(.bye, via: F.via("z9hG4bK4")).headers.cseq?.number == 13)
    }

    @Test("incoming requests: in order raises the remote sequence (gaps allowed); lower or equal is rejected with 500")
    func remoteSequence() throws {
        var dialog = try F.bobsDialog()
        #expect(dialog.remoteSequence == 1)
        #expect(dialog.receive(request: try F.requestFromAlice(.info, cseq: 2)) == .accept)
        #expect(dialog.receive(request: try F.requestFromAlice(.info, cseq: 9)) == .accept)
        #expect(dialog.remoteSequence == 9)
        for cseq: UInt32 in [8, 9] {
            let stale = try F.requestFromAlice(.info, cseq: cseq)
            let verdict = dialog.receive(request: stale)
            #expect(verdict == .rejectOutOfOrder)
            var generator = SeededGenerator(seed: 1)
            #expect(verdict.rejection(of: stale, using: &generator)?.statusCode == 500)
        }
        #expect(dialog.remoteSequence == 9)
        // ACK and CANCEL are not checked: the ACK for the first INVITE carries CSeq 1.
        #expect(dialog.receive(request: try F.requestFromAlice(.ack, cseq: 1)) == .accept)
        #expect(dialog.receive(request: try F.requestFromAlice(.cancel, cseq: 9)) == .accept)
        #expect(dialog.remoteSequence == 9)
    }

    @Test("the caller learns the remote sequence from the callee's first request")
    func callerRemoteSequence() throws {
        var dialog = try F.alicesDialog()
        #expect(dialog.remoteSequence == nil)
        let bye = try #require(try F.parse([
            "BYE sip:alice@client.atlanta.example.com;transport=tcp SIP/2.0",
            "Via: SIP/2.0/TCP client.biloxi.example.com:5060;branch=z9hG4bKb1",
            "Max-Forwards: 70",
            "From: Bob <sip:bob@biloxi.example.com>;tag=\(F.bobTag)",
            "To: Alice <sip:alice@atlanta.example.com>;tag=\(F.aliceTag)",
            "Call-ID: \(F.callID)",
            "CSeq: 5000 BYE",
            "Content-Length: 0",
        ]).request)
        #expect(dialog.receive(request: bye) == .accept)
        #expect(dialog.remoteSequence == 5000)
        #expect(dialog.state == .terminated(.remoteBye))
    }

    @Test("target refresh: an incoming re-INVITE or UPDATE with a Contact moves the remote target; INFO does not")
    func incomingTargetRefresh() throws {
        var dialog = try F.bobsDialog()
        let info = try F.requestFromAlice(.info, cseq: 2, contact: "<sip:alice@198.51.100.1>")
        #expect(dialog.receive(request: info) == .accept)
        #expect(dialog.remoteTarget == SIPURI("sip:alice@client.atlanta.example.com;transport=tcp"))
        let reinvite = try F.requestFromAlice(.invite, cseq: 3, contact: "<sip:alice@198.51.100.2:5070>")
        #expect(dialog.receive(request: reinvite) == .accept)
        #expect(dialog.remoteTarget == SIPURI("sip:alice@198.51.100.2:5070"))
        #expect(dialog.inviteInProgress == .received(cseq: 3))
        dialog.respond(reinvite.makeResponse(statusCode: 200))
        #expect(dialog.inviteInProgress == nil)
        let update = try F.requestFromAlice(.update, cseq: 4, contact: "<sip:alice@198.51.100.3>")
        #expect(dialog.receive(request: update) == .accept)
        #expect(dialog.remoteTarget == SIPURI("sip:alice@198.51.100.3"))
        // The next request Bob sends goes there.
        #expect(dialog.makeRequest(.bye, via: F.via("z9hG4bKx")).uri == SIPURI("sip:alice@198.51.100.3"))
    }

    @Test("target refresh: the 2xx to our re-INVITE moves the remote target; a 488 does not")
    func outgoingTargetRefresh() throws {
        var dialog = try F.alicesDialog()
        let first = dialog.makeRequest(.invite, via: F.via("z9hG4bKr1"))
        dialog.receive(response: try F.responseFromBob(to: first, statusCode: 488, contact: "<sip:bob@203.0.113.1>"))
        #expect(dialog.remoteTarget == SIPURI("sip:bob@client.biloxi.example.com;transport=tcp"))
        #expect(dialog.state == .confirmed)
        let second = dialog.makeRequest(.invite, via: F.via("z9hG4bKr2"))
        dialog.receive(response: try F.responseFromBob(to: second, statusCode: 200, contact: "<sip:bob@203.0.113.2>"))
        #expect(dialog.remoteTarget == SIPURI("sip:bob@203.0.113.2"))
        #expect(dialog.state == .confirmed)
    }

    @Test("glare: an INVITE while ours is in progress gets 491; we wait 2.1–4 s as caller, 0–2 s as callee")
    func requestPending() throws {
        var dialog = try F.bobsDialog()
        _ = dialog.makeRequest(.invite, via: F.via("z9hG4bKmine"))
        let theirs = try F.requestFromAlice(.invite, cseq: 2)
        let verdict = dialog.receive(request: theirs)
        #expect(verdict == .rejectRequestPending)
        var generator = SeededGenerator(seed: 7)
        let answer = try #require(verdict.rejection(of: theirs, using: &generator))
        #expect(answer.statusCode == 491)
        #expect(answer.reasonPhrase == "Request Pending")
        #expect(dialog.remoteSequence == 2)  // in order, so counted even though refused
        #expect(dialog.inviteInProgress == .sent(cseq: 1))

        var callee: [Duration] = []
        var caller: [Duration] = []
        for _ in 0..<2_000 {
            callee.append(dialog.glareRetryDelay(using: &generator))
            caller.append(ReINVITEGlare.retryDelay(isCallIDOwner: true, using: &generator))
        }
        #expect(callee.allSatisfy { (.zero ... .seconds(2)).contains($0) })
        #expect(caller.allSatisfy { (.milliseconds(2_100) ... .seconds(4)).contains($0) })
        #expect((callee + caller).allSatisfy { $0 / .milliseconds(10) == ($0 / .milliseconds(10)).rounded() })
        #expect(callee.min() == .zero && callee.max() == .seconds(2))
        #expect(caller.min() == .milliseconds(2_100) && caller.max() == .seconds(4))
        #expect(try F.alicesDialog().glareRetryDelay(using: &generator) >= .milliseconds(2_100))
    }

    @Test("glare: an INVITE while the peer's previous one is unanswered gets 500 with Retry-After 0–10")
    func retryLater() throws {
        var dialog = try F.bobsDialog()
        #expect(dialog.receive(request: try F.requestFromAlice(.invite, cseq: 2)) == .accept)
        let second = try F.requestFromAlice(.invite, cseq: 3)
        let verdict = dialog.receive(request: second)
        #expect(verdict == .rejectRetryLater)
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<50 {
            let answer = try #require(verdict.rejection(of: second, using: &generator))
            #expect(answer.statusCode == 500)
            let seconds = try #require(answer.headers["Retry-After"].flatMap { Int($0) })
            #expect((0...10).contains(seconds))
        }
        // Answering the rejected one leaves the first in progress; answering the first ends it.
        dialog.respond(second.makeResponse(statusCode: 500))
        #expect(dialog.inviteInProgress == .received(cseq: 2))
        dialog.respond(try F.requestFromAlice(.invite, cseq: 2).makeResponse(statusCode: 200))
        #expect(dialog.inviteInProgress == nil)
        #expect(dialog.receive(request: try F.requestFromAlice(.invite, cseq: 4)) == .accept)
    }

    @Test("termination: BYE either way, 481 and 408 end the dialog; afterwards requests get 481 and ACKs no answer")
    func termination() throws {
        var dialog = try F.bobsDialog()
        let bye = try F.requestFromAlice(.bye, cseq: 2)
        #expect(dialog.receive(request: bye) == .accept)
        #expect(dialog.state == .terminated(.remoteBye))
        let late = try F.requestFromAlice(.info, cseq: 3)
        let verdict = dialog.receive(request: late)
        #expect(verdict == .rejectTerminated)
        var generator = SeededGenerator(seed: 0)
        #expect(verdict.rejection(of: late, using: &generator)?.statusCode == 481)
        let ack = try F.requestFromAlice(.ack, cseq: 1)
        #expect(dialog.receive(request: ack) == .rejectTerminated)
        #expect(DialogRequestVerdict.rejectTerminated.rejection(of: ack, using: &generator) == nil)
        #expect(DialogRequestVerdict.accept.rejection(of: late, using: &generator) == nil)

        var caller = try F.alicesDialog()
        let ourBye = caller.makeRequest(.bye, via: F.via("z9hG4bKbye"))
        caller.receive(response: try F.responseFromBob(to: ourBye, statusCode: 200))
        #expect(caller.state == .terminated(.localBye))

        for (code, reason) in [(481, DialogTerminationReason.error), (408, .timeout)] {
            var other = try F.alicesDialog()
            let info = other.makeRequest(.info, via: F.via("z9hG4bKi"))
            other.receive(response: try F.responseFromBob(to: info, statusCode: 404))
            #expect(other.state == .confirmed)
            other.receive(response: try F.responseFromBob(to: info, statusCode: code))
            #expect(other.state == .terminated(reason))
        }

        var ended = try F.alicesDialog()
        ended.terminate(reason: .replaced)
        ended.terminate(reason: .error)
        #expect(ended.state == .terminated(.replaced))
        #expect(ended.isTerminated)
    }
}
