import SIPMessages

/// A dialog (RFC 3261 §12) as a pure value: messages go in, the dialog's state and the requests it builds come out.
///
/// ```
///   asCaller(INVITE, 1xx with a To tag)          asCaller(request, 2xx)
///   asCallee(INVITE, our 1xx)                    asCallee(request, our 2xx)
///              |                                        |
///              v       2xx to the INVITE                v
///            early ----------------------------->  confirmed
///              |                                        |
///              | 300-699 to the INVITE, BYE,            | BYE (received, or answered when sent),
///              | terminate(reason:)                     | 481/408 to our request, terminate(reason:)
///              v                                        v
///                          terminated(reason)
/// ```
/// The driver finds a dialog by `DialogID` and feeds it every in-dialog message: `receive(request:)` for requests the
/// peer sends (its verdict says whether to process or reject them), `respond(_:)` for our answers to those,
/// `receive(response:)` for answers to requests we sent. Requests go out through `makeRequest` (which counts CSeq),
/// `makeACK` (for a 2xx to an INVITE) and `SIPRequest.makeCancel()`. Nothing here sends, waits or reads a clock.
///
/// The mutable properties are set only by this type's methods (in this file and its `SIPDialog+…` extensions).
///
/// INVITE transactions are tracked in both directions so that they never overlap (RFC 3261 §14): `makeRequest`
/// refuses (traps) a new INVITE while one is in progress, and `receive(request:)` answers the peer's overlapping INVITE
/// with 491 or 500 (see `DialogRequestVerdict`).
public struct SIPDialog: Sendable, Hashable {
    /// The dialog states of RFC 4235 (the ones a dialog passes through once it exists).
    public enum State: Sendable, Hashable {
        /// Created by a provisional response with a To tag; the INVITE has no final answer yet.
        case early
        /// A 2xx answered the request that created the dialog.
        case confirmed
        /// Over, for this reason. A terminated dialog rejects requests with 481 and ignores responses.
        case terminated(DialogTerminationReason)
    }

    /// An INVITE transaction of this dialog still waiting for its final response (RFC 3261 §14).
    public enum InviteInProgress: Sendable, Hashable {
        /// We sent an INVITE with this CSeq number (the dialog-creating one or a re-INVITE).
        case sent(cseq: UInt32)
        /// The peer sent an INVITE with this CSeq number and we have not answered it finally.
        case received(cseq: UInt32)
    }

    /// The state.
    public internal(set) var state: State
    /// Call-ID and tags.
    public let id: DialogID
    /// The CSeq number of the last request we sent in the dialog (not counting ACK and CANCEL, which reuse one).
    public internal(set) var localSequence: UInt32
    /// The highest CSeq number the peer used in the dialog; nil until it sends a request (always nil at first for
    /// the caller).
    public internal(set) var remoteSequence: UInt32?
    /// Our address with our tag: the From of our requests (the To of the peer's).
    public let localAddress: SIPAddress
    /// The peer's address with its tag: the To of our requests (the From of the peer's).
    public let remoteAddress: SIPAddress
    /// Where requests go (the peer's Contact), refreshed by target refresh requests and their 2xx (§12.2).
    public internal(set) var remoteTarget: SIPURI
    /// The proxies that asked to stay on the path (Record-Route), in the order our requests visit them.
    public internal(set) var routeSet: [SIPAddress]
    /// Whether the dialog was set up over TLS to a `sips:` Request-URI (RFC 3261 §12.1.1, §12.1.2).
    public let isSecure: Bool
    /// Whether we sent the request that created the dialog (so we also chose the Call-ID).
    public let isCaller: Bool
    /// The INVITE transaction in progress, if any.
    public internal(set) var inviteInProgress: InviteInProgress?

    // MARK: Creation

    /// The dialog a UAS creates by answering `request` (an INVITE, or another dialog-creating request such as
    /// SUBSCRIBE) with `response` (RFC 3261 §12.1.1): early for a 101–199 to an INVITE, confirmed for a 2xx.
    ///
    /// The route set is the request's Record-Route in order; the remote target its Contact (the From URI when it has
    /// none, as RFC 2543 peers expect); the remote sequence its CSeq. `localSequence` is where our own CSeq numbers
    /// start: the first request we send carries `localSequence + 1` (RFC 3261 §8.1.1.5 lets us choose; 0 is as good as
    /// any other value below 2^31 − 1).
    ///
    /// Nil when the pair does not create a dialog: a 100 or a final non-2xx response, a 1xx to anything but INVITE, a
    /// response without a To tag, or one whose Call-ID or CSeq differs from the request's.
    public static func asCallee(request: SIPRequest, response: SIPResponse, localSequence: UInt32 = 0) -> SIPDialog? {
        let headers = request.headers
        guard createsDialog(request: request, response: response, requiringTag: true),
            let callID = headers.callID, let cseq = headers.cseq, let remote = headers.from,
            let local = response.headers.to, let localTag = local.tag
        else { return nil }
        return SIPDialog(
            state: response.isSuccess ? .confirmed : .early,
            id: DialogID(callID: callID, localTag: localTag, remoteTag: remote.tag),
            localSequence: localSequence, remoteSequence: cseq.number, localAddress: local, remoteAddress: remote,
            remoteTarget: headers.contacts.first?.uri ?? remote.uri, routeSet: headers.recordRoutes,
            isSecure: isSecure(request), isCaller: false,
            inviteInProgress: response.isProvisional ? .received(cseq: cseq.number) : nil)
    }

