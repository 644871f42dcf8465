import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import SIPTransport

/// A caller's INVITE until it is answered or over: the machine nested in ``CallLeg``'s outgoing phase (sealed as the
/// leg is: a struct around a private enum; each transition returns an ``Outcome`` the leg turns into its own state).
///
/// ```
///  calling ──1xx (>100)──▶ early
///     │ 100: a CANCEL may go      │
///     │ End, ring timeout,        │ End, ring timeout,
///     │ the conversation ended    │ the conversation ended
///     ▼                           ▼
///  cancelling (CANCEL out, or due at the first provisional response)
///  calling, early, cancelling ──2xx (ACK; cancelling: and BYE)──▶ answered / over
///  calling, early, cancelling ──300–699, timer B, transport error, 64·T1 after our CANCEL──▶ over
///  calling, early ──the first 422 with a larger Min-SE (RFC 4028 §7.3)──▶ calling (the INVITE again, CSeq + 1,
///                   asking for that interval)
///  calling, early ──3xx naming a SIP Contact not tried yet (at most 5 times)──▶ calling, nothing out: the driver
///                   locates it ──located──▶ calling (the INVITE to it, CSeq + 1) / ──not──▶ over (failed)
/// ```
struct OutgoingInvite {
    /// What a transition leads to.
    enum Outcome {
        /// Still unanswered (calling, early or cancelling).
        case unanswered([CallLegEffect])
        /// Answered: the dialog is confirmed.
        case answered(CallLeg.Confirmed, [CallLegEffect])
        /// Over: the End waiting for it (if any) is done, else the conversation ends for `reason` (nil: it has ended).
        case over([CallLegEffect], reason: Conversation.EndedReason?, pendingEnd: ActionRef?)
    }

    /// Where the INVITE stands.
    private enum State {
        /// The INVITE went out; no provisional response, but perhaps a 100 (`sawTrying`: a CANCEL may go).
        case calling(start: ActionRef?, sawTrying: Bool)
        /// A provisional response arrived: the callee is alerted (the early dialog, when it had a To tag).
        case early(dialog: SIPDialog?)
        /// We are cancelling: our CANCEL is out (`cancelSent`), or goes at the first provisional response; `end`
        /// says whether an End is done already or waits for the CANCEL.
        case cancelling(dialog: SIPDialog?, end: CancelEnd, cancelSent: Bool)
    }

    /// The End of a call being cancelled: each End is fulfilled once, and while one is (or was) there, the
    /// INVITE's end reports nothing (the End ends the conversation).
    private enum CancelEnd {
        /// No End: the ring timeout, the conversation ending or shutdown started the CANCEL.
        case none
        /// The End that started the CANCEL, fulfilled then.
        case fulfilled
        /// An End that came while cancelling: done once the callee has our CANCEL (its 200) or the INVITE is over.
        case waiting(ActionRef)
    }

    /// The INVITE we sent (the latest: a 422, or a target that did not answer, makes us send it again).
    private(set) var invite: SIPRequest
    /// Where it went.
    private(set) var destination: SIPDestination
    /// The offer it carried.
    let offer: SDPSession
    /// The session interval (RFC 4028) the INVITE asks for; nil: session timers are off.
    private(set) var sessionInterval: Int?
    /// A 422 made us ask again already (we do once).
    private var askedAgain = false
    /// The redirections (3xx, RFC 3261 §8.1.3.4) followed so far.
    private(set) var redirections = 0
    /// Every target the INVITE was sent to (as ``targetKey(_:)``): a redirection never goes back to one (no loops).
    private var tried: Set<String>
    /// The most redirections a call follows.
    static let maxRedirections = 5
    private var state: State

    /// A new call: the INVITE is out, for the Start `start`, asking for `sessionInterval` (nil: no session timer).
    init(invite: SIPRequest, destination: SIPDestination, offer: SDPSession, start: ActionRef, sessionInterval: Int?) {
        self.invite = invite
        self.destination = destination
        self.offer = offer
        self.sessionInterval = sessionInterval
        tried = [Self.targetKey(invite.uri)]
        state = .calling(start: start, sawTrying: false)
    }

