import Foundation

/// The result of `status`: who this parleyd is, its registration, what it counted and its limits.
public struct StatusResult: Codable, Sendable, Equatable {
    /// The control protocol version.
    public var `protocol`: Int
    /// The daemon's facts.
    public var daemon: DaemonFacts
    /// The default account's registration (the first account's; `unregistered` without accounts).
    public var registration: RegistrationInfo
    /// Every account's registration, the default one first.
    public var accounts: [RegistrationInfo]
    /// Live conversations.
    public var conversations: Int
    /// What the engine counted.
    public var counters: StatusCounters
    /// The limits a frontend may explain a refusal with.
    public var limits: StatusLimits

    /// A status.
    public init(
        daemon: DaemonFacts, accounts: [RegistrationInfo], conversations: Int, counters: StatusCounters,
        limits: StatusLimits
    ) {
        self.protocol = ControlProtocol.version
        self.daemon = daemon
        self.registration = accounts.first ?? RegistrationInfo(state: "unregistered")
        self.accounts = accounts
        self.conversations = conversations
        self.counters = counters
        self.limits = limits
    }
}

extension StatusResult: ControlShape {
    /// Only `status` answers it.
    public static let noun = ControlNoun("a status", plural: "statuses")

    /// The members.
    public static let fields = [
        ControlField("protocol", .integer, "the control protocol's version: 1"),
        ControlField("daemon", .object(DaemonFacts.self), "who this parleyd is"),
        ControlField("registration", .object(RegistrationInfo.self), "the default account's registration (the first account's; `unregistered` without accounts)"),
        ControlField("accounts", .array(.object(RegistrationInfo.self)), "every account's registration, the default one first (empty without accounts)"),
        ControlField("conversations", .integer, "live conversations now"),
        ControlField("counters", .object(StatusCounters.self), "what the SIP engine counted since parleyd started"),
        ControlField("limits", .object(StatusLimits.self), "the limits a frontend may explain a refusal with"),
    ]

    /// A status.
    public static let examples = [
        StatusResult(
            daemon: DaemonFacts.examples[0], accounts: Array(RegistrationInfo.examples.prefix(2)), conversations: 1,
            counters: StatusCounters.examples[0], limits: StatusLimits.examples[0])
    ]
}

/// The daemon's own facts, for `status`.
public struct DaemonFacts: Codable, Sendable, Equatable {
    /// parleyd's version.
    public var version: String
    /// Our address of record, or null.
    @Nullable public var user: String?
    /// The SIP listening addresses (`udp://127.0.0.1:5070`).
    public var listening: [String]
    /// The push token, or null without a push service.
    @Nullable public var pushToken: String?
    /// The web softphone's address (`http://127.0.0.1:PORT/`, without the token), or null without `--websocket`.
    @Nullable public var webPage: String?

    /// Facts.
    public init(version: String, user: String?, listening: [String], pushToken: String?, webPage: String? = nil) {
        self.version = version
        self.user = user
        self.listening = listening
        self.pushToken = pushToken
        self.webPage = webPage
    }
}

extension DaemonFacts: ControlShape {
    /// `daemon facts`.
    public static let noun = ControlNoun("daemon facts", plural: "daemon facts")

    /// The members.
    public static let fields = [
        ControlField("version", .string, "parleyd's version"),
        ControlField(
            "user", .nullable(.string),
            "who we are, as others dial us: the registered address of record (`--register`, `--aor`), else `sip:USER@HOST:PORT` of the first listener"),
        ControlField("listening", .array(.string), "the SIP listening addresses, `udp://127.0.0.1:5070` and the like"),
        ControlField("pushToken", .nullable(.string), "the VoIP push token (`--push-token`)"),
        ControlField("webPage", .nullable(.string), "the web softphone's address without its token (`--websocket`)"),
    ]

    /// With and without the optional parts.
    public static let examples = [
        DaemonFacts(
            version: "0.1.0", user: "sip:alice@127.0.0.1:5170", listening: ["udp://127.0.0.1:5170"], pushToken: "device-1",
            webPage: "http://127.0.0.1:5180/"),
        DaemonFacts(version: "0.1.0", user: nil, listening: ["udp://127.0.0.1:5172", "tcp://127.0.0.1:5172"], pushToken: nil),
    ]
}

