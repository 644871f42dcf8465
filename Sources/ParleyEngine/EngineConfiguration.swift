import ConversationKit
import SIPMessages
import Foundation
import SIPSignaling
import ParleyIO
import SIPTransport

/// How the SIP user agent behaves: who it is, where it can be reached, how it answers.
public struct EngineConfiguration: Sendable {
    /// The user part of our SIP URI (`sip:parley@127.0.0.1:5070`).
    public var userName: String
    /// The display name put in From headers.
    public var displayName: String?
    /// The addresses the transports listen on (with the ports actually bound). Via and Contact use the first one of
    /// the transport a message goes out on.
    public var listenAddresses: [ListenAddress]
    /// The status refusing a ringing incoming conversation when the local member ends it: 486 Busy Here (default) or
    /// 603 Decline.
    public var declineStatus: Int
    /// How long an incoming conversation rings before it is refused with 480 and ends unanswered; also how long an
    /// outgoing one may ring before Parley cancels it.
    public var ringTimeout: Duration
    /// Answer incoming conversations automatically after this delay (nil: wait for a Join action).
    public var autoAnswerDelay: Duration?
    /// The RFC 3261 timer constants.
    public var timers: TransactionTimers
    /// The domain phone numbers are dialled at (`sip:+14155550100@domain`); nil: phone numbers cannot be dialled.
    public var phoneDomain: String?
    /// The address peers are given in Via, Contact and SDP instead of ours (a host behind a static NAT); nil: the
    /// listener's address, or, listening on every interface, the address of the interface toward each peer.
    public var publicAddress: String?
    /// Where every out-of-dialog request goes first (INVITE, REGISTER), as a pre-loaded Route with `;lr` (RFC 3261
    /// §8.1.2): a provider's outbound proxy; nil: straight to the request URI's host.
    public var outboundProxy: SIPURI?
    /// The User-Agent and Server header value.
    public var product: String
    /// The RTP port advertised in SDP (Parley does not carry media yet; the port is only described).
    public var mediaPort: Int
    /// How long a connected call may go without an RTP or RTCP packet from a peer that should be sending (audio
    /// flowing both ways, neither side holding) before Parley ends it with BYE and `mediaTimeout`; nil: never. Only a
    /// media layer that counts packets can tell (the node's; not `--media external`).
    public var mediaTimeout: Duration? = .seconds(30)
    /// RFC 4028 session timers: what our INVITEs propose and the shortest interval we take; nil: off (no
    /// `Supported: timer`, no Session-Expires, a peer's `Require: timer` refused with 420).
    public var sessionTimer: SessionTimerConfiguration? = SessionTimerConfiguration()
    /// Whether calls' media is encrypted: what our offers use, and whether plain media is refused.
    public var mediaEncryption = MediaEncryptionPolicy()
    /// The video codecs calls offer and accept, in our order of preference (`VP8`, `H264`): the first an offer of
    /// ours lists is the one a peer that takes both answers with.
    public var videoCodecs = ["VP8", "H264"]
    /// The SIP accounts, each registered on its own; the first is the default one calls go out through (empty:
    /// none, calls go out as `sip:USER@HOST:PORT`). ``registration`` is the one-account short form.
    public var accounts: [Account] = []
    /// How long a conversation announced by a VoIP push waits for its INVITE before it ends as failed.
    public var pushInviteWait: Duration
    /// Live calls at most (incoming and outgoing, ringing or connected): a new INVITE beyond it is refused with 503
    /// and Retry-After before it reaches the conversation manager or the history.
    public var maxCalls: Int
    /// Incoming calls ringing at once from one source address at most: a new INVITE beyond it gets 503 with
    /// Retry-After, so one host cannot fill the ringing calls (and the missed calls) alone.
    public var maxRingingPerSource = 30
    /// New requests (transactions) one source may open per second: the one that crosses the line gets 503, then the
    /// source is dropped silently for `sourceBan` (0: no limit). IPv6 sources count by /64.
    public var maxRequestsPerSource = 500
    /// Group messages one sender may send per second on average, bursts of twice as many (docs/group-activities.md).
    public var groupMessagesPerSecond = 20
    /// This device's collaboration identity key (docs/collaboration.md); nil: a key made for this run only.
    public var deviceKey: DeviceKey?
    /// The public keys of the person's other devices (65-byte points): with this one, they make the person root.
    public var otherDevices: [[UInt8]] = []
    /// How long a participants update may wait for a frontend's confirmation.
    public var collaborationActionTimeout: Duration = .seconds(30)
    /// How long a source that crossed `maxRequestsPerSource` is dropped; flooding while banned extends the ban.
    public var sourceBan: Duration = .seconds(60)
    /// Numeric addresses the per-source limits never apply to (a proxy in front, which carries everyone's calls).
    public var exemptSources: [String] = []
    /// Overload control: when the engine's thread is busy nearly all the time, a share of new out-of-dialog requests
    /// is answered 503 (then, over UDP, dropped) while calls in progress go on (`LoadShedder`); nil: off. It needs an
    /// environment that measures its idle time (the daemon's does).
    public var overload: OverloadPolicy? = OverloadPolicy()
    /// Whether inbound SIP (UDP and streams) is parsed on a thread of its own (`ParseThread`), using a second core,
    /// instead of on the engine's thread; off by default (tests feed messages and expect them handled at once); the
    /// daemon turns it on. Parsed messages come back to the engine's thread in arrival order. It needs an environment
    /// whose `execute` hands work to the engine's thread (the daemon's event loop; not a manual environment that runs
    /// it at once).
    public var parsesOnThread = false
    /// What a call the user places or answers does to the calls that are up (call waiting): holds them (default), or
    /// leaves them as they are.
    public var onNewCall = NewCallPolicy.hold
    /// Who may ring us; others get 403 before the manager or the history sees the call.
    public var callers: CallerPolicy = .anyone
    /// Whether a call refused by `callers` leaves a `blocked` record in the history (read, not missed).
    public var recordsBlockedCalls = false
    /// Whose calls may transfer us (the peer's REFER: we call whom it names; an INVITE's Replaces of a call with
    /// it), `--accept-refer`: anyone (always), the contacts, or nil: nobody (never).
    public var transferrers: CallerPolicy? = .anyone
    /// Whether anyone may transfer us at all (``transferrers`` not nil; setting it true lets anyone).
    public var acceptsTransfers: Bool {
        get { transferrers != nil }
        set { transferrers = newValue ? .anyone : nil }
    }
    /// Where incoming calls are forwarded at start (``ParleyEngine/setForwarding(_:)`` changes it).
    public var forwarding = CallForwarding()
    /// Blocked records written a minute at most (`recordsBlockedCalls`); refusals beyond are not recorded.
    public static let blockedRecordsPerMinute = 30
    /// The Retry-After of that 503, in seconds.
    public static let overLimitRetryAfter = 5

