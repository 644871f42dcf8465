import ControlChannel
import ConversationKit
import Foundation
import SIPMessages
import ParleyEngine
import ParleyIO
import SIPSignaling
import SIPTransport
import VoIPPush
import WebSoftphone

/// Everything a Parley node is, as one value: where it listens, who it is, what it keeps, which push channel and
/// control endpoints it serves. `parleyd` turns its command line into one; tests and benchmarks write one directly.
public struct NodeConfiguration: Sendable {
    /// A WebSocket endpoint of the control API (on loopback, or with TLS on any address of the machine).
    public struct WebSocketEndpoint: Sendable, Hashable {
        /// A loopback address, or with ``tls`` any address of the machine.
        public var host: String
        /// The port (0: any free port).
        public var port: UInt16
        /// Browser Origins allowed besides none (and the served page's own).
        public var allowedOrigins: Set<String>
        /// The pages served on the port beside the socket (the web softphone), or nil: every path upgrades.
        public var site: WebSite?
        /// HTTPS and WSS with this certificate and key (`--websocket-tls`); the host may then be any of the machine's.
        public var tls: TLSConfiguration?

        /// An endpoint from its parts, serving the web softphone unless `site` says otherwise.
        public init(host: String, port: UInt16, allowedOrigins: Set<String> = [], site: WebSite? = WebSoftphone.site) {
            self.host = host
            self.port = port
            self.allowedOrigins = allowedOrigins
            self.site = site
        }
    }

    /// Where SIP is listened for (the ports actually bound are in ``ParleyNode/listenAddresses``).
    public var listen: [ListenAddress]
    /// The certificate of tls:// listeners and how TLS peers are checked.
    public var tls: TLSConfiguration
    /// Where the history, the control socket and its token live.
    public var dataDirectory: DataDirectory
    /// Whether this device's collaboration key is kept in `dataDirectory/identity/` (parleyd: yes); otherwise a key is
    /// made for this run only.
    public var keepsIdentity = false
    /// Whether ended conversations are recorded (in `dataDirectory/history.sqlite`, or in ``historyDatabase``).
    public var recordsHistory: Bool
    /// A PostgreSQL database (libpq connection string or `postgresql://` URI) that keeps the history instead of the
    /// SQLite file, shared with other parleyd (`--history`).
    public var historyDatabase: String?
    /// The account (address of record) this node's lines are filed under in ``historyDatabase``
    /// (`--history-account`); nil: ``effectiveHistoryAccount``.
    public var historyAccount: String?
    /// A contacts file (JSON or vCard) that names callers.
    public var contactsFile: String?
    /// Our SIP user name.
    public var userName: String
    /// The name callers see; nil: the user name capitalised ("Parley" for the default user).
    public var displayName: String?
    /// How End refuses a ringing call: 486 or 603.
    public var declineStatus: Int
    /// What a call the user places or answers does to the calls that are up (`--on-new-call`).
    public var onNewCall = NewCallPolicy.hold
    /// How long a call may ring unanswered.
    public var ringTimeout: Duration
    /// How long a connected call may go without RTP or RTCP from a peer that should send before it ends with
    /// Whether calls' media is encrypted (`--media-encryption`, `--require-media-encryption`).
    public var mediaEncryption = MediaEncryptionPolicy()
    /// `--video-codecs`: the video codecs calls offer and accept, in order of preference.
    public var videoCodecs = ["VP8", "H264"]
    /// `mediaTimeout` (`--media-timeout`; nil: never).
    public var mediaTimeout: Duration? = .seconds(30)
    /// The DNS servers host names are located with (`HOST[:PORT]`, `--dns-server`); empty: the system's resolver
    /// configuration (/etc/resolv.conf).
    public var dnsServers: [String] = []
    /// The outbound proxy every out-of-dialog request goes through (`--outbound-proxy`), nil: none.
    public var outboundProxy: SIPURI?
    /// RFC 4028 session timers (`--session-timer`; nil: off).
    public var sessionTimer: SessionTimerConfiguration? = SessionTimerConfiguration()
    /// Live calls at most; new INVITEs beyond get 503 with Retry-After (`--max-calls`).
    public var maxCalls = 10_000
    /// The SIP transports' bounds: connections in all and per source, the idle (no progress) timeout, sizes.
    public var transportLimits = TransportLimits()
    /// Incoming calls ringing at once from one source address at most (`--max-ringing-per-source`).
    public var maxRingingPerSource = 30
    /// Group messages one sender may send per second, bursts of twice as many (`--group-rate`).
    public var groupMessagesPerSecond = 20
    /// New requests one source may send per second, 0 for no limit (`--max-requests-per-source`).
    public var maxRequestsPerSource = 500
    /// How long a source beyond that is dropped (`--source-ban`).
    public var sourceBan: Duration = .seconds(60)
    /// Numeric addresses the per-source limits never apply to (`--exempt-source`).
    public var exemptSources: [String] = []
    /// Whether overload control sheds new requests when the engine thread stays busy (`--no-overload-control`
    /// turns it off: behind a proxy that does its own, or to measure raw capacity).
    public var overloadControl = true
    /// Whether inbound SIP is parsed on a second thread (`--parse-on-loop` turns it off: everything on one thread).
    public var parsesOnThread = true
    /// Whether UDP datagrams are sent from a thread of their own (`--send-on-loop` turns it off: sent on the loop).
    public var sendsOnThread = true
    /// Who may ring us (`--accept-from`).
    public var acceptFrom = AcceptFrom.anyone
    /// Whether the node starts with do-not-disturb on (`--dnd`).
    public var doNotDisturb = false
    /// Whether a refused caller leaves a `blocked` record (`--record-blocked`).
    public var recordsBlockedCalls = false
    /// Whose calls may transfer us (`--accept-refer always|contacts|never`).
    public var acceptRefer = AcceptRefer.always

