import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import SIPTransport

/// The messages inside a confirmed dialog: BYE, the peer's re-INVITE and INFO tones (our own re-INVITEs are in
/// CallLeg+Offers.swift). Builders on the states' data: ``CallLeg``'s transitions decide and change state.
extension CallLeg {
    /// Whether the call is secure end to end (its INVITE's Request-URI is `sips:`): our Contact is then `sips:`.
    var isSecure: Bool { invite.uri.scheme == "sips" }

    /// Whether a request in a dialog is this leg's: our tag in To, and the dialog's tags once there is one.
    func owns(inDialog request: SIPRequest) -> Bool {
        guard request.headers.toTag == localTag else { return false }
        guard let dialogID else { return true }
        return DialogID(incomingRequest: request) == dialogID
    }

    /// The INVITE (or a re-INVITE) came again after our 2xx: the 2xx goes again while its ACK is outstanding.
    func inviteRetransmitted(_ request: SIPRequest, from source: SIPDestination) -> [CallLegEffect] {
        guard let pending = unacknowledgedSuccess, pending.cseq == request.headers.cseq?.number else { return [] }
        return [.sendStateless(.response(pending.response), to: source)]
    }

    /// Our BYE in `dialog` (the dialog is over for us once it is handed to its transaction, RFC 3261 §15.1.1).
    func bye(_ dialog: SIPDialog, destination: SIPDestination, in context: some CallLegContext) -> [CallLegEffect] {
        var dialog = dialog
        let target = context.destination(inDialog: dialog, fallback: destination)
        let request = dialog.makeRequest(.bye, via: context.newVia(for: target), contact: nil)
        return [.send(request, .bye, to: target)]
    }

    /// The peer's re-INVITE, taken by the dialog: answered 200 with our SDP (488 when its offer is unusable); a
    /// change of the remote hold is reported as an update of the active members.
    func answerReinvite(
        _ request: SIPRequest, key: TransactionKey, in confirmed: inout Confirmed, context: some CallLegContext
    ) -> [CallLegEffect] {
        let session = Self.sessionTimerAnswer(to: request, in: context)
        if case .tooSmall(let minimum) = session {
            let refusal = request.makeResponse(statusCode: 422, toTag: localTag, headers: ["Min-SE": String(minimum)])
            confirmed.dialog.respond(refusal)
            return [.respond(refusal, transaction: key)]
        }
        var offer: SDPSession?
        if !request.body.isEmpty {
            guard let parsed = try? SDPSession.parse(request.body), context.canAnswer(parsed) else {
                let refusal = request.makeResponse(statusCode: 488)
                confirmed.dialog.respond(refusal)
                return [.respond(refusal, transaction: key)]
            }
            offer = parsed
        }
        let wasVideo = confirmed.media.local.isVideo
        let answer = context.makeAnswer(
            to: offer, previous: confirmed.media.local, localHold: confirmed.localHold, for: uuid,
            toward: confirmed.destination.address.host)
        confirmed.media.local = answer
        var headers = context.capabilityHeaders
        headers.append("Contact", context.contactHeader(for: confirmed.destination, secure: isSecure))
        headers.append("Server", context.configuration.product)
        if case .accept(let timer, let sessionHeaders) = session {
            // The peer's re-INVITE refreshes the session (RFC 4028 §9): the timers start again with what it agreed.
            for field in sessionHeaders { headers.append(field) }
            confirmed.sessionTimer = timer
        }
        let ok = request.makeResponse(
            statusCode: 200, toTag: localTag, headers: headers, contentType: Self.sdpType, body: answer.serialize())
        confirmed.dialog.respond(ok)
        var effects: [CallLegEffect] = [.respond(ok, transaction: key)] + (confirmed.sessionTimer?.startEffects ?? [])
        if answer.isVideo != wasVideo {
            // The peer turned video on or off (an upgrade or downgrade by re-INVITE): the capability changes.
            effects.append(.log(.info, "the remote side turned video \(answer.isVideo ? "on" : "off")"))
            effects.append(.report(.updated(Conversation.Update(capabilities: context.capabilities(video: answer.isVideo)))))
        }
        confirmed.unacknowledgedAnswer = startRetransmitting(
            ok, to: context.responseDestination(key) ?? confirmed.destination, into: &effects, in: context)
        if let offer {
            confirmed.media.remote = offer
            let held = offer.isHold
            if held != confirmed.remoteHold {
                confirmed.remoteHold = held
                effects.append(.log(.info, "the remote side \(held ? "put us on hold" : "resumed")"))
                effects.append(.report(.updated(Conversation.Update(activeRemoteMembers: held ? [] : [remoteHandle]))))
            }
        }
        return effects
    }

