import ConversationKit
import Foundation
import SIPMessages

/// Forwarding on no answer (``CallForwarding``): a ringing call nobody answered in time is answered 302 Moved
/// Temporarily with the target as Contact, and the conversation ends `forwarded`.
///
/// ```
///   ringing ──timer: forwardNoAnswer (noAnswer set)──► 302, Contact: the target ──► ended (forwarded)
///           ──forwarding turned off meanwhile──► rings on
/// ```
extension CallLeg {
    /// The no-answer time is up: 302 to the forwarding target, if one is still set.
    mutating func forwardUnanswered(in context: some CallLegContext) -> [CallLegEffect] {
        let forwarding = context.forwarding(for: uuid)
        guard let inviteKey, let target = forwarding.noAnswer else { return [] }
        let contact: SIPHeaders = ["Contact": SIPAddress(uri: target).headerValue]
        let moved = context.response(to: invite, key: inviteKey, status: 302, toTag: localTag, extra: contact, reason: "Moved Temporarily")
        return [
            .log(.info, "nobody answered within \(forwarding.noAnswerAfter): forwarded to \(target)"),
            .respond(moved, transaction: inviteKey), .cancelTimer(.ring),
        ] + end(.forwarded, in: context)
    }
}
