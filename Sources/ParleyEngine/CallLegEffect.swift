import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import SIPTransport

/// A pending action a call leg will fulfil or fail, compared by identity (effects are Equatable).
struct ActionRef: Equatable, CustomStringConvertible {
    let action: ConversationAction

    init(_ action: ConversationAction) { self.action = action }

    static func == (left: ActionRef, right: ActionRef) -> Bool { left.action === right.action }

    var description: String { action.kind.name }
}

/// The requests a call leg sends in its own client transactions; the answers come back tagged with them.
enum CallLegRequest: Hashable, Sendable {
    /// The initial INVITE (caller).
    case invite
    /// Our CANCEL of the initial INVITE (caller).
    case cancel
    /// Our BYE.
    case bye
    /// Our re-INVITE (pause, resume, video, or an RFC 4028 session refresh), by CSeq number.
    case reinvite(cseq: UInt32)
    /// One DTMF tone as INFO.
    case info(Character)
    /// One group message (SIP MESSAGE), by the messenger's token.
    case message(token: UInt64)
    /// Our REFER asking the peer to call someone else (a blind transfer, RFC 3515).
    case refer
    /// Our NOTIFY telling the peer how the call it asked us to place goes (RFC 3515 §2.4.4).
    case notify
}

/// The timers of one call leg; the driver keeps at most one of each running.
enum CallLegTimer: Hashable, Sendable, CaseIterable {
    /// Callee: how long the call may ring; caller: how long it may ring before we cancel.
    case ring
    /// Callee: auto-answer after the configured delay.
    case autoAnswer
    /// Our 2xx is sent again (UDP: T1 doubling to T2) until its ACK arrives.
    case retransmitSuccess
    /// 64·T1 without the ACK of our 2xx: the dialog is given up.
    case ackTimeout
    /// Our re-INVITE got 491: it goes again after the RFC 3261 §14.1 wait.
    case glareRetry
    /// Caller: 64·T1 after our CANCEL without the INVITE's final response: the call is given up.
    case cancelGuard
    /// 64·T1 after the last provisional response to our re-INVITE without a final one (RFC 3261 has no timer for an
    /// INVITE client transaction in Proceeding): the re-INVITE is given up, and the dialog with it, as on a timeout.
    case reinviteGuard
    /// The tones sent in the media stream (RFC 4733) have had their time: their PlayTone is done.
    case tonesInStream
    /// RFC 4028: half the session interval has passed and we are the refresher: our refresh re-INVITE goes.
    case sessionRefresh
    /// RFC 4028: the session interval (less a third or 32 s) passed without a refresh: BYE, the session expired.
    case sessionExpiry
    /// The peer accepted our REFER and has not said how the transfer ended (``OutgoingTransfer/finalWait``).
    case transferNotify
    /// Callee: the call rang for the no-answer forwarding time (``CallForwarding/noAnswerAfter``): 302 to its target.
    case forwardNoAnswer
}

/// How a client transaction of the leg ended without a final response.
enum CallLegRequestFailure: Hashable, Sendable {
    /// Timer B or F: no final response in time.
    case timeout
    /// The transport could not deliver the request.
    case transportError
}

/// What the driver (``SIPUserAgent``) does for a call leg. Only the driver does I/O; the leg decides.
///
/// The cases carrying a message are `indirect` (boxed): a message is a few hundred bytes, and effects travel in small
/// arrays that transitions concatenate, so keeping the enum itself small is cheaper than copying messages around.
enum CallLegEffect: Equatable {
    /// Start a client transaction for `request` towards `destination`; its answers come back as `purpose`.
    indirect case send(SIPRequest, CallLegRequest, to: SIPDestination)
    /// Answer through a server transaction.
    indirect case respond(SIPResponse, transaction: TransactionKey)
    /// Send outside any transaction (the ACK of a 2xx, a 2xx again).
    indirect case sendStateless(SIPMessage, to: SIPDestination)
    /// Drop the client transaction of `request` without hearing from it again.
    case abandon(CallLegRequest)
    /// (Re)start a timer.
    case startTimer(CallLegTimer, after: Duration)
    /// Stop a timer.
    case cancelTimer(CallLegTimer)
    /// Report what happened to the conversation.
    case report(Conversation.Event)
    /// The conversation should be joined through the manager's pipeline (auto-answer).
    case performJoin
    /// An action is done.
    case fulfil(ActionRef)
    /// The peer sent keypad tones.
    case tonesReceived(String)
    /// Send keypad tones in the media stream (RFC 4733 telephone-event, which both descriptions list).
    case sendTonesInStream(String)
    /// The frontend's request to turn video on or off is over: done (nil) or why not.
    case videoSettled(Bool, failure: String?)
    /// An action cannot be done, for this reason; `status` is the peer's final non-2xx response when that is why (a
    /// tone's INFO refused with 415, a re-INVITE with 488), kept as a value for the control API's `details.sipStatus`.
    case fail(ActionRef, reason: String, status: SIPFinalStatus? = nil)
    /// A line for the log (the driver prefixes the conversation and Call-ID).
    case log(EngineLog.Level, String)
    /// A MESSAGE in the leg's dialog that the dialog took: the driver answers it through `transaction`.
    indirect case messageReceived(SIPRequest, transaction: TransactionKey)
    /// The call could not carry our MESSAGE (it is not answered).
    case messageFailed(token: UInt64)
    /// The peer transferred us: the driver places a call to this target (a new conversation) and reports its outcome
    /// back (``CallLeg/referredCallProgress(_:_:in:)``).
    case transferAsked(SIPURI)
    /// A transfer's progress to tell frontends: a status line of a NOTIFY we received (we transfer) or sent (we are
    /// transferred), and whether it is the last.
    case transferProgress(SIPFinalStatus, final: Bool, transferee: Bool)
    /// Caller: a 3xx names this target: locate it and give the leg ``CallLeg/redirected(to:at:in:)`` (or
    /// ``CallLeg/redirectFailed(_:in:)``).
    case followRedirect(SIPURI)
    /// The leg is over: forget it, stop its timers. Its transactions finish on their own.
    case forget
}
