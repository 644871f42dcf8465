import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling

/// A blind transfer of the leg's peer (``OutgoingTransfer``, RFC 3515): our REFER goes in the dialog with the
/// dialog's route set and next CSeq; the peer's NOTIFYs (`Event: refer`) pass the dialog's CSeq check, are answered, and
/// their sipfrag settles the Transfer action. Only an answered call (not on its way to ending) transfers.
extension CallLeg {
    /// Sends REFER asking the peer to call `target`; the action settles on the final NOTIFY.
    mutating func transfer(_ action: ConversationAction, to target: SIPURI, in context: some CallLegContext) -> [CallLegEffect] {
        let ref = ActionRef(action)
        guard case .confirmed(var confirmed) = state else { return [.fail(ref, reason: "the call is not answered")] }
        guard confirmed.transfer == nil else { return [.fail(ref, reason: "a transfer of this call is already under way")] }
        // (`confirmed` is a copy: what changed in it goes back through updateConfirmed.)
        let destination = context.destination(inDialog: confirmed.dialog, fallback: confirmed.destination)
        var headers: SIPHeaders = [:]
        headers.append("Refer-To", "<\(target)>")
        headers.append("Referred-By", "<\(confirmed.dialog.localAddress.uri)>")
        let request = confirmed.dialog.makeRequest(
            .refer, via: context.newVia(for: destination), contact: context.contactAddress(for: destination, secure: isSecure),
            headers: headers)
        updateConfirmed { $0.dialog = confirmed.dialog; $0.transfer = OutgoingTransfer(action: ref, target: target) }
        return [.send(request, .refer, to: destination), .log(.info, "transfer to \(target): REFER sent")]
    }

    /// The peer's answer to our REFER: a 2xx starts the wait for the final NOTIFY; anything final else fails the
    /// transfer (the call goes on as it was).
    mutating func referAnswered(_ response: SIPResponse, in context: some CallLegContext) -> [CallLegEffect] {
        guard !response.isProvisional, case .confirmed(let confirmed) = state, var transfer = confirmed.transfer,
            transfer.stage == .referring
        else { return [] }
        guard response.isSuccess else {
            updateConfirmed { $0.transfer = nil }
            let said = "\(response.statusCode) \(response.reasonPhrase)"
            return [.fail(transfer.action, reason: "the remote party refused the transfer (\(said))", status: SIPFinalStatus(response))]
        }
        transfer.stage = .accepted
        updateConfirmed { $0.transfer = transfer }
        return [.startTimer(.transferNotify, after: OutgoingTransfer.finalWait),
                .log(.info, "transfer to \(transfer.target): accepted (\(response.statusCode)), waiting for the outcome")]
    }

    /// Our REFER got no answer or could not go.
    mutating func referFailed(_ failure: CallLegRequestFailure) -> [CallLegEffect] {
        settleTransfer { transfer in
            [.fail(transfer.action, reason: failure == .timeout ? "no answer to the REFER" : "the transport failed sending the REFER")]
        }
    }

    /// No final NOTIFY came in time after the peer accepted.
    mutating func transferTimedOut() -> [CallLegEffect] {
        let seconds = OutgoingTransfer.finalWait.components.seconds
        return settleTransfer { transfer in
            [.fail(transfer.action, reason: "the remote party said nothing of the transfer's outcome within \(seconds) s")]
        }
    }

    /// A NOTIFY in the leg's dialog: the progress of the transfer we asked for. Anything but `Event: refer` is 489;
    /// with no transfer of ours under way, 481 (no such subscription); a body that is no sipfrag status line, 400.
    mutating func receiveNotify(_ request: SIPRequest, key: TransactionKey, in context: some CallLegContext) -> [CallLegEffect] {
        if let refused = takeIntoDialog(request, key: key, in: context) { return refused }
        func answer(_ status: Int, _ reason: String? = nil) -> CallLegEffect {
            .respond(context.response(to: request, key: key, status: status, toTag: localTag, reason: reason), transaction: key)
        }
        let event = request.headers["Event"].map { $0.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased() }
        guard event == "refer" else { return [answer(489, "Bad Event")] }
        guard case .confirmed(let confirmed) = state, let transfer = confirmed.transfer else {
            return [answer(481, "Subscription Does Not Exist")]
        }
        guard let line = SIPFragmentStatus(body: request.body) else { return [answer(400, "Bad Sipfrag")] }
        let status = SIPFinalStatus(code: line.code, reason: line.reason)
        switch OutgoingTransfer.progress(line) {
        case .trying(let said):
            return [answer(200), .log(.info, "transfer to \(transfer.target): \(said)"), .transferProgress(status, final: false, transferee: false)]
        case .succeeded(let said):
            let done = settleTransfer { [.fulfil($0.action)] }
            return [answer(200), .transferProgress(status, final: true, transferee: false)] + done
                + hangUp(.transferred, why: "transfer to \(transfer.target): the target answered (\(said))", in: context)
        case .failed(let said):
            return [answer(200), .transferProgress(status, final: true, transferee: false)]
                + settleTransfer { [.fail($0.action, reason: "the transfer target answered \(said)", status: status)] }
        }
    }

    /// Takes a request of the peer's into the leg's dialog (RFC 3261 §12.2.2's CSeq check); the refusal's effects when it
    /// does not pass (481 without a dialog), nil when it does.
    mutating func takeIntoDialog(_ request: SIPRequest, key: TransactionKey, in context: some CallLegContext) -> [CallLegEffect]? {
        guard var dialog else { return [.respond(context.response(to: request, key: key, status: 481), transaction: key)] }
        let verdict = dialog.receive(request: request)
        guard verdict == .accept else { return refusal(verdict, of: request, key: key, in: context) }
        setDialog(dialog)
        return nil
    }

    /// Ends the transfer under way (if any) with `effects` for it, and stops its timer.
    private mutating func settleTransfer(_ effects: (OutgoingTransfer) -> [CallLegEffect]) -> [CallLegEffect] {
        guard case .confirmed(let confirmed) = state, let transfer = confirmed.transfer else { return [] }
        updateConfirmed { $0.transfer = nil }
        return [.cancelTimer(.transferNotify)] + effects(transfer)
    }
}