    /// A target as redirections compare them: scheme, user and host (in lower case) and port; parameters apart.
    static func targetKey(_ uri: SIPURI) -> String {
        "\(uri.scheme.lowercased()):\(uri.user ?? "")@\(uri.host.lowercased()):\(uri.port.map(String.init) ?? "")"
    }

    /// The state's name.
    var stateName: CallLeg.StateName {
        switch state {
        case .calling: .calling
        case .early: .early
        case .cancelling: .cancelling
        }
    }

    /// The early dialog, if any.
    var dialog: SIPDialog? {
        switch state {
        case .calling: nil
        case .early(let dialog), .cancelling(let dialog, _, _): dialog
        }
    }

    /// Stores the early dialog after a request it took.
    mutating func setDialog(_ dialog: SIPDialog) {
        switch state {
        case .calling: break
        case .early: state = .early(dialog: dialog)
        case .cancelling(_, let end, let cancelSent): state = .cancelling(dialog: dialog, end: end, cancelSent: cancelSent)
        }
    }

    // MARK: Transitions

    /// Nothing answered the INVITE (not even 100): the same INVITE with a new branch, for `next`; nil once anything
    /// answered or an End or timeout is cancelling it.
    mutating func retarget(to next: SIPDestination, in context: some CallLegContext) -> SIPRequest? {
        guard case .calling(_, sawTrying: false) = state else { return nil }
        invite.headers.set("Via", context.newVia(for: next).headerValue)
        destination = next
        return invite
    }

    /// A response to the INVITE.
    mutating func receiveInviteResponse(_ response: SIPResponse, leg: CallLeg, in context: some CallLegContext) -> Outcome {
        if response.isSuccess { return answered(response, leg: leg, in: context) }
        if let interval = retryInterval(after: response) { return askAgain(for: interval, after: response, in: context) }
        if let target = redirectTarget(in: response) { return follow(response, to: target) }
        guard response.isProvisional else {
            let reason = CallLeg.endedReason(forFinal: response.statusCode)
            return over([.log(.info, "\(response.statusCode) \(response.reasonPhrase) → \(reason)")], reason)
        }
        let withDialog = response.statusCode > 100 && response.headers.toTag != nil
        switch state {
        case .calling(let start, _) where response.statusCode == 100:
            state = .calling(start: start, sawTrying: true)
            return .unanswered([])
        case .calling(let start, _):
            state = .early(dialog: withDialog ? SIPDialog.asCaller(request: invite, response: response) : nil)
            return .unanswered(start.map { [.fulfil($0)] } ?? [])
        case .early(let dialog):
            guard dialog == nil, withDialog else { return .unanswered([]) }
            state = .early(dialog: SIPDialog.asCaller(request: invite, response: response))
            return .unanswered([])
        case .cancelling(var dialog, let end, let cancelSent):
            if dialog == nil, withDialog { dialog = SIPDialog.asCaller(request: invite, response: response) }
            state = .cancelling(dialog: dialog, end: end, cancelSent: true)
            return .unanswered(cancelSent ? [] : leg.sendCancel(to: destination, in: context))
        }
    }

    /// A response to our CANCEL: the INVITE's 487 normally follows; if the CANCEL came too late (481, or a 200
    /// crossing it) the 2xx path hangs up. Either way a waiting End is done once the callee has our CANCEL.
    mutating func receiveCancelResponse(_ response: SIPResponse) -> Outcome {
        guard case .cancelling(let dialog, .waiting(let end), let cancelSent) = state, response.isSuccess else {
            return .unanswered([])
        }
        state = .cancelling(dialog: dialog, end: .fulfilled, cancelSent: cancelSent)
        return .unanswered([.fulfil(end)])
    }

    /// The INVITE got no final response (timer B) or could not be sent.
    func inviteFailed(_ failure: CallLegRequestFailure) -> Outcome {
        over([.log(.info, failure == .timeout ? "no answer to the INVITE (timer B)" : "the transport failed")], .failed)
    }

