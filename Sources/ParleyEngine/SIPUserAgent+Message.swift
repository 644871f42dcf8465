import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling

/// MESSAGE requests (RFC 3428): in a call's dialog they go to its leg; out of dialog, one from the address of record
/// of exactly one call's peer is taken as that call's (baresip sends its chat that way); anything else is refused.
extension SIPUserAgent {
    func receiveMessage(_ request: SIPRequest, key: TransactionKey) {
        if request.headers.toTag != nil {
            inDialog(request, key: key) { leg, context in leg.receiveMessage(request, key: key, in: context) }
            return
        }
        guard let uuid = leg(forOutOfDialogMessage: request) else {
            return respond(to: request, key: key, status: 403, reason: "Not In A Call With Us")
        }
        groups.received(request, key: key, on: uuid, toTag: nil)
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
