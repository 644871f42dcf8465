import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport

/// Inside a confirmed dialog: BYE both ways, hold and resume by re-INVITE both ways (with glare), INFO DTMF.
extension SIPUserAgent {
    // MARK: BYE

    func receiveBye(_ request: SIPRequest, key: TransactionKey) {
        guard let leg = leg(forInDialog: request), var dialog = leg.dialog else {
            respond(to: request, key: key, status: 481)
            return
        }
        guard accept(request, key: key, in: &dialog) else { return }
        leg.dialog = dialog
        respond(to: request, key: key, status: 200, toTag: leg.localTag)
        let pendingEnd = leg.pendingEnd
        let wasEarly = leg.phase == .ringing || leg.phase == .calling || leg.phase == .early
        if leg.phase == .ringing, let inviteKey = leg.inviteKey {
            // A BYE before our answer ends the INVITE too (RFC 3261 §15.1.2 asks callers not to, but some do).
            respond(to: leg.invite, key: inviteKey, status: 487, toTag: leg.localTag)
        }
        stopRetransmitting(leg)
        forget(leg)
        if let pendingEnd {
            // Both sides hung up at once: our End is done.
            _ = pendingEnd.fulfill(at: environment.now)
        } else {
            report(.ended(environment.now, wasEarly ? .cancelled : .remoteEnded), for: leg)
        }
    }

    /// Passes `request` to the dialog; answers it with the dialog's refusal (481, 491, 500) and returns false when
    /// the dialog does not take it.
    func accept(_ request: SIPRequest, key: TransactionKey, in dialog: inout SIPDialog) -> Bool {
        let verdict = dialog.receive(request: request)
        guard verdict != .accept else { return true }
        var generator = SystemRandomNumberGenerator()
        if let refusal = verdict.rejection(of: request, using: &generator) { transactions.respond(refusal, to: key) }
        return false
    }

    /// End on an answered conversation: BYE; the End is fulfilled when the BYE is answered (or times out).
    /// The End is done once the BYE is handed to its transaction (RFC 3261 §15.1.1: the dialog is over for us then),
    /// so a dead peer cannot make it time out. A callee still waiting for the ACK of its 2xx sends the BYE when the ACK
    /// arrives (or the 2xx times out), as §15 requires.
    func hangUp(_ leg: CallLeg, action: ConversationAction) {
        if leg.phase == .awaitingACK {
            leg.byeWhenAcknowledged = true
            _ = action.fulfill(at: environment.now)
            return
        }
        stopRetransmitting(leg)
        sendBye(leg)
        forget(leg)
        _ = action.fulfill(at: environment.now)
    }

    /// Sends BYE in the leg's dialog; `done` runs once it is answered, times out or cannot be sent.
    func sendBye(_ leg: CallLeg, done: (() -> Void)? = nil) {
        guard var dialog = leg.dialog else {
            done?()
            return
        }
        leg.phase = .terminating
        let destination = destinationInDialog(leg)
        let bye = dialog.makeRequest(.bye, via: newVia(for: destination), contact: nil)
        dialog.terminate(reason: .localBye)
        leg.dialog = dialog
        transactions.send(bye, to: destination) { event in
            if case .response(let response) = event, response.isProvisional { return }
            done?()
        }
    }

    // MARK: Re-INVITE from the remote side

    func receiveReinvite(_ request: SIPRequest, key: TransactionKey) {
        guard let leg = leg(forInDialog: request), var dialog = leg.dialog else {
            respond(to: request, key: key, status: 481)
            return
        }
        if leg.ownReinvite != nil {
            // Glare (RFC 3261 §14.2): our own offer is pending.
            respond(to: request, key: key, status: 491)
            return
        }
        if leg.successRetransmission != nil {
            // The previous INVITE's 2xx is not yet acknowledged (§14.2).
            respond(to: request, key: key, status: 500, extra: ["Retry-After": "1"])
            return
        }
        guard accept(request, key: key, in: &dialog) else { return }
        leg.dialog = dialog
        var offer: SDPSession?
        if !request.body.isEmpty {
            guard let parsed = try? SDPSession.parse(request.body),
                parsed.answer(origin: nextOrigin(after: nil), connectionAddress: mediaAddress, audioPort: 1) != nil
            else {
                let refusal = request.makeResponse(statusCode: 488)
                transactions.respond(refusal, to: key)
                leg.dialog?.respond(refusal)
                return
            }
            offer = parsed
        }
        let answer = makeAnswer(to: offer, previous: leg.localSDP, localHold: leg.localHold)
        leg.localSDP = answer
        var headers = capabilityHeaders
        headers.append("Contact", contactHeader(for: leg.destination, secure: leg.isSecure))
        headers.append("Server", configuration.product)
        let ok = request.makeResponse(
            statusCode: 200, toTag: leg.localTag, headers: headers, contentType: Self.sdpType, body: answer.serialize())
        let replyTo = transactions.responseDestination(key) ?? leg.destination
        transactions.respond(ok, to: key)
        leg.dialog?.respond(ok)
        startRetransmitting(ok, for: leg, to: replyTo)
        if let offer {
            leg.remoteSDP = offer
            let held = offer.isHold
            if held != leg.remoteHold {
                leg.remoteHold = held
                log.info("\(leg.uuid) \(leg.callID): the remote side \(held ? "put us on hold" : "resumed")")
                report(.updated(Conversation.Update(activeRemoteMembers: held ? [] : [leg.remoteHandle])), for: leg)
            }
        }
    }

