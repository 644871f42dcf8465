import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import SIPTransport

/// The SIP side of one conversation as a sealed, pure state machine: its INVITE, its dialog, its session descriptions
/// and whatever is in flight. Each input (a request or response of the leg, a failed request, an action, a video
/// request, a timer, the conversation's end) has one transition function, which returns the effects for
/// ``SIPUserAgent`` (its driver) to carry out; nothing here sends, schedules or calls the manager (the time comes
/// from the ``CallLegContext``).
///
/// ```
///  callee:  ringing ──Join (200)──▶ answering ──ACK──▶ confirmed
///              │                        │                  │
///              │ End (486/603), CANCEL  │ no ACK (BYE),    │ BYE (either side), End,
///              │ (487), ring timeout    │ BYE              │ re-INVITE 481/408/timeout,
///              │ (480), BYE             │                  │ no ACK for our 2xx
///              ▼                        ▼                  ▼
///  caller:  calling ──1xx──▶ early ──2xx (ACK)──▶ confirmed
///              │  └──2xx (ACK)───────────────────────▲
///              │ End, ring timeout      │ End, ring timeout
///              ▼                        ▼
///          cancelling ──487, 2xx (ACK, BYE), no final response within 64·T1──▶ ended
///  every state ──final refusal, transaction timeout, the ends above──▶ ended
/// ```
/// A re-INVITE (the peer's, or ours out or waiting for the offer in progress: ``OwnOffer``) is a pending value inside
/// `confirmed`, not a state of its own; so are tones.
struct CallLeg: Sendable {
    /// Which side sent the initial INVITE.
    enum Role: Hashable {
        /// We sent the INVITE (an outgoing conversation).
        case caller
        /// We received it (an incoming conversation).
        case callee
    }

    /// The states by name (for logs, the transition table and tests).
    enum StateName: String, CaseIterable {
        case ringing, answering, calling, early, cancelling, confirmed, ended
    }

    /// Where the leg stands; each case carries only what is valid in it.
    enum State {
        /// Callee: the INVITE is answered with provisional responses (the conversation rings).
        case ringing(Ringing)
        /// Callee: our 2xx went out; its ACK has not arrived.
        case answering(Answering)
        /// Caller: the INVITE is out and unanswered — calling, early or cancelling (the nested machine says which).
        case outgoing(OutgoingInvite)
        /// Both: the dialog is confirmed.
        case confirmed(Confirmed)
        /// Both: over; the driver forgets the leg.
        case ended
    }

    /// The conversation this leg is the SIP side of.
    let uuid: UUID
    let role: Role
    let callID: String
    /// Our dialog tag.
    let localTag: String
    /// The remote party as a handle.
    let remoteHandle: Handle
    /// The initial INVITE (received or sent; a caller's latest: again to another target while nothing answered it,
    /// or after a 422 asked for a longer session interval).
    private(set) var invite: SIPRequest
    /// Callee: the INVITE's server transaction.
    let inviteKey: TransactionKey?
    private(set) var state: State

    /// An incoming call: the INVITE arrived (and was found acceptable); the leg rings once ``ring(in:)`` is called.
    static func incoming(
        uuid: UUID, invite: SIPRequest, key: TransactionKey, callID: String, localTag: String, remoteHandle: Handle,
        destination: SIPDestination, offer: SDPSession?
    ) -> CallLeg {
        CallLeg(
            uuid: uuid, role: .callee, callID: callID, localTag: localTag, remoteHandle: remoteHandle, invite: invite,
            inviteKey: key, state: .ringing(Ringing(destination: destination, offer: offer, dialog: nil, rung: false)))
    }

    /// An outgoing call for a Start action: the INVITE (with `offer`) goes to `destination`, and rings for at most
    /// the ring timeout.
    static func outgoing(
        uuid: UUID, invite: SIPRequest, callID: String, localTag: String, remoteHandle: Handle,
        destination: SIPDestination, offer: SDPSession, start: ConversationAction, in context: some CallLegContext
    ) -> (CallLeg, [CallLegEffect]) {
        let invite = withSessionTimer(invite, in: context)
        let leg = CallLeg(
            uuid: uuid, role: .caller, callID: callID, localTag: localTag, remoteHandle: remoteHandle, invite: invite,
            inviteKey: nil,
            state: .outgoing(OutgoingInvite(
                invite: invite, destination: destination, offer: offer, start: ActionRef(start),
                sessionInterval: context.configuration.sessionTimer?.interval)))
        return (leg, [.startTimer(.ring, after: context.configuration.ringTimeout), .send(invite, .invite, to: destination)])
    }