    /// A BYE in the early dialog (the callee gave up before answering).
    func receivedBye() -> Outcome { over([], .cancelled) }

    /// End: CANCEL (now, or at the first provisional response); the End is done at once — the leg stays to see the
    /// INVITE through (487, or a crossing 2xx that gets ACK and BYE), as hanging up does with its BYE.
    mutating func end(_ action: ActionRef, leg: CallLeg, in context: some CallLegContext) -> Outcome {
        switch state {
        case .calling(let start, _):
            let failStart = start.map { [CallLegEffect.fail($0, reason: "ended before it was answered")] } ?? []
            return .unanswered(failStart + cancel(end: .fulfilled, leg: leg, in: context) + [.fulfil(action)])
        case .early:
            return .unanswered(cancel(end: .fulfilled, leg: leg, in: context) + [.fulfil(action)])
        case .cancelling(let dialog, .none, let cancelSent):
            // Already on its way out: done when the CANCEL is answered.
            state = .cancelling(dialog: dialog, end: .waiting(action), cancelSent: cancelSent)
            return .unanswered([])
        case .cancelling:
            // An End is there already: this one is done at once.
            return .unanswered([.fulfil(action)])
        }
    }

    /// The ring timeout: cancel, and end the conversation as unanswered.
    mutating func ringTimedOut(leg: CallLeg, in context: some CallLegContext) -> Outcome {
        guard case .cancelling = state else {
            let effects = cancel(end: .none, leg: leg, in: context)
            return .unanswered(
                [.log(.info, "not answered within \(context.configuration.ringTimeout); cancelling")] + effects
                    + [.report(.ended(context.now, .unanswered))])
        }
        return .unanswered([])
    }

    /// 64·T1 after our CANCEL without the INVITE's final response: the call is given up.
    func cancelGuardFired() -> Outcome {
        guard case .cancelling = state else { return .unanswered([]) }
        return over([.log(.info, "no final response after our CANCEL; giving up"), .abandon(.invite)], nil)
    }

    /// The conversation ended by the manager's doing: cancel.
    mutating func conversationLeft(leg: CallLeg, in context: some CallLegContext) -> Outcome {
        guard case .cancelling = state else { return .unanswered(cancel(end: .none, leg: leg, in: context)) }
        return .unanswered([])
    }

    /// Shutdown: cancel (the leg is kept until the CANCEL can go); a leg already cancelling is given up.
    mutating func shutDown(leg: CallLeg, in context: some CallLegContext) -> Outcome {
        guard case .cancelling(_, _, let cancelSent) = state else { return .unanswered(cancel(end: .none, leg: leg, in: context)) }
        return cancelSent ? over([], nil) : .unanswered([])
    }

    /// The interval to ask for again after a 422 (RFC 4028 §7.3): once, before we started cancelling, when its
    /// Min-SE is larger than what we asked for; nil otherwise (the 422 then ends the call as any refusal).
    func retryInterval(after response: SIPResponse) -> Int? {
        guard !askedAgain, let sessionInterval, response.statusCode == 422 else { return nil }
        switch state {
        case .calling, .early: return SessionTimer.retryInterval(after: response, requested: sessionInterval)
        case .cancelling: return nil
        }
    }

    /// Where a redirection sends the call: the first Contact of a 3xx (highest `q` first) of the INVITE's own scheme
    /// (`sip:` or `sips:`) not tried yet, its headers and `method` dropped, while calling or early and under
    /// ``maxRedirections``; nil otherwise (305 and 380 are not followed: a proxy to use, an alternative service), and
    /// the 3xx then ends the call as any refusal.
    func redirectTarget(in response: SIPResponse) -> SIPURI? {
        guard (300...399).contains(response.statusCode), response.statusCode != 305, response.statusCode != 380,
            redirections < Self.maxRedirections
        else { return nil }
        if case .cancelling = state { return nil }
        func q(_ contact: SIPAddress) -> Double { contact.parameters["q"].flatMap(Double.init) ?? 1 }
        let contacts = response.headers.contacts.enumerated().sorted { (q($0.element), -$0.offset) > (q($1.element), -$1.offset) }
        // Only to the same scheme: our From, Contact and offer were made for it (a sips: call's keys must not go to a
        // sip: target; a sips: target needs a sips: Contact, RFC 3261 §8.1.1.8).
        let scheme = invite.uri.scheme.lowercased()
        return contacts.map(\.element.uri).first { uri in
            uri.isSIP && uri.scheme.lowercased() == scheme && !tried.contains(Self.targetKey(uri))
        }.map { found in
            // A Request-URI carries no headers and no method (RFC 3261 §19.1.1).
            var uri = found
            uri.headers = SIPParameters()
            uri.parameters.remove("method")
            return uri
        }
    }

