import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import SIPTransport

/// Every (state × input) of the call-leg machine, walked from a representative leg in each state: what
/// docs/call-leg.md shows (`parley conformance --table --call-leg`) and what the table test checks.
public enum CallLegTable {
    /// One cell: a state, an input, and what the machine did.
    struct Cell {
        let state: CallLeg.StateName
        let input: Input
        let next: CallLeg.StateName
        let effects: [CallLegEffect]
        /// Our own offer out or waiting before and after, if any (``CallLeg/OwnOffer``).
        var offerBefore: String? = nil
        var offerAfter: String? = nil
    }

    /// The inputs of the table, one representative of each kind.
    enum Input: String, CaseIterable {
        case ring = "ring (the conversation was reported)"
        case bye = "BYE"
        case reinvite = "re-INVITE (hold offer)"
        case info = "INFO (tone)"
        case message = "MESSAGE (group)"
        case sendMessage = "a group message to send"
        case cancel = "CANCEL"
        case ack = "ACK"
        case inviteAgain = "INVITE again (after our 2xx)"
        case successAgain = "2xx again (after our ACK)"
        case trying = "100 to the INVITE"
        case ringing = "180 to the INVITE"
        case success = "200 to the INVITE"
        case busy = "486 to the INVITE"
        case redirect = "302 to the INVITE (a Contact not tried yet)"
        case redirectLocated = "302 followed, then its target located"
        case cancelAnswered = "200 to our CANCEL"
        case inviteTimeout = "timer B of the INVITE"
        case reinviteAnswered = "200 to our re-INVITE"
        case reinviteRefused = "488 to our re-INVITE"
        case join = "Join"
        case end = "End"
        case hold = "Pause (hold)"
        case tones = "PlayTone"
        case videoOn = "video on (the frontend)"
        case ringTimer = "timer: ring"
        case autoAnswerTimer = "timer: autoAnswer"
        case forwardNoAnswerTimer = "timer: forwardNoAnswer (forwarding on no answer set)"
        case retransmitTimer = "timer: retransmitSuccess"
        case ackTimer = "timer: ackTimeout"
        case glareTimer = "timer: glareRetry"
        case cancelGuardTimer = "timer: cancelGuard"
        case reinviteGuardTimer = "timer: reinviteGuard"
        case tonesInStreamTimer = "timer: tonesInStream"
        case sessionRefreshTimer = "timer: sessionRefresh"
        case sessionExpiryTimer = "timer: sessionExpiry"
        case transfer = "Transfer (blind: REFER)"
        case referAccepted = "Transfer, then 202 to its REFER"
        case referRefused = "Transfer, then 603 to its REFER"
        case notifyTrying = "Transfer accepted, then NOTIFY (refer) sipfrag 100"
        case notifySuccess = "Transfer accepted, then NOTIFY (refer) sipfrag 200"
        case notifyFailure = "Transfer accepted, then NOTIFY (refer) sipfrag 486"
        case notifyStray = "NOTIFY (refer) with no transfer of ours"
        case transferTimer = "Transfer accepted, then timer: transferNotify"
        case referReceived = "REFER (the peer transfers us)"
        case referredAnswered = "REFER taken, then the new call answered"
        case referredRefused = "REFER taken, then the new call refused (486)"
        case mediaTimeout = "the peer's media stopped (media timeout)"
        case left = "the conversation ended"
        case shutdown = "shutdown"
    }

    /// Confirmed legs with one of our offers waiting or out (``CallLeg/OwnOffer``): the table's second look at
    /// `confirmed`, where RFC 3261 §14.1 decides.
    enum Pending: String, CaseIterable {
        /// The peer's re-INVITE (a resume) is answered 200 and its ACK has not come; then our hold came: it waits.
        case holdWaiting = "confirmed, our hold waiting: we answered the peer's re-INVITE, its ACK has not come"
        /// Our hold's re-INVITE is out, unanswered.
        case holdSent = "confirmed, our hold's re-INVITE out"
    }