    private init(
        uuid: UUID, role: Role, callID: String, localTag: String, remoteHandle: Handle, invite: SIPRequest,
        inviteKey: TransactionKey?, state: State
    ) {
        self.uuid = uuid
        self.role = role
        self.callID = callID
        self.localTag = localTag
        self.remoteHandle = remoteHandle
        self.invite = invite
        self.inviteKey = inviteKey
        self.state = state
    }
}

// MARK: - Transitions: one function per input

extension CallLeg {
    /// Callee: the conversation was reported: send 180 (making the early dialog) and start the ring timers.
    mutating func ring(in context: some CallLegContext) -> [CallLegEffect] {
        guard case .ringing(var ringing) = state, !ringing.rung else { return [] }
        let effects = startRinging(&ringing, in: context)
        state = .ringing(ringing)
        return effects
    }

    /// A BYE in the leg's dialog (the driver checked its tags).
    mutating func receiveBye(_ request: SIPRequest, key: TransactionKey, in context: some CallLegContext) -> [CallLegEffect] {
        guard var dialog else { return [.respond(context.response(to: request, key: key, status: 481), transaction: key)] }
        let verdict = dialog.receive(request: request)
        guard verdict == .accept else { return refusal(verdict, of: request, key: key, in: context) }
        let ok: [CallLegEffect] = [.respond(context.response(to: request, key: key, status: 200, toTag: localTag), transaction: key)]
        switch state {
        case .ringing:
            // A BYE before our answer ends the INVITE too (RFC 3261 §15.1.2 asks callers not to, but some do).
            guard let inviteKey else { return ok + end(.cancelled, in: context) }
            let cancelled = context.response(to: invite, key: inviteKey, status: 487, toTag: localTag)
            return ok + [.respond(cancelled, transaction: inviteKey)] + end(.cancelled, in: context)
        case .outgoing(let outgoing):
            return ok + settle(outgoing, outgoing.receivedBye(), in: context)
        case .answering, .confirmed:
            return ok + [.cancelTimer(.retransmitSuccess), .cancelTimer(.ackTimeout)] + end(.remoteEnded, in: context)
        case .ended:
            return ok
        }
    }

    /// A re-INVITE in the leg's dialog: glare and its other refusals are decided here, from the dialog's verdict.
    mutating func receiveReinvite(_ request: SIPRequest, key: TransactionKey, in context: some CallLegContext) -> [CallLegEffect] {
        guard var dialog else { return [.respond(context.response(to: request, key: key, status: 481), transaction: key)] }
        // The peer's previous INVITE is not over until our 2xx is acknowledged (RFC 3261 §14.2).
        if unacknowledgedSuccess != nil { return refusal(.rejectRetryLater, of: request, key: key, in: context) }
        let verdict = dialog.receive(request: request)
        guard verdict == .accept else { return refusal(verdict, of: request, key: key, in: context) }
        guard case .confirmed(var confirmed) = state else {
            // An early dialog takes no offer of the peer's while its INVITE is open.
            setDialog(dialog)
            return refusal(.rejectRequestPending, of: request, key: key, in: context)
        }
        confirmed.dialog = dialog
        let effects = answerReinvite(request, key: key, in: &confirmed, context: context)
        state = .confirmed(confirmed)
        return effects
    }

