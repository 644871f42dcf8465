import CallHistory
import Foundation
import ICE
import Media
import ParleyEngine
import ParleyIO
import SIPMessages

/// What a node does with calls' audio (`parleyd --media`, `--audio-source`, `--audio-sink`, `--rtp-ports`).
public struct MediaConfiguration: Sendable, Hashable {
    /// What calls send.
    public var source: AudioSource
    /// Where what calls receive goes.
    public var sink: AudioSink
    /// The local RTP/RTCP ports (an even RTP port and the next for RTCP, per call).
    public var ports: ClosedRange<Int>
    /// The most calls with audio at once (a new incoming call beyond gets 503 Retry-After), by default
    /// ``defaultMaxCalls``.
    public var maxCalls = Self.defaultMaxCalls
    /// The longest one call's recording runs (`--audio-sink file:DIR`), over the call's timeline; nil: no cap. Two
    /// hours by default: 115 MB of G.711's 8 kHz samples, 690 MB of opus's 48 kHz, so a call left up (or a flood)
    /// cannot fill a disk.
    public var maxRecording: Duration? = Self.defaultMaxRecording
    /// The default ``maxRecording``.
    public static let defaultMaxRecording = Duration.seconds(2 * 3_600)
    /// ICE for calls' media (nil: plain RTP at the reserved port pair): the node's, for calls through no account and
    /// through accounts that say nothing of ICE.
    public var ice: ICEConfiguration?
    /// ICE for the calls through accounts that have their own (a config file's `[account]` section with `ice`,
    /// `stun-server`, `turn-server`…), by address of record.
    public var accountICE: [String: AccountICE] = [:]
    /// How device audio meets the desktop: PulseAudio's phone role, `--echo-cancel`.
    public var device = DeviceAudio()
    /// What calls' video sends and where what they receive goes (`--video-source`, `--video-sink`), and the picture;
    /// nil: calls carry no video (without `--video`).
    public var video: VideoConfiguration?
    /// `--ringtone`: what an incoming call rings with (and whether the far end's ringing is heard). Only calls whose
    /// sink is the device ring: a headless parleyd (the null sink, files, `--media external` or off) never does.
    public var ringtone = RingtoneChoice.theme

    /// Whether calls ring on the desktop (a ringtone, a ringback).
    public var rings: Bool {
        guard case .device = sink else { return false }
        return ringtone != .off
    }

    /// Calls with audio per core by default: `Scripts/bench-media` has one parleyd pair on 2 cores clean up to 120
    /// concurrent G.711 calls (BENCHMARKS.md; issue 48's report saw saturation between 240 and 320); 50 a core
    /// leaves room for signalling, peaks and encryption.
    public static let callsPerCore = 50
    /// The default limit: ``callsPerCore`` for each core present.
    public static var defaultMaxCalls: Int { callsPerCore * max(1, ProcessInfo.processInfo.activeProcessorCount) }

    /// A configuration; nil `source` or `sink` picks the sound server's device when there is one, else silence and
    /// the null sink (a headless machine).
    public init(source: AudioSource? = nil, sink: AudioSink? = nil, ports: ClosedRange<Int> = 40_000...40_999) {
        let device = Self.hasSoundServer
        self.source = source ?? (device ? .device : .silence)
        self.sink = sink ?? (device ? .device : .null)
        self.ports = ports
    }

    /// The ICE of a call through `account` (an address of record, as a conversation names its account; nil: a call
    /// through none): the account's own when it has any, else the node's ``ice``.
    public func ice(through account: String?) -> ICEConfiguration? {
        switch account.flatMap({ accountICE[$0] }) {
        case .off?: nil
        case .on(let own)?: own
        case nil: ice
        }
    }

    /// What the log says of calls' ICE at start: the node's, and each account's own (its servers; never a password).
    public var iceSummary: [String] {
        var lines = ice.map { ["ICE for calls: \($0)"] } ?? []
        for (account, own) in accountICE.sorted(by: { $0.key < $1.key }) {
            switch own {
            case .off: lines.append("no ICE for calls through \(account) (its section says ice off)")
            case .on(let settings): lines.append("ICE for calls through \(account): \(settings)")
            }
        }
        return lines
    }

    /// Whether a desktop sound server is reachable (PulseAudio's socket, which PipeWire serves too).
    public static var hasSoundServer: Bool { MediaSupport.hasSoundServer }
}