    /// The table as Markdown.
    public static func markdown() -> String {
        var text = """
            # Call leg: transition table

            Generated from `CallLeg` by `parley conformance --table --call-leg`; do not edit by hand.
            One section per state of the SIP side of a conversation (see the diagram on `CallLeg`); each row is an
            input applied to a representative leg in that state (callee for ringing, answering and confirmed; caller
            for calling, early and cancelling), the state after it (bold when it changed) and the effects the
            driver carries out, in order: `→ X` sends request X, `← N` answers with status N (`again`: outside the
            transaction), `+t`/`−t` starts or stops timer t, `✓`/`✗` fulfils or fails the action, `report` tells the
            manager (a status in parentheses: the peer's refusal the failure carries). A re-INVITE of ours in flight
            or waiting, tones being sent and a 2xx waiting for its ACK are pending values inside `answering` and
            `confirmed`, not states; the last two sections show `confirmed` with an offer of ours in progress. No
            re-INVITE of ours goes while another INVITE of the dialog is open, in either direction (RFC 3261 §14.1):
            a hold that comes while our 2xx to the peer's re-INVITE waits for its ACK goes at the ACK, and fails if
            the ACK never comes; one that comes while ours is out goes once that is answered, the newest of them
            superseding the others. The RFC 4028 session timer runs in `confirmed` (its refresh is one of our own
            offers, `session refresh`, the same description again; a refresh due while a re-INVITE is in progress
            looks again shortly); the representative callee refreshes, its peer having said nothing of timers.
            — means the input changes nothing.

            """
        for state in CallLeg.StateName.allCases {
            text += section(state.rawValue, cells(of: state))
        }
        for pending in Pending.allCases {
            text += section(pending.rawValue, cells(of: pending))
        }
        return text
    }

    private static func section(_ title: String, _ cells: [Cell]) -> String {
        var text = "\n## \(title)\n\n| input | state after | effects |\n|---|---|---|\n"
        for cell in cells {
            let name = cell.next.rawValue + (cell.offerAfter.map { " (\($0))" } ?? "")
            let next = cell.next == cell.state ? name : "**\(name)**"
            let effects = cell.effects.compactMap(describe).joined(separator: ", ")
            let nothing = cell.next == cell.state && effects.isEmpty && cell.offerAfter == cell.offerBefore
            text += "| \(cell.input.rawValue) | \(nothing ? "—" : next) | \(effects.isEmpty ? "" : effects) |\n"
        }
        return text
    }

    /// Every cell of one state.
    static func cells(of state: CallLeg.StateName) -> [Cell] {
        Input.allCases.map { input in
            let context = TableContext()
            return cell(state, input, from: representative(state, in: context), in: context)
        }
    }

    private static func cell(_ state: CallLeg.StateName, _ input: Input, from leg: CallLeg, in context: TableContext) -> Cell {
        var leg = leg
        let before = offerPhase(of: leg)
        let effects = apply(input, to: &leg, in: context)
        return Cell(state: state, input: input, next: leg.stateName, effects: effects, offerBefore: before, offerAfter: offerPhase(of: leg))
    }

    /// Our own offer out or waiting, nil when there is none.
    private static func offerPhase(of leg: CallLeg) -> String? {
        guard let offer = leg.ownOffer, case .none = offer else { return leg.ownOffer?.description }
        return nil
    }

    /// Every cell of a confirmed leg with an offer of ours in progress.
    static func cells(of pending: Pending) -> [Cell] {
        Input.allCases.map { input in
            let context = TableContext()
            return cell(.confirmed, input, from: representative(pending, in: context), in: context)
        }
    }

    /// Every cell of the machine, the confirmed legs with an offer in progress included.
    static var allCells: [Cell] { CallLeg.StateName.allCases.flatMap(cells(of:)) + Pending.allCases.flatMap(cells(of:)) }

    // MARK: Representatives

    static let peer = SIPDestination(kind: .udp, address: SIPPeerAddress(host: "192.0.2.2", port: 5062))
    static let handle = Handle(kind: .generic, value: "sip:alice@192.0.2.2", displayName: "Alice")

    /// A leg in `state`, reached from its start by the machine's own transitions.
    static func representative(_ state: CallLeg.StateName, in context: TableContext) -> CallLeg {
        switch state {
        case .ringing:
            var leg = incoming()
            _ = leg.ring(in: context)
            return leg
        case .answering:
            var leg = representative(.ringing, in: context)
            _ = leg.perform(.join(conversationUUID: leg.uuid), in: context)
            return leg
        case .confirmed:
            var leg = representative(.answering, in: context)
            _ = leg.receiveACK(peerRequest(.ack, to: leg, cseq: 1), in: context)
            return leg
        case .calling:
            return outgoing(in: context)
        case .early:
            var leg = outgoing(in: context)
            _ = leg.receive(response(180, to: leg.invite), to: .invite, in: context)
            return leg
        case .cancelling:
            var leg = representative(.early, in: context)
            _ = leg.perform(.end(conversationUUID: leg.uuid), in: context)
            return leg
        case .ended:
            var leg = representative(.ringing, in: context)
            _ = leg.perform(.end(conversationUUID: leg.uuid), in: context)
            return leg
        }
    }

