import ConversationKit
import Foundation
import ParleyIO
import SIPMessages
import SIPSignaling
import SIPTransport

/// The running timers of one call leg, at most one of each kind (inline: no allocation per leg).
struct LegTimers {
    private var ring, autoAnswer, retransmitSuccess, ackTimeout, glareRetry, cancelGuard, reinviteGuard, tonesInStream: EngineTimer?
    private var sessionRefresh, sessionExpiry, transferNotify, forwardNoAnswer: EngineTimer?

    subscript(timer: CallLegTimer) -> EngineTimer? {
        get {
            switch timer {
            case .ring: ring
            case .autoAnswer: autoAnswer
            case .retransmitSuccess: retransmitSuccess
            case .ackTimeout: ackTimeout
            case .glareRetry: glareRetry
            case .cancelGuard: cancelGuard
            case .reinviteGuard: reinviteGuard
            case .tonesInStream: tonesInStream
            case .sessionRefresh: sessionRefresh
            case .sessionExpiry: sessionExpiry
            case .transferNotify: transferNotify
            case .forwardNoAnswer: forwardNoAnswer
            }
        }
        set {
            switch timer {
            case .ring: ring = newValue
            case .autoAnswer: autoAnswer = newValue
            case .retransmitSuccess: retransmitSuccess = newValue
            case .ackTimeout: ackTimeout = newValue
            case .glareRetry: glareRetry = newValue
            case .cancelGuard: cancelGuard = newValue
            case .reinviteGuard: reinviteGuard = newValue
            case .tonesInStream: tonesInStream = newValue
            case .sessionRefresh: sessionRefresh = newValue
            case .sessionExpiry: sessionExpiry = newValue
            case .transferNotify: transferNotify = newValue
            case .forwardNoAnswer: forwardNoAnswer = newValue
            }
        }
    }

    /// Removes and returns the running timer of a kind.
    mutating func take(_ timer: CallLegTimer) -> EngineTimer? {
        defer { self[timer] = nil }
        return self[timer]
    }

    /// Sets the running timer of a kind; returns the one it replaces.
    mutating func replace(_ timer: CallLegTimer, with started: EngineTimer) -> EngineTimer? {
        defer { self[timer] = started }
        return self[timer]
    }

    /// Every running timer.
    var all: [EngineTimer] {
        [ring, autoAnswer, retransmitSuccess, ackTimeout, glareRetry, cancelGuard, reinviteGuard, tonesInStream, sessionRefresh, sessionExpiry,
         transferNotify, forwardNoAnswer].compactMap { $0 }
    }
}

/// The driver's side of the call legs: feeding them inputs and carrying out their effects.
extension SIPUserAgent {
    /// Runs one transition of the leg of conversation `uuid` (nothing if it is gone) and carries out its effects.
    /// The leg is stored back before any effect runs, so effects that call out (reports to the manager, whose
    /// delegate may perform actions at once) find it as the transition left it.
    func drive(_ uuid: UUID, _ transition: (inout CallLeg, SIPUserAgent) -> [CallLegEffect]) {
        guard let index = legs.index(forKey: UUIDKey(uuid)) else { return }
        let effects = transition(&legs.values[index], self)
        apply(effects, leg: uuid)
        if media != nil { syncMedia(uuid) }
    }

    /// Reads the leg of conversation `uuid` in place (nil when it is gone). Dictionary.Values' getter would copy the
    /// whole leg out to read one field; its modify accessor, which this goes through, does not.
    func peek<Result>(_ uuid: UUID, _ read: (inout CallLeg) -> Result) -> Result? {
        guard let index = legs.index(forKey: UUIDKey(uuid)) else { return nil }
        return read(&legs.values[index])
    }

    /// A request within a dialog: to its leg (same Call-ID, our tag in To, theirs in From), else 481.
    func inDialog(
        _ request: SIPRequest, key: TransactionKey, _ transition: (inout CallLeg, SIPUserAgent) -> [CallLegEffect]
    ) {
        guard let uuid = leg(forInDialog: request) else { return respond(to: request, key: key, status: 481) }
        drive(uuid, transition)
    }

