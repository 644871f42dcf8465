import CallHistory
import ControlChannel
import ControlProtocol
import ConversationKit
import Foundation
import ParleyEngine
import Synchronization

/// Serves the control protocol against a running engine: every method becomes an action through the same manager
/// pipeline that network-caused actions use. `start` and `redial` are answered as soon as their conversation exists;
/// every other action when it has completed (or failed, or timed out). Every change of a conversation, and of the
/// history, becomes an event for the sink the transport gives (``publishEvents(to:)``). Transport-agnostic: it takes
/// a request line and gives response lines.
public final class ControlService: Sendable {
    /// The engine served.
    public let engine: ParleyEngine
    /// The call history, for the history methods (nil: they answer `unavailable`).
    let history: (any CallHistoryStore)?
    /// The contacts that name people.
    let contacts: ContactBook
    private let facts: @Sendable () -> DaemonFacts
    private let limits: StatusLimits
    /// What the events have said so far (see ControlService+Events).
    let events = Mutex(EventState())
    /// `groupSend` requests waiting for their message's report, and reports that came first.
    let groupReplies = Mutex(GroupReplyTable())
    /// What carries calls' audio to a page (nil: browser audio is `unavailable`).
    let browserAudio = Mutex<(any BrowserAudioCarrier)?>(nil)
    /// What chooses calls' devices (nil: `audioDevices` is empty, `setAudioDevice` `unavailable`).
    let deviceChooser = Mutex<(any AudioDeviceChooser)?>(nil)
    /// What chooses calls' video sources (nil: `videoDevices` is empty, `setVideoSource` `refused`).
    let videoChooser = Mutex<(any VideoSourceChooser)?>(nil)
    /// This run's mark on `list` cursors (positions start again with the next run).
    /// How long a `transfer` may take: the leg's wait for the outcome (90 s after the REFER is accepted) and a little.
    static let transferTimeout: TimeInterval = 100
    let listEpoch = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)

    /// A service for `engine`; `facts` tells `status` the daemon's own facts, `connection` its connection limits.
    public init(
        engine: ParleyEngine, history: (any CallHistoryStore)? = nil, contacts: ContactBook = ContactBook(nil),
        connection: ControlLimits = ControlLimits(), facts: @escaping @Sendable () -> DaemonFacts
    ) {
        self.engine = engine
        self.history = history
        self.contacts = contacts
        self.limits = Self.limits(connection: connection, engine: engine)
        self.facts = facts
        engine.observeEvents { [weak self] event in self?.publish(event) }
    }

    /// What the transport should do besides answering.
    public enum Directive: Sendable {
        /// Nothing more.
        case none
        /// Start sending events to this client (and audio levels, or no longer).
        case subscribe(audioLevels: Bool)
    }

    /// Handles one request line; `reply` is called exactly once, now or when the action completes.
    @discardableResult
    public func handle(_ line: Data, reply: @escaping @Sendable (Data) -> Void) -> Directive {
        let request: ControlRequest
        do {
            request = try ControlRequest.parse(line)
        } catch {
            reply(ControlMessage.error(error.error, id: error.id))
            return .none
        }
        do {
            return try serve(request.command, id: request.id, reply: reply)
        } catch {
            reply(ControlMessage.error(error, id: request.id))
            return .none
        }
    }

    private func serve(
        _ command: ControlCommand, id: ControlRequestID, reply: @escaping @Sendable (Data) -> Void
    ) throws(ControlError) -> Directive {
        switch command {
        case .status:
            reply(ControlMessage.result(status(), id: id))
        case .list(let params):
            reply(ControlMessage.result(try listPage(params), id: id))
        case .subscribe(let params):
            let levels = params.audioLevels ?? false
            let events = ControlEventMessage.Name.allCases.filter { levels || $0 != .audioLevels }
            reply(ControlMessage.result(SubscribeResult(events: events.map(\.rawValue)), id: id))
            return .subscribe(audioLevels: levels)
        case .start(let params):
            let account = try account(named: params.account)
            let handle: Handle
            switch DialTarget.handle(for: params.to, through: account, configuration: engine.configuration) {
            case .success(let found): handle = found
            case .failure(let problem):
                throw ControlError(.invalidParams, problem.message, details: .init(field: "to", technical: problem.technical))
            }
            let start = ConversationAction.start(handles: [handle], isVideo: params.video ?? false)
            if let method = params.encryption.flatMap(MediaEncryptionPolicy.Offer.init(rawValue:)),
                let problem = engine.encryptStart(method, conversation: start.conversationUUID)
            {
                throw ControlError(.invalidParams, problem + ".", field: "encryption")
            }
            if let name = params.account { _ = engine.placeThrough(account: name, conversation: start.conversationUUID) }
            try perform(start, id: id, media: params.media, makingRoom: false, reply: reply)
        case .join(let params):
            let join = ConversationAction.join(conversationUUID: try conversation(params.conversation))
            try perform(join, id: id, media: params.media, makingRoom: params.endOthers ?? false, reply: reply)
        case .end(let params):
            try perform(.end(conversationUUID: try conversation(params.conversation)), id: id, reply: reply)
        case .hold(let params):
            try perform(.pause(conversationUUID: try conversation(params.conversation), isPaused: true), id: id, reply: reply)
        case .resume(let params):
            try perform(.pause(conversationUUID: try conversation(params.conversation), isPaused: false), id: id, reply: reply)
        case .mute(let params):
            let uuid = try conversation(params.conversation)
            try perform(.mute(conversationUUID: uuid, isMuted: params.muted ?? true), id: id, reply: reply)
        case .unmute(let params):
            try perform(.mute(conversationUUID: try conversation(params.conversation), isMuted: false), id: id, reply: reply)
        case .playTone(let params):
            let uuid = try conversation(params.conversation)
            try perform(.playTone(conversationUUID: uuid, digits: params.digits), id: id, reply: reply)
        case .merge(let params):
            let uuid = try conversation(params.conversation)
            let other = try conversation(params.with, field: "with")
            try perform(.merge(conversationUUID: uuid, with: other), id: id, reply: reply)
        case .unmerge(let params):
            try perform(.unmerge(conversationUUID: try conversation(params.conversation)), id: id, reply: reply)
        case .transfer(let params):
            let uuid = try conversation(params.conversation)
            let handle = try transferTarget(params, from: uuid)
            // The action waits for the outcome, which may take the target's ringing: the leg's own bound, and a little.
            let deadline = engine.manager.clock.now().addingTimeInterval(Self.transferTimeout)
            try perform(.transfer(conversationUUID: uuid, to: handle, timeoutDate: deadline), id: id, reply: reply)
        case .mediaStats(let params):
            let uuid = try conversation(params.conversation)
            let result = MediaStatsResult(
                conversation: uuid.uuidString, media: engine.audio(of: uuid).map(Self.media),
                stats: engine.quality(of: uuid).map(Self.stats), video: engine.video(of: uuid).map(Self.video))
            reply(ControlMessage.result(result, id: id))
        case .silence(let params):
            let uuid = try conversation(params.conversation)
            reply(ControlMessage.result(SilenceResult(conversation: uuid.uuidString, silenced: engine.silenceRinging(uuid)), id: id))
        case .video(let params):
            try setVideo(params.enabled, on: try conversation(params.conversation), id: id, reply: reply)
        case .browserAudio(let params):
            try openBrowserAudio(params, on: try conversation(params.conversation), id: id, reply: reply)
        case .browserAudioEnd(let params):
            try endBrowserAudio(on: try conversation(params.conversation), id: id, reply: reply)
        case .audioDevices:
            serveAudioDevices(id: id, reply: reply)
        case .setAudioDevice(let params):
            try setAudioDevice(params, on: try conversation(params.conversation), id: id, reply: reply)
        case .videoDevices:
            serveVideoDevices(id: id, reply: reply)
        case .setVideoSource(let params):
            try setVideoSource(params, on: try conversation(params.conversation), id: id, reply: reply)
        case .doNotDisturb(let params):
            if let enabled = params.enabled { engine.setDoNotDisturb(enabled) }
            reply(ControlMessage.result(DoNotDisturbState(enabled: engine.doNotDisturb), id: id))
        case .forwarding(let params):
            let name = try account(named: params.account)?.name
            if !params.isReadOnly {
                let rules = try params.applied(to: engine.forwarding(account: name))
                let ringing = engine.configuration.ringTimeout
                guard rules.noAnswer == nil || rules.noAnswerAfter < ringing else {
                    throw ControlError(
                        .invalidParams, "noAnswerSeconds must be shorter than parleyd's ring timeout (\(ringing.components.seconds) s).",
                        field: "noAnswerSeconds")
                }
                engine.setForwarding(rules, account: name)
            }
            reply(ControlMessage.result(ForwardingState(engine.forwarding(account: name)), id: id))
        case .contact(let params):
            guard contacts.current != nil else {
                throw ControlError(.unavailable, "This parleyd has no contacts (start it with --contacts FILE).")
            }
            let candidates = DialTarget.lookupCandidates(for: params.handle, kind: params.kind.flatMap(Handle.Kind.init(name:)))
            let matched = candidates.lazy.compactMap { candidate in self.contacts.contactName(for: candidate).map { (candidate, $0) } }.first
            let handle = matched?.0 ?? candidates[0]
            let name = matched?.1
            reply(ControlMessage.result(ContactResult(handle: HandleInfo(handle, contactName: name), contactName: name), id: id))
        case .contacts(let params):
            guard let directory = contacts.current else {
                throw ControlError(.unavailable, "This parleyd has no contacts (start it with --contacts FILE).")
            }
            let found = directory.search(params.query ?? "", limit: params.limit ?? 50).map { contact in
                ContactInfo(name: contact.name, handles: contact.handles.map { HandleInfo($0, contactName: contact.name) })
            }
            reply(ControlMessage.result(ContactsResult(contacts: found), id: id))
        case .reloadContacts:
            reply(ControlMessage.result(try reloadContacts(), id: id))
        case .groupSessions, .groupActivate, .groupJoin, .groupLeave, .groupEnd, .groupSend:
            try serveGroup(command, id: id, reply: reply)
        case .identity, .collaborations, .collaborationStart, .collaborationOpen, .collaborationChallenge, .collaborationProve,
            .collaborationVerify, .collaborationConfirm, .collaborationNotice, .collaborationEnd, .identityUpdateProve,
            .collaborationReplaceIdentity:
            try serveCollaboration(command, id: id, reply: reply)
        case .history, .historyCount, .markRead, .deleteRecord, .clearHistory, .redial:
            guard let history else {
                throw ControlError(.unavailable, "This parleyd keeps no call history (it runs with --no-history).")
            }
            try serveHistory(command, history: history, id: id, reply: reply)
        }
        return .none
    }

    /// Reads the contacts file again and renames live conversations (their `conversationChanged` events follow).
    @discardableResult
    public func reloadContacts() throws(ControlError) -> ReloadContactsResult {
        guard contacts.isReloadable else {
            throw ControlError(.unavailable, "This parleyd has no contacts file (start it with --contacts FILE).")
        }
        let directory: ContactDirectory
        do {
            directory = try contacts.reload()
        } catch {
            throw ControlError(.failed, "The contacts file could not be read; the old contacts stay.", details: .init(technical: "\(error)"))
        }
        refreshLiveConversations()
        return ReloadContactsResult(contacts: directory.count, conflicts: directory.conflicts.count)
    }

    private func status() -> StatusResult {
        let statistics = engine.statistics
        var counters = StatusCounters()
        counters.messagesReceived = statistics.messagesReceived
        counters.malformedMessages = statistics.malformedMessages
        counters.incomingCalls = statistics.incomingCalls
        counters.outgoingCalls = statistics.outgoingCalls
        counters.callsRefusedOverLimit = statistics.callsRefusedOverLimit
        counters.callsRefusedOverMediaLimit = statistics.callsRefusedOverMediaLimit
        counters.inDialogRequestsRefused = statistics.inDialogRequestsRefused
        counters.callersRefused = statistics.callersRefused
        counters.callsRefusedPerSource = statistics.callsRefusedPerSource
        counters.requestsRefusedPerSource = statistics.requestsRefusedPerSource
        counters.requestsDropped = statistics.requestsDropped
        counters.sourcesBanned = statistics.sourcesBanned
        counters.liveCalls = statistics.liveCalls
        counters.liveTransactions = statistics.liveTransactions
        counters.requestsShed = statistics.requestsShed
        counters.requestsShedDropped = statistics.requestsShedDropped
        counters.retransmissionsSpared = statistics.retransmissionsSpared
        counters.parseQueueDrops = statistics.parseQueueDrops
        counters.overloaded = statistics.overloaded ? 1 : 0
        counters.loadBusyPercent = statistics.loadBusyPercent
        counters.loadShedPercent = statistics.loadShedPercent
        counters.callsWithAudio = statistics.callsWithAudio
        counters.mediaLagMs = statistics.mediaLagMilliseconds
        counters.loopLagMs = statistics.loopLagMilliseconds
        counters.queueWaitMs = statistics.queueWaitMilliseconds
        return StatusResult(
            daemon: facts(), accounts: engine.registrations.map { Self.registration($0.state, of: $0.account) },
            conversations: engine.manager.conversations.count, counters: counters, limits: limits)
    }

    /// The limits `status` reports: the connection's, the manager's merge limits (a frontend offers Merge only where
    /// they allow it) and the SIP side's (docs/robustness.md), for a frontend that explains a refusal.
    static func limits(connection: ControlLimits, engine: ParleyEngine) -> StatusLimits {
        StatusLimits(
            maxClients: connection.maxClients, helloTimeoutMs: Int(connection.helloTimeout * 1000),
            maxMessageBytes: connection.maxLineBytes, maxQueuedBytes: connection.maxQueuedBytes,
            evictionIdleTimeMs: Int(connection.evictionIdleTime * 1000), maxIDBytes: ControlProtocol.maxIDBytes,
            maxConversationGroups: engine.manager.configuration.maximumConversationGroups,
            maxConversationsPerGroup: engine.manager.configuration.maximumConversationsPerConversationGroup,
            maxCalls: engine.configuration.maxCalls, maxRingingPerSource: engine.configuration.maxRingingPerSource,
            maxRequestsPerSource: engine.configuration.maxRequestsPerSource,
            sourceBanSeconds: Int(engine.configuration.sourceBan.components.seconds), maxMediaCalls: engine.mediaCapacity ?? 0,
            maxPendingConnections: connection.maxPendingConnections, maxPendingPerSource: connection.maxPendingPerSource)
    }

    /// Performs a Start or Join whose call's RTP the frontend takes at `media` (with `--media external`; refused
    /// otherwise). The endpoint waits for the call's first description; one the action never gets to is dropped.
    /// Call waiting makes room for it first (``ParleyEngine/perform(_:makingRoom:)``; `makingRoom` true: the others
    /// end).
    private func perform(
        _ action: ConversationAction, id: ControlRequestID, media: MediaEndpointParams?, makingRoom endingOthers: Bool,
        reply: @escaping @Sendable (Data) -> Void
    ) throws(ControlError) {
        guard let media else { return try perform(action, id: id, makingRoom: endingOthers, reply: reply) }
        guard let external = engine.externalMedia else {
            throw ControlError(
                .invalidParams, "`media` is taken only when parleyd runs with --media external (a frontend carries the audio).",
                field: "media")
        }
        let uuid = action.conversationUUID
        var endpoint = MediaEndpoint(address: media.address, port: media.port)
        endpoint.videoPort = media.videoPort
        external.setEndpoint(endpoint, for: uuid)
        do {
            try perform(action, id: id, makingRoom: endingOthers, reply: reply)
        } catch {
            external.forget(uuid)
            throw error
        }
        action.whenSettled { state in
            if case .complete = state { return }
            external.forget(uuid)
        }
    }

    /// Performs `action` through the manager (with `makingRoom`, call waiting's actions before it: true, the others
    /// end). A Start is answered at once (its conversation exists now, in `idle`); any other action when it settles
    /// (the manager times it out if the engine never does).
    func perform(
        _ action: ConversationAction, id: ControlRequestID, makingRoom endingOthers: Bool? = nil,
        reply: @escaping @Sendable (Data) -> Void
    ) throws(ControlError) {
        do {
            if let endingOthers {
                try engine.perform(action, makingRoom: endingOthers)
            } else {
                try engine.manager.perform([action])
            }
        } catch {
            throw ControlError.refused(
                error, action: Self.name(of: action), direction: engine.manager.conversation(action.conversationUUID)?.direction)
        }
        if case .start = action.kind {
            reply(ControlMessage.result(actionResult(action, state: "pending"), id: id))
            return
        }
        action.whenSettled { [self] state in
            if case .complete = state {
                reply(ControlMessage.result(actionResult(action, state: "complete"), id: id))
            } else {
                reply(ControlMessage.error(error(settling: action, as: state) ?? ControlError(.failed, "That did not work."), id: id))
            }
        }
    }

    /// Video on or off: a media change through the engine (not a manager action), answered when the peer has
    /// answered the re-INVITE.
    private func setVideo(
        _ enabled: Bool, on uuid: UUID, id: ControlRequestID, reply: @escaping @Sendable (Data) -> Void
    ) throws(ControlError) {
        guard engine.manager.configuration.supportsVideo || !enabled else {
            throw ControlError(.refused, "Video calls are off in this parleyd (start it with --video).", details: .init(action: "video"))
        }
        guard let conversation = engine.manager.conversation(uuid), conversation.state == .joined else {
            throw ControlError(.refused, "Can't change video on this call: it is not connected.", details: .init(action: "video"))
        }
        let request = UUID()
        engine.setVideo(enabled, for: uuid) { [self] failure in
            if let failure {
                let message = enabled ? "The other side did not take video." : "Couldn't turn video off."
                reply(ControlMessage.error(ControlError(.failed, message, details: .init(action: "video", technical: failure)), id: id))
                return
            }
            let result = ActionResult(
                action: "video", actionUUID: request.uuidString, state: "complete", conversation: latestInfo(of: uuid))
            reply(ControlMessage.result(result, id: id))
        }
    }

    private func actionResult(_ action: ConversationAction, state: String) -> ActionResult {
        ActionResult(
            action: Self.name(of: action), actionUUID: action.uuid.uuidString, state: state,
            conversation: latestInfo(of: action.conversationUUID))
    }

    /// The conversation a parameter names: a full uuid or a unique prefix of a live one.
    func conversation(_ text: String, field: String = "conversation") throws(ControlError) -> UUID {
        let lowered = text.lowercased()
        if let uuid = UUID(uuidString: lowered), engine.manager.conversation(uuid) != nil { return uuid }
        let matches = engine.manager.conversations.filter { $0.uuid.uuidString.lowercased().hasPrefix(lowered) }
        switch matches.count {
        case 1: return matches[0].uuid
        case 0: throw ControlError(.notFound, "No live call matches \(text.debugDescription).", field: field)
        default:
            throw ControlError(
                .notFound, "\(text.debugDescription) matches \(matches.count) calls; give more of the uuid.",
                details: .init(field: field, matches: matches.map(\.uuid.uuidString)))
        }
    }

    /// An action as the protocol names it: the method that asks for it (`hold`, not the manager's `pause`), with
    /// `unmute` for a mute that unmutes.
    static func name(of action: ConversationAction) -> String {
        action.kind.name == "pause" ? "hold" : action.kind.name
    }

    /// The protocol's view of a registration state.
    /// The account `name` names (nil: the default one), or an error naming the accounts there are.
    func account(named name: String?) throws(ControlError) -> Account? {
        guard let name else { return nil }
        if let account = engine.configuration.account(named: name) { return account }
        let names = engine.configuration.accounts.map(\.name)
        let known = names.isEmpty ? "this parleyd has no accounts" : "its accounts are " + names.joined(separator: ", ")
        throw ControlError(.invalidParams, "No account is named \(name.debugDescription): \(known).", field: "account")
    }

    static func registration(_ state: RegistrationState, of account: Account) -> RegistrationInfo {
        var info = switch state {
        case .unregistered: RegistrationInfo(state: "unregistered")
        case .registering: RegistrationInfo(state: "registering")
        case .registered(let until, let mapped):
            RegistrationInfo(state: "registered", expiresAt: ControlTime.string(until), mappedAddress: mapped)
        case .failed(let reason): RegistrationInfo(state: "failed", reason: reason)
        }
        info.account = account.addressOfRecord.description
        info.name = account.name
        return info
    }
}
