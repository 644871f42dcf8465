import Foundation
import ICE
import Media
import ParleyEngine
import ParleyIO
import SIPMessages

/// One call's ICE agent as the node drives it: the port pair it was reserved with (admission counts it), who waits
/// for its candidates, the peer's candidates it was given, and what it said last.
///
/// ```
///   reserved ──gather──► gathering ──(done, or the gathering timeout)──► gathered: waiting offers/answers go out
///   gathered ──the peer's candidates (after its ACK, for an answer)──► checking ──pair selected──► connected
///            ──the peer has no ICE──► sending to its c= address (no checks)
///   checking ──every check failed, or none in the checks timeout──► failed: the call ends iceFailed
///   connected ──consent lost (a NAT forgot its mapping)──► restarting: new credentials, a re-INVITE offers them
///   connected ──the peer's offer has new credentials──► restarting: our answer has new ones too
///   restarting ──the peer's new candidates──► checking (a restart without a path in the checks timeout fails;
///                                               after `maxRestarts`, consent lost fails too)
/// ```
final class ICECall {
    /// The agent (its host candidates on the call's reserved pair, lent to it by the pool).
    let agent: ICEAgent
    /// The call's ICE settings: its account's, else the node's (its servers, its timeouts).
    let settings: ICEConfiguration
    /// Whether its candidates are complete, or the wait for them is over; when gathering started (the loop's clock).
    var gathered = false
    let gatheringStarted = ContinuousClock.now
    /// Who waits for the candidates (an offer or an answer to send).
    var waiting: [(MediaEndpoint?) -> Void] = []
    /// The peer's ICE, as last given to the agent.
    var remote: SDPICE?
    /// Where the agent sends without checks (a peer without ICE): its c= address and RTP and RTCP ports.
    var sendsWithoutChecksTo: [String]?
    /// Whether the peer has no ICE and the agent sends to its c= address.
    var withoutChecks: Bool { sendsWithoutChecksTo != nil }
    /// The last report read, and whether its failure was told.
    var lastVersion: UInt32 = 0
    var pairs: [ICESelectedPair?] = []
    var state = ICEState.gathering
    var failureTold = false
    /// How many times its ICE restarted (either side's doing).
    var restarts = 0
    /// The gathering and checks timeouts.
    var timers: [LoopTimer] = []
    /// A DTLS-SRTP call's audio waiting for its RTP pair: its pipeline starts once RTP has a path, so the handshake's
    /// first flight is not lost before there is one (and retried only a second later). RTCP's handshake may still
    /// lose its first flight: its pair may come later, or never (a peer whose RTCP candidates were left out).
    var pendingAudio: NegotiatedAudio?

    /// Whether RTP has a path: a selected pair, or the peer's c= address (a peer without ICE).
    var hasPaths: Bool { withoutChecks || (pairs.first ?? nil) != nil }

    init(agent: ICEAgent, settings: ICEConfiguration) {
        self.agent = agent
        self.settings = settings
    }

    /// The most restarts a call makes or takes: a path that keeps losing consent ends the call.
    static let maxRestarts = 3
    /// How long the controlled side waits for the controlling side's restart before offering its own.
    static let restartGrace = Duration.seconds(4)
}

extension CallAudio {
    /// Whether the offers of calls through `account` carry candidates (`--ice`, or a STUN or TURN server; the
    /// account's own `ice`, `stun-server` or `turn-server` when its section has them).
    func offersICE(through account: String?) -> Bool { configuration.ice(through: account) != nil }

    /// A port pair for the call, and, in `ice`'s role with ICE on for `account`'s calls, an agent gathering
    /// candidates from that account's servers (else the node's); a call that has an agent already gets its endpoint
    /// again (the candidates gathered since).
    func reserveEndpoint(for conversation: UUID, through account: String?, ice role: ICERole?) -> MediaEndpoint? {
        if let call = iceCalls[conversation] { return endpoint(of: call) }
        guard let plain = reserveEndpoint(for: conversation) else { return nil }
        guard let role, let settings = configuration.ice(through: account), let lent = pool.lend(plain.port) else {
            return plain
        }
        // The agent's host candidates bind the very pair the call was admitted with.
        reservations[plain.port] = lent
        icePorts[conversation] = plain.port
        var made: ICEAgent?
        do {
            let wildcard = host == "0.0.0.0" || host == "::"
            let agent = try ICEAgent(
                controlling: role == .controlling, localAddresses: wildcard ? [] : [host], firstPort: plain.port,
                servers: settings.servers, notifications: try watchICE())
            made = agent
            try agent.gather()
            let call = ICECall(agent: agent, settings: settings)
            guard let first = endpoint(of: call) else {
                log.error("\(conversation): no ICE for this call (no host candidate of our address family on \(host)): it offers its RTP port alone")
                return reclaimPlain(conversation, closing: agent) ? plain : nil
            }
            iceCalls[conversation] = call
            call.timers.append(loop.schedule(after: settings.gatheringTimeout) { [weak self] in
                self?.gatheringEnded(conversation, timedOut: true)
            })
            return first
        } catch {
            log.error("\(conversation): no ICE for this call (\(error)): it offers its RTP port alone")
            return reclaimPlain(conversation, closing: made) ? plain : nil
        }
    }