/// What the SIP engine counted since parleyd started (docs/robustness.md says what each limit and refusal is).
public struct StatusCounters: Codable, Sendable, Equatable {
    /// SIP messages received from the transports.
    public var messagesReceived: Int
    /// Messages that did not parse.
    public var malformedMessages: Int
    /// Incoming INVITEs that became conversations.
    public var incomingCalls: Int
    /// Outgoing INVITEs sent for Start actions.
    public var outgoingCalls: Int
    /// New INVITEs refused because the live calls were at the limit.
    public var callsRefusedOverLimit: Int
    /// New INVITEs refused because the calls with audio were at the media limit.
    public var callsRefusedOverMediaLimit: Int
    /// In-dialog MESSAGE and INFO requests refused (too large, or over the call's budget).
    public var inDialogRequestsRefused: Int
    /// New INVITEs refused because `--accept-from` does not admit the caller.
    public var callersRefused: Int
    /// New INVITEs refused because their source had the most calls ringing one source may.
    public var callsRefusedPerSource: Int
    /// New requests refused because their source sent too many in a second.
    public var requestsRefusedPerSource: Int
    /// New requests dropped unanswered because their source was banned.
    public var requestsDropped: Int
    /// Sources banned now.
    public var sourcesBanned: Int
    /// Calls with a live SIP side now.
    public var liveCalls: Int
    /// Live SIP transactions now.
    public var liveTransactions: Int
    /// New out-of-dialog requests answered 503 by overload control.
    public var requestsShed: Int
    /// New out-of-dialog requests dropped unread by overload control.
    public var requestsShedDropped: Int
    /// Retransmitted INVITEs of calls in progress that overload control let through.
    public var retransmissionsSpared: Int
    /// Messages dropped because the parse thread's queue was full.
    public var parseQueueDrops: Int
    /// 1 while overload control sheds load, else 0.
    public var overloaded: Int
    /// How busy the engine's thread was in the last window, in percent.
    public var loadBusyPercent: Int
    /// The share of new out-of-dialog requests shed now, in percent.
    public var loadShedPercent: Int
    /// How late the last load probe fired, in milliseconds.
    public var loopLagMs: Int
    /// The longest a datagram read in the last window had waited, in milliseconds.
    public var queueWaitMs: Int
    /// Calls with audio parleyd carries now.
    public var callsWithAudio: Int
    /// The last second's worst lag of a call's audio behind real time, in milliseconds.
    public var mediaLagMs: Int

    /// Counters, all zero.
    public init() {
        messagesReceived = 0
        malformedMessages = 0
        incomingCalls = 0
        outgoingCalls = 0
        callsRefusedOverLimit = 0
        callsRefusedOverMediaLimit = 0
        inDialogRequestsRefused = 0
        callersRefused = 0
        callsRefusedPerSource = 0
        requestsRefusedPerSource = 0
        requestsDropped = 0
        sourcesBanned = 0
        liveCalls = 0
        liveTransactions = 0
        requestsShed = 0
        requestsShedDropped = 0
        retransmissionsSpared = 0
        parseQueueDrops = 0
        overloaded = 0
        loadBusyPercent = 0
        loadShedPercent = 0
        loopLagMs = 0
        queueWaitMs = 0
        callsWithAudio = 0
        mediaLagMs = 0
    }

    /// Each counter's name and value, in the reference's order (for people).
    public var entries: [(name: String, value: Int)] { ControlStatusEntries.of(self, fields: Self.fields) }
}

extension StatusCounters: ControlShape {
    /// `status counters`.
    public static let noun = ControlNoun("status counters", plural: "status counters")
    /// Where they come from.
    public static var note: String? { "What `status` reports the SIP engine counted since parleyd started (docs/robustness.md)." }

