import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling

/// Being transferred (RFC 3515, the other side of ``OutgoingTransfer``): the peer's REFER in an answered call asks us to
/// call someone else. We answer 202, say `100 Trying` in a NOTIFY at once, and the driver places the new call (a
/// conversation of its own); its outcome comes back as the final NOTIFY, and when the target answered our call with the
/// peer ends (`transferred`). A refused new call leaves ours as it was.
///
/// ```
///   REFER ─► one Refer-To, a sip:/sips: URI, not us, a well-formed Replaces if any, transfers accepted, none under way?
///              ├─ no ──► 400 / 403 / 603 / 491, 403 after 5 taken in the call (the call goes on)
///              └─ yes ─► 202, NOTIFY "100 Trying" (active) ─► new call ─► connected ─► NOTIFY "200 OK" (terminated), BYE
///                                                                   └─► refused ──► NOTIFY "486 Busy Here" (terminated)
/// ```
extension CallLeg {
    /// The most REFERs of its peer a call takes (each places a call); beyond, 403.
    static let maxRefersPerCall = 5

    /// Whom a REFER asks us to call (its URI headers dropped but `Replaces`: an attended transfer), or why we will not
    /// (a status and its reason).
    static func referTarget(of request: SIPRequest, us: SIPURI) -> Result<SIPURI, ReferRefusal> {
        let targets = request.headers.addresses("Refer-To")
        guard targets.count == 1, let target = targets.first?.uri else { return .failure(ReferRefusal(400, "Exactly One Refer-To")) }
        guard target.scheme == "sip" || target.scheme == "sips" else { return .failure(ReferRefusal(416, "Unsupported URI Scheme")) }
        func port(_ uri: SIPURI) -> Int { uri.port ?? (uri.scheme == "sips" ? 5061 : 5060) }
        guard !(target.user == us.user && target.host.lowercased() == us.host.lowercased() && port(target) == port(us)) else {
            return .failure(ReferRefusal(403, "Refer-To Names Us"))
        }
        var bare = target
        bare.headers = SIPParameters()
        // An attended transfer: the new call replaces the transferor's call with the target (RFC 3891).
        if let replaces = target.headers["Replaces"] {
            guard ReplacesHeader(replaces) != nil else { return .failure(ReferRefusal(400, "Malformed Replaces")) }
            bare.headers.append(SIPParameter(name: "Replaces", value: replaces))
        }
        return .success(bare)
    }

    /// The peer's REFER in the leg's dialog.
    mutating func receiveRefer(
        _ request: SIPRequest, key: TransactionKey, accepting: Bool, in context: some CallLegContext
    ) -> [CallLegEffect] {
        if let refused = takeIntoDialog(request, key: key, in: context) { return refused }
        func answer(_ status: Int, _ reason: String? = nil) -> CallLegEffect {
            .respond(context.response(to: request, key: key, status: status, toTag: localTag, reason: reason), transaction: key)
        }
        guard case .confirmed(let confirmed) = state else { return [answer(403, "Not In An Answered Call")] }
        switch Self.referTarget(of: request, us: confirmed.dialog.localAddress.uri) {
        case .failure(let refusal):
            return [answer(refusal.status, refusal.reason), .log(.info, "the peer's REFER refused: \(refusal.status) \(refusal.reason)")]
        case .success(let target):
            guard accepting else { return [answer(603, "Transfers Not Accepted"), .log(.info, "the peer's REFER refused (--accept-refer never)")] }
            guard confirmed.referredTo == nil, confirmed.transfer == nil else { return [answer(491, "A Transfer Is Under Way")] }
            // Each REFER taken places a call: a peer that asks again and again (each target failing at once) would
            // have us call whomever it names, as fast as the calls fail.
            guard confirmed.refersTaken < Self.maxRefersPerCall else {
                return [answer(403, "Too Many Transfers In This Call"), .log(.info, "the peer's REFER refused: \(Self.maxRefersPerCall) taken already")]
            }
            updateConfirmed {
                $0.referredTo = target
                $0.refersTaken += 1
            }
            return [answer(202), .log(.info, "the peer transfers us to \(target)")]
                + notifyReferrer("100 Trying", final: false, in: context)
                + [.transferProgress(SIPFinalStatus(code: 100, reason: "Trying"), final: false, transferee: true), .transferAsked(target)]
        }
    }

    /// How the call the peer asked for goes: a NOTIFY with its status; a final one ends the transfer, and a 2xx also
    /// our call with the peer (`transferred`).
    mutating func referredCallProgress(_ status: Int, _ reason: String, in context: some CallLegContext) -> [CallLegEffect] {
        guard case .confirmed(let confirmed) = state, let target = confirmed.referredTo else { return [] }
        let final = status >= 200
        let effects = notifyReferrer("\(status) \(reason)", final: final, in: context)
            + [.transferProgress(SIPFinalStatus(code: status, reason: reason), final: final, transferee: true)]
        guard final else { return effects }
        updateConfirmed { $0.referredTo = nil }
        guard (200..<300).contains(status) else { return effects + [.log(.info, "transfer to \(target): \(status) \(reason); the call goes on")] }
        return effects + hangUp(.transferred, why: "transferred to \(target), who answered", in: context)
    }

    /// Our NOTIFY in the dialog carrying `line` as a sipfrag.
    private mutating func notifyReferrer(_ line: String, final: Bool, in context: some CallLegContext) -> [CallLegEffect] {
        guard case .confirmed(var confirmed) = state else { return [] }
        let destination = context.destination(inDialog: confirmed.dialog, fallback: confirmed.destination)
        var headers: SIPHeaders = [:]
        headers.append("Event", "refer")
        headers.append("Subscription-State", final ? "terminated;reason=noresource" : "active;expires=60")
        let request = confirmed.dialog.makeRequest(
            .notify, via: context.newVia(for: destination), contact: context.contactAddress(for: destination, secure: isSecure),
            headers: headers, contentType: SIPContentType(type: "message", subtype: "sipfrag"), body: Data("SIP/2.0 \(line)\r\n".utf8))
        updateConfirmed { $0.dialog = confirmed.dialog }
        return [.send(request, .notify, to: destination)]
    }
}

/// Why a REFER is refused: a status and its reason phrase.
struct ReferRefusal: Error, Equatable {
    let status: Int
    let reason: String
    init(_ status: Int, _ reason: String) { (self.status, self.reason) = (status, reason) }
}