    /// A CANCEL of the initial INVITE (the driver matched it to `inviteKey`): 200 while the leg is the callee's,
    /// and for a ringing one 487 to the INVITE too; 481 when there is no INVITE of the peer's to cancel.
    mutating func receiveCancel(_ request: SIPRequest, key: TransactionKey, in context: some CallLegContext) -> [CallLegEffect] {
        let hasTheirInvite: Bool
        switch state {
        case .ringing, .answering: hasTheirInvite = true
        case .confirmed: hasTheirInvite = role == .callee
        case .outgoing, .ended: hasTheirInvite = false
        }
        guard hasTheirInvite else { return [.respond(context.response(to: request, key: key, status: 481), transaction: key)] }
        let ok: [CallLegEffect] = [.respond(context.response(to: request, key: key, status: 200, toTag: localTag), transaction: key)]
        guard case .ringing = state, let inviteKey, context.isProceeding(inviteKey) else { return ok }
        let cancelled = context.response(to: invite, key: inviteKey, status: 487, toTag: localTag)
        return ok + [.respond(cancelled, transaction: inviteKey)] + end(Self.cancelReason(request), in: context)
    }

    /// An ACK outside any transaction: it acknowledges our 2xx (to the INVITE, or a re-INVITE: ours waiting goes).
    mutating func receiveACK(_ request: SIPRequest, in context: some CallLegContext) -> [CallLegEffect] {
        let cseq = request.headers.cseq?.number
        let stopRetransmitting: [CallLegEffect] = [.cancelTimer(.retransmitSuccess), .cancelTimer(.ackTimeout)]
        switch state {
        case .answering(let answering) where answering.retransmission.cseq == cseq:
            if answering.hangUpWhenAcknowledged {
                // Ended while the ACK was on its way: now the BYE may go.
                return stopRetransmitting + bye(answering.dialog, destination: answering.destination, in: context)
                    + end(nil, in: context)
            }
            var media = answering.media
            if media.remote == nil, !request.body.isEmpty { media.remote = try? SDPSession.parse(request.body) }
            state = .confirmed(Confirmed(
                dialog: answering.dialog, destination: answering.destination, media: media, tones: answering.tones,
                sessionTimer: answering.sessionTimer))
            return stopRetransmitting + (answering.sessionTimer?.startEffects ?? []) + (answering.join.map { [.fulfil($0)] } ?? [])
        case .confirmed(var confirmed) where cseq != nil && confirmed.unacknowledgedAnswer?.cseq == cseq:
            confirmed.unacknowledgedAnswer = nil
            let effects = stopRetransmitting + peerOfferAcknowledged(&confirmed, in: context)
            state = .confirmed(confirmed)
            return effects
        case .ringing, .answering, .outgoing, .confirmed, .ended:
            return []
        }
    }

    /// Caller: a 2xx came again after the INVITE transaction ended: the ACK goes again (RFC 3261 §13.2.2.4).
    func successRetransmitted(_ response: SIPResponse) -> [CallLegEffect] {
        guard case .confirmed(let confirmed) = state, let ack = confirmed.lastACK,
            ack.headers.cseq?.number == response.headers.cseq?.number
        else { return [] }
        return [.sendStateless(.request(ack), to: confirmed.destination)]
    }

    /// A response to one of the leg's requests. (Each transition switches on the state alone: a switch over a tuple
    /// holding the state would copy it, and this is the hot path.)
    mutating func receive(_ response: SIPResponse, to request: CallLegRequest, in context: some CallLegContext) -> [CallLegEffect] {
        if case .info(let digit) = request {
            return inAnsweredCall { call in
                Self.toneResponse(response, digit: digit, tones: &call.tones, dialog: &call.dialog, destination: call.destination, in: context)
            } ?? []
        }
        switch state {
        case .outgoing(var outgoing):
            switch request {
            case .invite:
                let outcome = outgoing.receiveInviteResponse(response, leg: self, in: context)
                return settle(outgoing, outcome, in: context)
            case .cancel:
                let outcome = outgoing.receiveCancelResponse(response)
                return settle(outgoing, outcome, in: context)
            case .bye, .reinvite, .info, .message, .refer, .notify:
                return []
            }
        case .confirmed(var confirmed):
            switch request {
            case .refer:
                return referAnswered(response, in: context)
            case .reinvite(let cseq):
                let (effects, failedStatus) = reinviteResponse(response, cseq: cseq, in: &confirmed, context: context)
                state = .confirmed(confirmed)
                guard let failedStatus else { return effects }
                return effects + dialogFailed(status: failedStatus, confirmed: confirmed, in: context)
            case .invite, .cancel, .bye, .info, .message, .notify:
                return []  // late answers: the leg has moved on (our BYE's answer needs nothing; our NOTIFY's neither)
            }
        case .answering, .ringing, .ended: return []
        }
    }