    /// A configuration; `listenAddresses` must not be empty.
    public init(
        userName: String = "parley", displayName: String? = "Parley", listenAddresses: [ListenAddress],
        declineStatus: Int = 486, ringTimeout: Duration = .seconds(60), autoAnswerDelay: Duration? = nil,
        timers: TransactionTimers = TransactionTimers(), phoneDomain: String? = nil, product: String = "Parley",
        mediaPort: Int = 40_000, registration: RegistrationConfiguration? = nil,
        pushInviteWait: Duration = .seconds(10), maxCalls: Int = 10_000
    ) {
        self.userName = userName
        self.displayName = displayName
        self.listenAddresses = listenAddresses
        self.declineStatus = declineStatus
        self.ringTimeout = ringTimeout
        self.autoAnswerDelay = autoAnswerDelay
        self.timers = timers
        self.phoneDomain = phoneDomain
        self.product = product
        self.mediaPort = mediaPort
        self.pushInviteWait = pushInviteWait
        self.maxCalls = maxCalls
        self.registration = registration
    }

    /// Whether `host` is a numeric IPv4 or IPv6 address (without brackets), as per-source limits name sources.
    public static func isNumericAddress(_ host: String) -> Bool { HostResolver.isLiteral(host) }

    /// What is wrong with this configuration, in words; empty when it is usable.
    public var problems: [String] {
        var problems: [String] = []
        if listenAddresses.isEmpty { problems.append("no listening address") }
        if declineStatus != 486 && declineStatus != 603 { problems.append("decline status must be 486 or 603") }
        if ringTimeout <= .zero { problems.append("ring timeout must be positive") }
        if let delay = autoAnswerDelay, delay < .zero { problems.append("auto-answer delay must not be negative") }
        if userName.isEmpty || !userName.allSatisfy({ $0.isLetter || $0.isNumber || "-_.!~*'()+".contains($0) }) {
            problems.append("user name must be a non-empty SIP user token")
        }
        if maxRequestsPerSource < 0 || sourceBan < .zero { problems.append("per-source limits must not be negative") }
        if groupMessagesPerSecond < 1 { problems.append("the group message rate must be at least 1 a second") }
        if let overload, overload.window <= .zero || !(0...1).contains(overload.leaveBusy)
            || !(overload.leaveBusy...1).contains(overload.enterBusy) || !(1...100).contains(overload.stepPercent) || overload.retryAfter.lowerBound < 1
            || overload.shortQueueWait < .zero || overload.backlogWait < overload.shortQueueWait
            || overload.starvedWait < overload.backlogWait || overload.starvedWait <= .zero
            || overload.enterWindows < 1 || overload.starvedEnterWindows < 1
            || !(1...100).contains(overload.maxSharePercent)
        {
            problems.append("overload thresholds out of range")
        }
        if let mediaTimeout, mediaTimeout < .seconds(1) { problems.append("the media timeout must be at least a second") }
        problems += sessionTimer?.problems ?? []
        if collaborationActionTimeout <= .zero { problems.append("the collaboration action timeout must be positive") }
        for source in exemptSources where !Self.isNumericAddress(source) {
            problems.append("exempt source '\(source)' is not a numeric IP address")
        }
        for account in accounts {
            let registration = account.registration
            if !(1...86_400 * 7).contains(registration.expires) {
                problems.append("\(account.name): registration expiry out of range")
            }
            if registration.addressOfRecord.user == nil {
                problems.append("\(account.name): the address of record needs a user part")
            }
        }
        if Set(accounts.map(\.name)).count < accounts.count { problems.append("two accounts have the same name") }
        if Set(accounts.map { $0.addressOfRecord.description.lowercased() }).count < accounts.count {
            problems.append("two accounts have the same address of record")
        }
        return problems
    }
}
