import SIPMessages

/// Messages arriving in (and answers leaving) a dialog: RFC 3261 §12.2.1.2, §12.2.2, §13.2.2.4, §14 and §15.
extension SIPDialog {
    /// The peer sent `request` in this dialog (the driver found the dialog by `DialogID(incomingRequest:)`; a request
    /// of another dialog is a programming error and traps). Returns what to do with it; only `.accept` changes the
    /// dialog, except that an in-order request always raises the remote sequence (RFC 3261 §12.2.2).
    ///
    /// In order of checks: a terminated dialog rejects everything with 481 (an ACK is simply dropped); ACK and
    /// CANCEL are accepted without a CSeq check (they reuse the INVITE's number); a CSeq number not above the remote
    /// sequence is out of order (500); an INVITE while ours is in progress gets 491, and while the peer's previous
    /// INVITE is unanswered 500 with Retry-After (RFC 3261 §14.2). An accepted INVITE or UPDATE with a Contact
    /// refreshes the remote target; an accepted INVITE becomes the INVITE in progress until `respond(_:)` sends its
    /// final response; an accepted BYE terminates the dialog (`remoteBye`: the driver answers it with 200).
    ///
    /// RFC 3261 calls only a *lower* CSeq out of order; an equal one can only be a retransmission, which the server
    /// transaction absorbs before it reaches the dialog, or a peer reusing a number, so it is refused too.
    public mutating func receive(request: SIPRequest) -> DialogRequestVerdict {
        precondition(DialogID(incomingRequest: request) == id, "The request belongs to another dialog")
        guard let cseq = request.headers.cseq else { preconditionFailure("A request in a dialog has a CSeq") }
        if isTerminated { return .rejectTerminated }
        if request.method == .ack || request.method == .cancel { return .accept }
        if let remoteSequence, cseq.number <= remoteSequence { return .rejectOutOfOrder }
        remoteSequence = cseq.number
        if request.method == .invite {
            switch inviteInProgress {
            case .sent: return .rejectRequestPending
            case .received: return .rejectRetryLater
            case nil: inviteInProgress = .received(cseq: cseq.number)
            }
        }
        if request.method.isTargetRefresh, let contact = request.headers.contacts.first {
            remoteTarget = contact.uri
        }
        if request.method == .bye { terminate(reason: .remoteBye) }
        return .accept
    }

    /// We answer a request the peer sent in this dialog with `response` (the driver hands it to the server
    /// transaction too). A final response to the INVITE in progress ends it; for the callee's early dialog a 2xx to
    /// the INVITE confirms it and a 300–699 terminates it (`cancelled` for 487, `timeout` for 408, else `rejected`).
    public mutating func respond(_ response: SIPResponse) {
        guard let cseq = response.headers.cseq, cseq.method == .invite, !response.isProvisional,
            inviteInProgress == .received(cseq: cseq.number)
        else { return }
        inviteInProgress = nil
        guard state == .early, !isCaller else { return }
        if response.isSuccess {
            state = .confirmed
        } else {
            terminate(reason: .forFinalResponse(statusCode: response.statusCode))
        }
    }