    /// One of the leg's requests got no final response (timer B or F) or could not be sent.
    mutating func requestFailed(
        _ request: CallLegRequest, _ failure: CallLegRequestFailure, in context: some CallLegContext
    ) -> [CallLegEffect] {
        if case .info(let digit) = request {
            return inAnsweredCall { call in
                guard let tones = call.tones, tones.current == digit else { return [] }
                call.tones = nil
                return [.fail(tones.action, reason: "tone \(digit) was not answered")]
            } ?? []
        }
        switch state {
        case .outgoing(let outgoing):
            guard case .invite = request else { return [] }
            return settle(outgoing, outgoing.inviteFailed(failure), in: context)
        case .confirmed(var confirmed):
            switch request {
            case .reinvite(let cseq):
                guard case .sent(_, _, _, cseq, _) = confirmed.ownOffer else { return [] }
                let reason = failure == .timeout ? "no answer to the re-INVITE" : "the transport failed"
                let failures = dropOwnOffers(&confirmed, reason: reason)
                state = .confirmed(confirmed)
                return failures + dialogFailed(status: 408, confirmed: confirmed, in: context)
            case .refer:
                return referFailed(failure)
            case .invite, .cancel, .bye, .info, .message, .notify:
                return []
            }
        case .answering, .ringing, .ended: return []
        }
    }

    /// An action from the manager's pipeline: Join, End, Pause (hold or resume) or PlayTone.
    mutating func perform(_ action: ConversationAction, in context: some CallLegContext) -> [CallLegEffect] {
        let ref = ActionRef(action)
        switch action.kind {
        case .join:
            guard case .ringing(let ringing) = state else { return [.fail(ref, reason: "the conversation is not ringing")] }
            guard let inviteKey, context.isProceeding(inviteKey) else {
                return [.fail(ref, reason: "the INVITE is no longer open")]
            }
            let (answering, effects) = answer(ringing, join: ref, key: inviteKey, in: context)
            state = .answering(answering)
            return effects
        case .end:
            return performEnd(ref, in: context)
        case .pause(let isPaused):
            guard case .confirmed(var confirmed) = state else { return [.fail(ref, reason: "the call is not connected")] }
            let effects = requestOffer(.action(ref, hold: isPaused), confirmed: &confirmed, in: context)
            state = .confirmed(confirmed)
            return effects
        case .playTone(let digits, _):
            return inAnsweredCall { call in
                Self.playTones(
                    digits, action: ref, tones: &call.tones, dialog: &call.dialog, destination: call.destination,
                    media: call.media, in: context)
            } ?? [.fail(ref, reason: "the call is not connected")]
        case .start, .mute, .merge, .unmerge, .transfer:
            preconditionFailure("the user agent performs \(action.kind.name) itself")
        }
    }

    /// The frontend turns video on or off: a re-INVITE with or without the video stream (connected calls only).
    mutating func requestVideo(_ on: Bool, in context: some CallLegContext) -> [CallLegEffect] {
        guard case .confirmed(var confirmed) = state else { return [.videoSettled(on, failure: "the call is not connected")] }
        let effects = requestOffer(.video(on), confirmed: &confirmed, in: context)
        state = .confirmed(confirmed)
        return effects
    }

    /// The media layer restarted the call's ICE: a re-INVITE with our new credentials (connected calls only; false
    /// when the call is not, and the restart cannot be offered).
    mutating func requestICERestart(in context: some CallLegContext) -> [CallLegEffect]? {
        guard case .confirmed(var confirmed) = state else { return nil }
        let effects = requestOffer(.iceRestart, confirmed: &confirmed, in: context)
        state = .confirmed(confirmed)
        return effects
    }