    /// An INFO in the leg's dialog: answered 200; a DTMF tone in it goes to the driver (tonesReceived).
    mutating func receiveInfo(_ request: SIPRequest, key: TransactionKey, in context: some CallLegContext) -> [CallLegEffect] {
        guard var dialog else { return [.respond(context.response(to: request, key: key, status: 481), transaction: key)] }
        let verdict = dialog.receive(request: request)
        guard verdict == .accept else { return refusal(verdict, of: request, key: key, in: context) }
        setDialog(dialog)
        var effects: [CallLegEffect] = []
        if request.headers.contentType?.mediaType.lowercased() == "application/dtmf-relay",
            let signal = DTMFRelay.signal(in: request.body)
        {
            effects.append(.tonesReceived(String(signal)))
        }
        return effects + [.respond(context.response(to: request, key: key, status: 200, toTag: localTag), transaction: key)]
    }

    /// How long one tone sent in the stream takes: the event and the pause after it (as Media's
    /// `MediaSession.toneTime`: rtpdtmfsrc holds an event at least 250 ms and keeps 100 ms between two).
    static let streamToneTime = Duration.milliseconds(360)

    /// PlayTone when both descriptions list telephone-event: the tones go in the media stream (RFC 4733), not as
    /// INFO, and the action is done when they have had their time (so a tone and a hang-up right after it keep their
    /// order); nil otherwise.
    /// `media` is nil while we hold the call (our stream is stopped); a peer that holds us takes no audio either.
    static func tonesInStream(_ digits: String, action: ActionRef, media: Media?, tones: inout Tones?) -> [CallLegEffect]? {
        guard let media, media.local.telephoneEvent != nil, let remote = media.remote, remote.telephoneEvent != nil,
            remote.effectiveDirection.receives,
            // telephone-event/8000 beside an 8 kHz codec only (RFC 4733 §2.1: the audio's clock).
            remote.codecs.first(where: media.local.codecs.contains)?.clockRate == 8_000
        else { return nil }
        guard tones == nil else { return [.fail(action, reason: "tones are already playing")] }
        let signals = digits.filter { DTMFRelay.isSignal($0) }
        guard let last = signals.last else { return [.fulfil(action)] }
        tones = Tones(action: action, current: last, remaining: [])
        return [.sendTonesInStream(signals), .startTimer(.tonesInStream, after: Self.streamToneTime * signals.count)]
    }

    /// The tones sent in the stream have had their time: their action is done.
    static func streamTonesDone(_ tones: inout Tones?) -> [CallLegEffect] {
        guard let playing = tones else { return [] }
        tones = nil
        return [.fulfil(playing.action)]
    }

    /// PlayTone: in the media stream when both descriptions list telephone-event and audio flows to the peer, else
    /// one INFO per keypad digit, in order, each after the previous one is answered.
    static func playTones(
        _ digits: String, action: ActionRef, tones: inout Tones?, dialog: inout SIPDialog, destination: SIPDestination,
        media: Media?, in context: some CallLegContext
    ) -> [CallLegEffect] {
        if let inStream = tonesInStream(digits, action: action, media: media, tones: &tones) { return inStream }
        guard tones == nil else { return [.fail(action, reason: "tones are already playing")] }
        let signals = digits.filter { DTMFRelay.isSignal($0) }
        guard let first = signals.first else { return [.fulfil(action)] }
        tones = Tones(action: action, current: first, remaining: Array(signals.dropFirst()))
        return info(first, dialog: &dialog, destination: destination, in: context)
    }

    /// A response to one of our INFO tones: the next goes when it is answered 2xx.
    static func toneResponse(
        _ response: SIPResponse, digit: Character, tones: inout Tones?, dialog: inout SIPDialog,
        destination: SIPDestination, in context: some CallLegContext
    ) -> [CallLegEffect] {
        guard var playing = tones, playing.current == digit, !response.isProvisional else { return [] }
        guard response.isSuccess else {
            tones = nil
            let refusal = "tone \(digit) refused: \(response.statusCode) \(response.reasonPhrase)"
            return [.fail(playing.action, reason: refusal, status: SIPFinalStatus(response))]
        }
        guard !playing.remaining.isEmpty else {
            tones = nil
            return [.fulfil(playing.action)]
        }
        playing.current = playing.remaining.removeFirst()
        tones = playing
        return info(playing.current, dialog: &dialog, destination: destination, in: context)
    }

    private static func info(
        _ digit: Character, dialog: inout SIPDialog, destination: SIPDestination, in context: some CallLegContext
    ) -> [CallLegEffect] {
        let target = context.destination(inDialog: dialog, fallback: destination)
        let request = dialog.makeRequest(
            .info, via: context.newVia(for: target), contact: nil, contentType: DTMFRelay.contentType,
            body: DTMFRelay.body(for: digit))
        return [.send(request, .info(digit), to: target)]
    }
}
