import Collaboration
import CallHistory
import ConversationKit
import Foundation
import GroupActivities
import SIPMessages
import ParleyIO
import SIPTransport
import Synchronization

/// The SIP-backed conversation engine: the ``ConversationManager``'s delegate that performs actions over SIP,
/// reports what the network does as conversation events, records ended conversations, and logs every transition
/// with the conversation's uuid and SIP Call-ID.
///
/// The SIP side runs on the environment's one thread; the manager and this object may be called from any thread.
public final class ParleyEngine: ConversationManagerDelegate {
    /// The manager whose actions this engine performs.
    public let manager: ConversationManager
    /// The configuration it runs with.
    public let configuration: EngineConfiguration
    let environment: any SIPEnvironment
    let log: EngineLog
    let history: HistoryWriter?
    /// The journal of live calls, so that a crash leaves their records for the next start (with a history only).
    private let liveCalls: LiveCallWriter?
    private let agent: AgentBox
    /// The parse thread, when SIP is parsed off the engine's thread (stopped by `shutdown` or when the engine goes).
    private let parseThread: ParseThread?
    let observed = ObservedConversations()
    /// Whether anyone wants audio levels now (``setAudioLevelDemand(_:)``).
    let audioLevelDemand = Mutex<@Sendable () -> Bool>({ false })
    /// The peer's refusal behind each action failed for one (``failureStatus(ofAction:)``).
    let actionFailures = ActionFailureStatuses()
    /// What frontends chose for their Starts (account, encryption).
    let startChoices = StartChoices()
    private let observers = Mutex<[@Sendable (ConversationTransition) -> Void]>([])
    /// Whether do-not-disturb is on, for readers on any thread (the agent keeps its own copy on the loop).
    let doNotDisturbNow = Atomic<Bool>(false)
    /// The forwarding in force, for readers on any thread (the agent keeps its own copy on the loop): the engine's
    /// under "", each account's own under its name.
    let forwardingNow: Mutex<[String: CallForwarding]>
    private let eventObservers = Mutex<[@Sendable (EngineEvent) -> Void]>([])
    /// The ringer's state and what plays its sounds (nil: nothing rings).
    let ringing = Mutex<(ringer: Ringer, player: (any CallRinging)?)>((Ringer(), nil))
    private let pushedCalls: PushedCallRegistry
    /// Fired when the last live conversation leaves, while a shutdown waits for that.
    private let lastConversationLeft = Mutex<ShutdownSignal?>(nil)
    /// Our local member handle (a constant of the configuration).
    let localHandle: Handle
    /// The frontend's media endpoints, when a frontend carries calls' RTP (`--media external`).
    public let externalMedia: ExternalMedia?
    /// The encryption our offers can use: SDES-keyed SRTP, DTLS-SRTP (what the media layer has the elements for).
    let offerableEncryption: Set<MediaEncryptionPolicy.Offer>
    /// The most calls with audio the media layer carries at once (nil: no limit of its own).
    public let mediaCapacity: Int?

