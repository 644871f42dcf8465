import Foundation
import SIPMessages
import SIPSignaling
import Testing

@Suite("Dialog creation (RFC 3261 §12.1)")
struct DialogCreationTests {
    typealias F = DialogFixture

    @Test("UAS: our 180 makes an early dialog with the request's Record-Route in order; our 200 confirms it")
    func calleeEarlyThenConfirmed() throws {
        let invite = try F.incomingInvite(cseq: 101)
        let ringing = F.bobAnswer(to: invite, statusCode: 180)
        var dialog = try #require(SIPDialog.asCallee(request: invite, response: ringing, localSequence: 7))
        #expect(dialog.state == .early)
        #expect(dialog.id == DialogID(callID: F.callID, localTag: F.bobTag, remoteTag: F.aliceTag))
        #expect(dialog.routeSet.map(\.uri.host) == ["ss2.biloxi.example.com", "ss1.atlanta.example.com"])
        #expect(dialog.remoteTarget == SIPURI("sip:alice@client.atlanta.example.com;transport=tcp"))
        #expect(dialog.remoteSequence == 101)
        #expect(dialog.localSequence == 7)
        #expect(dialog.localAddress.tag == F.bobTag)
        #expect(dialog.localAddress.uri == SIPURI("sip:bob@biloxi.example.com"))
        #expect(dialog.remoteAddress.tag == F.aliceTag)
        #expect(!dialog.isCaller)
        #expect(!dialog.isSecure)
        #expect(dialog.inviteInProgress == .received(cseq: 101))

        dialog.respond(F.bobAnswer(to: invite, statusCode: 200))
        #expect(dialog.state == .confirmed)
        #expect(dialog.inviteInProgress == nil)
        // The dialog finds itself in the peer's next request.
        #expect(DialogID(incomingRequest: try F.requestFromAlice(.bye, cseq: 102)) == dialog.id)
    }

    @Test("UAS: a 2xx straight away makes a confirmed dialog; a 486 ends the early one as rejected, a 487 as cancelled")
    func calleeFinalAnswers() throws {
        let invite = try F.incomingInvite()
        let ok = F.bobAnswer(to: invite, statusCode: 200)
        let confirmed = try #require(SIPDialog.asCallee(request: invite, response: ok))
        #expect(confirmed.state == .confirmed)
        #expect(confirmed.inviteInProgress == nil)
        #expect(confirmed.localSequence == 0)

        for (code, reason) in [(486, DialogTerminationReason.rejected), (487, .cancelled), (408, .timeout)] {
            let progress = F.bobAnswer(to: invite, statusCode: 183)
            var early = try #require(SIPDialog.asCallee(request: invite, response: progress))
            early.respond(F.bobAnswer(to: invite, statusCode: code))
            #expect(early.state == .terminated(reason))
        }
    }

    @Test("UAS: no dialog from a 100, a final error, a 1xx to a non-INVITE, or a response to another request")
    func calleeNonDialogResponses() throws {
        let invite = try F.incomingInvite()
        #expect(SIPDialog.asCallee(request: invite, response: invite.makeResponse(statusCode: 100)) == nil)
        #expect(SIPDialog.asCallee(request: invite, response: F.bobAnswer(to: invite, statusCode: 486)) == nil)
        #expect(SIPDialog.asCallee(request: invite, response: invite.makeResponse(statusCode: 180)) == nil)  // no tag
        let other = try F.incomingInvite(cseq: 2)
        #expect(SIPDialog.asCallee(request: invite, response: F.bobAnswer(to: other, statusCode: 200)) == nil)
        let subscribe = Fixture.request(.subscribe)
        let notifying = subscribe.makeResponse(statusCode: 180, toTag: "x")
        #expect(SIPDialog.asCallee(request: subscribe, response: notifying) == nil)
        let accepted = subscribe.makeResponse(statusCode: 200, toTag: "x")
        #expect(SIPDialog.asCallee(request: subscribe, response: accepted) != nil)
    }

