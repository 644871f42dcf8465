import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport

/// Incoming conversations: INVITE → ringing (180), Join → 200 with the SDP answer → ACK → joined, CANCEL, the ring
/// timeout, and refusing on End.
extension SIPUserAgent {
    func receiveNewInvite(_ request: SIPRequest, key: TransactionKey, source: SIPDestination) {
        guard let callID = request.headers.callID, let from = request.headers.from, from.tag != nil else {
            respond(to: request, key: key, status: 400, reason: "Missing From tag")
            return
        }
        if legsByCallID[callID] != nil {
            // The same INVITE by another path, or a Call-ID reused by mistake (RFC 3261 §8.2.2.2).
            respond(to: request, key: key, status: 482)
            return
        }
        if let required = request.headers["Require"], !required.trimmingCharacters(in: .whitespaces).isEmpty {
            respond(to: request, key: key, status: 420, extra: ["Unsupported": required])
            return
        }
        var offer: SDPSession?
        if !request.body.isEmpty {
            guard request.headers.contentType?.mediaType.lowercased() == "application/sdp" else {
                respond(to: request, key: key, status: 415, extra: ["Accept": "application/sdp"])
                return
            }
            do {
                offer = try SDPSession.parse(request.body)
            } catch {
                respond(to: request, key: key, status: 488, reason: "Unusable SDP: \(error.reason)")
                return
            }
            guard offer?.answer(origin: nextOrigin(after: nil), connectionAddress: mediaAddress, audioPort: 1) != nil
            else {
                respond(to: request, key: key, status: 488, reason: "No common codec (PCMU or PCMA needed)")
                return
            }
        }
        let pushed = pushedCalls.claim(callID: callID)
        if let pushed, pushed.declined {
            log.info("\(pushed.call.uuid) \(callID): declined after its push; refusing the INVITE")
            respond(to: request, key: key, status: configuration.declineStatus)
            return
        }
        if let pushed, manager.conversation(pushed.call.uuid)?.state != .ringing {
            // The pushed conversation ended meanwhile (cancelled, failed): the late INVITE is not wanted.
            respond(to: request, key: key, status: 480)
            return
        }
        let handle = pushed?.call.handle ?? HandleMapping.handle(for: from)
        let uuid = pushed?.call.uuid ?? RandomUUID.make()
        let leg = CallLeg(
            uuid: uuid, role: .callee, callID: callID, localTag: SecureRandom.token(10), invite: request,
            destination: Self.requestDestination(for: request, source: source), remoteHandle: handle,
            phase: .ringing)
        leg.inviteKey = key
        leg.remoteSDP = offer
        add(leg)
        counters.incomingCalls += 1
        if let pushed {
            // Already ringing since its push: the INVITE joins that conversation.
            log.info("\(uuid) \(callID): the INVITE for a pushed call arrived")
            sendRinging(leg)
            if let join = pushed.pendingJoin {
                answer(leg, action: join)
                return
            }
            startRingAndAutoAnswerTimers(leg)
            return
        }
        do {
            try manager.reportNewIncomingConversation(
                uuid: uuid,
                update: Conversation.Update(localMember: localHandle, members: [handle], activeRemoteMembers: [handle]))
        } catch {
            forget(leg)
            onCallRefused?(uuid, callID)
            log.info("refused an incoming call \(callID) from \(handle.value): \(error)")
            respond(to: request, key: key, status: 486, reason: "Busy Here (\(error))")
            return
        }
        guard leg.phase == .ringing else { return }  // a delegate answered or ended it from inside the report
        sendRinging(leg)
        startRingAndAutoAnswerTimers(leg)
    }

    /// The ring timeout, and the auto-answer when configured.
    private func startRingAndAutoAnswerTimers(_ leg: CallLeg) {
        leg.ringTimer = environment.schedule(after: configuration.ringTimeout) { [weak self, weak leg] in
            guard let self, let leg else { return }
            self.ringTimedOut(leg)
        }
        if let delay = configuration.autoAnswerDelay {
            leg.autoAnswerTimer = environment.schedule(after: delay) { [weak self, weak leg] in
                guard let self, let leg, leg.phase == .ringing else { return }
                leg.autoAnswerTimer = nil
                do {
                    try self.manager.perform([.join(conversationUUID: leg.uuid)])
                } catch {
                    self.log.error("\(leg.uuid) \(leg.callID): auto-answer refused: \(error)")
                }
            }
        }
    }