    /// An engine on `environment` driving `manager` (it becomes the manager's delegate). With `history`, every
    /// ended conversation is recorded before its `left` transition is logged, and with a `journal` too, every live one
    /// is journaled so that the next start records it as `crashed` if this process dies first; with `media`, calls
    /// carry audio (it is called on the environment's loop).
    public init(
        configuration: EngineConfiguration, manager: ConversationManager, environment: any SIPEnvironment,
        history: HistoryRecorder? = nil, journal: LiveCallJournal? = nil, media: CallMediaHandler? = nil,
        locator: SIPServerLocator? = nil, log: EngineLog = .silent
    ) {
        precondition(configuration.problems.isEmpty, "invalid engine configuration: \(configuration.problems)")
        self.configuration = configuration
        self.manager = manager
        self.environment = environment
        self.log = log
        forwardingNow = Mutex(Self.forwardingRules(configuration))
        self.history = history.map { HistoryWriter(recorder: $0, log: log) }
        liveCalls = history.flatMap { recorder in journal.map { LiveCallWriter(journal: $0, recorder: recorder, log: log) } }
        let pushedCalls = PushedCallRegistry()
        self.pushedCalls = pushedCalls
        let agent = SIPUserAgent(
            configuration: configuration, environment: environment, manager: manager, log: log, pushedCalls: pushedCalls)
        agent.media = media
        agent.locator = locator
        externalMedia = media as? ExternalMedia
        mediaCapacity = media?.mediaLoad.capacity
        offerableEncryption = Set(
            [.none, .auto] + (media?.carriesSRTP == true ? [.sdes] : []) + (media?.dtlsFingerprints.isEmpty == false ? [.dtls] : []))
        let box = AgentBox(agent)
        self.agent = box
        parseThread = configuration.parsesOnThread
            ? ParseThread { [environment] batch, thread in
                environment.execute {
                    let agent = box.value
                    agent.receive(parsed: batch)
                    thread.release(batch, legs: agent.takeForgottenLegs())
                    agent.wakeParseThreadAtEndOfTurn()
                }
            } : nil
        agent.parseThread = parseThread
        self.localHandle = agent.localHandleSnapshot
        agent.onEvent = { [weak self] event in self?.heard(event) }
        agent.tellsBlockedCallers = configuration.recordsBlockedCalls && self.history != nil
        agent.tellsRefusedByDoNotDisturb = self.history != nil
        agent.setForwarding(from: configuration)
        agent.startChoices = startChoices
        agent.actionFailures = actionFailures
        agent.groups.onEvent = { [weak self, unowned agent] effect in
            if agent.collaborations.observe(effect) { self?.emit(.group(effect)) }
            agent.collaborations.followUp(effect)
        }
        agent.collaborations.onEvent = { [weak self] effect in self?.emit(.collaboration(effect)) }
        manager.delegate = self
    }

    /// Starts what the engine does on its own: registering, when configured, and measuring its load for overload
    /// control. Call once, after the transports listen.
    public func start() {
        environment.execute { [agent] in
            agent.value.registerAll()
            agent.value.startLoadProbe()
        }
    }

    /// The network changed under parleyd (the default route moved, or the machine woke from sleep): every account
    /// registers again now, spaced as at start, which also renews the NAT bindings its keep-alives hold. From any
    /// thread; `why` goes to the log.
    public func networkChanged(_ why: String) {
        environment.execute { [agent, log] in
            guard !agent.value.accounts.isEmpty else { return }
            log.info("network: \(why): registering again")
            agent.value.registerAll()
        }
    }

    /// Where the default account's registration stands (unregistered without accounts).
    public var registrationState: RegistrationState { registrations.first?.state ?? .unregistered }

    /// Feeds one message from a transport (on the environment's thread).
    public func receive(_ inbound: InboundSIPMessage) {
        precondition(environment.isCurrent, "SIP messages are fed on the engine's thread")
        agent.value.receive(inbound)
    }

    /// The transport could not send to `destination` (refused, reset, failed TLS handshake, unreachable): the requests
    /// waiting on it fail at once (RFC 3261 §17.1.4) instead of timing out. On the environment's thread.
    public func transportFailed(towards destination: SIPDestination, reason: String) {
        precondition(environment.isCurrent, "transport failures are fed on the engine's thread")
        log.info("transport: cannot send to \(destination.kind.rawValue)://\(destination.address.host):\(destination.address.port): \(reason)")
        // The requests that fail now read the reason as their failure's.
        agent.value.transportFailure = reason
        agent.value.transactions.transportFailed(towards: destination)
        agent.value.transportFailure = nil
    }

    /// A VoIP push announced `call`: reports it as a ringing conversation before returning (synchronously, from any
    /// thread), so the push handler can acknowledge it as reported. The INVITE that follows is matched by Call-ID;
    /// without one within `pushInviteWait` the conversation ends as failed. Unusable pushes are reported and ended
    /// at once; a cancel push ends the pending conversation as unanswered.
    public func handlePush(_ call: PushedCall) -> PushHandling {
        // Run on the engine's thread, in turn with SIP messages, so the push and its INVITE cannot interleave (an
        // INVITE claiming a half-registered push, or a push missing an INVITE that just arrived). The engine's
        // thread never waits for the push handler's, so waiting here cannot deadlock.
        let handling = environment.executeAndWait(within: .seconds(5)) { [self] in reportPush(call) }
            ?? .notReported(reason: "the engine did not take the push within 5 s (shutting down?)")
        emit(.pushHandled(callID: call.callID, handling: handling))
        return handling
    }

