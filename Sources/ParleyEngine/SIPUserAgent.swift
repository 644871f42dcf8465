import CallHistory
import Collaboration
import ConversationKit
import Foundation
import GroupActivities
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport

/// The one place where SIP meets the conversation lifecycle: the driver of the call-leg machines (``CallLeg``) and
/// the registration machine (``RegistrationMachine``). It routes received SIP to its transaction and leg, feeds the
/// legs actions, timers and transaction events, and carries out the effects they return (sending, timers, reports
/// to the manager, fulfilling actions).
///
/// Confined to the environment's thread: every entry point (``receive(_:)``, ``perform(_:)``, timers) runs there.
final class SIPUserAgent {
    let configuration: EngineConfiguration
    let environment: any SIPEnvironment
    let manager: ConversationManager
    let transactions: TransactionLayer
    let log: EngineLog
    /// Live legs by conversation (its uuid as a cheaply hashed key), and their conversations by Call-ID.
    var legs: [UUIDKey: CallLeg] = [:]
    var legIDs: [String: UUID] = [:]
    /// The running timers of each leg.
    var legTimers: [UUIDKey: LegTimers] = [:]
    /// The calls we placed because a peer transferred us (its REFER), each with the call whose peer asked, and the
    /// final status of each one's INVITE (what the NOTIFY reports).
    var referredCalls: [UUIDKey: UUID] = [:]
    var referredStatus: [UUIDKey: SIPFinalStatus] = [:]
    /// The `Replaces` header of referred calls not placed yet (an attended transfer), by their conversation.
    var replacingCalls: [UUIDKey: String] = [:]
    /// The client transaction of each leg's latest re-INVITE, dropped with the leg if still in Proceeding.
    var lastReinvites: [UUIDKey: TransactionKey?] = [:]
    /// Incoming legs by the source address their INVITE came from, while they may still ring (pruned when asked;
    /// a forgotten leg leaves at once), and each such leg's source.
    var ringingFrom: [SourceKey: [UUIDKey]] = [:]
    var sourceOfLeg: [UUIDKey: SourceKey] = [:]
    /// Each established call's budget of in-dialog MESSAGE and INFO requests, and the calls that went over it.
    var dialogBudgets: [UUIDKey: DialogBudget] = [:]
    /// Per call, the budget of text from outside its dialog claiming its peer (SIPUserAgent+Message).
    var unverifiedBudgets: [UUIDKey: DialogBudget] = [:]
    var floodingDialogs: Set<UUIDKey> = []
    /// The density check of new requests per source, and the sources it never applies to (nor the ringing limit).
    var requestGuard: SourceRateGuard
    let exemptSources: Set<SourceKey>
    /// Counters for the status report.
    var counters = EngineCounters()
    /// Legs forgotten while a parsed batch was handled: they go back to the parse thread with the batch, to be freed
    /// there (`ParseThread.release`); legs forgotten at other times go at once.
    private var forgottenLegs: [CallLeg] = []
    private var handlingParsedBatch = false
    /// `ParseThread.wake()` is due at the end of this turn.
    private var parseThreadWakeDue = false
    /// Names incoming conversations: in the order they came, so the history's uuid index grows at its end.
    var conversationUUIDs = TimeOrderedUUIDs()
    /// Request-URIs and addresses parsed recently (most of a call's are seen again; `SIPParseMemo`).
    let parseMemo = SIPParseMemo()
    /// Where messages are parsed when `EngineConfiguration.parsesOnThread` (else on this thread, inline). Weak:
    /// the engine owns the thread, whose delivery holds this agent.
    weak var parseThread: ParseThread?
    /// While a message from the parse thread is handled: the new INVITE's SDP body and what the thread parsed of it.
    private var preparsedOffer: (body: Data, result: Result<SDPSession, SDPParseError>)?
    /// Overload control, when configured (`SIPUserAgent+Overload.swift`).
    var shedder: LoadShedder?
    /// The last load probe: when it ran and the environment's idle time then.
    var lastLoadProbe: (at: Duration, idle: Duration, parseIdle: Duration?)?
    /// How late the last load probe fired (the loop's lag).
    var loopLag: Duration = .zero
    /// The longest a datagram read in this probe window waited in the receive queue (nil: none measured yet).
    var longestQueueWait: Duration?
    /// The same for the last whole window, for `status`.
    var lastQueueWait: Duration = .zero
    /// When overload control last refused a request statelessly (nil: never). Only until 64·T1 after it can an ACK
    /// for such a refusal come, so only then are ACKs looked at for one (a line scan of every ACK was 1 % of the loop).
    var lastStatelessRefusal: Duration?
    /// Our Contact header values, by what decides them.
    var contactHeaders: [ContactKey: String] = [:]
    /// The address of the interface toward each peer host, when we listen on every interface (see
    /// SIPUserAgent+Addresses).
    var routedHosts: [String: String] = [:]
    /// The accounts, as configured (the first is the default), with their registrations.
    var accounts: [AccountState]
    /// The accounts by their Contact's `line` parameter and by their address of record (`user@host`, the host in
    /// lower case), to tell which one an incoming call came in on.
    let accountsByLine: [String: Int]
    let accountsByAddress: [String: Int]
    /// Registrar hosts, each with the first account registered there (whose NAT mapping peers through it get), and
    /// peer hosts whose calls came to us through a registrar, with that account (see SIPUserAgent+Addresses).
    var registrarAccounts: [String: Int] = [:]
    var hostsThroughRegistrar: [String: Int] = [:]
    /// The keep-alives toward registrars, one per flow.
    var keepAlives: [FlowKey: FlowKeepAlive] = [:]
    /// Told of every fact its engine hears of (``AgentEvent``), on the environment's thread.
    var onEvent: ((AgentEvent) -> Void)?
    /// Whether calls refused by the caller policy are told (`callerBlocked`: they are recorded).
    var tellsBlockedCallers = false
    /// Whether do-not-disturb is on: new calls are refused with 486 before they ring (``ParleyEngine/setDoNotDisturb(_:)``).
    var doNotDisturb = false
    /// Where incoming calls are forwarded (``ParleyEngine/setForwarding(_:account:)``), and for the accounts with
    /// rules of their own, theirs (by account index).
    var forwarding = CallForwarding()
    var accountForwarding: [Int: CallForwarding] = [:]
    /// Whether the calls refused by do-not-disturb are told (recorded): with a history.
    var tellsRefusedByDoNotDisturb = false
    /// What frontends chose for their Starts (the engine's; nil in tests that drive the agent alone).
    var startChoices: StartChoices?
    /// Frontends' requests to turn video on or off, waiting for their re-INVITE's answer, by leg.
    var videoRequests: [UUIDKey: (String?) -> Void] = [:]
    /// Members of a merge whose hold was still on its way when it went through: they resume once it is done.
    var resumeAfterHold: Set<UUIDKey> = []
    /// The calls held for a new call (call waiting), by the new call: they resume if it never connects.
    var heldForNewCall: [UUIDKey: [UUID]] = [:]
    /// The transport failure being reported to the transactions, while it is (their failures carry it).
    var transportFailure: String?
    /// Where the peer's refusal behind a failed action is kept (the engine's; nil in tests that drive the agent alone).
    var actionFailures: ActionFailureStatuses?
    /// Blocked callers told this minute (`EngineConfiguration.blockedRecordsPerMinute` at most).
    var blockedWindow: (start: Duration, count: Int) = (.zero, 0)
    /// What carries calls' audio, when anything does; each leg's reserved RTP port and the audio last handed to it.
    var media: CallMediaHandler?
    var legMedia: [UUIDKey: LegMedia] = [:]
    /// Finds where host names' requests go (RFC 3263); nil: only numeric hosts can be called.
    var locator: SIPServerLocator?
    /// The targets located for each host name, in failover order (the resolver keeps them for their TTL; this keeps
    /// the order after failures).
    var located: [SIPServerRequest: [SIPDestination]] = [:]
    /// The targets an outgoing INVITE has not tried yet (RFC 3263 failover), by conversation.
    var inviteAlternatives: [UUIDKey: [SIPDestination]] = [:]
    /// The media timeout's periodic check, while a call is watched.
    var mediaCheckTimer: EngineTimer?
    /// The session id our SDP origins use (one per process).
    let sessionID = UInt64.random(in: 1...UInt64(Int64.max))