    /// Where requests inside an incoming call's dialog go: to the Contact when it names a numeric address on the
    /// transport the INVITE came over (a connection-oriented peer is reached on its connection), else where the
    /// INVITE came from.
    static func requestDestination(for request: SIPRequest, source: SIPDestination) -> SIPDestination {
        guard source.kind == .udp, let contact = request.headers.contacts.first?.uri else { return source }
        var host = contact.host
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard HostResolver.isLiteral(host), contact.transport == nil || contact.transport?.lowercased() == "udp"
        else { return source }
        let port = contact.port ?? 5060
        guard (1...65535).contains(port) else { return source }
        return SIPDestination(kind: .udp, address: SIPPeerAddress(host: host, port: UInt16(port)))
    }

    private func sendRinging(_ leg: CallLeg) {
        guard let key = leg.inviteKey else { return }
        let headers: SIPHeaders = [
            "Contact": contactHeader(for: leg.destination, secure: leg.isSecure),
            "Server": configuration.product,
        ]
        let ringing = leg.invite.makeResponse(
            statusCode: 180, toTag: leg.localTag, copyingRecordRoute: true, headers: headers)
        transactions.respond(ringing, to: key)
        leg.dialog = SIPDialog.asCallee(request: leg.invite, response: ringing)
    }

    private func ringTimedOut(_ leg: CallLeg) {
        leg.ringTimer = nil
        guard leg.phase == .ringing, let key = leg.inviteKey else { return }
        log.info("\(leg.uuid) \(leg.callID): nobody answered within \(configuration.ringTimeout)")
        respond(to: leg.invite, key: key, status: 480, toTag: leg.localTag)
        forget(leg)
        report(.ended(environment.now, .unanswered), for: leg)
    }

    /// Join: answer with 200 and our SDP; joined when the ACK arrives.
    func answer(_ leg: CallLeg, action: ConversationAction) {
        guard leg.role == .callee, leg.phase == .ringing, let key = leg.inviteKey else {
            _ = action.fail(reason: "the conversation is not ringing")
            return
        }
        guard transactions.serverState(key) == .proceeding else {
            _ = action.fail(reason: "the INVITE is no longer open")
            return
        }
        let answer = makeAnswer(to: leg.remoteSDP, previous: nil, localHold: false)
        leg.localSDP = answer
        var headers = capabilityHeaders
        headers.append("Contact", contactHeader(for: leg.destination, secure: leg.isSecure))
        headers.append("Server", configuration.product)
        let ok = leg.invite.makeResponse(
            statusCode: 200, toTag: leg.localTag, copyingRecordRoute: true, headers: headers,
            contentType: Self.sdpType, body: answer.serialize())
        if let ringTimer = leg.ringTimer { environment.cancel(ringTimer) }
        leg.ringTimer = nil
        let replyTo = transactions.responseDestination(key) ?? leg.destination
        transactions.respond(ok, to: key)
        if var dialog = leg.dialog {
            dialog.respond(ok)
            leg.dialog = dialog
        } else {
            leg.dialog = SIPDialog.asCallee(request: leg.invite, response: ok)
        }
        leg.phase = .awaitingACK
        leg.pendingJoin = action
        startRetransmitting(ok, for: leg, to: replyTo)
        report(.startedConnecting(environment.now), for: leg)
    }

    /// Our SDP answer (or offer, when the INVITE had none) for a remote description.
    func makeAnswer(to offer: SDPSession?, previous: SDPSession?, localHold: Bool) -> SDPSession {
        let origin = nextOrigin(after: previous)
        let direction: SDPDirection = localHold ? .sendonly : .sendrecv
        if let offer,
            let answer = offer.answer(
                origin: origin, connectionAddress: mediaAddress, audioPort: configuration.mediaPort,
                localDirection: direction)
        {
            return answer
        }
        return SDPSession(
            origin: origin, connectionAddress: mediaAddress, audioPort: configuration.mediaPort, direction: direction)
    }