    /// On the engine's thread.
    private func reportPush(_ call: PushedCall) -> PushHandling {
        let now = environment.now
        if call.isCancel {
            // The entry stays (declined) until the wait ends, so a late INVITE is refused rather than ringing.
            guard let uuid = pushedCalls.decline(callID: call.callID) else {
                log.info("push: cancel for a call-id that is not pending")
                return .cancelled(nil)
            }
            log.info("push: cancel for \(call.callID) before its INVITE")
            try? manager.reportConversationEvent(.ended(now, .unanswered), for: uuid)
            return .cancelled(uuid)
        }
        if let known = observed.state.withLock({ $0.uuids[call.callID] }) {
            return .alreadyReported(known)
        }
        var problem: String?
        if call.expiresAt < now {
            problem = "the push expired at \(call.expiresAt.formatted(.iso8601))"
        } else if !manager.configuration.supportedHandleTypes.contains(call.handle.kind) {
            problem = "handle kind \(call.handle.kind) is not supported"
        } else if !SIPGrammar.isCallID(call.callID) {
            problem = "the Call-ID is not usable"
        }
        let update = Conversation.Update(
            localMember: localHandle, members: [call.handle], activeRemoteMembers: [call.handle])
        if let problem { return reportUnusable(call, problem: problem, update: update, now: now) }
        if let existing = pushedCalls.register(call) { return .alreadyReported(existing) }
        let uuid = call.uuid
        observed.state.withLock {
            $0.callIDs[uuid] = call.callID
            $0.uuids[call.callID] = uuid
            $0.pushed.insert(uuid)
        }
        do {
            try manager.reportNewIncomingConversation(uuid: uuid, update: update)
        } catch {
            pushedCalls.remove(callID: call.callID)
            observed.state.withLock {
                $0.callIDs[uuid] = nil
                $0.uuids[call.callID] = nil
                $0.pushed.remove(uuid)
            }
            // A uuid still in use or recently ended, or any other refusal: report the push under a fresh uuid and
            // end it, so the contract holds.
            return reportUnusable(call, problem: "the manager refused it: \(error)", update: update, now: now)
        }
        log.info("push: reported \(uuid) for call-id \(call.callID); waiting for its INVITE")
        let wait = configuration.pushInviteWait
        let callID = call.callID
        _ = environment.schedule(after: wait) { [pushedCalls, manager, log, environment] in
            guard pushedCalls.remove(callID: callID) != nil else { return }
            log.info("push: no INVITE for \(callID) within \(wait); ending \(uuid)")
            try? manager.reportConversationEvent(.ended(environment.now, .failed), for: uuid)
        }
        return .reported(uuid)
    }

    /// Reports an unusable push as a conversation and ends it at once as failed (a fresh uuid, so it cannot clash);
    /// `.notReported` only if even that is refused (the manager was invalidated).
    private func reportUnusable(
        _ call: PushedCall, problem: String, update: Conversation.Update, now: Date
    ) -> PushHandling {
        log.info("push: unusable (\(problem)); reporting and ending it")
        let uuid = RandomUUID.make()
        observed.state.withLock { _ = $0.pushed.insert(uuid) }
        do {
            try manager.reportNewIncomingConversation(uuid: uuid, update: update)
            try manager.reportConversationEvent(.ended(now, .failed), for: uuid)
        } catch {
            observed.state.withLock { _ = $0.pushed.remove(uuid) }
            log.error("push: could not even report the unusable push: \(error)")
            return .notReported(reason: "\(error)")
        }
        return .reportedAndEnded(uuid, reason: problem)
    }