    /// A confirmed leg with an offer of ours in progress, reached by the machine's own transitions.
    static func representative(_ pending: Pending, in context: TableContext) -> CallLeg {
        var leg = representative(.confirmed, in: context)
        if pending == .holdWaiting {
            let resume = peerRequest(
                .invite, to: leg, cseq: 4, contentType: CallLeg.sdpType, body: TableContext.peerOffer(hold: false).serialize())
            _ = leg.receiveReinvite(resume, key: TableContext.requestKey, in: context)
        }
        _ = leg.perform(.pause(conversationUUID: leg.uuid, isPaused: true), in: context)
        return leg
    }

    private static func incoming() -> CallLeg {
        let invite = SIPRequest(
            method: .invite, uri: SIPURI("sip:parley@192.0.2.1:5070")!,
            via: SIPVia(transport: "UDP", host: "192.0.2.2", port: 5062, branch: "z9hG4bK-table-invite"),
            from: address("sip:alice@192.0.2.2:5062", tag: "peer-tag"), to: address("sip:parley@192.0.2.1:5070", tag: nil),
            callID: "table@192.0.2.2", cseq: 1, contact: address("sip:alice@192.0.2.2:5062", tag: nil),
            contentType: CallLeg.sdpType, body: TableContext.peerOffer(hold: false).serialize())
        return CallLeg.incoming(
            uuid: UUID(), invite: invite, key: TableContext.inviteKey, callID: "table@192.0.2.2", localTag: "our-tag",
            remoteHandle: handle, destination: peer, offer: TableContext.peerOffer(hold: false))
    }

    private static func outgoing(in context: TableContext) -> CallLeg {
        let uuid = UUID()
        let offer = context.makeAnswer(to: nil, previous: nil, localHold: false, for: uuid, toward: nil)
        let invite = SIPRequest(
            method: .invite, uri: SIPURI("sip:bob@192.0.2.2:5062")!, via: context.newVia(for: peer),
            from: address("sip:parley@192.0.2.1:5070", tag: "our-tag"), to: address("sip:bob@192.0.2.2:5062", tag: nil),
            callID: "table-out@192.0.2.1", cseq: 1, contact: address("sip:parley@192.0.2.1:5070", tag: nil),
            contentType: CallLeg.sdpType, body: offer.serialize())
        return CallLeg.outgoing(
            uuid: uuid, invite: invite, callID: "table-out@192.0.2.1", localTag: "our-tag", remoteHandle: handle,
            destination: peer, offer: offer, start: ConversationAction(conversationUUID: uuid, kind: .start(handles: [handle], isVideo: false)),
            in: context
        ).0
    }

    // MARK: Inputs