    /// Keeps sending a 2xx until its ACK arrives: every T1 doubling to T2 on UDP; gives up after 64·T1 either way.
    func startRetransmitting(_ response: SIPResponse, for leg: CallLeg, to destination: SIPDestination) {
        let timers = configuration.timers
        var retransmission = CallLeg.SuccessRetransmission(
            response: response, destination: destination, timer: nil, interval: timers.t1)
        if !leg.destination.kind.isReliable {
            retransmission.timer = environment.schedule(after: timers.t1) { [weak self, weak leg] in
                guard let self, let leg else { return }
                self.retransmitSuccess(leg)
            }
        }
        retransmission.giveUp = environment.schedule(after: timers.t1 * 64) { [weak self, weak leg] in
            guard let self, let leg else { return }
            self.ackNeverCame(leg)
        }
        leg.successRetransmission = retransmission
    }

    private func retransmitSuccess(_ leg: CallLeg) {
        guard var retransmission = leg.successRetransmission else { return }
        transactions.sendStateless(.response(retransmission.response), to: retransmission.destination)
        retransmission.interval = min(retransmission.interval * 2, configuration.timers.t2)
        retransmission.timer = environment.schedule(after: retransmission.interval) { [weak self, weak leg] in
            guard let self, let leg else { return }
            self.retransmitSuccess(leg)
        }
        leg.successRetransmission = retransmission
    }

    private func ackNeverCame(_ leg: CallLeg) {
        stopRetransmitting(leg)
        log.info("\(leg.uuid) \(leg.callID): no ACK for our 2xx within 64·T1; ending")
        sendBye(leg)
        forget(leg)
        report(.ended(environment.now, .failed), for: leg)
    }

    func stopRetransmitting(_ leg: CallLeg) {
        guard let retransmission = leg.successRetransmission else { return }
        if let timer = retransmission.timer { environment.cancel(timer) }
        if let giveUp = retransmission.giveUp { environment.cancel(giveUp) }
        leg.successRetransmission = nil
    }

    /// An ACK outside any transaction: it acknowledges our 2xx (to the INVITE or a re-INVITE).
    func receiveACK(_ request: SIPRequest) {
        guard let leg = leg(forInDialog: request), let retransmission = leg.successRetransmission,
            request.headers.cseq?.number == retransmission.response.headers.cseq?.number
        else { return }
        stopRetransmitting(leg)
        if leg.remoteSDP == nil, !request.body.isEmpty, let answer = try? SDPSession.parse(request.body) {
            leg.remoteSDP = answer
        }
        if leg.byeWhenAcknowledged {
            // Ended while the ACK was on its way: now the BYE may go.
            leg.phase = .confirmed
            sendBye(leg)
            forget(leg)
            return
        }
        guard leg.phase == .awaitingACK else { return }
        leg.phase = .confirmed
        if let join = leg.pendingJoin {
            leg.pendingJoin = nil
            _ = join.fulfill(at: environment.now)
        }
    }

    func receiveCancel(_ request: SIPRequest, key: TransactionKey) {
        guard let inviteKey = key.cancelledInvite, let callID = request.headers.callID,
            let leg = legsByCallID[callID], leg.role == .callee, leg.inviteKey == inviteKey
        else {
            respond(to: request, key: key, status: 481)
            return
        }
        respond(to: request, key: key, status: 200, toTag: leg.localTag)
        guard leg.phase == .ringing, transactions.serverState(inviteKey) == .proceeding else { return }
        respond(to: leg.invite, key: inviteKey, status: 487, toTag: leg.localTag)
        forget(leg)
        report(.ended(environment.now, Self.cancelReason(request)), for: leg)
    }

    /// RFC 3326 Reason on a CANCEL: answered (cause 200) or declined (603) on another device; otherwise the caller
    /// gave up.
    static func cancelReason(_ request: SIPRequest) -> Conversation.EndedReason {
        guard let reason = request.headers["Reason"]?.lowercased(), reason.hasPrefix("sip") else { return .cancelled }
        if reason.contains("cause=200") { return .joinedElsewhere }
        if reason.contains("cause=603") { return .declinedElsewhere }
        return .cancelled
    }

    /// End on a ringing incoming conversation: refuse it (486 or 603 as configured).
    func refuse(_ leg: CallLeg, action: ConversationAction) {
        if let key = leg.inviteKey, transactions.serverState(key) == .proceeding {
            respond(to: leg.invite, key: key, status: configuration.declineStatus, toTag: leg.localTag)
        }
        forget(leg)
        _ = action.fulfill(at: environment.now)
    }
}
