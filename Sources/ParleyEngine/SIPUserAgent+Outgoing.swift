import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport

/// Outgoing conversations: Start → INVITE with an SDP offer; 180/183 → ringing; 2xx → ACK → joined; refusals end
/// the conversation with their reason; End before an answer → CANCEL.
extension SIPUserAgent {
    func start(_ action: ConversationAction, handles: [Handle]) {
        // Performed from another thread, the Start may arrive after its conversation ended (an End overtook it,
        // or it timed out): then there is nothing to call.
        guard !action.isComplete, manager.conversation(action.conversationUUID) != nil else { return }
        guard handles.count == 1, let handle = handles.first else {
            _ = action.fail(reason: "a SIP call has exactly one remote party (merge calls to talk to several)")
            return
        }
        let target: SIPURI
        let destination: SIPDestination
        switch HandleMapping.uri(for: handle, phoneDomain: configuration.phoneDomain).flatMap({ uri in
            self.destination(for: uri).map { (uri, $0) }
        }) {
        case .success(let (uri, found)):
            (target, destination) = (uri, found)
        case .failure(let problem):
            log.info("\(action.conversationUUID): cannot call \(handle.value): \(problem)")
            _ = action.fail(reason: problem.description)
            return
        }
        let host = Self.uriHost(listenAddress(for: destination)?.host ?? mediaAddress)
        let callID = pushedCalls.takeOutgoing(uuid: action.conversationUUID) ?? SecureRandom.token(20) + "@" + host
        let localTag = SecureRandom.token(10)
        let offer = SDPSession(
            origin: nextOrigin(after: nil), connectionAddress: mediaAddress, audioPort: configuration.mediaPort)
        var headers = capabilityHeaders
        headers.append("User-Agent", configuration.product)
        let to = SIPAddress(
            displayName: handle.displayName == handle.value ? nil : handle.displayName, uri: target)
        let invite = SIPRequest(
            method: .invite, uri: target, via: newVia(for: destination),
            from: localAddress(tag: localTag, for: destination), to: to, callID: callID, cseq: 1,
            contact: contactAddress(for: destination, secure: target.scheme == "sips"), headers: headers,
            contentType: Self.sdpType,
            body: offer.serialize())
        let leg = CallLeg(
            uuid: action.conversationUUID, role: .caller, callID: callID, localTag: localTag, invite: invite,
            destination: destination, remoteHandle: handle, phase: .calling)
        leg.localSDP = offer
        leg.pendingStart = action
        add(leg)
        counters.outgoingCalls += 1
        leg.ringTimer = environment.schedule(after: configuration.ringTimeout) { [weak self, weak leg] in
            guard let self, let leg else { return }
            self.outgoingRingTimedOut(leg)
        }
        leg.inviteKey = transactions.send(invite, to: destination) { [weak self, weak leg] event in
            guard let self, let leg else { return }
            self.inviteEvent(event, leg: leg)
        }
    }

    private func inviteEvent(_ event: ClientTransactionEvent, leg: CallLeg) {
        switch event {
        case .response(let response):
            inviteResponse(response, leg: leg)
        case .timeout, .transportError:
            let what = event.isTimeout ? "no answer to the INVITE (timer B)" : "the transport failed"
            log.info("\(leg.uuid) \(leg.callID): \(what)")
            let pendingEnd = leg.pendingEnd
            forget(leg)
            if let pendingEnd {
                _ = pendingEnd.fulfill(at: environment.now)
            } else {
                report(.ended(environment.now, .failed), for: leg)
            }
        }
    }

    private func inviteResponse(_ response: SIPResponse, leg: CallLeg) {
        let status = response.statusCode
        if response.isProvisional { leg.sawProvisional = true }
        if status == 100 {
            // A 100 is enough for a CANCEL (RFC 3261 §9.1), though not for ringing.
            if leg.cancelWhenProvisional {
                leg.cancelWhenProvisional = false
                sendCancel(leg)
            }
            return
        }
        if response.isProvisional {
            if response.headers.to?.tag != nil, leg.dialog == nil {
                leg.dialog = SIPDialog.asCaller(request: leg.invite, response: response)
            }
            if leg.phase == .calling { leg.phase = .early }
            if leg.cancelWhenProvisional {
                leg.cancelWhenProvisional = false
                sendCancel(leg)
            }
            if let start = leg.pendingStart {
                leg.pendingStart = nil
                _ = start.fulfill(at: environment.now)
            }
            return
        }
        if response.isSuccess {
            inviteSucceeded(response, leg: leg)
            return
        }
        // 300–699: the transaction sent the ACK; the call is over.
        let pendingEnd = leg.pendingEnd
        forget(leg)
        if let pendingEnd {
            _ = pendingEnd.fulfill(at: environment.now)
            return
        }
        let reason = Self.endedReason(forFinal: status)
        log.info("\(leg.uuid) \(leg.callID): \(status) \(response.reasonPhrase) → \(reason)")
        report(.ended(environment.now, reason), for: leg)
    }