    /// The members.
    public static let fields = [
        ControlField("messagesReceived", .integer, "SIP messages received"),
        ControlField("malformedMessages", .integer, "messages that did not parse (dropped, or answered 400)"),
        ControlField("incomingCalls", .integer, "incoming INVITEs that became conversations"),
        ControlField("outgoingCalls", .integer, "INVITEs sent for `start`"),
        ControlField("callsRefusedOverLimit", .integer, "new INVITEs refused with 503 because `maxCalls` calls were live"),
        ControlField("callsRefusedOverMediaLimit", .integer, "new INVITEs refused with 503 because `maxMediaCalls` calls had audio, or the media threads lagged (`mediaLagMs`)"),
        ControlField("inDialogRequestsRefused", .integer, "MESSAGE and INFO requests in a call refused: a body over 16 KiB (413), or over the call's 250 a second or 256 KiB a second (503)"),
        ControlField("callersRefused", .integer, "new INVITEs refused with 403 by `--accept-from`"),
        ControlField("callsRefusedPerSource", .integer, "new INVITEs refused with 503 because their source had `maxRingingPerSource` ringing"),
        ControlField("requestsRefusedPerSource", .integer, "requests refused with 503 because their source sent over `maxRequestsPerSource` a second (each begins a ban)"),
        ControlField("requestsDropped", .integer, "requests dropped unanswered from banned sources"),
        ControlField("sourcesBanned", .integer, "sources banned now"),
        ControlField("liveCalls", .integer, "calls with a live SIP side now"),
        ControlField("liveTransactions", .integer, "live SIP transactions now"),
        ControlField("requestsShed", .integer, "new requests answered 503 by overload control"),
        ControlField("requestsShedDropped", .integer, "new requests dropped unread by overload control (UDP)"),
        ControlField("retransmissionsSpared", .integer, "retransmitted INVITEs of calls in progress that overload control let through"),
        ControlField("parseQueueDrops", .integer, "messages dropped because the parse thread's queue was full"),
        ControlField("overloaded", .integer, "1 while overload control sheds load, else 0"),
        ControlField("loadBusyPercent", .integer, "how busy the SIP thread was in the last window, in percent"),
        ControlField("loadShedPercent", .integer, "the share of new requests shed now, in percent"),
        ControlField("loopLagMs", .integer, "how late the last load probe fired (the event loop's lag)"),
        ControlField("queueWaitMs", .integer, "the longest a UDP datagram read in the last window had waited"),
        ControlField("callsWithAudio", .integer, "calls with audio parleyd carries now (`--max-media-calls` is their limit)"),
        ControlField("mediaLagMs", .integer, "the last second's worst lag of a call's audio behind real time; from 80 ms for 2 s new calls get 503 until it is under 30 ms for 3 s"),
    ]

    /// A quiet daemon's counters.
    public static let examples: [StatusCounters] = {
        var counters = StatusCounters()
        counters.messagesReceived = 12
        counters.incomingCalls = 1
        counters.liveCalls = 1
        counters.liveTransactions = 1
        return [counters]
    }()
}

/// The limits a frontend may explain a refusal with: its connection's (see Limits), the merge limits, and the SIP
/// limits of docs/robustness.md.
public struct StatusLimits: Codable, Sendable, Equatable {
    /// Client slots per control endpoint (authenticated clients).
    public var maxClients: Int
    /// Connections still saying hello per control endpoint.
    public var maxPendingConnections: Int
    /// Connections still saying hello per control endpoint from one source address.
    public var maxPendingPerSource: Int
    /// How long a new client has to say hello, in milliseconds.
    public var helloTimeoutMs: Int
    /// The largest message a client may send, in bytes.
    public var maxMessageBytes: Int
    /// The most output queued for one client, in bytes.
    public var maxQueuedBytes: Int
    /// How long a client that never subscribed must be idle before it can be evicted, in milliseconds.
    public var evictionIdleTimeMs: Int
    /// The longest string request id, in bytes.
    public var maxIDBytes: Int
    /// Groups of merged calls at once.
    public var maxConversationGroups: Int
    /// Calls in one group.
    public var maxConversationsPerGroup: Int
    /// Live calls at once.
    public var maxCalls: Int
    /// Calls with audio at once (0: no limit of parleyd's own, a frontend carries the audio).
    public var maxMediaCalls: Int
    /// Calls ringing at once from one source address.
    public var maxRingingPerSource: Int
    /// New requests a second from one source address.
    public var maxRequestsPerSource: Int
    /// How long a source that sent too many is banned, in seconds.
    public var sourceBanSeconds: Int