/// What a node does with calls' video (`parleyd --video`, `--video-source`, `--video-sink`).
public struct VideoConfiguration: Sendable, Hashable {
    /// What calls send: the first camera when the machine has one, else the test picture.
    public var source: VideoSource
    /// Where what calls receive goes: a window on a desktop, else nowhere.
    public var sink: VideoSink
    /// The picture sent (640×480 at 30 fps, 800 kbit/s), made smaller where the peer's `max-fs` asks.
    public var format = VideoFormat()
    /// The folder whose files a frontend may have a call send (`setVideoSource file:PATH`, `--video-files`); nil:
    /// none (a control client names no file on this machine).
    public var pickableFiles: String?

    /// A configuration; nil picks the defaults above.
    public init(source: VideoSource? = nil, sink: VideoSink? = nil) {
        let environment = ProcessInfo.processInfo.environment
        self.source = source ?? (FileManager.default.fileExists(atPath: "/dev/video0") ? .camera(device: nil) : .test(pattern: "smpte"))
        self.sink = sink ?? (environment["WAYLAND_DISPLAY"] != nil || environment["DISPLAY"] != nil ? .window : .null)
    }
}

/// ICE for a node's calls (`parleyd --ice`, `--stun-server`, `--turn-server`): where candidates come from and how long
/// the node waits for them and for the checks.
public struct ICEConfiguration: Sendable, Hashable {
    /// The STUN and TURN servers (numeric addresses).
    public var servers: ICEServers
    /// The longest an offer waits for the servers' candidates (it goes with those gathered by then).
    public var gatheringTimeout = Duration.seconds(2)
    /// The longest a call's checks may run without selecting a pair before it ends as `iceFailed`.
    public var checksTimeout = Duration.seconds(20)

    /// A configuration; no servers gives host candidates only.
    public init(servers: ICEServers = ICEServers()) { self.servers = servers }
}

extension ICEConfiguration: CustomStringConvertible {
    /// Where candidates come from, as an agent will ask (never the TURN password): `host candidates only`,
    /// `STUN 192.0.2.1:3478`, `TURN turn:…?transport=udp as user alice` (a STUN server beside it is said to be left out).
    public var description: String {
        let stun = servers.stun.map { "STUN \($0.host):\($0.port)" }
        guard let turn = servers.turn else { return stun ?? "host candidates only" }
        return "TURN \(turn)" + (stun.map { " (\($0) left out beside TURN: the allocation gives the server-reflexive candidate)" } ?? "")
    }
}

/// What an account's own settings say of ICE for its calls, where they say anything (else the node's apply).
public enum AccountICE: Sendable, Hashable {
    /// No ICE for its calls, even when the node has it (`ice off` in its section).
    case off
    /// ICE for its calls, even when the node has none, with these servers: the account's, and the node's for what it
    /// does not name.
    case on(ICEConfiguration)
}

