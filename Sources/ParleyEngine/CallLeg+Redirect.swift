import Foundation
import SIPMessages
import SIPTransport

/// A caller's INVITE redirected (3xx): to the target it names once the driver has located it (``OutgoingInvite``
/// decides; the leg settles its outcome).
extension CallLeg {
    /// Caller: the target of a 3xx we follow was located at `next`: the INVITE goes there.
    mutating func redirected(to target: SIPURI, at next: SIPDestination, in context: some CallLegContext) -> [CallLegEffect] {
        guard case .outgoing(var outgoing) = state else { return [] }
        let outcome = outgoing.redirected(to: target, at: next, in: context)
        return settle(outgoing, outcome, in: context)
    }

    /// Caller: where the unanswered INVITE went (nil once answered, or for a callee).
    var outgoingDestination: SIPDestination? {
        guard case .outgoing(let outgoing) = state else { return nil }
        return outgoing.destination
    }

    /// Caller: a 3xx is being followed (its target is located; nothing is out), and the call was not ended meanwhile.
    var isFollowingRedirect: Bool {
        guard case .outgoing(let outgoing) = state else { return false }
        return outgoing.isLocatingRedirect
    }

    /// Caller: the target of a 3xx we follow could not be located.
    mutating func redirectFailed(_ problem: String, in context: some CallLegContext) -> [CallLegEffect] {
        guard case .outgoing(let outgoing) = state else { return [] }
        return settle(outgoing, outgoing.redirectFailed(problem), in: context)
    }
}