    /// The conversation of the leg a request within a dialog belongs to.
    func leg(forInDialog request: SIPRequest) -> UUID? {
        guard let callID = request.headers.callID, let uuid = legIDs[callID],
            peek(uuid, { $0.owns(inDialog: request) }) == true
        else { return nil }
        return uuid
    }

    /// An ACK outside any transaction: it acknowledges our 2xx (to the INVITE or a re-INVITE).
    func receiveACK(_ request: SIPRequest) {
        guard let uuid = leg(forInDialog: request) else { return }
        drive(uuid) { leg, context in leg.receiveACK(request, in: context) }
    }

    /// A CANCEL: to the incoming call whose INVITE it cancels, else 481.
    func receiveCancel(_ request: SIPRequest, key: TransactionKey) {
        guard let inviteKey = key.cancelledInvite, let callID = request.headers.callID, let uuid = legIDs[callID],
            peek(uuid, { $0.role == .callee && $0.inviteKey == inviteKey }) == true
        else { return respond(to: request, key: key, status: 481) }
        drive(uuid) { leg, context in leg.receiveCancel(request, key: key, in: context) }
    }

    /// Registers a new leg under its conversation and Call-ID.
    func add(_ leg: consuming CallLeg) {
        let uuid = leg.uuid, callID = leg.callID
        legs[UUIDKey(uuid)] = consume leg
        legIDs[callID] = uuid
        if media != nil { syncMedia(uuid) }
        onEvent?(.callCreated(uuid, callID: callID))
    }

    /// The conversation reached `left` by the manager's doing: whatever is still open in SIP is closed.
    func conversationLeft(_ uuid: UUID) {
        drive(uuid) { leg, context in leg.conversationLeft(in: context) }
    }

    /// Ends every call on shutdown (BYE, CANCEL, 480).
    func endAll() {
        for uuid in legs.values.map(\.uuid) {
            drive(uuid) { leg, context in leg.shutDown(in: context) }
        }
    }

    /// Our tag in the dialog of the call with this Call-ID.
    func localTag(ofCallID callID: String) -> String? {
        guard let uuid = legIDs[callID] else { return nil }
        return peek(uuid) { $0.localTag }
    }

    // MARK: Effects

    /// Carries out a leg's effects, in order.
    func apply(_ effects: [CallLegEffect], leg uuid: UUID) {
        for effect in effects {
            switch effect {
            case .send(let request, let purpose, let destination):
                let sent = transactions.send(request, to: destination, owner: .leg(uuid, purpose))
                if case .reinvite = purpose { lastReinvites[UUIDKey(uuid)] = sent }
            case .respond(let response, let key):
                transactions.respond(response, to: key)
            case .sendStateless(let message, let destination):
                transactions.sendStateless(message, to: destination)
            case .abandon(let purpose):
                transactions.abandon(leg: uuid, request: purpose)
            case .startTimer(let timer, let delay):
                startTimer(timer, after: delay, leg: uuid)
            case .cancelTimer(let timer):
                if let running = legTimers[UUIDKey(uuid)]?.take(timer) { environment.cancel(running) }
            case .report(let event):
                do {
                    try manager.reportConversationEvent(event, for: uuid)
                } catch {
                    log.debug("\(uuid) \(callID(of: uuid)): \(event) not applied: \(error)")
                }
                referredCallReported(event, uuid: uuid)
            case .transferAsked(let target):
                placeReferredCall(to: target, for: uuid)
            case .followRedirect(let target):
                followRedirect(to: target, for: uuid)
            case .transferProgress(let status, let final, let transferee):
                onEvent?(.transferProgress(uuid, status, final: final, transferee: transferee))
            case .performJoin:
                do {
                    try manager.perform([.join(conversationUUID: uuid)])
                } catch {
                    log.error("\(uuid) \(callID(of: uuid)): auto-answer refused: \(error)")
                }
            case .fulfil(let action):
                _ = action.action.fulfill(at: environment.now)
                holdSettled(action.action)
            case .fail(let action, let reason, let status):
                if case .pause(true) = action.action.kind { resumeAfterHold.remove(UUIDKey(action.action.conversationUUID)) }
                // The status is kept before the action settles: whoever reports the settlement reads it.
                if let status { actionFailures?.keep(status, for: action.action.uuid) }
                if !action.action.fail(reason: reason), status != nil { actionFailures?.forget(action.action.uuid) }
            case .log(let level, let line):
                log.write(level, "\(uuid) \(callID(of: uuid)): \(line)")
            case .videoSettled(let on, let failure):
                log.info("\(uuid) \(callID(of: uuid)): video \(on ? "on" : "off") \(failure.map { "refused: \($0)" } ?? "done")")
                videoRequests.removeValue(forKey: UUIDKey(uuid))?(failure)
            case .sendTonesInStream(let digits):
                log.info("\(uuid) \(callID(of: uuid)): tones \(digits) in the media stream (RFC 4733)")
                media?.sendTones(digits, for: uuid)
            case .tonesReceived(let digits):
                log.info("\(uuid) \(callID(of: uuid)): the remote side sent tone \(digits)")
                onEvent?(.tonesReceived(uuid, digits: digits))
            case .messageReceived(let request, let key):
                groups.received(request, key: key, on: uuid, toTag: peek(uuid) { $0.localTag })
            case .messageFailed(let token):
                groups.failed(token: token, on: uuid)
            case .forget:
                forget(uuid)
            }
        }
    }