    /// Makes the outgoing call of conversation `conversationUUID` (started later by a Start action) use `callID` as
    /// its SIP Call-ID — as when a push announcing the call has already gone out with that Call-ID.
    /// Returns false (and assigns nothing) when `callID` is not a valid Call-ID.
    @discardableResult
    public func assignCallID(_ callID: String, toOutgoing conversationUUID: UUID) -> Bool {
        guard SIPGrammar.isCallID(callID) else { return false }
        pushedCalls.assignOutgoing(callID: callID, to: conversationUUID)
        return true
    }

    /// Calls `observer` with every conversation transition (on whichever thread caused it).
    public func observeTransitions(_ observer: @escaping @Sendable (ConversationTransition) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Calls `observer` with everything a frontend may want to hear of (on whichever thread it happens).
    public func observeEvents(_ observer: @escaping @Sendable (EngineEvent) -> Void) {
        eventObservers.withLock { $0.append(observer) }
    }

    func emit(_ event: EngineEvent) {
        followRinging(event)
        for observer in eventObservers.withLock({ $0 }) { observer(event) }
    }

    /// A page's part in a call's audio changed (the media layer's browser audio), from any thread: the
    /// `browserAudioChanged` event.
    public func browserAudioChanged(session: String, state: String, reason: String?, for conversationUUID: UUID) {
        emit(.browserAudioChanged(conversationUUID, session: session, state: state, reason: reason))
    }

    /// The devices calls play on changed (the media layer's device watch), from any thread: `audioRouteChanged`.
    public func audioRouteChanged(_ conversationUUID: UUID?, source: String?, sink: String?, reason: String) {
        emit(.audioRouteChanged(conversationUUID, source: source, sink: sink, reason: reason))
    }

    /// Keypad tones a call's peer sent in its media stream (RFC 4733), from the media layer (any thread): the same
    /// `tonesReceived` event as tones sent by SIP INFO.
    public func receivedTonesInStream(_ digits: String, for conversationUUID: UUID) {
        log.info("\(conversationUUID): the remote side sent tone \(digits) (RFC 4733)")
        emit(.tonesReceived(conversationUUID, digits: digits))
    }

    /// The media layer found the call's media insecure (DTLS-SRTP: the peer's certificate is not the one its SDP
    /// named, or the handshake did not complete in time): the call ends with BYE as `mediaSecurityFailed`. Any thread.
    public func mediaSecurityFailed(_ reason: String, for conversationUUID: UUID) {
        environment.execute { [agent] in agent.value.mediaFailed(conversationUUID, reason: .mediaSecurityFailed, why: reason) }
    }

    /// The call's ICE path changed (a selected pair, the checks' state): frontends hear a `mediaChanged`. Any thread.
    public func icePathChanged(_ path: ICEPath, for conversationUUID: UUID) {
        environment.execute { [agent] in agent.value.icePathChanged(conversationUUID, path) }
    }

    /// ICE found no path for the call's media (its checks failed, or found none in time): BYE, `iceFailed`. Any thread.
    public func iceFailed(_ why: String, for conversationUUID: UUID) {
        environment.execute { [agent] in agent.value.mediaFailed(conversationUUID, reason: .iceFailed, why: why) }
    }

    /// The media layer restarted a call's ICE (its path lost consent): a re-INVITE offers the new credentials, or,
    /// when the call cannot take one, it ends as `iceFailed`. From any thread.
    public func iceRestarted(_ why: String, for conversationUUID: UUID) {
        environment.execute { [agent] in agent.value.iceRestarted(conversationUUID, why: why) }
    }

    /// The SIP Call-ID of a conversation, when it has a SIP side.
    public func callID(of conversationUUID: UUID) -> String? {
        observed.state.withLock { $0.callIDs[conversationUUID] }
    }

    /// How one of the last 256 conversations to end looked when it left (before its history record is written and its
    /// `left` transition announced).
    public func endedTransition(of conversationUUID: UUID) -> ConversationTransition? {
        observed.state.withLock { $0.ended[conversationUUID] }
    }

    /// Whether a VoIP push announced the conversation (live, or one of the last 256 to end) before any INVITE.
    public func cameFromPush(_ conversationUUID: UUID) -> Bool {
        observed.state.withLock { $0.pushed.contains(conversationUUID) }
    }

    /// A live call's negotiated audio, when it has some now (calls carry media, and an answer settled it).
    public func audio(of conversationUUID: UUID) -> NegotiatedAudio? {
        observed.state.withLock { $0.audio[conversationUUID] }
    }

    /// A live call's negotiated video, when video is on now.
    public func video(of conversationUUID: UUID) -> NegotiatedVideo? {
        observed.state.withLock { $0.video[conversationUUID] }
    }

    /// A live call's audio figures as last reported (every two seconds while its audio runs), if any.
    public func quality(of conversationUUID: UUID) -> CallQuality? {
        observed.state.withLock { $0.quality[conversationUUID] }
    }

    /// A call's audio figures from the media layer (any thread): kept for the call's history record and announced
    /// as a `mediaStats` event (a reading that comes after the call left is dropped).
    public func receivedStatistics(_ quality: CallQuality, for conversationUUID: UUID) {
        guard observed.keep(quality, for: conversationUUID) else { return }
        emit(.mediaStats(conversationUUID, quality))
    }

    /// The final SIP response that refused a live conversation's INVITE (486 Busy Here…), if one did.
    public func finalStatus(of conversationUUID: UUID) -> SIPFinalStatus? {
        observed.state.withLock { $0.finalStatuses[conversationUUID] }
    }

    /// Why a live conversation failed, in words, when the engine knows: the host not found, nobody listening (ICMP),
    /// no answer within timer B, a TLS handshake that failed and why.
    public func failure(of conversationUUID: UUID) -> String? {
        observed.state.withLock { $0.failures[conversationUUID] }
    }

    /// Ends every conversation through the manager's pipeline (End actions: BYE, CANCEL or a refusal, so each ends
    /// as `localEnded`), waits up to `grace` for them, closes whatever SIP is still open, removes the registration and
    /// waits (within the same grace) for those last requests to be answered, then invalidates the manager and flushes
    /// the history. Every wait ends on an event — the last conversation leaving, the last client transaction ending —
    /// or on the grace timer, which runs on the environment's clock; nothing polls. Call off the environment's thread.
    public func shutdown(grace: Duration = .seconds(2)) {
        precondition(!environment.isCurrent, "shutdown waits for the engine's thread")
        let conversationsEnded = ShutdownSignal()
        let requestsAnswered = ShutdownSignal()
        lastConversationLeft.withLock { $0 = conversationsEnded }
        _ = environment.executeAndWait { [environment] in
            _ = environment.schedule(after: grace) {
                conversationsEnded.fire()
                requestsAnswered.fire()
            }
        }
        for conversation in manager.conversations where conversation.state != .leaving && conversation.state != .left {
            do {
                try manager.perform([.end(conversationUUID: conversation.uuid)])
            } catch {
                log.debug("shutdown: cannot end \(conversation.uuid): \(error)")
            }
        }
        if manager.conversationCount == 0 { conversationsEnded.fire() }
        conversationsEnded.wait()
        // The last BYEs and the un-REGISTER get what is left of the grace period to be answered (their transactions
        // retransmit meanwhile).
        _ = environment.executeAndWait { [agent] in
            agent.value.endAll()
            agent.value.unregisterAll()
            agent.value.transactions.whenClientsDone { requestsAnswered.fire() }
        }
        requestsAnswered.wait()
        parseThread?.stop()
        manager.invalidate()
        history?.drain()
        liveCalls?.drain()
    }

    deinit {
        parseThread?.stop()
    }

    /// Our tag in the dialog of the call with this Call-ID (for benchmarks and tests that play the peer).
    public func localTag(ofCallID callID: String) -> String? {
        precondition(environment.isCurrent, "read on the engine's thread")
        return agent.value.localTag(ofCallID: callID)
    }

    /// Turns video on or off in a connected call by re-INVITE (LiveCommunicationKit's capability change: not an
    /// action of the manager, a media change reported as an update); `completion` hears nil once the peer took it,
    /// else why not. From any thread; the completion runs on the engine's.
    public func setVideo(_ on: Bool, for conversationUUID: UUID, completion: @escaping @Sendable (String?) -> Void) {
        environment.execute { [agent] in agent.value.setVideo(on, uuid: conversationUUID, completion: completion) }
    }

    /// Counters for status reports.
    public var statistics: EngineStatistics {
        environment.executeAndWait { [agent] in
            let counters = agent.value.counters
            let (servers, clients) = agent.value.transactions.count
            let load = agent.value.loadFigures
            return EngineStatistics(
                messagesReceived: counters.messagesReceived, malformedMessages: counters.malformed,
                retransmissionsAbsorbed: counters.retransmissionsAbsorbed, incomingCalls: counters.incomingCalls,
                outgoingCalls: counters.outgoingCalls, callsRefusedOverLimit: counters.callLimit.refused,
                callsRefusedOverMediaLimit: counters.mediaLimit.refused + counters.mediaLagRefused,
                inDialogRequestsRefused: counters.inDialogRefused,
                callersRefused: counters.callersRefused, callsRefusedPerSource: counters.refusedPerSource,
                requestsRefusedPerSource: counters.requestsRefusedPerSource, requestsDropped: counters.requestsDropped,
                sourcesBanned: agent.value.requestGuard.bannedSources(at: agent.value.environment.uptime),
                liveCalls: agent.value.legs.count,
                liveTransactions: servers + clients, pendingRequests: clients,
                requestsShed: counters.requestsShed, requestsShedDropped: counters.requestsShedDropped,
                refusalACKsAbsorbed: counters.refusalACKsAbsorbed, retransmissionsSpared: counters.retransmissionsSpared,
                parseQueueDrops: counters.parseQueueDrops,
                overloaded: load.overloaded, loadBusyPercent: load.busyPercent, loadShedPercent: load.shedPercent,
                loopLagMilliseconds: load.lagMilliseconds, queueWaitMilliseconds: load.queueWaitMilliseconds,
                callsWithAudio: agent.value.media?.mediaLoad.calls ?? 0,
                mediaLagMilliseconds: agent.value.media?.mediaHealth.map { Int($0.lag.components.seconds * 1_000 + $0.lag.components.attoseconds / 1_000_000_000_000_000) } ?? 0)
        } ?? EngineStatistics()
    }

    /// Runs `work` on the user agent, on the engine's thread, and waits for it (nil when the engine runs no more).
    func onEngine<Value: Sendable>(_ work: @escaping @Sendable (SIPUserAgent) -> Value) -> Value? {
        environment.executeAndWait { [agent] in work(agent.value) }
    }

    // MARK: ConversationManagerDelegate

    /// Performs `action` over SIP on the engine's thread (hopping there when called from elsewhere).
    public func conversationManager(_ manager: ConversationManager, perform action: ConversationAction) {
        emit(.actionPerformed(action))
        if environment.isCurrent {
            agent.value.perform(action)
        } else {
            environment.execute { [agent] in agent.value.perform(action) }
        }
    }

    /// Announces that an action settled (as the manager delivers it, after the changes it made). A conversation that
    /// ended is announced as `left` only once its history record is written, so an End's settlement comes first.
    public func conversationManager(
        _ manager: ConversationManager, didSettle action: ConversationAction, as state: ConversationAction.State
    ) {
        emit(.actionSettled(action, state))
    }

    /// Logs and announces the transition; a conversation that reached `left` is recorded first and its SIP side
    /// closed.
    public func conversationManager(_ manager: ConversationManager, conversationChanged conversation: Conversation) {
        let (previous, callID, finalStatus, failure) = observed.state.withLock {
            observed -> (Conversation.State?, String?, SIPFinalStatus?, String?) in
            let previous = observed.states[conversation.uuid]
            let finalStatus = observed.finalStatuses[conversation.uuid]
            let failure = observed.failures[conversation.uuid]
            if conversation.state == .left {
                observed.states[conversation.uuid] = nil
                observed.finalStatuses[conversation.uuid] = nil
                observed.failures[conversation.uuid] = nil
                observed.audio[conversation.uuid] = nil
                observed.video[conversation.uuid] = nil
            } else {
                observed.states[conversation.uuid] = conversation.state
            }
            return (previous, observed.callIDs[conversation.uuid], finalStatus, failure)
        }
        let transition = ConversationTransition(
            conversation: conversation, from: previous, callID: callID, finalStatus: finalStatus, failure: failure)
        if conversation.state != .left { liveCalls?.changed(conversation, callID: callID) }
        if conversation.state == .left {
            // The call's last audio figures came before `left` (its leg is forgotten first) and no more are kept.
            let quality = observed.state.withLock {
                if let callID = $0.callIDs.removeValue(forKey: conversation.uuid) { $0.uuids[callID] = nil }
                $0.rememberEnded(transition)
                return $0.quality.removeValue(forKey: conversation.uuid)
            }
            pushedCalls.removeUnlessDeclined(uuid: conversation.uuid)
            let uuid = conversation.uuid
            // An endpoint no description took (an offer refusing audio with port 0, a call that never got so far).
            externalMedia?.forget(uuid)
            if environment.isCurrent {
                agent.value.conversationLeft(uuid)
            } else {
                environment.execute { [agent] in agent.value.conversationLeft(uuid) }
            }
            if let waiting = lastConversationLeft.withLock({ $0 }), manager.conversationCount == 0 { waiting.fire() }
            if let history {
                history.record(conversation, callID: callID, quality: quality) { [self] record in
                    liveCalls?.ended(uuid)
                    announce(transition)
                    if let record { emit(.historyRecorded(conversation.uuid, recordID: record.id)) }
                }
                return
            }
        }
        announce(transition)
    }

    /// Every change goes to the event observers; state changes are also logged and go to transition observers.
    /// Runs `body` with the user agent on the engine's thread (extensions' way to it).
    func withAgent(_ body: @escaping @Sendable (SIPUserAgent) -> Void) { environment.execute { [agent] in body(agent.value) } }

    /// The user agent hears of it first (on the engine's thread): group sessions and call waiting follow it.
    private func announce(_ transition: ConversationTransition) {
        let conversation = transition.conversation
        if environment.isCurrent {
            agent.value.follow(conversation)
        } else {
            environment.execute { [agent] in agent.value.follow(conversation) }
        }
        if transition.changesState {
            log.info(transition.description)
            for observer in observers.withLock({ $0 }) { observer(transition) }
        }
        emit(.conversationChanged(transition))
    }
}


/// One change of a conversation, as the engine logs it (when its state changed) and announces it.
public struct ConversationTransition: Sendable, CustomStringConvertible {
    /// The conversation after the change.
    public let conversation: Conversation
    /// The state before (nil for a conversation seen for the first time; equal to the state when only other
    /// members changed).
    public let from: Conversation.State?
    /// The SIP Call-ID, when the conversation has a SIP side.
    public let callID: String?

    /// The final SIP response that refused its INVITE, if one did (486 Busy Here…).
    public var finalStatus: SIPFinalStatus? = nil
    /// Why it failed, in words, when the engine knows (``ParleyEngine/failure(of:)``).
    public var failure: String? = nil

    /// Whether the state changed (or the conversation is new).
    public var changesState: Bool { from != conversation.state }

    /// `conversation 1B4E28BA-… call-id a84b4c76e66710@pc33: ringing → joining`, with the ended reason on `left`.
    public var description: String {
        let to = conversation.state == .left
            ? "left (\(conversation.endedReason.map(\.description) ?? "?"))" : "\(conversation.state)"
        let start = from.map { "\($0)" } ?? "new"
        return "conversation \(conversation.uuid.uuidString) call-id \(callID ?? "-"): \(start) → \(to)"
    }
}

/// Holds the user agent, which is confined to the environment's thread.
// @unchecked Sendable: `value` is only touched on the environment's thread — every use above is either guarded by
// `environment.isCurrent` or inside a closure passed to `environment.execute`, which runs there.
private final class AgentBox: @unchecked Sendable {
    let value: SIPUserAgent
    init(_ value: SIPUserAgent) { self.value = value }
}