/// Calls' audio for the engine: Media's GStreamer sessions, one per call, on RTP ports from the node's pool.
/// Runs on the node's SIP loop (the engine calls it there).
final class CallAudio: CallMediaHandler {
    let configuration: MediaConfiguration
    let pool: RTPPortPool
    let log: EngineLog
    /// The SIP loop (ICE's timers and its reports' eventfd), and the node's media address.
    let loop: EventLoop
    let host: String
    /// Calls whose media goes through an ICE agent, and the watch on the agents' reports.
    var iceCalls: [UUID: ICECall] = [:]
    /// The port pair each ICE call reserved (its c=/m= may name a server-reflexive port), as long as the call lasts.
    var icePorts: [UUID: Int] = [:]
    var iceWatch: DescriptorWatch?
    var iceNotifications: ICENotifications?
    /// Told when a call's ICE found no path (the call should end as iceFailed), on the loop; set once.
    var onICEFailure: ((UUID, String) -> Void)?
    /// Told when a call's agent restarted after its path lost consent (a re-INVITE should offer its new
    /// credentials), on the loop; set once.
    var onICERestart: ((UUID, String) -> Void)?
    /// Told of a call's selected RTP pair and ICE state whenever the pair changes, on the loop; set once.
    var onICEPair: ((UUID, ICESelectedPair?, ICEState) -> Void)?
    var reservations: [Int: RTPPortPool.Reservation] = [:]
    var sessions: [UUID: MediaSession] = [:]
    /// Calls' video: the port pair each reserved, and its session while video is on.
    var videoCalls: [UUID: CallVideo] = [:]
    /// The video source each call was given (`setVideoSource`), kept for the call's life (each upgrade sends it).
    var chosenVideoSources: [UUID: VideoSource] = [:]
    /// Whether a conversation is still live (the engine's manager has it), on the loop; set once.
    var isConversationLive: ((UUID) -> Bool)?
    /// Each call's video figures as last read (from the video queues), attached to its audio figures.
    let videoFigures = VideoFigures()
    /// Merged calls and their conference bridges.
    var conference = ConferenceMembership()
    /// Calls whose local audio a browser carries (issue 45), and the timer that watches their connections.
    var browsers: [UUID: BrowserLink] = [:]
    var browserWatch: LoopTimer?
    /// The devices each call was given (`setAudioDevice`), the defaults seen last, and the watch on both.
    var chosenDevices: [UUID: (source: String?, sink: String?)] = [:]
    var defaultDevices: (source: String?, sink: String?)?
    var deviceWatch: LoopTimer?
    /// Told when the devices calls play on change (the call whose chosen device went, or nil for a new default; the
    /// default source and sink; why), on the loop; set once.
    var onAudioRoute: ((UUID?, String?, String?, String) -> Void)?
    /// Told when a call's browser audio connects or ends (its session, state, why), on the loop; set once.
    var onBrowserAudio: ((UUID, String, String, String?) -> Void)?
    private var muted: Set<UUID> = []
    /// Calls whose peer named a destination media must not go to (logged once per call).
    private var refused: Set<UUID> = []
    /// Told of each RFC 4733 tone a call's peer sends (from the call's media queue, not the loop); set once, before
    /// the first call.
    var onTonesReceived: (@Sendable (UUID, Character) -> Void)?
    /// Told of each call's audio figures every two seconds (from the call's media queue); set once, before the first
    /// call.
    var onStatistics: (@Sendable (UUID, CallQuality) -> Void)?
    /// Asked ten times a second whether anyone wants audio levels, and told of each call's levels (-dBov heard,
    /// said) a few times a second while they do (from the call's media queue); set once, before the first call.
    var levels: (wanted: @Sendable () -> Bool, reported: @Sendable (UUID, Int?, Int?) -> Void)?
    /// Told when a call's media could not be secured (DTLS-SRTP: the peer's certificate did not match, or the
    /// handshake did not complete), from the call's media queue; set once, before the first call.
    var onSecurityFailure: (@Sendable (UUID, String) -> Void)?
    /// The node's DTLS certificate, when this GStreamer carries DTLS-SRTP.
    private let certificate: DTLSCertificate?

    /// Calls' audio on `host`'s RTP ports; with `certificate` (and GStreamer's DTLS elements), DTLS-SRTP too.
    init(
        _ configuration: MediaConfiguration, host: String, certificate: DTLSCertificate?, loop: EventLoop, log: EngineLog
    ) throws(MediaError) {
        self.loop = loop
        self.host = host
        if let problem = MediaSupport.problem { throw problem }
        self.certificate = MediaSupport.dtlsProblem == nil ? certificate : nil
        self.configuration = configuration
        self.pool = try RTPPortPool(host: host, range: configuration.ports)
        self.log = log
        if case .files(let directory) = configuration.sink { try RecordingDirectory.prepare(directory, log: log) }
        if case .files(let directory)? = configuration.video?.sink { try RecordingDirectory.prepare(directory, log: log) }
    }

    // A node that shuts down ends its calls first (BYE), so no session is left here then; any that is, is completed.
    deinit {
        sessions.values.forEach { $0.finish() }
        videoCalls.values.forEach { $0.session?.finish() }
    }

    /// Never more than the port range holds: beyond, calls would come in without audio.
    /// (Calls' video takes port pairs of the same pool: those are not there for audio.)
    var mediaLoad: (calls: Int, capacity: Int?) {
        (reservations.count, min(configuration.maxCalls, pool.pairs - videoCalls.count))
    }

    /// The media threads' lag, over every call's sending chain (`MediaLoad`).
    var mediaHealth: (keepsUp: Bool, lag: Duration)? {
        let current = MediaLoad.current()
        return (!current.isBehind, current.lag)
    }

    func reserveEndpoint(for conversation: UUID) -> MediaEndpoint? {
        guard let reservation = pool.reserve() else {
            log.warning("\(conversation): no free RTP port pair in \(pool.range) (\(pool.count) in calls, \(pool.quarantinedCount) "
                + "released in the last minute and held back): the call has no audio; widen --rtp-ports")
            return nil
        }
        reservations[reservation.port] = reservation
        return MediaEndpoint(port: reservation.port)
    }

    func releaseEndpoint(_ endpoint: MediaEndpoint, of conversation: UUID) {
        let port = reservedPort(of: endpoint, for: conversation)
        forgetICE(conversation)
        icePorts[conversation] = nil
        reservations[port] = nil
        pool.release(port)
    }