    /// Caller: nothing answered the INVITE at its target (timer B, an ICMP error): it goes to `next`, another target
    /// of the same host (RFC 3263 §4.3), as a new transaction; nil when it cannot (a response came, or we cancel).
    mutating func retarget(to next: SIPDestination, in context: some CallLegContext) -> [CallLegEffect]? {
        guard case .outgoing(var outgoing) = state, let retried = outgoing.retarget(to: next, in: context) else { return nil }
        invite = retried
        state = .outgoing(outgoing)
        let address = "\(next.kind.rawValue) \(next.address)"
        return [.log(.info, "no answer from the INVITE's target; trying \(address) (RFC 3263)"), .send(retried, .invite, to: next)]
    }

    /// A timer of the leg fired (a timer of a state the leg has left does nothing).
    mutating func timerFired(_ timer: CallLegTimer, in context: some CallLegContext) -> [CallLegEffect] {
        if timer == .tonesInStream { return inAnsweredCall { Self.streamTonesDone(&$0.tones) } ?? [] }
        switch state {
        case .ringing:
            switch timer {
            case .ring:
                guard let inviteKey else { return [] }
                let unanswered = context.response(to: invite, key: inviteKey, status: 480, toTag: localTag)
                return [
                    .log(.info, "nobody answered within \(context.configuration.ringTimeout)"),
                    .respond(unanswered, transaction: inviteKey),
                ] + end(.unanswered, in: context)
            case .autoAnswer:
                return [.performJoin]
            case .forwardNoAnswer:
                return forwardUnanswered(in: context)
            case .retransmitSuccess, .ackTimeout, .glareRetry, .cancelGuard, .reinviteGuard, .tonesInStream,
                .sessionRefresh, .sessionExpiry, .transferNotify:
                return []
            }
        case .outgoing(var outgoing):
            switch timer {
            case .ring:
                let outcome = outgoing.ringTimedOut(leg: self, in: context)
                return settle(outgoing, outcome, in: context)
            case .cancelGuard:
                return settle(outgoing, outgoing.cancelGuardFired(), in: context)
            case .autoAnswer, .retransmitSuccess, .ackTimeout, .glareRetry, .reinviteGuard, .tonesInStream,
                .sessionRefresh, .sessionExpiry, .transferNotify, .forwardNoAnswer:
                return []
            }
        case .answering(var answering):
            switch timer {
            case .retransmitSuccess:
                let effects = retransmit(&answering.retransmission, in: context)
                state = .answering(answering)
                return effects
            case .ackTimeout:
                return ackNeverCame(answering.dialog, destination: answering.destination, in: context)
            case .ring, .autoAnswer, .glareRetry, .cancelGuard, .reinviteGuard, .tonesInStream, .sessionRefresh,
                .sessionExpiry, .transferNotify, .forwardNoAnswer:
                return []
            }
        case .confirmed(var confirmed):
            switch timer {
            case .retransmitSuccess:
                guard var pending = confirmed.unacknowledgedAnswer else { return [] }
                let effects = retransmit(&pending, in: context)
                confirmed.unacknowledgedAnswer = pending
                state = .confirmed(confirmed)
                return effects
            case .ackTimeout:
                let failures = dropOwnOffers(&confirmed, reason: "the peer never acknowledged our answer to its re-INVITE; the call ends")
                return failures + ackNeverCame(confirmed.dialog, destination: confirmed.destination, in: context)
            case .glareRetry:
                let effects = retryReinvite(&confirmed, in: context)
                state = .confirmed(confirmed)
                return effects
            case .reinviteGuard:
                guard let effects = reinviteUnanswered(&confirmed) else { return [] }
                state = .confirmed(confirmed)
                return effects + dialogFailed(status: 408, confirmed: confirmed, in: context)
            case .sessionRefresh:
                let effects = refreshSession(&confirmed, in: context)
                state = .confirmed(confirmed)
                return effects
            case .sessionExpiry:
                guard let timer = confirmed.sessionTimer else { return [] }
                return hangUp(.sessionExpired, why: "the session expired: no refresh within \(timer.expiresAfter) (RFC 4028)", in: context)
            case .transferNotify:
                return transferTimedOut()
            case .ring, .autoAnswer, .cancelGuard, .tonesInStream, .forwardNoAnswer:
                return []
            }
        case .ended: return []
        }
    }