    // MARK: Our own re-INVITE (pause and resume)

    func reinvite(_ leg: CallLeg, hold: Bool, action: ConversationAction) {
        guard leg.phase == .confirmed, leg.dialog != nil else {
            _ = action.fail(reason: "the call is not connected")
            return
        }
        guard leg.ownReinvite == nil, leg.glareRetry == nil, leg.successRetransmission == nil,
            leg.dialog?.inviteInProgress == nil
        else {
            _ = action.fail(reason: "another offer is in progress; try again")
            return
        }
        let offer = SDPSession(
            origin: nextOrigin(after: leg.localSDP), connectionAddress: mediaAddress,
            audioPort: configuration.mediaPort, direction: hold ? .sendonly : .sendrecv)
        sendReinvite(leg, offer: offer, hold: hold, action: action)
    }

    private func sendReinvite(_ leg: CallLeg, offer: SDPSession, hold: Bool, action: ConversationAction) {
        guard var dialog = leg.dialog else { return }
        let destination = destinationInDialog(leg)
        var headers = capabilityHeaders
        headers.append("User-Agent", configuration.product)
        let request = dialog.makeRequest(
            .invite, via: newVia(for: destination), contact: contactAddress(for: destination, secure: leg.isSecure),
            headers: headers, contentType: Self.sdpType, body: offer.serialize())
        leg.dialog = dialog
        leg.ownReinvite = CallLeg.OwnReinvite(action: action, hold: hold, offer: offer, request: request)
        transactions.send(request, to: destination) { [weak self, weak leg] event in
            guard let self, let leg else { return }
            self.reinviteEvent(event, leg: leg)
        }
    }

    private func reinviteEvent(_ event: ClientTransactionEvent, leg: CallLeg) {
        guard let own = leg.ownReinvite else { return }
        if case .response(let response) = event, !response.isProvisional, !deliverToDialog(response, leg: leg) {
            // A final answer that does not belong to the dialog (its tags were changed): the dialog cannot go on.
            leg.ownReinvite = nil
            _ = own.action.fail(reason: "the answer to our re-INVITE does not match the dialog")
            endAfterDialogFailure(leg, status: response.statusCode)
            return
        }
        switch event {
        case .response(let response) where response.isProvisional:
            return
        case .response(let response) where response.isSuccess:
            leg.ownReinvite = nil
            leg.localSDP = own.offer
            if let cseq = own.request.headers.cseq?.number, let dialog = leg.dialog {
                let destination = destinationInDialog(leg)
                let ack = dialog.makeACK(forInviteCSeq: cseq, via: newVia(for: destination))
                leg.lastACK = ack
                transactions.sendStateless(.request(ack), to: destination)
            }
            if !response.body.isEmpty { leg.remoteSDP = try? SDPSession.parse(response.body) }
            leg.localHold = own.hold
            _ = own.action.fulfill(at: environment.now)
        case .response(let response) where response.statusCode == 491:
            // Glare: try again after the RFC 3261 §14.1 delay, unless the action is gone by then.
            leg.ownReinvite = nil
            var generator = SystemRandomNumberGenerator()
            let delay = ReINVITEGlare.retryDelay(isCallIDOwner: leg.role == .caller, using: &generator)
            log.debug("\(leg.uuid) \(leg.callID): 491 on our re-INVITE; retrying in \(delay)")
            leg.glareRetry = environment.schedule(after: delay) { [weak self, weak leg] in
                guard let self, let leg else { return }
                leg.glareRetry = nil
                guard leg.phase == .confirmed, !own.action.isComplete else { return }
                guard leg.dialog?.inviteInProgress == nil, leg.successRetransmission == nil else {
                    _ = own.action.fail(reason: "another offer is in progress")
                    return
                }
                let offer = SDPSession(
                    origin: self.nextOrigin(after: leg.localSDP), connectionAddress: self.mediaAddress,
                    audioPort: self.configuration.mediaPort, direction: own.hold ? .sendonly : .sendrecv)
                self.sendReinvite(leg, offer: offer, hold: own.hold, action: own.action)
            }
        case .response(let response):
            leg.ownReinvite = nil
            _ = own.action.fail(reason: "\(response.statusCode) \(response.reasonPhrase)")
            if response.statusCode == 481 || response.statusCode == 408 {
                // The dialog is gone (RFC 3261 §14.1).
                endAfterDialogFailure(leg, status: response.statusCode)
            }
        case .timeout, .transportError:
            leg.ownReinvite = nil
            _ = own.action.fail(reason: event.isTimeout ? "no answer to the re-INVITE" : "the transport failed")
            endAfterDialogFailure(leg, status: 408)
        }
    }