    private func inviteSucceeded(_ response: SIPResponse, leg: CallLeg) {
        if leg.dialog == nil || leg.dialog?.id.remoteTag != response.headers.to?.tag {
            leg.dialog = SIPDialog.asCaller(request: leg.invite, response: response)
        } else {
            deliverToDialog(response, leg: leg)
        }
        guard let dialog = leg.dialog, let cseq = leg.invite.headers.cseq?.number else {
            log.error("\(leg.uuid) \(leg.callID): a 2xx without a usable dialog (no To tag); ending")
            let pendingEnd = leg.pendingEnd
            forget(leg)
            if let pendingEnd { _ = pendingEnd.fulfill(at: environment.now) } else { report(.ended(environment.now, .failed), for: leg) }
            return
        }
        leg.destination = destinationInDialog(leg)
        let ack = dialog.makeACK(forInviteCSeq: cseq, via: newVia(for: leg.destination))
        leg.lastACK = ack
        transactions.sendStateless(.request(ack), to: leg.destination)
        if let body = Optional(response.body), !body.isEmpty { leg.remoteSDP = try? SDPSession.parse(body) }
        if let ringTimer = leg.ringTimer { environment.cancel(ringTimer) }
        leg.ringTimer = nil
        if leg.phase == .terminating || leg.pendingEnd != nil || leg.cancelWhenProvisional {
            // Answered while we were cancelling: acknowledge, then hang up (RFC 3261 §9.1).
            leg.phase = .confirmed
            sendBye(leg)
            let pendingEnd = leg.pendingEnd
            forget(leg)
            _ = pendingEnd?.fulfill(at: environment.now)
            return
        }
        leg.phase = .confirmed
        if let start = leg.pendingStart {
            leg.pendingStart = nil
            _ = start.fulfill(at: environment.now)
        }
        report(.connected(environment.now), for: leg)
    }

    /// The conversation's ended reason for a final refusal of our INVITE.
    static func endedReason(forFinal status: Int) -> Conversation.EndedReason {
        switch status {
        case 486, 600: .busy
        case 603, 607: .declined
        case 408, 480: .unanswered
        case 487: .cancelled
        default: .failed
        }
    }

    private func outgoingRingTimedOut(_ leg: CallLeg) {
        leg.ringTimer = nil
        guard leg.phase == .calling || leg.phase == .early else { return }
        log.info("\(leg.uuid) \(leg.callID): not answered within \(configuration.ringTimeout); cancelling")
        if leg.phase == .early || leg.sawProvisional { sendCancel(leg) } else { leg.cancelWhenProvisional = true }
        report(.ended(environment.now, .unanswered), for: leg)
    }

    /// End on an outgoing conversation not yet answered: CANCEL now if the callee has sent a provisional response,
    /// else as soon as one arrives (RFC 3261 §9.1). The End is done at once.
    func cancel(_ leg: CallLeg, action: ConversationAction) {
        leg.pendingEnd = action
        if let start = leg.pendingStart {
            leg.pendingStart = nil
            _ = start.fail(reason: "ended before it was answered")
        }
        switch leg.phase {
        case .early:
            sendCancel(leg)
        case .calling:
            if leg.sawProvisional { sendCancel(leg) } else { leg.cancelWhenProvisional = true }
        case .ringing, .awaitingACK, .confirmed, .terminating, .ended:
            preconditionFailure("cancel(_:) is for unanswered outgoing legs")
        }
        // Over for the local member now; the leg stays to see the INVITE through (487, or a crossing 2xx that gets
        // ACK and BYE), as hanging up does with its BYE.
        _ = action.fulfill(at: environment.now)
    }

    func sendCancel(_ leg: CallLeg) {
        leg.phase = .terminating
        // A callee that never answers the INVITE after our CANCEL (no 487, no 2xx) is given up on after 64·T1.
        leg.cancelGuard = environment.schedule(after: configuration.timers.t1 * 64) { [weak self, weak leg] in
            guard let self, let leg, leg.phase == .terminating else { return }
            self.log.info("\(leg.uuid) \(leg.callID): no final response after our CANCEL; giving up")
            if let key = leg.inviteKey { self.transactions.abandon(client: key) }
            let pendingEnd = leg.pendingEnd
            self.forget(leg)
            _ = pendingEnd?.fulfill(at: self.environment.now)
        }
        let cancel = leg.invite.makeCancel()
        transactions.send(cancel, to: leg.destination) { [weak self, weak leg] event in
            guard let self, let leg, case .response(let response) = event, !response.isProvisional else { return }
            // The INVITE's 487 normally follows; if the CANCEL came too late (481, or a 200 crossing it) the 2xx
            // path hangs up. Either way the End is done once the callee has our CANCEL.
            if response.isSuccess, let end = leg.pendingEnd, leg.phase == .terminating {
                _ = end.fulfill(at: self.environment.now)
            }
        }
    }

    /// Where in-dialog requests go: the dialog's next hop when it is a numeric address on the same transport,
    /// else where the INVITE went.
    /// The next hop comes from the peer (its Contact or Record-Route), so a host name is never resolved here: that
    /// would block the engine's thread on DNS the peer controls.
    func destinationInDialog(_ leg: CallLeg) -> SIPDestination {
        guard let next = leg.dialog?.nextHop else { return leg.destination }
        var host = next.host
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard HostResolver.isLiteral(host), case .success(let found) = destination(for: next),
            found.kind == leg.destination.kind
        else { return leg.destination }
        return found
    }
}

extension ClientTransactionEvent {
    /// Whether this is a timeout.
    var isTimeout: Bool {
        if case .timeout = self { return true }
        return false
    }
}
