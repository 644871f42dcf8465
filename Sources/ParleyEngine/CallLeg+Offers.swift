import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import SIPTransport

/// Our own offers in a confirmed dialog: hold, resume, video on or off by re-INVITE — one at a time, never while the
/// peer's INVITE transaction is open (RFC 3261 §14.1), a request that cannot go yet waiting for the offer in progress
/// to settle, and the glare retry after 491 (the rules and their diagram are on ``CallLeg/OwnOffer``).
/// Builders on the confirmed state's data: ``CallLeg``'s transitions decide and change state.
extension CallLeg {
    /// Whether an INVITE transaction is open in the dialog: the peer's re-INVITE, whose 2xx waits for its ACK, or an
    /// INVITE the dialog counts as in progress.
    static func inviteOpen(_ confirmed: Confirmed) -> Bool {
        confirmed.unacknowledgedAnswer != nil || confirmed.dialog.inviteInProgress != nil
    }

    /// Pause, resume, or video on or off: our re-INVITE goes now when no INVITE is open in the dialog and none of
    /// ours is out; otherwise the request waits, superseding the one that waited before it.
    func requestOffer(_ request: OfferRequest, confirmed: inout Confirmed, in context: some CallLegContext) -> [CallLegEffect] {
        switch confirmed.ownOffer {
        case .none:
            guard Self.inviteOpen(confirmed) else { return sendReinvite(request, confirmed: &confirmed, in: context) }
            confirmed.ownOffer = .waitingToSend(request)
            return [.log(.debug, "\(request) waits for the ACK of our answer to the peer's re-INVITE (RFC 3261 §14.1)")]
        case .waitingToSend(let waiting):
            confirmed.ownOffer = .waitingToSend(request)
            return [superseded(waiting, by: request)]
        case .waitingToRetry(let waiting):
            confirmed.ownOffer = .waitingToRetry(request)
            return [superseded(waiting, by: request)]
        case .sent(let sent, let shape, let offer, let cseq, let next):
            confirmed.ownOffer = .sent(sent, shape, offer: offer, cseq: cseq, next: request)
            let waits = CallLegEffect.log(.debug, "\(request) waits for the answer to our re-INVITE (\(sent))")
            return (next.map { [superseded($0, by: request)] } ?? []) + [waits]
        }
    }

    /// The ACK of our 2xx to the peer's re-INVITE came (its transaction is over): the request waiting for it goes.
    func peerOfferAcknowledged(_ confirmed: inout Confirmed, in context: some CallLegContext) -> [CallLegEffect] {
        guard case .waitingToSend(let request) = confirmed.ownOffer else { return [] }
        confirmed.ownOffer = .none
        return sendWaiting(request, confirmed: &confirmed, in: context)
    }

    /// The glare wait is over: our re-INVITE goes again (or waits, if the peer's re-INVITE is open meanwhile).
    func retryReinvite(_ confirmed: inout Confirmed, in context: some CallLegContext) -> [CallLegEffect] {
        guard case .waitingToRetry(let request) = confirmed.ownOffer else { return [] }
        confirmed.ownOffer = .none
        return sendWaiting(request, confirmed: &confirmed, in: context)
    }

    /// The dialog is given up: every request of ours, out or waiting, fails for `reason`.
    func dropOwnOffers(_ confirmed: inout Confirmed, reason: String) -> [CallLegEffect] {
        defer { confirmed.ownOffer = .none }
        switch confirmed.ownOffer {
        case .none:
            return []
        case .waitingToSend(let request), .waitingToRetry(let request):
            return [failed(request, reason: reason)]
        case .sent(let request, _, _, _, let next):
            return [failed(request, reason: reason)] + (next.map { [failed($0, reason: reason)] } ?? [])
        }
    }

    /// How a request for our re-INVITE ends when it cannot be done; `status` is the peer's final refusal, if it gave
    /// one.
    func failed(_ request: OfferRequest, reason: String, status: SIPFinalStatus? = nil) -> CallLegEffect {
        switch request {
        case .action(let action, _): .fail(action, reason: reason, status: status)
        case .video(let on): .videoSettled(on, failure: reason)
        case .refresh: .log(.info, "the session refresh failed: \(reason)")
        case .iceRestart: .log(.info, "the ICE restart failed: \(reason) (the checks timeout ends the call if no path comes)")
        }
    }