    /// The call goes on as plain RTP at its reserved pair: its agent (if any) is closed, waiting until its sockets
    /// are, and the pair bound again; false (logged) when it cannot be.
    @discardableResult
    func reclaimPlain(_ conversation: UUID, closing agent: ICEAgent?) -> Bool {
        agent?.close()
        guard let port = icePorts[conversation] else { return false }
        guard let bound = pool.reclaim(port) else {
            log.error("\(conversation): RTP ports \(port)–\(port + 1) could not be bound again after ICE: no audio")
            return false
        }
        reservations[port] = bound
        return true
    }

    /// Runs `ready` with the call's endpoint once its candidates are gathered (at once when they are, or the call
    /// has no agent).
    func whenEndpointReady(for conversation: UUID, _ ready: @escaping (MediaEndpoint?) -> Void) {
        guard let call = iceCalls[conversation], !call.gathered else {
            return ready(iceCalls[conversation].flatMap(endpoint(of:)))
        }
        call.waiting.append(ready)
    }

    /// The endpoint an agent's candidates describe, nil when it has none of the node's address family yet: c=/m= and
    /// `a=rtcp` name the default candidates — server-reflexive, else host, never relayed: a peer without ICE gets our
    /// audio from the host candidate's socket (libnice sends from it without checks), which a server-reflexive
    /// address maps, while a relay would drop what the peer sends (it has no permission for it).
    func endpoint(of call: ICECall) -> MediaEndpoint? {
        let agent = call.agent
        guard let credentials = agent.localCredentials else { return nil }
        let candidates = agent.localCandidates.compactMap(SDPCandidate.init(attributeValue:))
        let family = { (address: String) in address.contains(":") }
        let ours = host.contains(":") && !RouteProbe.isWildcard(host)
        func preferred(_ component: Int) -> SDPCandidate? {
            let usable = candidates.filter { $0.component == component && family($0.address) == ours }
            return usable.first { $0.type == .srflx } ?? usable.first { $0.type == .host }
        }
        guard let rtp = preferred(1), let ice = SDPICE(ufrag: credentials.ufrag, pwd: credentials.password, candidates: candidates)
        else { return nil }
        return MediaEndpoint(
            address: rtp.address, port: rtp.port, rtcpPort: agent.components > 1 ? preferred(2)?.port : nil, ice: ice)
    }

    /// The port pair a call reserved: an ICE call's (its c=/m= may name a server-reflexive port), else the
    /// endpoint's own.
    func reservedPort(of endpoint: MediaEndpoint, for conversation: UUID) -> Int {
        icePorts[conversation] ?? endpoint.port
    }