    private static func apply(_ input: Input, to leg: inout CallLeg, in context: TableContext) -> [CallLegEffect] {
        let key = TableContext.requestKey
        switch input {
        case .ring: return leg.ring(in: context)
        case .bye: return leg.receiveBye(peerRequest(.bye, to: leg, cseq: 5), key: key, in: context)
        case .reinvite:
            let request = peerRequest(
                .invite, to: leg, cseq: 6, contentType: CallLeg.sdpType, body: TableContext.peerOffer(hold: true).serialize())
            return leg.receiveReinvite(request, key: key, in: context)
        case .info:
            let request = peerRequest(
                .info, to: leg, cseq: 7, contentType: DTMFRelay.contentType, body: Data("Signal=5\r\nDuration=160\r\n".utf8))
            return leg.receiveInfo(request, key: key, in: context)
        case .message:
            let request = peerRequest(.message, to: leg, cseq: 8, contentType: SIPContentType(type: "text", subtype: "plain"), body: Data("hi".utf8))
            return leg.receiveMessage(request, key: key, in: context)
        case .sendMessage:
            return leg.sendMessage(token: 1, contentType: SIPContentType(type: "text", subtype: "plain"), body: Data("hi".utf8), in: context)
        case .cancel: return leg.receiveCancel(leg.invite.makeCancel(), key: key, in: context)
        case .ack: return leg.receiveACK(peerRequest(.ack, to: leg, cseq: leg.unacknowledgedSuccess?.cseq ?? 1), in: context)
        case .inviteAgain: return leg.inviteRetransmitted(leg.invite, from: peer)
        case .successAgain: return leg.successRetransmitted(response(200, to: leg.invite))
        case .trying: return leg.receive(response(100, to: leg.invite, tag: nil), to: .invite, in: context)
        case .ringing: return leg.receive(response(180, to: leg.invite), to: .invite, in: context)
        case .success: return leg.receive(response(200, to: leg.invite), to: .invite, in: context)
        case .busy: return leg.receive(response(486, to: leg.invite), to: .invite, in: context)
        case .redirect: return leg.receive(redirect(to: leg.invite), to: .invite, in: context)
        case .redirectLocated:
            let followed = leg.receive(redirect(to: leg.invite), to: .invite, in: context)
            return followed + leg.redirected(to: SIPURI(transferTarget.value)!, at: peer, in: context)
        case .cancelAnswered: return leg.receive(response(200, to: leg.invite.makeCancel()), to: .cancel, in: context)
        case .inviteTimeout: return leg.requestFailed(.invite, .timeout, in: context)
        case .reinviteAnswered, .reinviteRefused:
            let (status, cseq) = (input == .reinviteAnswered ? 200 : 488, leg.dialog?.localSequence ?? 1)
            return leg.receive(response(status, to: ourReinvite(of: leg, cseq: cseq)), to: .reinvite(cseq: cseq), in: context)
        case .join: return leg.perform(.join(conversationUUID: leg.uuid), in: context)
        case .end: return leg.perform(.end(conversationUUID: leg.uuid), in: context)
        case .hold: return leg.perform(.pause(conversationUUID: leg.uuid, isPaused: true), in: context)
        case .tones: return leg.perform(.playTone(conversationUUID: leg.uuid, digits: "1"), in: context)
        case .videoOn: return leg.requestVideo(true, in: context)
        case .ringTimer: return leg.timerFired(.ring, in: context)
        case .autoAnswerTimer: return leg.timerFired(.autoAnswer, in: context)
        case .forwardNoAnswerTimer: return leg.timerFired(.forwardNoAnswer, in: context)
        case .retransmitTimer: return leg.timerFired(.retransmitSuccess, in: context)
        case .ackTimer: return leg.timerFired(.ackTimeout, in: context)
        case .glareTimer: return leg.timerFired(.glareRetry, in: context)
        case .cancelGuardTimer: return leg.timerFired(.cancelGuard, in: context)
        case .reinviteGuardTimer: return leg.timerFired(.reinviteGuard, in: context)
        case .tonesInStreamTimer: return leg.timerFired(.tonesInStream, in: context)
        case .sessionRefreshTimer: return leg.timerFired(.sessionRefresh, in: context)
        case .sessionExpiryTimer: return leg.timerFired(.sessionExpiry, in: context)
        case .transfer, .referAccepted, .referRefused, .notifyTrying, .notifySuccess, .notifyFailure, .notifyStray, .transferTimer:
            return applyTransfer(input, to: &leg, in: context)
        case .referReceived, .referredAnswered, .referredRefused:
            var refer = peerRequest(.refer, to: leg, cseq: 10)
            refer.headers.append("Refer-To", "<\(transferTarget.value)>")
            let taken = leg.receiveRefer(refer, key: key, accepting: true, in: context)
            if input == .referReceived { return taken }
            return input == .referredAnswered
                ? leg.referredCallProgress(200, "OK", in: context) : leg.referredCallProgress(486, "Busy Here", in: context)
        case .mediaTimeout: return leg.hangUp(.mediaTimeout, why: "no RTP or RTCP", in: context)
        case .left: return leg.conversationLeft(in: context)
        case .shutdown: return leg.shutDown(in: context)
        }
    }

    /// The transfer inputs: each starts a transfer (but the stray NOTIFY), takes it as far as its name says, and
    /// returns the effects of its last step.
    private static func applyTransfer(_ input: Input, to leg: inout CallLeg, in context: TableContext) -> [CallLegEffect] {
        let key = TableContext.requestKey
        func notify(_ status: String) -> SIPRequest {
            var request = peerRequest(
                .notify, to: leg, cseq: 9, contentType: SIPContentType(type: "message", subtype: "sipfrag"), body: Data("SIP/2.0 \(status)\r\n".utf8))
            request.headers.append("Event", "refer")
            return request
        }
        if input == .notifyStray { return leg.receiveNotify(notify("200 OK"), key: key, in: context) }
        let started = leg.transfer(.transfer(conversationUUID: leg.uuid, to: transferTarget), to: SIPURI(transferTarget.value)!, in: context)
        if input == .transfer { return started }
        let refer = ourRequest(.refer, of: leg, cseq: leg.dialog?.localSequence ?? 1)
        let answered = leg.receive(response(input == .referRefused ? 603 : 202, to: refer), to: .refer, in: context)
        switch input {
        case .referAccepted, .referRefused: return answered
        case .notifyTrying: return leg.receiveNotify(notify("100 Trying"), key: key, in: context)
        case .notifySuccess: return leg.receiveNotify(notify("200 OK"), key: key, in: context)
        case .notifyFailure: return leg.receiveNotify(notify("486 Busy Here"), key: key, in: context)
        default: return leg.timerFired(.transferNotify, in: context)
        }
    }

