import Foundation
import SIPMessages
import SIPSignaling

/// What the driver may read of a call leg: views of its state (only CallLeg.swift's transitions change it).
extension CallLeg {
    /// The state's name.
    var stateName: StateName {
        switch state {
        case .ringing: .ringing
        case .answering: .answering
        case .outgoing(let outgoing): outgoing.stateName
        case .confirmed: .confirmed
        case .ended: .ended
        }
    }

    /// Our own re-INVITE in a confirmed leg, out or waiting (nil in the other states).
    var ownOffer: OwnOffer? {
        if case .confirmed(let confirmed) = state { confirmed.ownOffer } else { nil }
    }

    /// The dialog, once there is one.
    var dialog: SIPDialog? {
        switch state {
        case .ringing(let ringing): ringing.dialog
        case .answering(let answering): answering.dialog
        case .outgoing(let outgoing): outgoing.dialog
        case .confirmed(let confirmed): confirmed.dialog
        case .ended: nil
        }
    }

    /// The dialog's identifier, once there is a dialog (without copying the dialog).
    var dialogID: DialogID? {
        switch state {
        case .ringing(let ringing): ringing.dialog?.id
        case .answering(let answering): answering.dialog.id
        case .outgoing(let outgoing): outgoing.dialog?.id
        case .confirmed(let confirmed): confirmed.dialog.id
        case .ended: nil
        }
    }

    /// Our description, the peer's (nil until it answered or offered) and our hold; nil before we described one.
    var descriptions: (local: SDPSession, remote: SDPSession?, localHold: Bool)? {
        switch state {
        case .answering(let answering): (answering.media.local, answering.media.remote, false)
        case .confirmed(let confirmed): (confirmed.media.local, confirmed.media.remote, confirmed.localHold)
        case .outgoing(let outgoing): (outgoing.offer, nil, false)
        case .ringing, .ended: nil
        }
    }

    /// The `Accept` of the peer's INVITE (callee) or 2xx (caller): what bodies it reads in MESSAGE.
    var peerAccept: String? {
        switch state {
        case .confirmed(let confirmed) where role == .caller: confirmed.peerAccept
        default: role == .callee ? invite.headers["Accept"] : nil
        }
    }

    /// Our 2xx (to the INVITE or a re-INVITE) that waits for its ACK, if any.
    var unacknowledgedSuccess: Retransmission? {
        switch state {
        case .answering(let answering): answering.retransmission
        case .confirmed(let confirmed): confirmed.unacknowledgedAnswer
        case .ringing, .outgoing, .ended: nil
        }
    }
}