    @Test("UAS: without a Contact the remote target falls back to the From URI; sips over TLS is secure")
    func calleeFallbacksAndSecurity() throws {
        let bare = try F.incomingInvite(recordRoutes: [], contact: nil)
        let dialog = try #require(SIPDialog.asCallee(request: bare, response: F.bobAnswer(to: bare, statusCode: 200)))
        #expect(dialog.remoteTarget == SIPURI("sip:alice@atlanta.example.com"))
        #expect(dialog.routeSet.isEmpty)

        let secure = try F.incomingInvite(requestURI: "sips:bob@client.biloxi.example.com", transport: "TLS")
        #expect(SIPDialog.asCallee(request: secure, response: F.bobAnswer(to: secure, statusCode: 200))?.isSecure == true)
        let sipsOverTCP = try F.incomingInvite(requestURI: "sips:bob@client.biloxi.example.com")
        let overTCP = SIPDialog.asCallee(request: sipsOverTCP, response: F.bobAnswer(to: sipsOverTCP, statusCode: 200))
        #expect(overTCP?.isSecure == false)
    }

    @Test("UAC: a 180 with a tag makes an early dialog with Record-Route reversed; the 200 confirms and recomputes it")
    func callerEarlyThenConfirmed() throws {
        let invite = F.outgoingInvite(cseq: 314)
        let ringing = try F.responseFromBob(to: invite, statusCode: 180, recordRoutes: ["<sip:old.example.com;lr>"])
        #expect(DialogID(responseAsUAC: ringing) == DialogID(callID: F.callID, localTag: F.aliceTag, remoteTag: F.bobTag))
        var dialog = try #require(SIPDialog.asCaller(request: invite, response: ringing))
        #expect(dialog.state == .early)
        #expect(dialog.isCaller)
        #expect(dialog.localSequence == 314)
        #expect(dialog.remoteSequence == nil)
        #expect(dialog.routeSet.map(\.uri.host) == ["old.example.com"])
        #expect(dialog.inviteInProgress == .sent(cseq: 314))
        #expect(dialog.remoteTarget == SIPURI("sip:bob@client.biloxi.example.com;transport=tcp"))

        let ok = try F.responseFromBob(to: invite, statusCode: 200, contact: "<sip:bob@192.0.2.4:5062>")
        dialog.receive(response: ok)
        #expect(dialog.state == .confirmed)
        #expect(dialog.routeSet.map(\.uri.host) == ["ss1.atlanta.example.com", "ss2.biloxi.example.com"])
        #expect(dialog.remoteTarget == SIPURI("sip:bob@192.0.2.4:5062"))
        #expect(dialog.inviteInProgress == nil)
        #expect(dialog.localAddress.tag == F.aliceTag)
        #expect(dialog.remoteAddress.tag == F.bobTag)
    }

    @Test("UAC: a later 1xx refreshes an early dialog's target; a 486 terminates it as rejected")
    func callerEarlyRefreshAndRejection() throws {
        let invite = F.outgoingInvite()
        let ringing = try F.responseFromBob(to: invite, statusCode: 180)
        var dialog = try #require(SIPDialog.asCaller(request: invite, response: ringing))
        dialog.receive(response: try F.responseFromBob(to: invite, statusCode: 183, contact: "<sip:bob@192.0.2.9>"))
        #expect(dialog.state == .early)
        #expect(dialog.remoteTarget == SIPURI("sip:bob@192.0.2.9"))
        dialog.receive(response: try F.responseFromBob(to: invite, statusCode: 486))
        #expect(dialog.state == .terminated(.rejected))
        #expect(dialog.inviteInProgress == nil)
    }

    @Test("UAC: no dialog from a 100, a tagless 1xx or a final error; a tagless 2xx (RFC 2543) has a nil remote tag")
    func callerNonDialogResponses() throws {
        let invite = F.outgoingInvite()
        for code in [100, 180] {
            let tagless = try F.responseFromBob(to: invite, statusCode: code, toTag: nil)
            #expect(SIPDialog.asCaller(request: invite, response: tagless) == nil)
        }
        #expect(SIPDialog.asCaller(request: invite, response: try F.responseFromBob(to: invite, statusCode: 603)) == nil)
        let bare = try F.responseFromBob(to: invite, statusCode: 200, toTag: nil, contact: nil)
        let legacy = try #require(SIPDialog.asCaller(request: invite, response: bare))
        #expect(legacy.id.remoteTag == nil)
        #expect(legacy.remoteTarget == invite.uri)  // no Contact: the Request-URI
        #expect(legacy.state == .confirmed)
    }

    @Test("DialogID: nil for a request outside a dialog; RFC 4235 reason tokens")
    func identifiersAndReasons() throws {
        #expect(DialogID(incomingRequest: try F.incomingInvite()) == nil)
        #expect(DialogTerminationReason.allCases.map(\.token)
            == ["cancelled", "rejected", "replaced", "local-bye", "remote-bye", "error", "timeout"])
    }
}