    /// How a waiting request ends when a newer one takes its place.
    private func superseded(_ request: OfferRequest, by newer: OfferRequest) -> CallLegEffect {
        failed(request, reason: "superseded by a newer request (\(newer)) before it was sent")
    }

    /// The shape of our next offer: the call's current one with `request`'s change.
    private func shape(for request: OfferRequest, in confirmed: Confirmed) -> OfferShape {
        var shape = OfferShape(hold: confirmed.localHold, video: confirmed.media.local.isVideo)
        switch request {
        case .action(_, let hold): shape.hold = hold
        case .video(let on): shape.video = on
        case .refresh, .iceRestart: break
        }
        return shape
    }

    /// The offer in progress settled (`ownOffer` is none): the request that waited for it goes, in the shape the call
    /// has now, unless its action is settled already (it timed out while waiting) or an INVITE is open again (then it
    /// waits for that one).
    private func sendWaiting(_ request: OfferRequest, confirmed: inout Confirmed, in context: some CallLegContext) -> [CallLegEffect] {
        if case .action(let action, _) = request, context.isSettled(action) { return [] }
        guard !Self.inviteOpen(confirmed) else {
            confirmed.ownOffer = .waitingToSend(request)
            return []
        }
        return sendReinvite(request, confirmed: &confirmed, in: context)
    }

    private func sendReinvite(_ offerRequest: OfferRequest, confirmed: inout Confirmed, in context: some CallLegContext) -> [CallLegEffect] {
        let shape = shape(for: offerRequest, in: confirmed)
        // A refresh offers the same description with the same version (RFC 4028 §7.4, RFC 3264 §8).
        let offer = offerRequest == .refresh
            ? confirmed.media.local : context.makeOffer(after: confirmed.media.local, hold: shape.hold, video: shape.video, for: uuid)
        let target = context.destination(inDialog: confirmed.dialog, fallback: confirmed.destination)
        var headers = context.capabilityHeaders
        headers.append("User-Agent", context.configuration.product)
        Self.addSessionTimer(to: &headers, running: confirmed.sessionTimer, in: context)
        let request = confirmed.dialog.makeRequest(
            .invite, via: context.newVia(for: target), contact: context.contactAddress(for: target, secure: isSecure),
            headers: headers, contentType: Self.sdpType, body: offer.serialize())
        let cseq = request.headers.cseq?.number ?? 0
        confirmed.ownOffer = .sent(offerRequest, shape, offer: offer, cseq: cseq, next: nil)
        return [.send(request, .reinvite(cseq: cseq), to: target)]
    }

    /// A response to our re-INVITE. Returns the effects, and the status that makes the dialog fail (the caller
    /// then hangs up): a final answer that does not belong to the dialog, 481 or 408 (RFC 3261 §14.1). Once the
    /// answer is final, the request waiting behind ours goes.
    func reinviteResponse(
        _ response: SIPResponse, cseq: UInt32, in confirmed: inout Confirmed, context: some CallLegContext
    ) -> ([CallLegEffect], failedStatus: Int?) {
        guard case .sent(let request, let shape, let offer, cseq, let next) = confirmed.ownOffer else { return ([], nil) }
        guard !response.isProvisional else {
            // The transaction is in Proceeding, where no timer of RFC 3261 ends it: the leg's own guard does.
            return ([.startTimer(.reinviteGuard, after: context.configuration.timers.t1 * 64)], nil)
        }
        confirmed.ownOffer = .none
        var (effects, failedStatus) = reinviteAnswered(
            response, request: request, shape: shape, offer: offer, cseq: cseq, in: &confirmed, context: context)
        if let next { effects += afterAnswer(next, failedStatus: failedStatus, confirmed: &confirmed, in: context) }
        return ([.cancelTimer(.reinviteGuard)] + effects, failedStatus)
    }