    func audioChanged(_ audio: NegotiatedAudio?, for conversation: UUID) {
        guard let audio else {
            iceCalls[conversation]?.pendingAudio = nil
            muted.remove(conversation)
            refused.remove(conversation)
            guard let session = sessions.removeValue(forKey: conversation) else { return }
            endBrowserAudio(conversation, reason: "the call's audio ended")
            chosenDevices[conversation] = nil
            conference.bothWays.remove(conversation)
            remix()
            // The teardown runs on the session's queue; a recording is ready to read once this line is logged.
            let recording = session.recordingPath
            session.stop { [log] in if let recording { log.info("\(conversation): recording complete: \(recording)") } }
            return
        }
        var parameters = MediaStreamParameters(
            codec: Self.codec(audio.codec), remoteHost: audio.remoteAddress, remotePort: audio.remotePort,
            remoteRTCPPort: audio.remoteRTCPPort, ptime: audio.ptime ?? 20, sends: audio.sends, receives: audio.receives,
            telephoneEvent: audio.telephoneEvent, receivedTelephoneEvent: audio.localTelephoneEvent,
            payloadType: audio.payloadType, receivedPayloadType: audio.localPayloadType)
        parameters.awaitsPeer = !audio.peerConfirmed
        if MediaDestination.isUnspecified(audio.remoteAddress) {
            parameters.remoteHost = "0.0.0.0"  // RFC 2543's hold, however it is spelled (`::`, `0::0`…)
        } else if let refusal = MediaDestination.refusal(of: audio.remoteAddress, local: audio.localAddress) {
            // Nothing is sent there; RTP from a source of the peer's may still be latched onto (docs/media.md).
            if refused.insert(conversation).inserted {
                log.warning("\(conversation): no media is sent to the peer's c= address: \(refusal)")
            }
            parameters.remoteHost = "0.0.0.0"
            parameters.sends = false  // not on to an address it had before either
        }
        guard let encryption = encryption(of: audio) else {
            return log.error("\(conversation): the call agreed on DTLS-SRTP, which this node cannot carry: no audio")
        }
        parameters.encryption = encryption
        parameters.ice = iceBinding(for: audio, of: conversation)
        if let call = iceCalls[conversation] {
            call.pendingAudio = nil
            if case .dtls = encryption, sessions[conversation] == nil, parameters.ice != nil, !call.hasPaths {
                call.pendingAudio = audio
                return
            }
        }
        defer { noteDirection(audio, for: conversation) }
        if let session = sessions[conversation] {
            session.update(parameters)
        } else if let reservation = reservations[icePorts[conversation] ?? audio.localPort] {
            let session = MediaSession(
                reservation: reservation, parameters: parameters, source: configuration.source,
                sink: configuration.sink, recordingName: conversation.uuidString,
                report: { [log] failure in log.error("\(conversation): \(failure)") },
                tonesReceived: { [onTonesReceived] digit in onTonesReceived?(conversation, digit) },
                statisticsReported: { [onStatistics, videoFigures, agent = iceCalls[conversation]?.agent] figures in
                    var quality = Self.quality(figures, through: agent)
                    quality.video = videoFigures[conversation]
                    onStatistics?(conversation, quality)
                },
                securityReported: { [log, onSecurityFailure] outcome in
                    switch outcome {
                    case .secured: log.info("\(conversation): \(outcome)")
                    case .failed(let why): onSecurityFailure?(conversation, why)
                    }
                },
                notice: { [log] text in log.info("\(conversation): \(text)") }, maxRecording: configuration.maxRecording,
                levels: levels.map { levels in
                    AudioLevelReporting(wanted: levels.wanted) { levels.reported(conversation, $0.heard, $0.said) }
                }, device: configuration.device)
            if muted.contains(conversation) { session.setMuted(true) }
            if let browser = browsers[conversation]?.audio { session.handOver(to: browser) }
            sessions[conversation] = session
            watchDevices()
            log.info("\(conversation): audio \(parameters.codec.rawValue) to \(audio.remoteAddress):\(audio.remotePort) from port \(audio.localPort), \(Self.protection(audio))")
        }
    }

    /// How the log's audio line says the call is protected (never a key).
    static func protection(_ audio: NegotiatedAudio) -> String {
        if let srtp = audio.srtp { return "encrypted: SRTP \(srtp.suite.rawValue) keyed by SDES" }
        if let dtls = audio.dtls {
            return "encrypted: SRTP keyed by DTLS (we are the \(dtls.isClient ? "client" : "server")), "
                + "the peer's certificate must match \(audio.peerFingerprint ?? "its fingerprint")"
        }
        return "not encrypted"
    }

