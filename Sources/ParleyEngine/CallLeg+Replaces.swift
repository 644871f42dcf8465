import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling

/// Attended transfer (RFC 3891 Replaces, RFC 5589 §7): the dialog of a consultation call named so that the party we
/// hand over replaces it at its far end, and the far end's side: a new INVITE whose `Replaces` names one of our calls.
///
/// ```
///   transferor A: call 1 with B, call 2 (consultation) with C
///     A ── REFER (Refer-To: <C?Replaces=call2;to-tag=C's;from-tag=A's>) ──► B     (call 1)
///     B ── INVITE (Replaces: call2;to-tag=C's;from-tag=A's) ──► C
///     C: a confirmed call 2 matches ─► answers B at once, BYE to A on call 2 (ended transferred)
///        none matches ─► 481; early, or `early-only` on a confirmed one ─► 481 / 486; transfers refused ─► 603
///     B ── NOTIFY 200 ──► A: call 1 ends transferred
/// ```
extension CallLeg {
    /// Where an attended transfer to this call sends the party handed over: the peer's URI (the dialog's remote
    /// target) with a `Replaces` header naming this dialog from the peer's side (its tag the to-tag, ours the
    /// from-tag); nil unless the call is answered.
    var replacesTarget: SIPURI? {
        guard case .confirmed(let confirmed) = state, let remoteTag = confirmed.dialog.id.remoteTag else { return nil }
        var target = confirmed.dialog.remoteTarget
        target.parameters = SIPParameters(target.parameters.filter { $0.name.lowercased() == "transport" })
        target.headers = SIPParameters()
        target.headers.append(SIPParameter(name: "Replaces", value: "\(callID);to-tag=\(remoteTag);from-tag=\(localTag)"))
        return target
    }

    /// Whether a `Replaces` header's to-tag and from-tag name this leg's dialog (our tag the to-tag), and in what
    /// state.
    func replacement(toTag: String, fromTag: String) -> ReplacesMatch {
        guard toTag == localTag else { return .none }
        switch state {
        case .confirmed(let confirmed):
            return confirmed.dialog.id.remoteTag == fromTag ? .confirmed : .none
        case .ringing, .answering, .outgoing:
            return dialog?.id.remoteTag == fromTag ? .early : .none
        case .ended:
            return .none
        }
    }

    /// Another call replaced this one (its INVITE's Replaces named it): BYE, the conversation ends `transferred`.
    mutating func replaced(in context: some CallLegContext) -> [CallLegEffect] {
        hangUp(.transferred, why: "replaced by a new call (RFC 3891)", in: context)
    }
}

/// What a `Replaces` header's tags match among a leg's dialogs.
enum ReplacesMatch {
    /// Not this leg's dialog.
    case none
    /// Its dialog, not answered yet.
    case early
    /// Its answered dialog.
    case confirmed
}

/// A `Replaces` header (RFC 3891 §6.1): `call-id;to-tag=…;from-tag=…[;early-only]`.
struct ReplacesHeader: Equatable {
    var callID: String
    var toTag: String
    var fromTag: String
    var earlyOnly: Bool

    /// Reads one; nil when a part is missing or empty.
    init?(_ value: String) {
        let parts = value.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let first = parts.first, !first.isEmpty, !first.contains("=") else { return nil }
        var to: String?, from: String?, early = false
        for part in parts.dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            switch pair.first?.lowercased() {
            case "to-tag": to = pair.count == 2 ? pair[1] : nil
            case "from-tag": from = pair.count == 2 ? pair[1] : nil
            case "early-only": early = true
            default: break
            }
        }
        guard let to, let from, !to.isEmpty, !from.isEmpty else { return nil }
        (callID, toTag, fromTag, earlyOnly) = (first, to, from, early)
    }
}