    /// The call's agent as its media's transport, told the peer's candidates (once the peer confirmed it receives
    /// our description: an INVITE's spoofed candidates draw no checks); nil for a call without an agent. A peer
    /// without ICE answering our offer: the agent goes and the call is plain RTP at its reserved pair (which c=/m=
    /// named, or its server-reflexive mapping), its receive gate and all; a peer that drops ICE mid-call (the call's
    /// pipeline runs on the agent) is sent to at its c= address through the agent, without checks.
    func iceBinding(for audio: NegotiatedAudio, of conversation: UUID) -> ICEBinding? {
        guard let call = iceCalls[conversation], audio.localICE != nil else { return nil }
        if audio.remoteICE == nil, sessions[conversation] == nil {
            forgetICE(conversation)
            if reclaimPlain(conversation, closing: call.agent) {
                log.info("\(conversation): ICE: the peer has none: plain RTP at our reserved ports")
            }
            return nil
        }
        guard audio.peerConfirmed else { return ICEBinding(call.agent) }
        do {
            if let remote = audio.remoteICE {
                if remote != call.remote {
                    // Never our own candidates: checks from the agent to itself.
                    let ours = Set(call.agent.localCandidates.compactMap(SDPCandidate.init(attributeValue:)).map { "\($0.address) \($0.port)" })
                    let candidates = remote.candidates.filter { !ours.contains("\($0.address) \($0.port)") }
                    let taken = try call.agent.setRemote(
                        ufrag: remote.ufrag, password: remote.pwd, candidates: candidates.map(\.attributeValue),
                        peerIsLite: remote.isLite)
                    let left = remote.droppedCandidates + remote.candidates.count - candidates.count
                    let dropped = left > 0 ? "; \(left) of its lines left out" : ""
                    log.info("\(conversation): ICE: checking \(taken) candidate(s) of the peer\(dropped)")
                    if call.remote == nil {
                        let timeout = call.settings.checksTimeout
                        call.timers.append(loop.schedule(after: timeout) { [weak self] in self?.checksTimedOut(conversation, timeout) })
                    }
                    call.remote = remote
                }
            } else if MediaDestination.refusal(of: audio.remoteAddress, local: audio.localAddress) == nil,
                !MediaDestination.isUnspecified(audio.remoteAddress)
            {
                // Again whenever the peer's description moves it (a 183's media server, then the 200's; a re-INVITE).
                let rtcp = audio.remoteRTCPPort ?? audio.remotePort + 1
                let target = [audio.remoteAddress, String(audio.remotePort), String(rtcp)]
                if call.sendsWithoutChecksTo != target {
                    try call.agent.sendWithoutChecks(to: audio.remoteAddress, ports: [audio.remotePort, rtcp])
                    call.sendsWithoutChecksTo = target
                    log.info("\(conversation): ICE: the peer has none; its audio goes to \(audio.remoteAddress):\(audio.remotePort)")
                }
            }
        } catch {
            log.error("\(conversation): ICE: \(error)")
        }
        return ICEBinding(call.agent)
    }

    /// The peer restarted ICE: so does the call's agent (new credentials), unless our own restart's credentials have
    /// not met the peer's candidates yet (both sides restarted at once: ours stand). Our ICE as the answer gives it.
    func restartICE(for conversation: UUID) -> SDPICE? {
        guard let call = iceCalls[conversation], !call.withoutChecks else { return nil }
        if call.remote != nil, !restart(conversation, call, why: "the peer restarted ICE") { return nil }
        return endpoint(of: call)?.ice
    }

    /// The call's ICE as it stands (a restart's new credentials), for our next description.
    func currentICE(for conversation: UUID) -> SDPICE? {
        guard let call = iceCalls[conversation], !call.withoutChecks else { return nil }
        return endpoint(of: call)?.ice
    }

    /// Restarts the call's agent: new credentials, no pair until the peer's new candidates are checked; false (the
    /// call ends iceFailed) after `maxRestarts`, or when libnice cannot.
    @discardableResult
    private func restart(_ conversation: UUID, _ call: ICECall, why: String) -> Bool {
        guard call.restarts < ICECall.maxRestarts else {
            iceFailed(conversation, call, why: "\(why), and its ICE restarted \(call.restarts) times already")
            return false
        }
        do {
            try call.agent.restart()
        } catch {
            iceFailed(conversation, call, why: "\(why), and the restart failed: \(error)")
            return false
        }
        call.restarts += 1
        let restarts = call.restarts
        // No path again in time (the peer never took the restart, or its checks fail): the call ends.
        let timeout = call.settings.checksTimeout
        call.timers.append(loop.schedule(after: timeout) { [weak self] in
            guard let self, let call = self.iceCalls[conversation], call.restarts == restarts, (call.pairs.first ?? nil) == nil
            else { return }
            self.iceFailed(conversation, call, why: "no path within \(timeout.components.seconds) s of ICE restart \(restarts)")
        })
        call.remote = nil
        call.pairs = call.pairs.map { _ in nil }
        call.state = .checking
        log.info("\(conversation): ICE restarts (\(why)): new credentials, restart \(call.restarts) of at most \(ICECall.maxRestarts)")
        onICEPair?(conversation, nil, .checking)
        return true
    }

    /// The call's agent goes (its sockets close).
    func forgetICE(_ conversation: UUID) {
        guard let call = iceCalls.removeValue(forKey: conversation) else { return }
        for timer in call.timers { loop.cancel(timer) }
        for waiting in call.waiting { waiting(nil) }
    }

    /// The node's agents' eventfd, watched on the loop (made with the first agent).
    private func watchICE() throws -> ICENotifications {
        if let iceNotifications { return iceNotifications }
        let notifications = try ICENotifications()
        do {
            iceWatch = try DescriptorWatch(
                loop: loop, fd: notifications.descriptor, readable: true, writable: false,
                onReady: { [weak self] _ in
                    notifications.drain()
                    self?.readICEReports()
                }, onLoopShutdown: {})
        } catch {
            throw MediaError("cannot watch ICE reports: \(error)")
        }
        iceNotifications = notifications
        return notifications
    }