    /// Our re-INVITE was answered by no final response in time after its provisional ones: it is given up, and the
    /// dialog fails as on a timeout (RFC 3261 §14.1); the request waiting behind it fails too.
    func reinviteUnanswered(_ confirmed: inout Confirmed) -> [CallLegEffect]? {
        guard case .sent(_, _, _, let cseq, _) = confirmed.ownOffer else { return nil }
        return [.log(.info, "no final response to our re-INVITE; giving up"), .abandon(.reinvite(cseq: cseq))]
            + dropOwnOffers(&confirmed, reason: "no final answer to the re-INVITE")
    }

    /// Our re-INVITE got its final answer: the request waiting behind it goes now — or, after a 491, waits for the
    /// glare timer in place of ours (superseding it), or fails with the dialog.
    private func afterAnswer(
        _ next: OfferRequest, failedStatus: Int?, confirmed: inout Confirmed, in context: some CallLegContext
    ) -> [CallLegEffect] {
        if let failedStatus { return [failed(next, reason: "the call failed (\(failedStatus) to our re-INVITE)")] }
        if case .waitingToRetry(let retried) = confirmed.ownOffer {
            confirmed.ownOffer = .waitingToRetry(next)
            return [superseded(retried, by: next)]
        }
        return sendWaiting(next, confirmed: &confirmed, in: context)
    }

    private func reinviteAnswered(
        _ response: SIPResponse, request: OfferRequest, shape: OfferShape, offer: SDPSession, cseq: UInt32,
        in confirmed: inout Confirmed, context: some CallLegContext
    ) -> ([CallLegEffect], failedStatus: Int?) {
        guard DialogID(responseAsUAC: response) == confirmed.dialog.id else {
            // Its tags were changed: the dialog cannot go on.
            return ([failed(request, reason: "the answer to our re-INVITE does not match the dialog")], response.statusCode)
        }
        confirmed.dialog.receive(response: response, timeoutEndsDialog: request != .iceRestart)
        if response.isSuccess {
            let wasVideo = confirmed.media.local.isVideo
            confirmed.media.local = offer
            let target = context.destination(inDialog: confirmed.dialog, fallback: confirmed.destination)
            let ack = confirmed.dialog.makeACK(forInviteCSeq: cseq, via: context.newVia(for: target))
            confirmed.lastACK = ack
            if !response.body.isEmpty { confirmed.media.remote = try? SDPSession.parse(response.body) }
            confirmed.localHold = shape.hold
            if offer.isVideo, confirmed.media.remote?.isVideo != true { confirmed.media.local.video?.port = 0 }
            var effects: [CallLegEffect] = [.sendStateless(.request(ack), to: target)]
            let isVideo = confirmed.media.local.isVideo
            if isVideo != wasVideo {
                effects.append(.report(.updated(Conversation.Update(capabilities: context.capabilities(video: isVideo)))))
            }
            switch request {
            case .action(let action, _): effects.append(.fulfil(action))
            case .video(let on): effects.append(.videoSettled(on, failure: isVideo == on ? nil : "the other side did not take video"))
            case .refresh: effects.append(.log(.debug, "the session is refreshed"))
            case .iceRestart: effects.append(.log(.info, "the peer took our ICE restart"))
            }
            return (effects + sessionAnswered(response, in: &confirmed, context: context), nil)
        }
        if response.statusCode == 491 {
            // Glare: try again after the RFC 3261 §14.1 delay, unless the action is gone by then.
            confirmed.ownOffer = .waitingToRetry(request)
            let delay = context.glareRetryDelay(isCallIDOwner: role == .caller)
            return ([.log(.debug, "491 on our re-INVITE; retrying in \(delay)"), .startTimer(.glareRetry, after: delay)], nil)
        }
        let refusal = failed(request, reason: "\(response.statusCode) \(response.reasonPhrase)", status: SIPFinalStatus(response))
        // RFC 3261 §14.1: 481 or 408 ends the dialog. Not a proxy's 408 to an ICE restart: the peer's NAT mapping,
        // which the restart is about, may have taken the SIP path to it along, and the peer's own restart may yet
        // come; the media layer's checks timeout ends the call if none does.
        let endsDialog = response.statusCode == 481 || (response.statusCode == 408 && request != .iceRestart)
        return ([refusal], endsDialog ? response.statusCode : nil)
    }
}