    /// Whose calls may transfer a node.
    public enum AcceptRefer: Sendable, Hashable {
        /// Any call's peer.
        case always
        /// The peers its contacts name.
        case contacts
        /// Nobody: 603.
        case never
    }
    /// Where incoming calls are forwarded at start (`--forward-always`, `--forward-busy`, `--forward-no-answer`).
    public var forwarding = CallForwarding()

    /// Who may ring a node: anyone, the callers its contacts name, or a list of handles.
    public enum AcceptFrom: Sendable, Hashable {
        /// Anyone.
        case anyone
        /// Callers a contact names (needs ``NodeConfiguration/contactsFile``).
        case contacts
        /// These SIP URIs and phone numbers.
        case only([Handle])
    }
    /// Calls' audio on GStreamer (nil: signalling only, `--media off`).
    public var media: MediaConfiguration?
    /// A frontend carries calls' RTP itself (`--media external`): our descriptions give the endpoint it names in
    /// `join` or `start`, and `mediaChanged` events tell it the negotiated session. Excludes ``media``.
    public var externalMedia = false
    /// Answer incoming calls after this delay (nil: never).
    public var autoAnswer: Duration?
    /// The domain phone numbers are called at.
    public var phoneDomain: String?
    /// The address peers are given instead of ours (a host behind a static NAT), or nil.
    public var publicAddress: String?
    /// The SIP accounts (config-file sections), each registered on its own; the first is the default. Empty: the
    /// one-account short form, ``registration``, if any.
    public var accounts: [Account] = []
    /// Register with a registrar (nil: do not): the one-account short form (`--register`), used when ``accounts``
    /// is empty.
    public var registration: RegistrationConfiguration?
    /// The VoIP push simulator to take pushes from (nil: none).
    public var pushService: PushEndpoint?
    /// The device token registered there (nil: `parleyd-USER`).
    public var pushToken: String?
    /// How long a pushed call waits for its INVITE.
    public var pushInviteWait: Duration
    /// Whether the control API is served on `control.sock` in the data directory's control directory
    /// (``DataDirectory/control``).
    public var control: Bool
    /// Whether the control API takes the listening socket named `control` a service manager passed (socket
    /// activation: `$LISTEN_FDS`, `$LISTEN_FDNAMES`) instead of binding its own, when there is one (parleyd: yes).
    public var takesPassedControlSocket = false
    /// The control API over WebSocket too (nil: not).
    public var webSocket: WebSocketEndpoint?
    /// Whether the node runs without its control API when another parleyd already serves this data directory's
    /// socket (scripted runs: `--call`, `--exit-after`), instead of failing to start.
    public var controlIsOptional = false
    /// The control endpoints' limits (client slots, hello deadline, message and queue sizes), each endpoint's own.
    public var controlLimits = ControlLimits()
    /// Whether the node serves `org.parley.Parley` on the session D-Bus when one is reachable (docs/desktop.md;
    /// parleyd turns it on unless `--dbus off`).
    public var dbus = false
    /// The version the node reports in `status`.
    public var version: String
    /// The User-Agent and Server header value: "Parley", without the version unless configured (a version tells an
    /// attacker which known bugs to try).
    public var product = "Parley"
    /// Where log lines go, and how many.
    public var log: EngineLog
    /// The manager's limits and handle rules.
    public var manager: ConversationManager.Configuration