    /// Reads every agent's report that changed: gathering done, a pair selected, a failure.
    private func readICEReports() {
        for (conversation, call) in iceCalls {
            let report = call.agent.report
            guard report.version != call.lastVersion else { continue }
            call.lastVersion = report.version
            let hadPath = (call.pairs.first ?? nil) != nil
            if report.gatheringDone { gatheringEnded(conversation, timedOut: false) }
            if report.pairs != call.pairs || report.state != call.state {
                let before = call.pairs
                call.pairs = report.pairs
                call.state = report.state
                for (index, pair) in report.pairs.enumerated() where index >= before.count || before[index] != pair {
                    guard let pair else { continue }
                    log.info("\(conversation): ICE: \(index == 0 ? "RTP" : "RTCP") goes \(pair.localType) \(pair.local) ↔ "
                        + "\(pair.remoteType) \(pair.remote)")
                }
                onICEPair?(conversation, report.pairs.first ?? nil, report.state)
                if call.hasPaths, let pending = call.pendingAudio {
                    call.pendingAudio = nil
                    audioChanged(pending, for: conversation)
                }
            }
            // Any component: RTCP failing says the path went (a component the peer gave no candidates for never
            // fails in libnice, so a peer without RTCP candidates does not end the call). A restart waiting for the
            // peer's new candidates has nothing to fail yet.
            guard report.state == .failed, call.remote != nil else { continue }
            if hadPath || call.restarts > 0 {
                // Consent lost on a path that worked (RFC 7675): a NAT forgot or moved its mapping; a restart
                // finds the path again (RFC 8445 §9) — and a restart whose checks all failed is tried again, up to
                // `maxRestarts` (the moved mapping may not have settled yet). Both sides notice at about the same
                // time: the controlling one offers the restart at once, the controlled one gives the peer's
                // re-INVITE `restartGrace` to come first (two crossing re-INVITEs would both get 491).
                let restarts = call.restarts
                if call.agent.isControlling {
                    restartAfterConsentLost(conversation, call)
                } else {
                    call.timers.append(loop.schedule(after: ICECall.restartGrace) { [weak self] in
                        guard let self, let call = self.iceCalls[conversation], call.restarts == restarts, call.remote != nil
                        else { return }
                        self.restartAfterConsentLost(conversation, call)
                    })
                }
            } else {
                iceFailed(conversation, call, why: "every connectivity check failed")
            }
        }
    }

    /// The path lost consent: the agent restarts, and a re-INVITE offers its new credentials.
    private func restartAfterConsentLost(_ conversation: UUID, _ call: ICECall) {
        if restart(conversation, call, why: "the path lost consent (the peer stopped answering its checks)") {
            onICERestart?(conversation, "the path lost consent")
        }
    }

    /// The candidates are complete, or the wait for them is over: the offer or answer waiting goes out.
    private func gatheringEnded(_ conversation: UUID, timedOut: Bool) {
        guard let call = iceCalls[conversation], !call.gathered else { return }
        call.gathered = true
        if timedOut { log.info("\(conversation): ICE: the servers' candidates did not all come in time; going with those gathered") }
        let endpoint = endpoint(of: call)
        let kinds = Dictionary(grouping: endpoint?.ice?.candidates ?? [], by: \.type).map { "\($0.value.count) \($0.key)" }.sorted()
        let took = ContinuousClock.now - call.gatheringStarted
        log.info("\(conversation): ICE: \(kinds.joined(separator: ", ")) candidate(s) gathered in "
            + "\(took.components.seconds * 1_000 + took.components.attoseconds / 1_000_000_000_000_000) ms")
        if let turn = call.settings.servers.turn, endpoint?.ice?.candidates.contains(where: { $0.type == .relay }) == false {
            log.warning("\(conversation): ICE: no relayed candidate from the TURN server \(turn) (it refused our credentials, "
                + "or did not answer): the call goes on the other candidates")
        }
        let waiting = call.waiting
        call.waiting = []
        for ready in waiting { ready(endpoint) }
    }

    private func checksTimedOut(_ conversation: UUID, _ timeout: Duration) {
        guard let call = iceCalls[conversation], call.pairs.first ?? nil == nil else { return }
        iceFailed(conversation, call, why: "no candidate pair worked within \(timeout.components.seconds) s")
    }

    private func iceFailed(_ conversation: UUID, _ call: ICECall, why: String) {
        guard !call.failureTold, !call.withoutChecks else { return }
        call.failureTold = true
        onICEFailure?(conversation, why)
    }
}
