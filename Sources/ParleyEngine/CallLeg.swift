import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport

/// The SIP side of one conversation: its INVITE, its dialog, its session descriptions and whatever is in flight.
///
/// Confined to the environment's thread; owned by the ``SIPUserAgent``.
final class CallLeg {
    /// Which side sent the initial INVITE.
    enum Role {
        /// We sent the INVITE (an outgoing conversation).
        case caller
        /// We received it (an incoming conversation).
        case callee
    }

    /// Where the leg stands in the SIP exchange (the conversation lifecycle proper lives in the manager).
    enum Phase: Equatable {
        /// Callee: the INVITE is being answered with provisional responses (ringing).
        case ringing
        /// Callee: our 2xx went out; the ACK has not arrived.
        case awaitingACK
        /// Caller: the INVITE went out; no provisional response with a dialog yet.
        case calling
        /// Caller: a provisional response arrived (the callee is being alerted).
        case early
        /// Both: the dialog is confirmed.
        case confirmed
        /// Both: our BYE or CANCEL is out, or a final refusal; waiting for the exchange to finish.
        case terminating
        /// Both: over; the leg is being forgotten.
        case ended
    }

    /// Our own re-INVITE in flight (pause or resume).
    struct OwnReinvite {
        /// The action it fulfils.
        let action: ConversationAction
        /// Whether it puts the remote side on hold.
        let hold: Bool
        /// The offer it carries.
        let offer: SDPSession
        /// The request (for its CSeq).
        let request: SIPRequest
    }

    /// A 2xx we keep sending until its ACK arrives (RFC 3261 §13.3.1.4).
    struct SuccessRetransmission {
        /// The response.
        let response: SIPResponse
        /// Where it goes: where the request came from (the Via/rport source, not the Contact).
        let destination: SIPDestination
        /// The retransmission timer (unreliable transports only).
        var timer: EngineTimer?
        /// The current interval (T1, doubling up to T2).
        var interval: Duration
        /// The timer after which we give up (64·T1).
        var giveUp: EngineTimer?
    }

    let uuid: UUID
    let role: Role
    let callID: String
    let localTag: String
    /// The initial INVITE (received or sent).
    var invite: SIPRequest
    /// The initial INVITE's transaction (server for a callee, client for a caller).
    var inviteKey: TransactionKey?
    /// Where requests of this leg go (for a callee, to where the INVITE came from, or its Contact).
    var destination: SIPDestination
    /// The remote party as a handle.
    let remoteHandle: Handle
    var phase: Phase
    var dialog: SIPDialog?
    /// Our current session description (its origin version grows with each new offer or answer we send).
    var localSDP: SDPSession?
    /// The remote side's current session description.
    var remoteSDP: SDPSession?
    /// We put the remote side on hold.
    var localHold = false
    /// The remote side put us on hold.
    var remoteHold = false

    var ringTimer: EngineTimer?
    var autoAnswerTimer: EngineTimer?
    var successRetransmission: SuccessRetransmission?
    /// The last ACK we sent for a 2xx (resent when the 2xx is retransmitted).
    var lastACK: SIPRequest?

    /// Pending actions this leg will fulfil.
    var pendingStart: ConversationAction?
    var pendingJoin: ConversationAction?
    var pendingEnd: ConversationAction?
    var ownReinvite: OwnReinvite?
    /// A retry of our re-INVITE after 491 is scheduled (RFC 3261 §14.1).
    var glareRetry: EngineTimer?
    /// Tones not yet sent as INFO, and the action they belong to.
    var toneQueue: [Character] = []
    var toneAction: ConversationAction?
    /// Caller: End was asked for before any provisional response; CANCEL goes out when one arrives.
    var cancelWhenProvisional = false
    /// Caller: a provisional response (100 included) has arrived, so a CANCEL may go out (RFC 3261 §9.1).
    var sawProvisional = false
    /// Callee: ended while our 2xx waits for its ACK; the BYE goes when the ACK arrives (RFC 3261 §15).
    var byeWhenAcknowledged = false
    /// Caller: gives up on a CANCEL that is never answered with the INVITE's final response (64·T1).
    var cancelGuard: EngineTimer?

    init(
        uuid: UUID, role: Role, callID: String, localTag: String, invite: SIPRequest, destination: SIPDestination,
        remoteHandle: Handle, phase: Phase
    ) {
        self.uuid = uuid
        self.role = role
        self.callID = callID
        self.localTag = localTag
        self.invite = invite
        self.destination = destination
        self.remoteHandle = remoteHandle
        self.phase = phase
    }

    /// Whether the call is secure end to end (its INVITE's Request-URI is `sips:`): our Contact is then `sips:`.
    var isSecure: Bool { invite.uri.scheme == "sips" }

    /// Every timer the leg holds, for cancelling them all at its end.
    var timers: [EngineTimer] {
        [
            ringTimer, autoAnswerTimer, successRetransmission?.timer, successRetransmission?.giveUp, glareRetry,
            cancelGuard,
        ]
            .compactMap { $0 }
    }
}
