import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import SIPTransport

/// The data of each call-leg state: only what is valid in it. The states themselves (which of these a leg holds) are
/// private to ``CallLeg``; these values are built by its transitions.
extension CallLeg {
    /// Callee, ringing.
    struct Ringing {
        /// Where requests of the call go (the INVITE's Contact, or its source).
        var destination: SIPDestination
        /// The INVITE's SDP offer (nil: we offer in our 2xx).
        var offer: SDPSession?
        /// The early dialog our 180 made.
        var dialog: SIPDialog?
        /// The 180 went out and the ring timers run.
        var rung: Bool
        /// The fields the 180 copied from the INVITE, To tag included: the 200 copies the same.
        var answered: SIPHeaders? = nil
    }

    /// A 2xx we keep sending until its ACK arrives (RFC 3261 §13.3.1.4).
    struct Retransmission {
        let response: SIPResponse
        /// Where it goes: where the request came from (the Via/rport source, not the Contact).
        let destination: SIPDestination
        /// The current interval (T1, doubling up to T2).
        var interval: Duration

        var cseq: UInt32? { response.headers.cseq?.number }
    }

    /// DTMF tones being sent as INFO, one after the other.
    struct Tones {
        let action: ActionRef
        /// The tone whose INFO is out.
        var current: Character
        /// The tones after it.
        var remaining: [Character]
    }

    /// What both confirmed-dialog states share.
    struct Media {
        /// Our current session description.
        var local: SDPSession
        /// The remote side's current session description.
        var remote: SDPSession?
    }

    /// What the in-dialog requests of an answered call (answering or confirmed) use: its dialog, where its requests
    /// go, the tones in flight, and its media unless we hold the call.
    struct AnsweredCall {
        var dialog: SIPDialog
        let destination: SIPDestination
        var tones: Tones?
        let media: Media?
    }

    /// Callee, answered, waiting for the ACK.
    struct Answering {
        var dialog: SIPDialog
        var destination: SIPDestination
        var media: Media
        /// The Join our 2xx answers; fulfilled by the ACK.
        var join: ActionRef?
        var retransmission: Retransmission
        /// The call ended (End, or the conversation ended) while the ACK was on its way: the BYE waits for it.
        var hangUpWhenAcknowledged: Bool
        var tones: Tones?
        /// The RFC 4028 session timer our 2xx agreed to; it starts with the ACK (nil: none).
        var sessionTimer: SessionTimer? = nil
    }

    /// Who asked for our re-INVITE, and the change it asks for.
    enum OfferRequest: Equatable, CustomStringConvertible {
        /// A Pause action: hold (true) or resume (false).
        case action(ActionRef, hold: Bool)
        /// The frontend turning video on (true) or off: a media change, reported as a capability update.
        case video(Bool)
        /// Our RFC 4028 session refresh: the same description again, its version unchanged.
        case refresh
        /// The media layer restarted the call's ICE (consent was lost): our description with its new credentials
        /// (RFC 8839 §4.4.1.1.1).
        case iceRestart

        /// `hold`, `resume`, `video on`, `video off`.
        var description: String {
            switch self {
            case .action(_, let hold): hold ? "hold" : "resume"
            case .video(let on): on ? "video on" : "video off"
            case .refresh: "session refresh"
            case .iceRestart: "ICE restart"
            }
        }
    }

    /// What our re-INVITE offers: hold or not, video or not.
    struct OfferShape: Equatable {
        var hold: Bool
        var video: Bool
    }

    /// Our own offer in a confirmed dialog (pause, resume, video on or off).
    ///
    /// RFC 3261 §14.1: we send no re-INVITE while another INVITE transaction of the dialog is in progress, in either
    /// direction. So a request that comes while the peer's re-INVITE is open (our 2xx to it waits for its ACK) waits
    /// for that ACK, and one that comes while ours is out waits for its final answer; each goes then, in the shape the
    /// call has by then with its own change applied. One request waits at a time: a newer one supersedes it (the older
    /// fails, saying so), so the newest wins and two re-INVITEs of ours are never out together. A waiting Pause whose
    /// action timed out meanwhile is dropped. If the peer never acknowledges our 2xx (64·T1), the dialog is given up and
    /// the waiting request fails with that reason.
    ///
    /// ```
    ///   none ──request, no INVITE open in the dialog──────────────────▶ sent
    ///    │                                                               │ 2xx (ACK: done) or a refusal (failed): none,
    ///    │ request while our 2xx to the peer's                           │   or `next` goes (sent again)
    ///    │ re-INVITE waits for its ACK                                   │ request: waits as `next`
    ///    ▼                                                               │ 491: `next`, if any, takes its place
    ///   waitingToSend ──the ACK──▶ sent                                  ▼
    ///    │ no ACK within 64·T1: fails, the call ends              waitingToRetry ──glare timer──▶ sent, or
    ///    ▼                                                                        waitingToSend (the peer's INVITE open)
    ///   ended
    ///   waitingToSend, waitingToRetry, sent with a `next` ──request──▶ the same, the newer request in place of the
    ///   waiting one (which fails: superseded)
    /// ```
    enum OwnOffer: CustomStringConvertible {
        /// None in flight or waiting.
        case none
        /// The peer's re-INVITE is open (our 2xx to it is not acknowledged): ours goes when the ACK comes.
        case waitingToSend(OfferRequest)
        /// Our re-INVITE is out; `next` is the request waiting for its final answer.
        case sent(OfferRequest, OfferShape, offer: SDPSession, cseq: UInt32, next: OfferRequest?)
        /// It got 491: it goes again when the glare timer fires.
        case waitingToRetry(OfferRequest)

        /// `hold out, resume next`, `hold waiting for the ACK`… (`none` when there is nothing).
        var description: String {
            switch self {
            case .none: "none"
            case .waitingToSend(let request): "\(request) waiting for the ACK"
            case .sent(let request, _, _, _, let next): "\(request) out" + (next.map { ", \($0) next" } ?? "")
            case .waitingToRetry(let request): "\(request) waiting to retry"
            }
        }
    }

    /// Both, in a confirmed dialog.
    struct Confirmed {
        var dialog: SIPDialog
        var destination: SIPDestination
        var media: Media
        /// We put the remote side on hold.
        var localHold = false
        /// The remote side put us on hold.
        var remoteHold = false
        /// Caller: the ACK we sent for a 2xx (sent again when the 2xx is).
        var lastACK: SIPRequest?
        var ownOffer = OwnOffer.none
        /// Our 2xx to the peer's re-INVITE, until its ACK arrives.
        var unacknowledgedAnswer: Retransmission?
        var tones: Tones?
        /// Caller: the `Accept` of the peer's 2xx (what bodies it reads in MESSAGE).
        var peerAccept: String?
        /// The RFC 4028 session timer running (nil: none).
        var sessionTimer: SessionTimer?
        /// The blind transfer of the peer we asked for, until its outcome (nil: none).
        var transfer: OutgoingTransfer?
        /// Whom the peer asked us to call instead (its REFER), until that call's outcome (nil: none).
        var referredTo: SIPURI?
        /// The peer's REFERs taken in this call so far (at most ``CallLeg/maxRefersPerCall``).
        var refersTaken = 0
    }
}
