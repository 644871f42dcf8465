import ConversationKit
import Foundation
import GroupActivities
import SIPMessages
import SIPSignaling
import SIPTransport

/// Group messages in the leg's dialog (RFC 3428 MESSAGE inside the call): ours go with the dialog's route set,
/// remote target and next CSeq; the peer's pass the dialog's CSeq check (a lower one is refused with 500 and
/// Retry-After, RFC 3261 §12.2.2) before the driver hands their body to the group messenger. The answers to ours go
/// from the transaction to the messenger directly: a MESSAGE changes nothing in the dialog (it is no target refresh).
extension CallLeg {
    /// A MESSAGE in the leg's dialog.
    mutating func receiveMessage(_ request: SIPRequest, key: TransactionKey, in context: some CallLegContext) -> [CallLegEffect] {
        guard var dialog else { return [.respond(context.response(to: request, key: key, status: 481), transaction: key)] }
        let verdict = dialog.receive(request: request)
        guard verdict == .accept else { return refusal(verdict, of: request, key: key, in: context) }
        setDialog(dialog)
        return [.messageReceived(request, transaction: key)]
    }

    /// Sends a group message's body in the dialog; a call that is not answered cannot carry it.
    mutating func sendMessage(
        token: UInt64, contentType: SIPContentType, body: Data, in context: some CallLegContext
    ) -> [CallLegEffect] {
        inAnsweredCall { call in
            Self.message(token, contentType: contentType, body: body, dialog: &call.dialog, destination: call.destination, in: context)
        } ?? [.messageFailed(token: token)]
    }

    private static func message(
        _ token: UInt64, contentType: SIPContentType, body: Data, dialog: inout SIPDialog, destination: SIPDestination,
        in context: some CallLegContext
    ) -> [CallLegEffect] {
        let target = context.destination(inDialog: dialog, fallback: destination)
        var headers: SIPHeaders = [:]
        headers.append("Accept", GroupMessenger.acceptedTypes)
        let request = dialog.makeRequest(
            .message, via: context.newVia(for: target), contact: nil, headers: headers, contentType: contentType, body: body)
        return [.send(request, .message(token: token), to: target)]
    }

    /// How the peer reads group messages, from the `Accept` of its INVITE (callee) or 2xx (caller): our JSON when
    /// it lists it, text when it lists other types only, our JSON on trial when it says nothing (a 415 downgrades).
    var peerGroupFormat: GroupLegFormat {
        guard let accept = peerAccept else { return .json }
        return accept.lowercased().contains(GroupWire.contentType) ? .json : .text
    }

    /// Whether the leg's requests go over a stream (TCP, TLS): the larger message limit.
    /// (The INVITE's Via names it: the peer's for a callee, ours for a caller; the dialog keeps its transport.)
    var signalsOverStream: Bool { invite.headers.topVia.map { $0.transport.uppercased() != "UDP" } ?? false }
}