    /// The dialog a UAC creates when `response` answers the `request` it sent (RFC 3261 §12.1.2): early for a
    /// 101–199 with a To tag to an INVITE, confirmed for a 2xx.
    ///
    /// The route set is the response's Record-Route in reverse; the remote target its Contact (the request's
    /// Request-URI when it has none); the local sequence the request's CSeq. A 2xx without a To tag (an RFC 2543
    /// peer) makes a dialog whose remote tag is nil.
    ///
    /// Nil when the pair does not create a dialog: a 100 or a final non-2xx response, a 1xx to anything but INVITE or
    /// without a To tag, a request without a From tag, or a response whose Call-ID or CSeq differs from the request's.
    public static func asCaller(request: SIPRequest, response: SIPResponse) -> SIPDialog? {
        let headers = request.headers
        guard createsDialog(request: request, response: response, requiringTag: !response.isSuccess),
            let callID = headers.callID, let cseq = headers.cseq, let local = headers.from, let localTag = local.tag,
            let remote = response.headers.to
        else { return nil }
        return SIPDialog(
            state: response.isSuccess ? .confirmed : .early,
            id: DialogID(callID: callID, localTag: localTag, remoteTag: remote.tag),
            localSequence: cseq.number, remoteSequence: nil, localAddress: local, remoteAddress: remote,
            remoteTarget: response.headers.contacts.first?.uri ?? request.uri,
            routeSet: response.headers.recordRoutes.reversed(), isSecure: isSecure(request), isCaller: true,
            inviteInProgress: response.isProvisional ? .sent(cseq: cseq.number) : nil)
    }

    private init(
        state: State, id: DialogID, localSequence: UInt32, remoteSequence: UInt32?, localAddress: SIPAddress,
        remoteAddress: SIPAddress, remoteTarget: SIPURI, routeSet: [SIPAddress], isSecure: Bool, isCaller: Bool,
        inviteInProgress: InviteInProgress?
    ) {
        self.state = state
        self.id = id
        self.localSequence = localSequence
        self.remoteSequence = remoteSequence
        self.localAddress = localAddress
        self.remoteAddress = remoteAddress
        self.remoteTarget = remoteTarget
        self.routeSet = routeSet
        self.isSecure = isSecure
        self.isCaller = isCaller
        self.inviteInProgress = inviteInProgress
    }

    /// Whether `response` to `request` is one that creates a dialog: a 2xx, or a 101–199 to an INVITE; its Call-ID
    /// and CSeq those of the request; with a To tag when `requiringTag`.
    private static func createsDialog(request: SIPRequest, response: SIPResponse, requiringTag: Bool) -> Bool {
        let isEarly = response.isProvisional && response.statusCode > 100 && request.method == .invite
        guard response.isSuccess || isEarly else { return false }
        guard let callID = request.headers.callID, response.headers.callID == callID,
            let cseq = request.headers.cseq, response.headers.cseq == cseq
        else { return false }
        return !requiringTag || response.headers.toTag != nil
    }

    /// A `sips:` Request-URI sent over TLS (or secure WebSocket) hop by hop: the top Via names the transport of the
    /// last hop, which for a request we received is the one it arrived on, and for one we sent the one we used.
    private static func isSecure(_ request: SIPRequest) -> Bool {
        guard request.uri.scheme == "sips", let transport = request.headers.topVia?.transport else { return false }
        return transport == "TLS" || transport == "WSS"
    }

    // MARK: Ending

    /// Ends the dialog (for example after sending a BYE, when the INVITE transaction times out, or when a Replaces
    /// took it over). A terminated dialog keeps its first reason.
    public mutating func terminate(reason: DialogTerminationReason) {
        switch state {
        case .early, .confirmed:
            state = .terminated(reason)
            inviteInProgress = nil
        case .terminated:
            break
        }
    }

    /// Whether the dialog has ended.
    public var isTerminated: Bool {
        switch state {
        case .early, .confirmed: false
        case .terminated: true
        }
    }
}

/// Why a dialog ended: the `event` values of RFC 4235 §4.1.
public enum DialogTerminationReason: Sendable, Hashable, CaseIterable {
    /// The INVITE was cancelled (CANCEL, answered with 487).
    case cancelled
    /// The INVITE got a final non-2xx response.
    case rejected
    /// Another dialog replaced this one (RFC 3891 Replaces).
    case replaced
    /// We sent a BYE.
    case localBye
    /// The peer sent a BYE.
    case remoteBye
    /// The dialog failed: a 481 to a request of ours, or another error.
    case error
    /// A request in the dialog timed out (transaction timeout or 408), or an ACK never came.
    case timeout

    /// The RFC 4235 token: "cancelled", "rejected", "replaced", "local-bye", "remote-bye", "error", "timeout".
    public var token: String {
        switch self {
        case .cancelled: "cancelled"
        case .rejected: "rejected"
        case .replaced: "replaced"
        case .localBye: "local-bye"
        case .remoteBye: "remote-bye"
        case .error: "error"
        case .timeout: "timeout"
        }
    }

    /// The reason a final non-2xx response to the dialog-creating INVITE gives: 487 cancelled, 408 timeout, else
    /// rejected.
    static func forFinalResponse(statusCode: Int) -> DialogTerminationReason {
        switch statusCode {
        case 487: .cancelled
        case 408: .timeout
        default: .rejected
        }
    }
}
