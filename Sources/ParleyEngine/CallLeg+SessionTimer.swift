import Foundation
import SIPMessages
import SIPSignaling

/// RFC 4028 session timers in a call leg: the headers our INVITEs, re-INVITEs and 2xx carry, the negotiation after
/// each 2xx either way (the rules and the timers' diagram are on ``SessionTimer``), and the refresh, which is one of
/// our own offers (``CallLeg/OfferRequest/refresh``). Builders on the states' data: ``CallLeg``'s transitions decide
/// and change state.
extension CallLeg {
    /// How long a refresh that finds a re-INVITE in progress (either way) waits before it looks again: that
    /// re-INVITE's 2xx refreshes the session and restarts the timers; if it fails, the refresh goes then.
    static let refreshRecheck = Duration.seconds(4)

    /// Our initial INVITE with the session timer's headers, when session timers are on.
    static func withSessionTimer(_ invite: SIPRequest, in context: some CallLegContext) -> SIPRequest {
        guard let configuration = context.configuration.sessionTimer else { return invite }
        var invite = invite
        var headers = invite.headers
        for field in SessionTimer.requestHeaders(configuration, running: nil) { headers.append(field) }
        invite.headers = headers
        return invite
    }

    /// Adds the session timer's headers to a re-INVITE of ours, when session timers are on.
    static func addSessionTimer(to headers: inout SIPHeaders, running: SessionTimer?, in context: some CallLegContext) {
        guard let configuration = context.configuration.sessionTimer else { return }
        for field in SessionTimer.requestHeaders(configuration, running: running) { headers.append(field) }
    }

    /// How we take the session timer of the peer's INVITE or re-INVITE (nil: session timers are off here; the
    /// accepted headers then include `Supported: timer`).
    static func sessionTimerAnswer(to request: SIPRequest, in context: some CallLegContext) -> SessionTimer.Answer? {
        guard let configuration = context.configuration.sessionTimer else { return nil }
        switch SessionTimer.answer(request, configuration) {
        case .tooSmall(let minimum):
            return .tooSmall(minimum: minimum)
        case .accept(let timer, var headers):
            headers.append("Supported", "timer")
            return .accept(timer, headers: headers)
        }
    }

    /// A 2xx to our re-INVITE: the session is refreshed, with what the answer says (RFC 4028 §7.2), and its timers
    /// start again.
    func sessionAnswered(_ response: SIPResponse, in confirmed: inout Confirmed, context: some CallLegContext) -> [CallLegEffect] {
        guard let configuration = context.configuration.sessionTimer else { return [] }
        let timer = SessionTimer.answered(response, requested: confirmed.sessionTimer?.interval ?? configuration.interval)
        confirmed.sessionTimer = timer
        return timer.startEffects
    }

    /// Caller: the session timer of the INVITE's 2xx (nil when timers are off), and the effects that start it.
    static func sessionAnswered(_ response: SIPResponse, requested: Int?) -> (SessionTimer?, [CallLegEffect]) {
        guard let requested else { return (nil, []) }
        let timer = SessionTimer.answered(response, requested: requested)
        return (timer, timer.startEffects)
    }

    /// Half the session interval passed and we are the refresher: our refresh re-INVITE goes, unless a re-INVITE is
    /// in progress either way (its 2xx will do; we look again shortly).
    func refreshSession(_ confirmed: inout Confirmed, in context: some CallLegContext) -> [CallLegEffect] {
        guard let timer = confirmed.sessionTimer, timer.weRefresh else { return [] }
        guard case .none = confirmed.ownOffer, !Self.inviteOpen(confirmed) else {
            return [
                .log(.debug, "session refresh due while a re-INVITE is in progress; looking again in \(Self.refreshRecheck)"),
                .startTimer(.sessionRefresh, after: Self.refreshRecheck),
            ]
        }
        return [.log(.debug, "refreshing the session (RFC 4028, every \(timer.refreshAfter))")]
            + requestOffer(.refresh, confirmed: &confirmed, in: context)
    }

    /// Whether a final response to our INVITE makes the leg ask again (a 422 it has not retried yet, a 3xx it follows)
    /// instead of ending: the driver does not take its status as the call's failure.
    func asksAgain(after response: SIPResponse) -> Bool {
        guard case .outgoing(let outgoing) = state else { return false }
        return outgoing.retryInterval(after: response) != nil || outgoing.redirectTarget(in: response) != nil
    }
}