    /// The conversation ended by the manager's doing (an action timed out, the manager was invalidated): whatever
    /// is still open in SIP is closed.
    mutating func conversationLeft(in context: some CallLegContext) -> [CallLegEffect] {
        switch state {
        case .ringing:
            return refuseRinging(reason: nil, in: context)
        case .outgoing(var outgoing):
            let outcome = outgoing.conversationLeft(leg: self, in: context)
            return settle(outgoing, outcome, in: context)
        case .answering(var answering):
            answering.hangUpWhenAcknowledged = true
            state = .answering(answering)
            return []
        case .confirmed(let confirmed):
            return hangUp(confirmed, nil, in: context)
        case .ended: return []
        }
    }

    /// The engine ends a connected call on its own (the peer's media stopped: `mediaTimeout`): BYE, and the
    /// conversation ends for `reason`; `why` goes to the log. Nothing happens in the other states.
    mutating func hangUp(_ reason: Conversation.EndedReason, why: String, in context: some CallLegContext) -> [CallLegEffect] {
        guard case .confirmed(let confirmed) = state else { return [] }
        return [.log(.info, "\(why); ending")] + hangUp(confirmed, reason, in: context)
    }

    /// The engine shuts down: BYE the answered calls, CANCEL the unanswered outgoing ones (kept until the CANCEL can
    /// go), refuse the ringing incoming ones with 480.
    mutating func shutDown(in context: some CallLegContext) -> [CallLegEffect] {
        switch state {
        case .ringing:
            return refuseRinging(reason: "Shutting Down", in: context)
        case .outgoing(var outgoing):
            let outcome = outgoing.shutDown(leg: self, in: context)
            return settle(outgoing, outcome, in: context)
        case .answering(let answering):
            return bye(answering.dialog, destination: answering.destination, in: context) + end(nil, in: context)
        case .confirmed(let confirmed):
            return bye(confirmed.dialog, destination: confirmed.destination, in: context) + end(nil, in: context)
        case .ended: return []
        }
    }
}

// MARK: - Transitions shared by several inputs

extension CallLeg {
    /// The leg is over: the driver forgets it; the pending End (if any) is done, else the conversation ends for
    /// `reason` (nil: the conversation has ended already, nothing to report). The one way a leg ends.
    mutating func end(
        _ reason: Conversation.EndedReason?, pendingEnd: ActionRef? = nil, in context: some CallLegContext
    ) -> [CallLegEffect] {
        state = .ended
        if let pendingEnd { return [.forget, .fulfil(pendingEnd)] }
        guard let reason else { return [.forget] }
        return [.forget, .report(.ended(context.now, reason))]
    }

    /// Turns the outgoing INVITE's outcome into the leg's state.
    mutating func settle(
        _ outgoing: OutgoingInvite, _ outcome: OutgoingInvite.Outcome, in context: some CallLegContext
    ) -> [CallLegEffect] {
        switch outcome {
        case .unanswered(let effects):
            state = .outgoing(outgoing)
            invite = outgoing.invite  // asked again after a 422: CANCEL and the rest follow the new INVITE
            return effects
        case .answered(let confirmed, let effects):
            state = .confirmed(confirmed)
            return effects
        case .over(let effects, let reason, let pendingEnd):
            return effects + end(reason, pendingEnd: pendingEnd, in: context)
        }
    }

    /// Callee: refuses the ringing INVITE with 480 and forgets the leg (the conversation has ended already).
    private mutating func refuseRinging(reason: String?, in context: some CallLegContext) -> [CallLegEffect] {
        guard let inviteKey else { return end(nil, in: context) }
        let refusal = context.response(to: invite, key: inviteKey, status: 480, toTag: localTag, reason: reason)
        return [.respond(refusal, transaction: inviteKey)] + end(nil, in: context)
    }