    /// The node's group sessions and their messenger (made in `init`, it needs the agent).
    var groups: GroupMessaging!
    /// The node's collaborations (made in `init`, it needs the agent).
    var collaborations: Collaborations!

    /// Calls announced by VoIP pushes, waiting for their INVITEs.
    let pushedCalls: PushedCallRegistry
    /// Our local member handle, computed once (read from any thread: it never changes).
    let localHandleSnapshot: Handle

    init(
        configuration: EngineConfiguration, environment: any SIPEnvironment, manager: ConversationManager,
        log: EngineLog, pushedCalls: PushedCallRegistry = PushedCallRegistry()
    ) {
        self.pushedCalls = pushedCalls
        let listen = configuration.listenAddresses[0]
        let value = "sip:\(configuration.userName)@\(Self.uriHost(configuration.publicAddress ?? listen.host)):\(listen.port)"
        self.localHandleSnapshot = Handle(kind: .generic, value: value, displayName: configuration.displayName ?? value)
        self.configuration = configuration
        self.environment = environment
        self.manager = manager
        self.log = log
        self.transactions = TransactionLayer(environment: environment, timers: configuration.timers)
        self.requestGuard = SourceRateGuard(limit: configuration.maxRequestsPerSource, ban: configuration.sourceBan)
        self.shedder = configuration.overload.map(LoadShedder.init(policy:))
        self.exemptSources = Set(configuration.exemptSources.map(SourceKey.init(host:)))
        self.accounts = configuration.accounts.map {
            AccountState(
                account: $0,
                registration: RegistrationMachine(
                    configuration: $0.registration, callID: SecureRandom.token(20) + "@" + Self.callIDHost(configuration),
                    localTag: SecureRandom.token(10)))
        }
        self.accountsByLine = Dictionary(
            configuration.accounts.enumerated().map { ($1.line, $0) }, uniquingKeysWith: { first, _ in first })
        self.accountsByAddress = Dictionary(
            configuration.accounts.enumerated().map { (Self.addressKey($1.addressOfRecord), $0) },
            uniquingKeysWith: { first, _ in first })
        transactions.user = self
        groups = GroupMessaging(
            agent: self, localName: configuration.displayName ?? configuration.userName,
            messagesPerSecond: configuration.groupMessagesPerSecond)
        collaborations = Collaborations(
            agent: self, signer: configuration.deviceKey ?? DeviceKey.generate(), otherDevices: configuration.otherDevices,
            verifier: localHandleSnapshot.value, actionTimeout: configuration.collaborationActionTimeout)
    }