    /// The target of a redirection was located: the INVITE again, to it (its Request-URI the target, CSeq + 1, a new
    /// branch; the same Call-ID, tags and offer). Over when the call was ended or given up meanwhile (an End, the
    /// ring timeout, the conversation's end, shutdown: each started cancelling with nothing out).
    mutating func redirected(to target: SIPURI, at next: SIPDestination, in context: some CallLegContext) -> Outcome {
        guard case .calling = state else { return over([], nil) }
        // The INVITE's Via, Contact and offer were made for its transport (an offer's SDES keys only ever go over
        // TLS): another transport is not followed.
        guard next.kind == destination.kind else {
            return redirectFailed("\(target) is reached over \(next.kind.rawValue), the call was placed over \(destination.kind.rawValue)")
        }
        var headers = invite.headers
        headers.set("Via", context.newVia(for: next).headerValue)
        headers.set("CSeq", SIPCSeq(number: (headers.cseq?.number ?? 1) + 1, method: .invite).headerValue)
        invite.headers = headers
        invite.uri = target
        destination = next
        return .unanswered([.send(invite, .invite, to: next)])
    }

    /// Whether a redirection's target is being located (nothing is out) and the call still waits for it.
    var isLocatingRedirect: Bool {
        guard redirections > 0, case .calling(_, sawTrying: false) = state else { return false }
        return true
    }

    /// The target of a redirection could not be located: the call fails (unless it was ended meanwhile).
    func redirectFailed(_ problem: String) -> Outcome {
        guard case .calling = state else { return over([], nil) }
        return over([.log(.info, "the redirection cannot be followed: \(problem)")], .failed)
    }

    // MARK: Steps

    /// Follows a 3xx to `target`: nothing is out until the driver has located it (``redirected(to:at:in:)``); an End
    /// or a timeout meanwhile starts cancelling, and the located target then ends the call instead.
    private mutating func follow(_ response: SIPResponse, to target: SIPURI) -> Outcome {
        redirections += 1
        tried.insert(Self.targetKey(target))
        let start: ActionRef? = if case .calling(let start, _) = state { start } else { nil }
        state = .calling(start: start, sawTrying: false)
        return .unanswered([
            .log(.info, "\(response.statusCode) \(response.reasonPhrase): following it to \(target) "
                + "(\(redirections) of at most \(Self.maxRedirections))"),
            .followRedirect(target),
        ])
    }

    /// The INVITE again after a 422: a new transaction (CSeq + 1, a new branch) asking for `interval`, with the
    /// same Call-ID, tag and offer; the call is calling again (the Start, fulfilled or not, stays as it is).
    private mutating func askAgain(for interval: Int, after response: SIPResponse, in context: some CallLegContext) -> Outcome {
        var headers = invite.headers
        let cseq = (headers.cseq?.number ?? 1) + 1
        headers.set("Via", context.newVia(for: destination).headerValue)
        headers.set("CSeq", SIPCSeq(number: cseq, method: .invite).headerValue)
        headers.set("Session-Expires", String(interval))
        headers.set("Min-SE", String(interval))
        invite.headers = headers
        sessionInterval = interval
        askedAgain = true
        if case .calling(let start, _) = state {
            state = .calling(start: start, sawTrying: false)
        } else {
            state = .calling(start: nil, sawTrying: false)
        }
        return .unanswered([
            .log(.info, "\(response.statusCode) \(response.reasonPhrase): asking again with Session-Expires \(interval) (RFC 4028)"),
            .send(invite, .invite, to: destination),
        ])
    }

