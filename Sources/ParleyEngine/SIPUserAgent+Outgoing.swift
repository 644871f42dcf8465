import ConversationKit
import Foundation
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport

/// Outgoing conversations: Start → the target's URI and destination, and an INVITE with our SDP offer; a caller
/// ``CallLeg`` takes it from there (180/183 → ringing, 2xx → ACK → joined, refusals, CANCEL).
extension SIPUserAgent {
    func start(_ action: ConversationAction, handles: [Handle]) {
        // Performed from another thread, the Start may arrive after its conversation ended (an End overtook it,
        // or it timed out): then there is nothing to call.
        guard !action.isComplete, manager.conversation(action.conversationUUID) != nil else { return }
        guard handles.count == 1, let handle = handles.first else {
            _ = action.fail(reason: "a SIP call has exactly one remote party (merge calls to talk to several)")
            return
        }
        let choice = startChoices?.take(action.conversationUUID) ?? StartChoices.Choice()
        let account = self.account(forStart: choice).map { accounts[$0].account }
        if let account {
            try? manager.reportConversationEvent(
                .updated(Conversation.Update(account: account.addressOfRecord.description)), for: action.conversationUUID)
        }
        let target: SIPURI
        switch HandleMapping.uri(for: handle, phoneDomain: configuration.phoneDomain(through: account)) {
        case .success(let uri): target = uri
        case .failure(let problem): return cannotCall(handle, action, problem)
        }
        // The next hop (the outbound proxy, else the callee's host) is located first: at once for a numeric host,
        // on a later turn for a name (RFC 3263), when the conversation may have ended meanwhile.
        locate(nextHop(for: target, through: account)) { [weak self] result in
            guard let self, !action.isComplete, self.manager.conversation(action.conversationUUID) != nil else { return }
            switch result {
            case .success(let targets):
                self.place(
                    action, handle: handle, target: target, through: account, encryption: choice.encryption, at: targets[0],
                    alternatives: Array(targets.dropFirst()))
            case .failure(let problem):
                self.cannotCall(handle, action, problem)
            }
        }
    }

    /// The Start cannot be placed: why, in the log, the conversation's failure and the action's.
    private func cannotCall(_ handle: Handle, _ action: ConversationAction, _ problem: HandleDialError) {
        log.info("\(action.conversationUUID): cannot call \(handle.value): \(problem)")
        onEvent?(.failure(action.conversationUUID, problem.description))
        _ = action.fail(reason: problem.description)
        referredCallFailed(action.conversationUUID, SIPFinalStatus(code: 404, reason: "Not Found"))
    }

    /// Sends the INVITE of a Start through `account` to `destination` (the next hop's first target; `alternatives`
    /// are tried in turn when it does not answer at all), its offer encrypted as `encryption` says (nil: the policy).
    private func place(
        _ action: ConversationAction, handle: Handle, target: SIPURI, through account: Account?,
        encryption: MediaEncryptionPolicy.Offer?, at destination: SIPDestination, alternatives: [SIPDestination]
    ) {
        let ours = mediaAddress(toward: destination.address.host)
        let first = newAudioEndpoint(for: action.conversationUUID, at: ours, ice: .controlling)
        guard first.ice != nil, let media else {
            return invite(action, handle: handle, target: target, through: account, encryption: encryption, at: destination,
                alternatives: alternatives, endpoint: first, ours: ours)
        }
        // The offer carries every candidate (no trickle): it waits for the servers' (bounded by the gathering timeout).
        media.whenEndpointReady(for: action.conversationUUID) { [weak self] gathered in
            guard let self else { return }
            guard !action.isComplete, self.manager.conversation(action.conversationUUID) != nil else {
                return media.releaseEndpoint(first, of: action.conversationUUID)
            }
            var endpoint = gathered ?? first
            endpoint.address = endpoint.address ?? ours
            self.invite(action, handle: handle, target: target, through: account, encryption: encryption, at: destination,
                alternatives: alternatives, endpoint: endpoint, ours: ours)
        }
    }