    // MARK: Receiving

    /// One message from a transport: parsed once, routed to its transaction, then to the call it belongs to.
    func receive(_ inbound: InboundSIPMessage) {
        counters.messagesReceived += 1
        if requestGuard.mayBan(at: environment.uptime) {
            let sourceKey = SourceKey(host: inbound.source.host), now = environment.uptime
            if requestGuard.isBanned(sourceKey, at: now) {
                // Nothing from a banned source is read or answered, malformed or not; what it sends still counts,
                // so a source that keeps flooding stays banned.
                _ = requestGuard.check(sourceKey, at: now)
                counters.requestsDropped += 1
                return
            }
        }
        let source = SIPDestination(kind: inbound.kind, address: inbound.source, connection: inbound.connection)
        if refusesInDialogUnread(inbound, from: source) || shedsUnread(inbound, from: source) { return }
        if let parseThread {
            // Parsed on the parse thread; back through `receive(parsed:)`, in order.
            switch parseThread.submit(
                inbound, from: source, isNewRequest: RequestPeek.isNewOutOfDialogRequest(inbound.bytes))
            {
            case .queued:
                wakeParseThreadAtEndOfTurn()
                return
            case .full:
                counters.parseQueueDrops += 1
                return
            case .stopped: break  // shutting down: parsed here, as without the thread
            }
        }
        receive(Result { () throws(SIPParseError) in try SIPMessage.parse(inbound.bytes, memo: parseMemo) },
            of: inbound, from: source)
    }