    private func endAfterDialogFailure(_ leg: CallLeg, status: Int) {
        log.info("\(leg.uuid) \(leg.callID): the dialog failed (\(status)); ending")
        sendBye(leg)
        forget(leg)
        report(.ended(environment.now, .failed), for: leg)
    }

    // MARK: INFO (DTMF)

    func receiveInfo(_ request: SIPRequest, key: TransactionKey) {
        guard let leg = leg(forInDialog: request), var dialog = leg.dialog else {
            respond(to: request, key: key, status: 481)
            return
        }
        guard accept(request, key: key, in: &dialog) else { return }
        leg.dialog = dialog
        if request.headers.contentType?.mediaType.lowercased() == "application/dtmf-relay",
            let signal = DTMFRelay.signal(in: request.body)
        {
            log.info("\(leg.uuid) \(leg.callID): the remote side sent tone \(signal)")
        }
        respond(to: request, key: key, status: 200, toTag: leg.localTag)
    }

    /// PlayTone: one INFO per keypad digit, in order, each after the previous one is answered.
    func playTones(_ leg: CallLeg, digits: String, action: ConversationAction) {
        guard leg.phase == .confirmed || leg.phase == .awaitingACK, leg.dialog != nil else {
            _ = action.fail(reason: "the call is not connected")
            return
        }
        guard leg.toneAction == nil else {
            _ = action.fail(reason: "tones are already playing")
            return
        }
        leg.toneQueue = digits.filter { DTMFRelay.isSignal($0) }
        leg.toneAction = action
        sendNextTone(leg)
    }

    private func sendNextTone(_ leg: CallLeg) {
        guard let action = leg.toneAction else { return }
        guard !leg.toneQueue.isEmpty, var dialog = leg.dialog else {
            leg.toneAction = nil
            _ = action.fulfill(at: environment.now)
            return
        }
        let digit = leg.toneQueue.removeFirst()
        let destination = destinationInDialog(leg)
        let info = dialog.makeRequest(
            .info, via: newVia(for: destination), contact: nil, contentType: DTMFRelay.contentType,
            body: DTMFRelay.body(for: digit))
        leg.dialog = dialog
        transactions.send(info, to: destination) { [weak self, weak leg] event in
            guard let self, let leg else { return }
            switch event {
            case .response(let response) where response.isProvisional:
                return
            case .response(let response) where response.isSuccess:
                self.sendNextTone(leg)
            case .response(let response):
                leg.toneAction = nil
                _ = action.fail(reason: "tone \(digit) refused: \(response.statusCode) \(response.reasonPhrase)")
            case .timeout, .transportError:
                leg.toneAction = nil
                _ = action.fail(reason: "tone \(digit) was not answered")
            }
        }
    }
}

/// `application/dtmf-relay` bodies (the SIP INFO DTMF format of Cisco and most softphones).
enum DTMFRelay {
    static let contentType = SIPContentType(type: "application", subtype: "dtmf-relay")

    /// Whether a character is a DTMF signal.
    static func isSignal(_ character: Character) -> Bool { "0123456789*#ABCDabcd".contains(character) }

    /// The body for one digit: `Signal=5` and `Duration=160` (ms).
    static func body(for digit: Character) -> Data { Data("Signal=\(digit.uppercased())\r\nDuration=160\r\n".utf8) }

    /// The signal named in a received body, if any.
    static func signal(in body: Data) -> String? {
        let text = String(decoding: body.prefix(1024), as: UTF8.self)
        for line in text.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "signal" else {
                continue
            }
            let value = parts[1].trimmingCharacters(in: .whitespaces)
            if value.count == 1, let character = value.first, isSignal(character) { return value }
        }
        return nil
    }
}

extension SIPUserAgent {
    /// Passes a response to a request we sent in the leg's dialog, if it belongs to that dialog (a peer that changes
    /// tags gets its response ignored here, never a trap).
    /// Returns whether the dialog took it.
    @discardableResult
    func deliverToDialog(_ response: SIPResponse, leg: CallLeg) -> Bool {
        guard var dialog = leg.dialog, DialogID(responseAsUAC: response) == dialog.id else { return false }
        dialog.receive(response: response)
        leg.dialog = dialog
        return true
    }
}