    /// Starts cancelling: CANCEL now if a provisional response has come (RFC 3261 §9.1), else as soon as one does.
    private mutating func cancel(end: CancelEnd, leg: CallLeg, in context: some CallLegContext) -> [CallLegEffect] {
        let (dialog, canSend): (SIPDialog?, Bool)
        switch state {
        case .calling(_, let sawTrying): (dialog, canSend) = (nil, sawTrying)
        case .early(let early): (dialog, canSend) = (early, true)
        case .cancelling: preconditionFailure("cancel(end:leg:in:) starts cancelling once")
        }
        state = .cancelling(dialog: dialog, end: end, cancelSent: canSend)
        return canSend ? leg.sendCancel(to: destination, in: context) : []
    }

    /// The INVITE was answered: ACK it; the dialog is confirmed — unless we were cancelling, then hang up at once.
    private func answered(_ response: SIPResponse, leg: CallLeg, in context: some CallLegContext) -> Outcome {
        var dialog = self.dialog
        if let early = dialog, DialogID(responseAsUAC: response) == early.id {
            dialog?.receive(response: response)
        } else {
            dialog = SIPDialog.asCaller(request: invite, response: response)
        }
        guard let dialog, let cseq = invite.headers.cseq?.number else {
            return over([.log(.error, "a 2xx without a usable dialog (no To tag); ending")], .failed)
        }
        let target = context.destination(inDialog: dialog, fallback: destination)
        let ack = dialog.makeACK(forInviteCSeq: cseq, via: context.newVia(for: target))
        let effects: [CallLegEffect] = [.sendStateless(.request(ack), to: target), .cancelTimer(.ring)]
        switch state {
        case .cancelling:
            // Answered while we were cancelling: acknowledge, then hang up (RFC 3261 §9.1).
            return over(effects + leg.bye(dialog, destination: target, in: context), nil)
        case .calling(let start, _):
            return confirmed(dialog, target: target, ack: ack, response: response, effects + (start.map { [.fulfil($0)] } ?? []), in: context)
        case .early:
            return confirmed(dialog, target: target, ack: ack, response: response, effects, in: context)
        }
    }

    private func confirmed(
        _ dialog: SIPDialog, target: SIPDestination, ack: SIPRequest, response: SIPResponse, _ effects: [CallLegEffect],
        in context: some CallLegContext
    ) -> Outcome {
        let remote = response.body.isEmpty ? nil : try? SDPSession.parse(response.body)
        // Video offered but refused in the answer: the call goes on as audio (its video line kept at port 0), and
        // says so.
        let videoRefused = offer.isVideo && remote?.isVideo != true
        var local = offer
        if videoRefused { local.video?.port = 0 }
        let (sessionTimer, sessionEffects) = CallLeg.sessionAnswered(response, requested: sessionInterval)
        let confirmed = CallLeg.Confirmed(
            dialog: dialog, destination: target, media: CallLeg.Media(local: local, remote: remote), lastACK: ack,
            peerAccept: response.headers["Accept"], sessionTimer: sessionTimer)
        let refusedVideo: [CallLegEffect] = videoRefused
            ? [.report(.updated(Conversation.Update(capabilities: context.capabilities(video: false))))] : []
        return .answered(confirmed, effects + sessionEffects + refusedVideo + [.report(.connected(context.now))])
    }

    /// The INVITE is over; the End waiting while we cancel, if any, is done by it, and after an End nothing is
    /// reported.
    private func over(_ effects: [CallLegEffect], _ reason: Conversation.EndedReason?) -> Outcome {
        switch state {
        case .calling, .early, .cancelling(_, .none, _): .over(effects, reason: reason, pendingEnd: nil)
        case .cancelling(_, .fulfilled, _): .over(effects, reason: nil, pendingEnd: nil)
        case .cancelling(_, .waiting(let end), _): .over(effects, reason: reason, pendingEnd: end)
        }
    }
}