    /// Messages the parse thread parsed, in their arrival order.
    func receive(parsed batch: [ParsedInbound]) {
        handlingParsedBatch = true
        defer { handlingParsedBatch = false }
        for parsed in batch {
            preparsedOffer = parsed.offer
            if let request = parsed.request {
                receive(request, from: parsed.source)
            } else {
                receive(parsed.result, of: parsed.inbound, from: parsed.source)
            }
            preparsedOffer = nil
        }
    }

    /// A new INVITE's SDP offer: the parse thread's reading of it when it has one, else parsed here.
    func parseOffer(_ body: Data) throws(SDPParseError) -> SDPSession {
        if let preparsedOffer, preparsedOffer.body == body { return try preparsedOffer.result.get() }
        return try SDPSession.parse(body)
    }

    /// A parsed message goes to its transaction; a malformed one is dropped, answered 400 when it allows an answer.
    private func receive(
        _ parsed: Result<SIPMessage, SIPParseError>, of inbound: InboundSIPMessage, from source: SIPDestination
    ) {
        switch parsed {
        case .success(.request(let request)): receive(ReceivedRequest(request, from: source), from: source)
        case .success(.response(let response)): receive(response)
        case .failure(let error):
            counters.malformed += 1
            log.debug("dropped a malformed message from \(inbound.source.host):\(inbound.source.port): \(error.reason)")
            if let response = error.errorResponse(toTag: SecureRandom.token(10)) {
                transactions.sendStateless(.response(response), to: source)
            }
        }
    }

    private func receive(_ received: ReceivedRequest, from source: SIPDestination) {
        let request = received.request
        if request.method != .ack && request.method != .cancel {
            do {
                try request.checkURIScheme()
            } catch {
                if let response = error.errorResponse(toTag: SecureRandom.token(10)) {
                    transactions.sendStateless(.response(response), to: source)
                }
                return
            }
        }
        switch transactions.receive(request, key: received.key) {
        case .absorbed:
            counters.retransmissionsAbsorbed += 1
        case .ackForSuccess:
            receiveACK(request)
        case .retransmittedAcceptedInvite:
            counters.retransmissionsAbsorbed += 1
            resendSuccess(for: request, to: source)
        case .new(let key):
            guard admits(request, from: source) else { return }
            transactions.open(request, key: key, from: source)
            dispatch(request, key: key, source: source)
        }
    }

    private func dispatch(_ request: SIPRequest, key: TransactionKey, source: SIPDestination) {
        if request.method != .options, let hops = request.headers.maxForwards, hops <= 0 {
            respond(to: request, key: key, status: 483)
            return
        }
        guard admitsInDialog(request, key: key) else { return }
        switch request.method {
        case .invite:
            if request.headers.toTag == nil {
                receiveNewInvite(request, key: key, source: source)
            } else {
                inDialog(request, key: key) { leg, context in leg.receiveReinvite(request, key: key, in: context) }
            }
        case .cancel:
            receiveCancel(request, key: key)
        case .bye:
            inDialog(request, key: key) { leg, context in leg.receiveBye(request, key: key, in: context) }
        case .info:
            inDialog(request, key: key) { leg, context in leg.receiveInfo(request, key: key, in: context) }
        case .options:
            respond(to: request, key: key, status: 200, extra: capabilityHeaders)
        case .message:
            receiveMessage(request, key: key)
        case .notify where request.headers.toTag != nil:
            inDialog(request, key: key) { leg, context in leg.receiveNotify(request, key: key, in: context) }
        case .refer where request.headers.toTag != nil:
            let accepting = leg(forInDialog: request).map(acceptsTransfer(from:)) ?? false
            inDialog(request, key: key) { leg, context in leg.receiveRefer(request, key: key, accepting: accepting, in: context) }
        case .register, .publish, .subscribe, .refer, .update, .prack, .notify:
            respond(to: request, key: key, status: 405, extra: capabilityHeaders)
        case .extension:
            respond(to: request, key: key, status: 501, extra: capabilityHeaders)
        case .ack:
            preconditionFailure("The transaction layer never opens a server transaction for an ACK")
        }
    }

