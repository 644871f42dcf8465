import ConversationKit
import Foundation
import GroupActivities
import SIPMessages
import SIPSignaling

/// MESSAGE requests (RFC 3428). In a call's dialog they go to its leg (and from there to the group messenger): the
/// dialog's identifiers vouch for the sender. Out of dialog, a text whose From names the peer of exactly one call
/// (baresip sends its chat that way) is shown with that call as what it is — a claim anyone could make: unverified,
/// with the From it claims, never a group member's message. Anything else is refused.
///
///   MESSAGE ── To tag? ──yes──► the call's leg ──► group messenger (member's message) or verified text
///                 └──no──► From = one call's peer? ──no──► 403
///                               └──yes──► text/plain, ≤ 16 KiB, the call's unverified budget ──► unverified textMessage
extension SIPUserAgent {
    func receiveMessage(_ request: SIPRequest, key: TransactionKey) {
        if request.headers.toTag != nil {
            inDialog(request, key: key) { leg, context in leg.receiveMessage(request, key: key, in: context) }
            return
        }
        guard let uuid = leg(forOutOfDialogMessage: request), let claimed = request.headers.from?.uri else {
            return respond(to: request, key: key, status: 403, reason: "Not In A Call With Us")
        }
        let mediaType = request.headers.contentType.map { "\($0.type)/\($0.subtype)".lowercased() }
        guard mediaType == "text/plain" else {
            return respond(to: request, key: key, status: 415, extra: ["Accept": "text/plain"])
        }
        guard request.body.count <= DialogBudget.maxBodyBytes else {
            counters.inDialogRefused += 1
            return respond(to: request, key: key, status: 413, reason: "Message Body Too Large")
        }
        guard spendsBudget(of: uuid, on: request, key: key, unverified: true) else { return }
        respond(to: request, key: key, status: 200)
        groups.unverifiedText(GroupMessenger.chatLine(request.body), on: uuid, claimedSender: claimed.description)
    }

    /// The one live call whose peer has the sender's address of record (user and host; the port is ignored, as
    /// softphones send chat from their AOR, not their contact).
    func leg(forOutOfDialogMessage request: SIPRequest) -> UUID? {
        guard let from = request.headers.from?.uri else { return nil }
        var found: UUID?
        for leg in legs.values {
            let remote = leg.role == .callee ? leg.invite.headers.from?.uri : leg.invite.headers.to?.uri
            guard let remote, Self.sameAddressOfRecord(remote, from) else { continue }
            guard found == nil else { return nil }
            found = leg.uuid
        }
        return found
    }

    static func sameAddressOfRecord(_ a: SIPURI, _ b: SIPURI) -> Bool {
        a.user == b.user && a.host.lowercased() == b.host.lowercased()
    }
}