    /// Limits.
    public init(
        maxClients: Int, helloTimeoutMs: Int, maxMessageBytes: Int, maxQueuedBytes: Int, evictionIdleTimeMs: Int,
        maxIDBytes: Int, maxConversationGroups: Int, maxConversationsPerGroup: Int, maxCalls: Int, maxRingingPerSource: Int,
        maxRequestsPerSource: Int, sourceBanSeconds: Int, maxMediaCalls: Int = 0, maxPendingConnections: Int = 32,
        maxPendingPerSource: Int = 8
    ) {
        self.maxMediaCalls = maxMediaCalls
        self.maxPendingConnections = maxPendingConnections
        self.maxPendingPerSource = maxPendingPerSource
        self.maxClients = maxClients
        self.helloTimeoutMs = helloTimeoutMs
        self.maxMessageBytes = maxMessageBytes
        self.maxQueuedBytes = maxQueuedBytes
        self.evictionIdleTimeMs = evictionIdleTimeMs
        self.maxIDBytes = maxIDBytes
        self.maxConversationGroups = maxConversationGroups
        self.maxConversationsPerGroup = maxConversationsPerGroup
        self.maxCalls = maxCalls
        self.maxRingingPerSource = maxRingingPerSource
        self.maxRequestsPerSource = maxRequestsPerSource
        self.sourceBanSeconds = sourceBanSeconds
    }

    /// Each limit's name and value, in the reference's order (for people).
    public var entries: [(name: String, value: Int)] { ControlStatusEntries.of(self, fields: Self.fields) }
}

extension StatusLimits: ControlShape {
    /// `status limits`.
    public static let noun = ControlNoun("status limits", plural: "status limits")
    /// Which limits.
    public static var note: String? {
        "The connection limits (see Limits), the merge limits and the SIP limits of docs/robustness.md, for a frontend that explains a refusal."
    }

    /// The members.
    public static let fields = [
        ControlField("maxClients", .integer, "client slots per control endpoint (`--control-clients`): authenticated clients; connections still saying hello hold none"),
        ControlField("maxPendingConnections", .integer, "connections still saying hello per control endpoint (beyond it a newcomer sets aside the oldest pending connection that sent nothing, of the source holding the most: unread, closed at its hello deadline)"),
        ControlField("maxPendingPerSource", .integer, "connections still saying hello per control endpoint from one address (every Unix-socket peer is one; beyond it a newcomer sets aside that address's oldest pending connection that sent nothing)"),
        ControlField("helloTimeoutMs", .integer, "how long a new client has to say hello"),
        ControlField("maxMessageBytes", .integer, "the largest message a client may send, in bytes (`frameTooLarge` beyond)"),
        ControlField("maxQueuedBytes", .integer, "the most output parleyd queues for one client, in bytes (a client that does not read is closed beyond)"),
        ControlField("evictionIdleTimeMs", .integer, "how long a client that never subscribed must be idle before a newcomer may take its slot"),
        ControlField("maxIDBytes", .integer, "the longest string request id, in bytes"),
        ControlField("maxConversationGroups", .integer, "groups of merged calls at once: offer Merge only below it"),
        ControlField("maxConversationsPerGroup", .integer, "calls in one group"),
        ControlField("maxCalls", .integer, "live calls at once (`--max-calls`; 503 beyond)"),
        ControlField("maxMediaCalls", .integer, "calls with audio at once (`--max-media-calls`; 503 beyond; 0: no limit of parleyd's, a frontend carries the audio)"),
        ControlField("maxRingingPerSource", .integer, "calls ringing at once from one address (503 beyond)"),
        ControlField("maxRequestsPerSource", .integer, "new SIP requests a second from one address (then one 503 and a ban)"),
        ControlField("sourceBanSeconds", .integer, "how long such a ban lasts"),
    ]

    /// The defaults.
    public static let examples = [
        StatusLimits(
            maxClients: 64, helloTimeoutMs: 5000, maxMessageBytes: 65_536, maxQueuedBytes: 1_048_576, evictionIdleTimeMs: 60_000,
            maxIDBytes: 128, maxConversationGroups: 2, maxConversationsPerGroup: 5, maxCalls: 1000, maxRingingPerSource: 30,
            maxRequestsPerSource: 500, sourceBanSeconds: 60, maxMediaCalls: 200, maxPendingConnections: 32,
            maxPendingPerSource: 8)
    ]
}

/// The members of an object of integers, by the names its table gives, read from its encoding: one source of truth
/// for the names, so a member added to the type and its table cannot be left out of what people read.
enum ControlStatusEntries {
    static func of(_ value: some Encodable, fields: [ControlField]) -> [(name: String, value: Int)] {
        guard let members = try? ControlJSON.decoder.decode([String: Int].self, from: ControlJSON.encode(value)) else {
            preconditionFailure("an object of integers does not encode as one")
        }
        return fields.map { (name: $0.name, value: members[$0.name] ?? 0) }
    }
}