    private func startTimer(_ timer: CallLegTimer, after delay: Duration, leg uuid: UUID) {
        let key = UUIDKey(uuid)
        let started = environment.schedule(after: delay) { [weak self] in
            guard let self, self.legTimers[key]?.take(timer) != nil else { return }
            self.drive(uuid) { leg, context in leg.timerFired(timer, in: context) }
        }
        if let replaced = legTimers[key, default: LegTimers()].replace(timer, with: started) { environment.cancel(replaced) }
    }

    /// A frontend turns video on or off in a connected call; `completion` hears nil when done, else why not.
    func setVideo(_ on: Bool, uuid: UUID, completion: @escaping (String?) -> Void) {
        let key = UUIDKey(uuid)
        guard legs[key] != nil else { return completion("the conversation has no SIP call") }
        guard manager.configuration.supportsVideo || !on else { return completion("this parleyd takes no video (--video)") }
        guard videoRequests[key] == nil else { return completion("a video change is already in progress") }
        videoRequests[key] = completion
        drive(uuid) { leg, context in leg.requestVideo(on, in: context) }
    }

    /// Forgets a leg: its timers stop and its Call-ID no longer matches. Transactions finish on their own.
    private func forget(_ uuid: UUID) {
        let key = UUIDKey(uuid)
        guard let leg = legs.removeValue(forKey: key) else { return }
        forgetSource(of: key)
        resumeAfterHold.remove(key)
        dialogBudgets[key] = nil
        unverifiedBudgets[key] = nil
        floodingDialogs.remove(key)
        videoRequests.removeValue(forKey: key)?("the call ended")
        inviteAlternatives[key] = nil
        if legIDs[leg.callID] == uuid { legIDs[leg.callID] = nil }
        for running in legTimers.removeValue(forKey: key)?.all ?? [] { environment.cancel(running) }
        if let reinvite = lastReinvites.removeValue(forKey: key) ?? nil { transactions.abandonIfProceeding(reinvite) }
        if let ended = legMedia.removeValue(forKey: key) {
            if ended.video != nil { media?.videoChanged(nil, for: uuid) }
            if ended.audio != nil {
                if let final = media?.statistics(for: uuid) { onEvent?(.finalStatistics(uuid, final)) }
                media?.audioChanged(nil, for: uuid)
                onEvent?(.mediaChanged(uuid, nil, video: nil))
            }
            if let endpoint = ended.endpoint { media?.releaseEndpoint(endpoint, of: uuid) }
        }
        media?.releaseVideo(of: uuid)
        dispose(consume leg)
    }