    /// A response arrived to a request we sent in this dialog (the driver found the dialog by
    /// `DialogID(responseAsUAC:)`; a response of another dialog is a programming error and traps).
    ///
    /// - For the caller's early dialog, a response to the INVITE: a 2xx confirms the dialog and recomputes the route
    ///   set from its Record-Route (RFC 3261 §13.2.2.4, §12.1.2) and the remote target from its Contact; a 1xx with a
    ///   Contact refreshes the remote target; a 300–699 terminates it (`cancelled` for 487, `timeout` for 408, else
    ///   `rejected`).
    /// - Otherwise: a 2xx to a target refresh request (INVITE, UPDATE) with a Contact refreshes the remote target
    ///   (§12.2.1.2); a final response to our BYE terminates the dialog (`localBye`); a 481 terminates it (`error`)
    ///   and a 408 (`timeout`), as §12.2.1.2 recommends.
    /// - A final response to our INVITE in progress ends it (a 491 too: see `glareRetryDelay(using:)`).
    ///
    /// Only responses with this dialog's To tag belong here (a 100 without a tag does not). When the INVITE forked into
    /// several early dialogs, the final response of one branch ends the others too: call `terminate(reason:)` on them.
    ///
    /// `timeoutEndsDialog` false keeps the dialog on a 408 (RFC 3261 §12.2.1.2 says SHOULD end it): for a request
    /// whose 408 its sender knows says nothing about the dialog (a proxy could not reach the peer through a NAT
    /// mapping the request itself is about to repair).
    public mutating func receive(response: SIPResponse, timeoutEndsDialog: Bool = true) {
        precondition(DialogID(responseAsUAC: response) == id, "The response belongs to another dialog")
        guard let cseq = response.headers.cseq, !isTerminated else { return }
        let isFinal = !response.isProvisional
        let answersOurInvite = cseq.method == .invite && inviteInProgress == .sent(cseq: cseq.number)
        if answersOurInvite, isFinal { inviteInProgress = nil }
        let contact = response.headers.contacts.first?.uri
        if state == .early, isCaller, answersOurInvite {
            if response.isSuccess {
                state = .confirmed
                routeSet = response.headers.recordRoutes.reversed()
            } else if isFinal {
                terminate(reason: .forFinalResponse(statusCode: response.statusCode))
                return
            }
            if let contact { remoteTarget = contact }
            return
        }
        if response.isSuccess, cseq.method.isTargetRefresh, let contact { remoteTarget = contact }
        if cseq.method == .bye, isFinal {
            terminate(reason: .localBye)
        } else if response.statusCode == 481 {
            terminate(reason: .error)
        } else if response.statusCode == 408, timeoutEndsDialog {
            terminate(reason: .timeout)
        }
    }

    /// How long to wait before retrying our re-INVITE after a 491 (RFC 3261 §14.1): the caller chose the Call-ID and
    /// waits 2.1–4 s, the callee 0–2 s (see `ReINVITEGlare.retryDelay`).
    public func glareRetryDelay(using generator: inout some RandomNumberGenerator) -> Duration {
        ReINVITEGlare.retryDelay(isCallIDOwner: isCaller, using: &generator)
    }
}

/// What to do with a request the peer sent in a dialog (`SIPDialog.receive(request:)`).
public enum DialogRequestVerdict: Sendable, Hashable {
    /// Process it: the dialog took it in.
    case accept
    /// Answer 500: its CSeq number is not above the last one the peer used (RFC 3261 §12.2.2).
    case rejectOutOfOrder
    /// Answer 491 Request Pending: an INVITE arrived while ours is in progress (RFC 3261 §14.2).
    case rejectRequestPending
    /// Answer 500 with a Retry-After of 0–10 s: an INVITE arrived while the peer's previous one is unanswered
    /// (RFC 3261 §14.2).
    case rejectRetryLater
    /// Answer 481 Call/Transaction Does Not Exist: the dialog is over (RFC 3261 §12.2.2).
    case rejectTerminated

    /// The status code of the answer; nil for `accept`.
    public var statusCode: Int? {
        switch self {
        case .accept: nil
        case .rejectOutOfOrder, .rejectRetryLater: 500
        case .rejectRequestPending: 491
        case .rejectTerminated: 481
        }
    }

    /// The answer that carries out this verdict for `request`; nil for `accept` and for an ACK, which is never
    /// answered. The Retry-After of `rejectRetryLater` is drawn from `generator` (`ReINVITEGlare.retryAfter`).
    public func rejection(of request: SIPRequest, using generator: inout some RandomNumberGenerator) -> SIPResponse? {
        guard let statusCode, request.method != .ack else { return nil }
        var headers = SIPHeaders()
        if self == .rejectRetryLater {
            headers.append("Retry-After", String(ReINVITEGlare.retryAfter(using: &generator)))
        }
        return request.makeResponse(statusCode: statusCode, headers: headers)
    }
}

extension SIPMethod {
    /// Whether the method refreshes a dialog's remote target with its Contact (RFC 3261 §12.2: INVITE; RFC 3311:
    /// UPDATE). SUBSCRIBE and NOTIFY (RFC 6665) are left out until Parley keeps subscription dialogs.
    var isTargetRefresh: Bool {
        switch self {
        case .invite, .update:
            true
        case .ack, .bye, .cancel, .options, .register, .prack, .subscribe, .notify, .publish, .info, .refer, .message,
            .extension:
            false
        }
    }
}
