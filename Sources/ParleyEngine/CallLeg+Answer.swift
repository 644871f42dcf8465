import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import SIPTransport

/// The messages of an incoming call before its dialog is confirmed: ringing, the answer and its retransmission, and
/// the end reasons of refusals. Builders only: ``CallLeg``'s transitions decide and change state.
extension CallLeg {
    /// The 180 (which makes the early dialog) and the ring timers.
    func startRinging(_ ringing: inout Ringing, in context: some CallLegContext) -> [CallLegEffect] {
        guard let inviteKey else { return [] }
        let headers: SIPHeaders = [
            "Contact": context.contactHeader(for: ringing.destination, secure: isSecure),
            "Server": context.configuration.product,
        ]
        let answered = invite.answeringFields(statusCode: 180, toTag: localTag, copyingRecordRoute: true)
        let response = SIPResponse(statusCode: 180, answering: answered, headers: headers)
        ringing.answered = answered
        ringing.dialog = SIPDialog.asCallee(request: invite, response: response)
        ringing.rung = true
        var effects: [CallLegEffect] = [
            .respond(response, transaction: inviteKey), .startTimer(.ring, after: context.configuration.ringTimeout),
        ]
        if let delay = context.configuration.autoAnswerDelay { effects.append(.startTimer(.autoAnswer, after: delay)) }
        let forwarding = context.forwarding(for: uuid)
        if forwarding.noAnswer != nil, forwarding.noAnswerAfter < context.configuration.ringTimeout {
            effects.append(.startTimer(.forwardNoAnswer, after: forwarding.noAnswerAfter))
        }
        return effects
    }

    /// Join: answer with 200 and our SDP; joined when the ACK arrives.
    func answer(
        _ ringing: Ringing, join: ActionRef, key: TransactionKey, in context: some CallLegContext
    ) -> (Answering, [CallLegEffect]) {
        let local = context.makeAnswer(
            to: ringing.offer, previous: nil, localHold: false, for: uuid, toward: ringing.destination.address.host)
        var headers = context.capabilityHeaders
        headers.append("Contact", context.contactHeader(for: ringing.destination, secure: isSecure))
        headers.append("Server", context.configuration.product)
        // The INVITE's session timer request was checked (422) before the call rang: it is accepted here.
        let session = Self.sessionTimerAnswer(to: invite, in: context)
        var sessionTimer: SessionTimer?
        if case .accept(let timer, let sessionHeaders) = session {
            for field in sessionHeaders { headers.append(field) }
            sessionTimer = timer
        }
        let ok = SIPResponse(
            statusCode: 200,
            answering: ringing.answered
                ?? invite.answeringFields(statusCode: 200, toTag: localTag, copyingRecordRoute: true),
            headers: headers, contentType: Self.sdpType, body: local.serialize())
        var dialog: SIPDialog
        if let early = ringing.dialog {
            dialog = early
            dialog.respond(ok)
        } else {
            // Answered before the 180 went out (a delegate answered from inside the report).
            guard let made = SIPDialog.asCallee(request: invite, response: ok) else {
                preconditionFailure("a 2xx with our tag to a valid INVITE makes a dialog")
            }
            dialog = made
        }
        var effects: [CallLegEffect] = [.cancelTimer(.ring), .cancelTimer(.autoAnswer), .respond(ok, transaction: key)]
        effects.reserveCapacity(6)
        let retransmission = startRetransmitting(
            ok, to: context.responseDestination(key) ?? ringing.destination, into: &effects, in: context)
        effects.append(.report(.startedConnecting(context.now)))
        let answering = Answering(
            dialog: dialog, destination: ringing.destination, media: Media(local: local, remote: ringing.offer),
            join: join, retransmission: retransmission, hangUpWhenAcknowledged: false, tones: nil,
            sessionTimer: sessionTimer)
        return (answering, effects)
    }

    /// Keeps sending a 2xx until its ACK arrives: every T1 doubling to T2 on UDP; gives up after 64·T1 either way.
    /// The timers are appended to `effects`.
    func startRetransmitting(
        _ response: SIPResponse, to destination: SIPDestination, into effects: inout [CallLegEffect],
        in context: some CallLegContext
    ) -> Retransmission {
        let timers = context.configuration.timers
        if !destination.kind.isReliable { effects.append(.startTimer(.retransmitSuccess, after: timers.t1)) }
        effects.append(.startTimer(.ackTimeout, after: timers.t1 * 64))
        return Retransmission(response: response, destination: destination, interval: timers.t1)
    }

    /// Sends the 2xx again and doubles the wait (up to T2).
    func retransmit(_ retransmission: inout Retransmission, in context: some CallLegContext) -> [CallLegEffect] {
        retransmission.interval = min(retransmission.interval * 2, context.configuration.timers.t2)
        return [
            .sendStateless(.response(retransmission.response), to: retransmission.destination),
            .startTimer(.retransmitSuccess, after: retransmission.interval),
        ]
    }

    /// The dialog's answer to a request it did not take (481, 491, 500 with Retry-After); nothing for an ACK.
    func refusal(
        _ verdict: DialogRequestVerdict, of request: SIPRequest, key: TransactionKey, in context: some CallLegContext
    ) -> [CallLegEffect] {
        guard let response = context.rejection(verdict, of: request) else { return [] }
        return [.respond(response, transaction: key)]
    }

    static let sdpType = SIPContentType(type: "application", subtype: "sdp")

    /// RFC 3326 Reason on a CANCEL: answered (cause 200) or declined (603) on another device; otherwise the caller
    /// gave up.
    static func cancelReason(_ request: SIPRequest) -> Conversation.EndedReason {
        guard let reason = request.headers["Reason"]?.lowercased(), reason.hasPrefix("sip") else { return .cancelled }
        if reason.contains("cause=200") { return .joinedElsewhere }
        if reason.contains("cause=603") { return .declinedElsewhere }
        return .cancelled
    }

    /// The conversation's ended reason for a final refusal of our INVITE.
    static func endedReason(forFinal status: Int) -> Conversation.EndedReason {
        switch status {
        case 486, 600: .busy
        case 603, 607: .declined
        case 408, 480: .unanswered
        case 487: .cancelled
        default: .failed
        }
    }

    /// Caller: our CANCEL of the INVITE, and the guard that gives up on a callee that never answers the INVITE
    /// after it (64·T1).
    func sendCancel(to destination: SIPDestination, in context: some CallLegContext) -> [CallLegEffect] {
        [
            .startTimer(.cancelGuard, after: context.configuration.timers.t1 * 64),
            .send(invite.makeCancel(), .cancel, to: destination),
        ]
    }
}