    /// SRTP when this GStreamer has its elements (gstreamer1.0-plugins-bad).
    let carriesSRTP = MediaSupport.encryptionProblem == nil

    /// Our certificate's fingerprint (SHA-256) when calls can be DTLS-SRTP: a certificate, and GStreamer's DTLS
    /// elements.
    var dtlsFingerprints: [SDPFingerprint] {
        certificate.flatMap { SDPFingerprint(hashFunction: .sha256, digest: $0.fingerprint.digest) }.map { [$0] } ?? []
    }

    /// The media layer's protection for what the descriptions agreed: SDES keys, DTLS with our certificate and the
    /// peer's fingerprints of the hash functions we know, or plain RTP; nil for DTLS without a certificate (never
    /// plain instead).
    func encryption(of audio: NegotiatedAudio) -> MediaEncryption? {
        if let dtls = audio.dtls { return encryption(dtls) }
        return Self.encryption(audio.srtp)
    }

    /// DTLS-SRTP with our certificate, in our role, checking the peer's fingerprints of the hash functions we know;
    /// nil without a certificate.
    func encryption(_ dtls: DTLSKeying) -> MediaEncryption? {
        guard let certificate else { return nil }
        let peer = dtls.peerFingerprints.compactMap { fingerprint in
            CertificateDigestAlgorithm(rawValue: fingerprint.hashFunction.name).map {
                CertificateFingerprint(algorithm: $0, digest: fingerprint.digest)
            }
        }
        return .dtls(DTLSSetup(isClient: dtls.isClient, certificate: certificate, peerFingerprints: peer))
    }

    /// The media layer's keys for what the descriptions agreed (plain RTP without).
    static func encryption(_ keying: SRTPKeying?) -> MediaEncryption {
        guard let keying else { return .none }
        let suite = keying.suite
        func key(_ material: SIPMessages.SRTPKey) -> SRTPStreamKey {
            SRTPStreamKey(
                cipher: suite.rtpCipher, auth: suite.rtpAuth, rtcpCipher: suite.rtcpCipher, rtcpAuth: suite.rtcpAuth,
                material: material.bytes)
        }
        return .sdes(send: key(keying.sendKey), receive: key(keying.receiveKey))
    }

    /// G.711 always; opus after them when this GStreamer has it (so two parleyd keep G.711; a peer that offers opus
    /// first gets it).
    let codecs: [SDPCodec] = MediaSupport.hasOpus ? [.pcmu, .pcma, .opus] : [.pcmu, .pcma]

    /// The media layer's name for a negotiated codec.
    static func codec(_ codec: SDPCodec) -> AudioCodec {
        switch codec {
        case .pcmu: .pcmu
        case .pcma: .pcma
        case .opus: .opus
        }
    }

    func statistics(for conversation: UUID) -> CallQuality? {
        sessions[conversation]?.latestStatistics.map {
            var quality = Self.quality($0, through: iceCalls[conversation]?.agent)
            quality.video = videoFigures[conversation]
            return quality
        }
    }

    func packetsArrived(for conversation: UUID) -> Int? {
        sessions[conversation]?.packetsArrived
    }

    /// A session's RTP figures as the engine and the history keep them, with the kinds of the candidates its RTP goes
    /// between when it goes through an ICE agent (any thread: the agent's report is read under its lock).
    static func quality(_ figures: RTPStatistics, through agent: ICEAgent? = nil) -> CallQuality {
        var quality = CallQuality(
            codec: figures.codec.rawValue, packetsSent: figures.packetsSent, packetsReceived: figures.packetsReceived,
            packetsLost: figures.packetsLost, packetsExpected: figures.packetsExpected,
            jitterMs: figures.jitterMilliseconds,
            peerPacketsLost: figures.peerReport?.packetsLost, peerJitterMs: figures.peerReport?.jitterMilliseconds,
            roundTripMs: figures.peerReport?.roundTripMilliseconds, packetsDropped: figures.packetsDropped)
        if let pair = agent?.report.pairs.first ?? nil {
            (quality.iceLocalType, quality.iceRemoteType) = (pair.localType.rawValue, pair.remoteType.rawValue)
        }
        return quality
    }

    func sendTones(_ digits: String, for conversation: UUID) {
        sessions[conversation]?.sendTones(digits)
    }

    func muteChanged(_ isMuted: Bool, for conversation: UUID) {
        if isMuted { muted.insert(conversation) } else { muted.remove(conversation) }
        sessions[conversation]?.setMuted(isMuted)
    }
}