    /// Sends the INVITE of a Start with our offer at `endpoint` (its RTP, and ICE candidates when it has them).
    private func invite(
        _ action: ConversationAction, handle: Handle, target: SIPURI, through account: Account?,
        encryption: MediaEncryptionPolicy.Offer?, at destination: SIPDestination, alternatives: [SIPDestination],
        endpoint: MediaEndpoint, ours: String
    ) {
        let host = Self.uriHost(advertisedHost(for: destination))
        let callID = pushedCalls.takeOutgoing(uuid: action.conversationUUID) ?? SecureRandom.token(20) + "@" + host
        let localTag = SecureRandom.token(10)
        let wantsVideo = if case .start(_, let isVideo) = action.kind { isVideo } else { false }
        let audioPort = endpoint.port
        var offer = SDPSession(
            origin: nextOrigin(after: nil, host: ours), connectionAddress: endpoint.address ?? ours, audioPort: audioPort,
            codecs: audioCodecs, video: wantsVideo ? videoPort(for: action.conversationUUID).map(ourVideo) : nil,
            telephoneEvent: carriesTones(audioPort) ? Self.telephoneEventType : nil, ptime: media.map { _ in 20 },
            rtcpPort: rtcpPort(for: endpoint), opusPayloadType: audioCodecs.contains(.opus) ? SDPCodec.opus.payloadType : nil)
        offer.ice = endpoint.ice
        var policy = configuration.mediaEncryption
        if let encryption { policy.offer = encryption }
        if carriesDTLS, policy.offersDTLS {
            offer = offer.secured(ourDTLS(setup: .actpass))
        } else if carriesSRTP, policy.offersSDES(over: destination.kind) {
            offer = offer.secured(freshSDES())
            if destination.kind != .tls {
                log.info("\(action.conversationUUID): offering SRTP keyed by SDES over \(destination.kind.rawValue): "
                    + "the keys travel in the SDP, readable on the path (TLS signalling keeps them private)")
            }
        }
        offer = securingVideo(of: offer, previous: nil)
        var headers = capabilityHeaders
        if let route = preloadedRoute(through: account) { headers.append("Route", route) }
        if let replaces = replacingCalls.removeValue(forKey: UUIDKey(action.conversationUUID)) {
            headers.append("Replaces", replaces)
            headers.append("Require", "replaces")
        }
        headers.append("User-Agent", configuration.product)
        let to = SIPAddress(
            displayName: handle.displayName == handle.value ? nil : handle.displayName, uri: target)
        let invite = SIPRequest(
            method: .invite, uri: target, via: newVia(for: destination),
            from: localAddress(tag: localTag, for: destination, account: account), to: to, callID: callID, cseq: 1,
            contact: contactAddress(for: destination, secure: target.scheme == "sips"), headers: headers,
            contentType: CallLeg.sdpType,
            body: offer.serialize())
        let (leg, effects) = CallLeg.outgoing(
            uuid: action.conversationUUID, invite: invite, callID: callID, localTag: localTag, remoteHandle: handle,
            destination: destination, offer: offer, start: action, in: self)
        add(leg)
        if !alternatives.isEmpty { inviteAlternatives[UUIDKey(leg.uuid)] = alternatives }
        counters.outgoingCalls += 1
        apply(effects, leg: leg.uuid)
    }

    /// Where in-dialog requests go: the dialog's next hop when it is a numeric address on the same transport,
    /// else `fallback` (where the INVITE went, or came from).
    /// The next hop comes from the peer (its Contact or Record-Route), so a host name is never resolved here: that
    /// would block the engine's thread on DNS the peer controls.
    func destination(inDialog dialog: SIPDialog?, fallback: SIPDestination) -> SIPDestination {
        guard let next = dialog?.nextHop else { return fallback }
        var host = next.host
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard HostResolver.isLiteral(host), case .success(let found) = destination(for: next), found.kind == fallback.kind
        else { return fallback }
        return found
    }
}