    /// The Call-ID of a live leg, for log lines.
    private func callID(of uuid: UUID) -> String {
        peek(uuid) { $0.callID } ?? "-"
    }
}

extension SIPUserAgent: TransactionUser {
    /// The seconds of a response's Retry-After (RFC 3261 §20.33), if it has a usable one: ASCII digits, at most a
    /// day (a peer's huge number is a day, never an overflow further on).
    static func retryAfterSeconds(of response: SIPResponse) -> Int? {
        guard let digits = response.headers["Retry-After"].map({ $0.prefix { $0.isASCII && $0.isNumber } }), !digits.isEmpty
        else { return nil }
        return Int(digits.prefix(6)).map { min($0, maxRetryAfterSeconds) }
    }

    /// An INVITE nothing answered (timer B, a transport error) goes to the next target of its host, if it has one
    /// left and nothing answered it at all; true when it did.
    private func retriedElsewhere(_ uuid: UUID, after event: ClientTransactionEvent) -> Bool {
        switch event {
        case .response: return false
        case .timeout, .transportError: break
        }
        let key = UUIDKey(uuid)
        guard var alternatives = inviteAlternatives[key], !alternatives.isEmpty else { return false }
        let next = alternatives.removeFirst()
        inviteAlternatives[key] = alternatives.isEmpty ? nil : alternatives
        var retried = false
        drive(uuid) { leg, context in
            guard let effects = leg.retarget(to: next, in: context) else { return [] }
            retried = true
            return effects
        }
        return retried
    }

    /// Keeps what ended an outgoing INVITE for the conversation's failure: the refusal's status, or, in words, the
    /// transport's failure or the timer B that ran out.
    private func noteInviteOutcome(_ event: ClientTransactionEvent, of uuid: UUID) {
        switch event {
        case .response(let response):
            // A 422 the leg answers by asking again (RFC 4028) is not the call's failure.
            if response.statusCode >= 300, peek(uuid, { $0.asksAgain(after: response) }) != true {
                onEvent?(.finalStatus(uuid, SIPFinalStatus(response)))
                if referredCalls[UUIDKey(uuid)] != nil { referredStatus[UUIDKey(uuid)] = SIPFinalStatus(response) }
            }
        case .timeout:
            let target = peek(uuid) { $0.invite.uri.description } ?? "the callee"
            let seconds = (configuration.timers.t1 * 64).components.seconds
            onEvent?(.failure(uuid, "no answer from \(target) within \(seconds) s (SIP timer B)"))
        case .transportError:
            onEvent?(.failure(uuid, transportFailure ?? "the transport could not send the INVITE"))
        }
    }

    /// The longest Retry-After taken from a peer.
    static let maxRetryAfterSeconds = 86_400

    /// A client transaction of a leg or of the registration has news.
    func clientTransaction(of owner: TransactionOwner, event: ClientTransactionEvent) {
        switch owner {
        case .leg(let uuid, .message(let token)):
            // A MESSAGE's answer changes nothing in the dialog: it goes to the messenger.
            switch event {
            case .response(let response):
                guard !response.isProvisional else { return }
                let retryAfter = Self.retryAfterSeconds(of: response)
                groups.answered(token: token, status: response.statusCode, retryAfter: retryAfter, on: uuid)
            case .timeout, .transportError:
                groups.failed(token: token, on: uuid)
            }
        case .leg(let uuid, let request):
            if request == .invite, retriedElsewhere(uuid, after: event) { return }
            if request == .invite { noteInviteOutcome(event, of: uuid) }
            drive(uuid) { leg, context in
                switch event {
                case .response(let response): leg.receive(response, to: request, in: context)
                case .timeout: leg.requestFailed(request, .timeout, in: context)
                case .transportError: leg.requestFailed(request, .transportError, in: context)
                }
            }
        case .registration(let attempt, let account):
            registrationAnswered(event, attempt: attempt, account: account)
        case .keepAlive(let flow):
            keepAliveAnswered(event, flow: flow)
        }
    }
}
