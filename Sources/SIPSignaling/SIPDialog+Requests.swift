import Foundation
import SIPMessages

/// Building requests inside a dialog (RFC 3261 §12.2.1.1, §13.2.2.4).
extension SIPDialog {
    /// A new request in the dialog (RFC 3261 §12.2.1.1): the Request-URI and Route headers from the remote target and
    /// the route set (see `requestURI` and `routeHeaders`), From and To with their tags, the Call-ID, CSeq one above
    /// the last one we used, then Max-Forwards, `contact` (RFC 3261 wants one in target refresh requests such as
    /// re-INVITE and UPDATE), `headers`, Content-Type and Content-Length.
    ///
    /// `via` carries the new transaction's branch. An INVITE becomes the dialog's INVITE in progress.
    /// Programming errors (they trap): ACK or CANCEL (built by `makeACK` and `SIPRequest.makeCancel()`, which reuse a
    /// CSeq); an INVITE while another INVITE of the dialog is in progress in either direction (RFC 3261 §14.1: check
    /// `inviteInProgress` first); a CSeq past 2^31 − 1. The state is not checked: a terminated dialog still builds
    /// requests, and whether to send them is the driver's call.
    public mutating func makeRequest(
        _ method: SIPMethod, via: SIPVia, contact: SIPAddress? = nil, maxForwards: Int = 70,
        headers extra: SIPHeaders = [:], contentType: SIPContentType? = nil, body: Data = Data()
    ) -> SIPRequest {
        precondition(method != .ack && method != .cancel, "ACK and CANCEL reuse a CSeq: use makeACK or makeCancel")
        precondition(
            method != .invite || inviteInProgress == nil,
            "RFC 3261 §14.1: no INVITE while another INVITE of the dialog is in progress")
        precondition(localSequence < SIPCSeq.maximumNumber, "The dialog's CSeq numbers are used up")
        localSequence += 1
        if method == .invite { inviteInProgress = .sent(cseq: localSequence) }
        return request(
            method, cseq: localSequence, via: via, contact: contact, maxForwards: maxForwards, headers: extra,
            contentType: contentType, body: body)
    }

    /// The ACK for a 2xx to the INVITE with CSeq number `inviteCSeq` (RFC 3261 §13.2.2.4): routed like any request in
    /// the dialog, CSeq `inviteCSeq ACK`, no Contact. `via` carries a new branch (the ACK for a 2xx is its own
    /// transaction); `headers` is where the INVITE's credentials go (the ACK must carry the same ones), `body` the
    /// answer when the 2xx carried an offer. Does not change the dialog.
    public func makeACK(
        forInviteCSeq inviteCSeq: UInt32, via: SIPVia, maxForwards: Int = 70, headers extra: SIPHeaders = [:],
        contentType: SIPContentType? = nil, body: Data = Data()
    ) -> SIPRequest {
        request(
            .ack, cseq: inviteCSeq, via: via, contact: nil, maxForwards: maxForwards, headers: extra,
            contentType: contentType, body: body)
    }

    /// Whether the first proxy of the route set is a strict router (its URI lacks `lr`, RFC 3261 §12.2.1.1): then it
    /// becomes the Request-URI and the remote target travels as the last Route.
    public var usesStrictRouting: Bool {
        guard let first = routeSet.first else { return false }
        return !first.uri.parameters.contains("lr")
    }

    /// The Request-URI of requests in the dialog: the remote target, or for a strict first router its URI without the
    /// parameters a Request-URI may not carry (`method`, and URI headers).
    public var requestURI: SIPURI {
        guard usesStrictRouting, var uri = routeSet.first?.uri else { return remoteTarget }
        uri.parameters.remove("method")
        uri.headers = []
        return uri
    }

    /// The Route header values of requests in the dialog, in order: the route set; for a strict first router the rest
    /// of the route set followed by the remote target.
    public var routeHeaders: [SIPAddress] {
        guard usesStrictRouting else { return routeSet }
        return Array(routeSet.dropFirst()) + [SIPAddress(uri: remoteTarget)]
    }

    /// Where a request of the dialog is sent first (RFC 3261 §8.1.2, §12.2.1.1): the first route's URI when it is a
    /// loose router, else the Request-URI (the strict router, or the remote target when there are no routes). The
    /// transport layer resolves it (RFC 3263).
    public var nextHop: SIPURI {
        if let first = routeSet.first, !usesStrictRouting { return first.uri }
        return requestURI
    }

    /// A request of the dialog with this CSeq number.
    private func request(
        _ method: SIPMethod, cseq: UInt32, via: SIPVia, contact: SIPAddress?, maxForwards: Int,
        headers extra: SIPHeaders, contentType: SIPContentType?, body: Data
    ) -> SIPRequest {
        var headers = SIPHeaders()
        for route in routeHeaders { headers.append("Route", route.headerValue) }
        for field in extra { headers.append(field) }
        return SIPRequest(
            method: method, uri: requestURI, via: via, from: localAddress, to: remoteAddress, callID: id.callID,
            cseq: cseq, maxForwards: maxForwards, contact: contact, headers: headers, contentType: contentType,
            body: body)
    }
}

extension SIPRequest {
    /// The CANCEL for this INVITE (RFC 3261 §9.1): the same Request-URI, top Via (so the same branch: the CANCEL's
    /// server transaction key names the INVITE's, see `TransactionKey.cancelledInvite`), To, From, Call-ID and Route
    /// headers, CSeq with the INVITE's number and method CANCEL, Max-Forwards 70, no body. Calling it on another
    /// method, or on a request without a Via, is a programming error (it traps).
    public func makeCancel() -> SIPRequest {
        precondition(method == .invite, "Only an INVITE is cancelled")
        guard let via = headers.topVia, let cseq = headers.cseq else {
            preconditionFailure("A CANCEL copies the INVITE's Via and CSeq")
        }
        var fields = SIPHeaders()
        fields.append("Via", via.headerValue)
        fields.append("Max-Forwards", "70")
        for name in ["To", "From", "Call-ID"] {
            if let value = headers[name] { fields.append(name, value) }
        }
        fields.append("CSeq", SIPCSeq(number: cseq.number, method: .cancel).headerValue)
        for route in headers.values("Route") { fields.append("Route", route) }
        return SIPRequest(method: .cancel, uri: uri, headers: fields)
    }
}