    private func receive(_ response: SIPResponse) {
        if transactions.receive(response) { return }
        // A 2xx retransmitted after the INVITE transaction ended: the ACK goes again (RFC 3261 §13.2.2.4).
        guard response.isSuccess, response.headers.cseq?.method == .invite, let callID = response.headers.callID,
            let uuid = legIDs[callID], let effects = peek(uuid, { $0.successRetransmitted(response) }), !effects.isEmpty
        else {
            counters.strayResponses += 1
            return
        }
        apply(effects, leg: uuid)
    }

    /// A retransmitted INVITE after our 2xx: the 2xx goes again while its ACK is outstanding (RFC 3261 §13.3.1.4).
    private func resendSuccess(for request: SIPRequest, to source: SIPDestination) {
        guard let callID = request.headers.callID, let uuid = legIDs[callID],
            let effects = peek(uuid, { $0.inviteRetransmitted(request, from: source) })
        else { return }
        apply(effects, leg: uuid)
    }

    /// RFC 3581: a top Via asking for `rport` gets `received` and `rport` filled in with where the request really
    /// came from, so every response copies them (NAT diagnostics; replies go to the source address anyway). Only a
    /// first Via field holding one value is rewritten (the usual case).
    static func stampingReceived(_ request: SIPRequest, from source: SIPDestination) -> SIPRequest {
        guard source.kind == .udp, var via = request.headers.topVia, via.requestsRPort, via.rport == nil,
            let index = request.headers.firstIndex(where: { $0.name.caseInsensitiveCompare("Via") == .orderedSame || $0.name == "v" }),
            !request.headers[index].value.utf8.contains(0x2C)
        else { return request }
        via.parameters.set("rport", String(source.address.port))
        via.parameters.set("received", source.address.host)
        var fields = Array(request.headers)
        fields[index] = SIPHeaderField(name: fields[index].name, value: via.headerValue)
        var stamped = request
        stamped.headers = SIPHeaders(fields)
        return stamped
    }

    // MARK: Helpers shared by the flows

    /// The headers that say what we support (OPTIONS, 405, 501, and our INVITEs and 2xx).
    var capabilityHeaders: SIPHeaders {
        [
            "Allow": "INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, MESSAGE, NOTIFY, REFER",
            "Accept": "application/sdp, application/dtmf-relay, \(GroupMessenger.acceptedTypes)",
        ]
    }

    /// Answers `request` through its server transaction.
    func respond(
        to request: SIPRequest, key: TransactionKey, status: Int, toTag: String? = nil, extra: SIPHeaders = [:],
        body: SDPSession? = nil, contact: Bool = false, reason: String? = nil
    ) {
        transactions.respond(
            response(to: request, key: key, status: status, toTag: toTag, extra: extra, body: body, contact: contact, reason: reason),
            to: key)
    }

    /// A response to `request` with our Server header (and Contact when asked), a fresh To tag unless given.
    func response(
        to request: SIPRequest, key: TransactionKey, status: Int, toTag: String?, extra: SIPHeaders, body: SDPSession?,
        contact: Bool, reason: String?
    ) -> SIPResponse {
        var headers = extra
        if contact, let destination = transactions.responseDestination(key) {
            headers.append("Contact", contactHeader(for: destination, secure: request.uri.scheme == "sips"))
        }
        headers.append("Server", configuration.product)
        return request.makeResponse(
            statusCode: status, reasonPhrase: reason, toTag: toTag ?? SecureRandom.token(10),
            copyingRecordRoute: (100..<300).contains(status) && request.method == .invite, headers: headers,
            contentType: body == nil ? nil : CallLeg.sdpType, body: body?.serialize() ?? Data())
    }