    /// End, in every state.
    private mutating func performEnd(_ action: ActionRef, in context: some CallLegContext) -> [CallLegEffect] {
        switch state {
        case .ringing:
            var effects: [CallLegEffect] = []
            if let inviteKey, context.isProceeding(inviteKey) {
                let refusal = context.response(
                    to: invite, key: inviteKey, status: context.configuration.declineStatus, toTag: localTag)
                effects.append(.respond(refusal, transaction: inviteKey))
            }
            return effects + end(nil, in: context) + [.fulfil(action)]
        case .outgoing(var outgoing):
            let outcome = outgoing.end(action, leg: self, in: context)
            return settle(outgoing, outcome, in: context)
        case .answering(var answering):
            // The BYE waits for the ACK (RFC 3261 §15); the End is done now.
            let failJoin = answering.join.map { [CallLegEffect.fail($0, reason: "ended")] } ?? []
            answering.join = nil
            answering.hangUpWhenAcknowledged = true
            state = .answering(answering)
            return failJoin + [.fulfil(action)]
        case .confirmed(let confirmed):
            // Done once the BYE is handed to its transaction (RFC 3261 §15.1.1): a dead peer cannot time it out.
            return hangUp(confirmed, nil, in: context) + [.fulfil(action)]
        case .ended:
            return [.fulfil(action)]
        }
    }

    /// Our 2xx was never acknowledged within 64·T1: the dialog is given up.
    private mutating func ackNeverCame(
        _ dialog: SIPDialog, destination: SIPDestination, in context: some CallLegContext
    ) -> [CallLegEffect] {
        [.cancelTimer(.retransmitSuccess), .log(.info, "no ACK for our 2xx within 64·T1; ending")]
            + bye(dialog, destination: destination, in: context) + end(.failed, in: context)
    }

    /// The dialog failed (481 or 408 to our request, or no answer): BYE and end as failed.
    private mutating func dialogFailed(status: Int, confirmed: Confirmed, in context: some CallLegContext) -> [CallLegEffect] {
        [.log(.info, "the dialog failed (\(status)); ending")] + hangUp(confirmed, .failed, in: context)
    }

    /// A confirmed call ends from our side: its answer's timers stop, BYE goes, and the leg ends for `reason`.
    private mutating func hangUp(
        _ confirmed: Confirmed, _ reason: Conversation.EndedReason?, in context: some CallLegContext
    ) -> [CallLegEffect] {
        [.cancelTimer(.retransmitSuccess), .cancelTimer(.ackTimeout)]
            + bye(confirmed.dialog, destination: confirmed.destination, in: context) + end(reason, in: context)
    }

    /// Runs `body` on what in-dialog requests of an answered call (answering or confirmed) use, and keeps what it
    /// changed; nil when the call is not answered.
    mutating func inAnsweredCall<Result>(_ body: (inout AnsweredCall) -> Result) -> Result? {
        switch state {
        case .confirmed(var confirmed):
            var call = AnsweredCall(
                dialog: confirmed.dialog, destination: confirmed.destination, tones: confirmed.tones,
                media: confirmed.localHold ? nil : confirmed.media)
            let result = body(&call)
            (confirmed.dialog, confirmed.tones) = (call.dialog, call.tones)
            state = .confirmed(confirmed)
            return result
        case .answering(var answering):
            var call = AnsweredCall(dialog: answering.dialog, destination: answering.destination, tones: answering.tones, media: answering.media)
            let result = body(&call)
            (answering.dialog, answering.tones) = (call.dialog, call.tones)
            state = .answering(answering)
            return result
        case .ringing, .outgoing, .ended:
            return nil
        }
    }

    /// Changes a confirmed leg (its dialog, its transfers: ``CallLeg+Transfer``); nothing in the other states.
    mutating func updateConfirmed(_ change: (inout Confirmed) -> Void) {
        guard case .confirmed(var confirmed) = state else { return }
        change(&confirmed)
        state = .confirmed(confirmed)
    }

    /// Stores the dialog after a request it took (its remote sequence moved on).
    mutating func setDialog(_ dialog: SIPDialog) {
        if inAnsweredCall({ $0.dialog = dialog }) != nil { return }
        switch state {
        case .ringing(var ringing):
            ringing.dialog = dialog
            state = .ringing(ringing)
        case .outgoing(var outgoing):
            outgoing.setDialog(dialog)
            state = .outgoing(outgoing)
        case .answering, .confirmed, .ended:
            break
        }
    }
}