    /// Whom the table's transfers hand the peer to.
    static let transferTarget = Handle(kind: .generic, value: "sip:carol@192.0.2.3")

    /// A request of the peer's in the leg's dialog (its tag in From, ours in To).
    static func peerRequest(
        _ method: SIPMethod, to leg: CallLeg, cseq: UInt32, contentType: SIPContentType? = nil, body: Data = Data()
    ) -> SIPRequest {
        let remoteTag = leg.dialog?.id.remoteTag ?? "peer-tag"
        return SIPRequest(
            method: method, uri: SIPURI("sip:parley@192.0.2.1:5070")!,
            via: SIPVia(transport: "UDP", host: "192.0.2.2", port: 5062, branch: "z9hG4bK-table-\(method)-\(cseq)"),
            from: address("sip:alice@192.0.2.2:5062", tag: remoteTag),
            to: address("sip:parley@192.0.2.1:5070", tag: leg.localTag), callID: leg.callID, cseq: cseq,
            contact: address("sip:alice@192.0.2.2:5062", tag: nil), contentType: contentType, body: body)
    }

    /// Our re-INVITE in the leg's dialog with CSeq `cseq` (our tag in From), as the peer answers it.
    static func ourReinvite(of leg: CallLeg, cseq: UInt32) -> SIPRequest { ourRequest(.invite, of: leg, cseq: cseq) }

    /// Our request `method` in the leg's dialog with CSeq `cseq` (our tag in From), as the peer answers it.
    static func ourRequest(_ method: SIPMethod, of leg: CallLeg, cseq: UInt32) -> SIPRequest {
        SIPRequest(
            method: method, uri: SIPURI("sip:alice@192.0.2.2:5062")!,
            via: SIPVia(transport: "UDP", host: "192.0.2.1", port: 5070, branch: "z9hG4bK-table-\(method)-\(cseq)"),
            from: address("sip:parley@192.0.2.1:5070", tag: leg.localTag), to: address("sip:alice@192.0.2.2:5062", tag: nil),
            callID: leg.callID, cseq: cseq)
    }

    /// The peer's response to a request of ours.
    static func response(_ status: Int, to request: SIPRequest, tag: String? = "peer-tag") -> SIPResponse {
        request.makeResponse(statusCode: status, toTag: tag ?? "")
    }

    /// A 302 to `request` naming the table's transfer target as its Contact.
    static func redirect(to request: SIPRequest) -> SIPResponse {
        var moved = response(302, to: request)
        moved.headers.append("Contact", "<\(transferTarget.value)>")
        return moved
    }

    private static func address(_ uri: String, tag: String?) -> SIPAddress {
        var address = SIPAddress(uri: SIPURI(uri)!)
        if let tag { address.parameters.set("tag", tag) }
        return address
    }

    // MARK: Notation

    private static func describe(_ effect: CallLegEffect) -> String? {
        switch effect {
        case .send(let request, _, _): "→ \(request.method)"
        case .respond(let response, _): "← \(response.statusCode)"
        case .sendStateless(.request(let request), _): "→ \(request.method)"
        case .sendStateless(.response(let response), _): "← \(response.statusCode) again"
        case .abandon(let request): "abandon \(request)"
        case .startTimer(let timer, _): "+\(timer)"
        case .cancelTimer(let timer): "−\(timer)"
        case .report(let event): "report \(name(of: event))"
        case .performJoin: "Join"
        case .fulfil(let action): "✓ \(action)"
        case .fail(let action, _, let status): "✗ \(action)" + (status.map { " (\($0.code))" } ?? "")
        case .tonesReceived(let digits): "tones \(digits)"
        case .sendTonesInStream(let digits): "tones \(digits) in the stream"
        case .videoSettled(let on, let failure): "video \(on ? "on" : "off") \(failure == nil ? "done" : "refused")"
        case .messageReceived: "message to the group messenger"
        case .messageFailed: "messenger hears it failed"
        case .transferAsked: "call the transfer target"
        case .followRedirect: "locate the redirection's target"
        case .transferProgress(let status, _, _): "tell transfer progress \(status.code)"
        case .log, .forget: nil
        }
    }

    private static func name(of event: Conversation.Event) -> String {
        switch event {
        case .startedConnecting: "startedConnecting"
        case .connected: "connected"
        case .ended(_, let reason): "ended(\(reason))"
        case .updated: "updated"
        }
    }
}