    /// The destination for a URI, at once: its transport (`transport=` parameter, sips → TLS, else UDP), host and
    /// port for a numeric host; for a host name, the first of the targets located for it (``locate(_:then:)``), or an
    /// error when it has not been located: nothing here waits for DNS.
    func destination(for uri: SIPURI) -> Result<SIPDestination, HandleDialError> {
        let named: SIPTransportKind?
        switch transportKind(of: uri) {
        case .success(let found): named = found
        case .failure(let problem): return .failure(problem)
        }
        let kind = named ?? .udp
        guard listenAddress(for: kind) != nil else {
            return .failure(HandleDialError("no \(kind.rawValue) listener to send from (add --listen \(kind.rawValue)://…)"))
        }
        let port = uri.port ?? (kind == .tls ? 5061 : 5060)
        guard (1...65535).contains(port) else { return .failure(HandleDialError("port \(port) is out of range")) }
        let host = Self.bareHost(uri.host)
        guard HostResolver.isLiteral(host) else {
            guard let request = locationRequest(for: uri), let first = located[request]?.first else {
                return .failure(HandleDialError("cannot resolve host \(host) (not located yet)"))
            }
            return .success(first)
        }
        return .success(SIPDestination(kind: kind, address: SIPPeerAddress(host: host, port: UInt16(port))))
    }
}

/// What the engine counts, for `parley status` and the logs.
struct EngineCounters: Sendable {
    var messagesReceived = 0
    /// New INVITEs refused with 486 because do-not-disturb was on.
    var refusedByDoNotDisturb = 0
    /// Incoming calls forwarded (302) before they rang.
    var forwardedCalls = 0
    var malformed = 0
    var retransmissionsAbsorbed = 0
    var strayResponses = 0
    var incomingCalls = 0
    var outgoingCalls = 0
    /// New INVITEs refused with 503 because the live calls were at `maxCalls`.
    var callLimit = LimitEpisodes()
    /// New INVITEs refused with 503 because the media layer carried all the calls with audio it may.
    var mediaLimit = LimitEpisodes()
    /// New INVITEs refused with 503 because the media threads lagged behind the calls' audio, and whether they
    /// lag now (said once when it begins and once when it ends).
    var mediaLagRefused = 0
    var mediaLagging = false
    /// In-dialog MESSAGE and INFO requests refused: a body too large (413), or over the dialog's budget (503).
    var inDialogRefused = 0
    /// New INVITEs refused with 403 because the caller policy does not admit the caller.
    var callersRefused = 0
    /// New INVITEs refused with 503 because their source had `maxRingingPerSource` calls ringing.
    var refusedPerSource = 0
    /// New requests refused with 503 because their source crossed `maxRequestsPerSource` (each begins a ban).
    var requestsRefusedPerSource = 0
    /// New requests dropped unanswered because their source was banned.
    var requestsDropped = 0
    /// New out-of-dialog requests answered 503 by overload control.
    var requestsShed = 0
    /// New out-of-dialog requests dropped unread by overload control (UDP, at `dropSharePercent` or more).
    var requestsShedDropped = 0
    /// Messages dropped because the parse thread's queue was full.
    var parseQueueDrops = 0
    /// ACKs of those 503s, absorbed unread.
    var refusalACKsAbsorbed = 0
    /// Requests overload control picked to shed but took: retransmitted INVITEs of calls in progress.
    var retransmissionsSpared = 0
}


extension SIPUserAgent {
    /// A forgotten leg, to be freed on the parse thread (where its INVITE was allocated) when there is one. Consumed:
    /// moved there, not copied (a copy retained every reference the leg holds here, to release them here again).
    func dispose(_ leg: consuming CallLeg) {
        guard let parseThread else { return }
        if handlingParsedBatch {
            forgottenLegs.append(leg)
        } else {
            parseThread.release([], legs: [leg])
            wakeParseThreadAtEndOfTurn()
        }
    }

    /// Wakes the parse thread, if idle, for what this turn gave it (`ParseThread.wake`): once a turn.
    func wakeParseThreadAtEndOfTurn() {
        guard !parseThreadWakeDue, let parseThread else { return }
        parseThreadWakeDue = true
        environment.atEndOfTurn { [weak self] in
            self?.parseThreadWakeDue = false
            parseThread.wake()
        }
    }

    /// The legs forgotten during the last parsed batch, handed over once.
    func takeForgottenLegs() -> [CallLeg] {
        var legs: [CallLeg] = []
        swap(&legs, &forgottenLegs)
        return legs
    }
}