    /// A node with the embedded defaults: UDP on 127.0.0.1:5070, history and control in the default data directory.
    public init(
        listen: [ListenAddress] = [ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070)],
        tls: TLSConfiguration = TLSConfiguration(), dataDirectory: DataDirectory = .resolve(),
        recordsHistory: Bool = true, contactsFile: String? = nil, userName: String = "parley",
        displayName: String? = nil, declineStatus: Int = 486, ringTimeout: Duration = .seconds(60),
        autoAnswer: Duration? = nil, phoneDomain: String? = nil, registration: RegistrationConfiguration? = nil,
        pushService: PushEndpoint? = nil, pushToken: String? = nil, pushInviteWait: Duration = .seconds(10),
        control: Bool = true, webSocket: WebSocketEndpoint? = nil, version: String = "0.3.0", log: EngineLog = .silent,
        manager: ConversationManager.Configuration = .init()
    ) {
        self.listen = listen
        self.tls = tls
        self.dataDirectory = dataDirectory
        self.recordsHistory = recordsHistory
        self.contactsFile = contactsFile
        self.userName = userName
        self.displayName = displayName
        self.declineStatus = declineStatus
        self.ringTimeout = ringTimeout
        self.autoAnswer = autoAnswer
        self.phoneDomain = phoneDomain
        self.registration = registration
        self.pushService = pushService
        self.pushToken = pushToken
        self.pushInviteWait = pushInviteWait
        self.control = control
        self.webSocket = webSocket
        self.version = version
        self.log = log
        self.manager = manager
    }

    /// The history account: the one given, else the registration's address of record, else `sip:USER@HOST` of the
    /// first listener (so several devices of one user registered with one AOR share their lines).
    public var effectiveHistoryAccount: String {
        if let historyAccount { return historyAccount }
        if let first = accounts.first { return first.addressOfRecord.description }
        if let registration { return registration.addressOfRecord.description }
        return "sip:\(userName)@\(listen.first?.host ?? "127.0.0.1")"
    }

    /// The device token registered with the push service.
    public var effectivePushToken: String { pushToken ?? "parleyd-\(userName)" }

    /// The name callers see.
    public var effectiveDisplayName: String { displayName ?? (userName == "parley" ? "Parley" : userName.capitalized) }

    /// The engine's configuration, once the listeners are bound.
    func engineConfiguration(listeningOn bound: [ListenAddress]) -> EngineConfiguration {
        var engine = EngineConfiguration(
            userName: userName, displayName: effectiveDisplayName, listenAddresses: bound, declineStatus: declineStatus,
            ringTimeout: ringTimeout, autoAnswerDelay: autoAnswer, phoneDomain: phoneDomain,
            product: product, registration: registration, pushInviteWait: pushInviteWait, maxCalls: maxCalls)
        if !accounts.isEmpty { engine.accounts = accounts }
        engine.publicAddress = publicAddress
        engine.mediaTimeout = mediaTimeout
        engine.mediaEncryption = mediaEncryption
        engine.videoCodecs = videoCodecs
        engine.outboundProxy = outboundProxy
        engine.sessionTimer = sessionTimer
        engine.onNewCall = onNewCall
        return engine
    }
}
