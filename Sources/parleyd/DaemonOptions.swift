import CommandLineSupport
import ConversationKit
import Foundation
import ParleyEngine
import SIPMessages
import SIPSignaling
import ParleyIO
import SIPTransport
import ParleyNode
import VoIPPush

/// parleyd's settings, from the command line and an optional config file (`--config FILE`: one `option value` per
/// line, `#` comments; the command line wins for single-valued options, `listen` and `call` add up): the node's
/// configuration, and what the daemon itself does with calls (for tests and demos without a frontend).
struct DaemonOptions {
    /// The node to run.
    var node = NodeConfiguration(listen: [], version: DaemonVersion.current)
    /// The most detailed log level written.
    var logLevel: EngineLog.Level = .info
    var calls: [String] = []
    var callID: String?
    var script: CallScript?
    var exitAfter: Int?
    /// The config file read (the default one, or `--config`'s), for the log.
    var configPath: String?

    static let help = """
        usage: parleyd [options]

        Parley's SIP daemon: answers and places calls over UDP, TCP and TLS, logs every conversation transition
        with its uuid and SIP Call-ID, and records ended conversations in the call history.

          --listen URL            udp://HOST:PORT, tcp://HOST:PORT or tls://HOST:PORT; IPv6 as [::1]
                                  (repeatable; default udp://127.0.0.1:5070)
          --tls-cert FILE         PEM certificate for tls:// listeners (with --tls-key)
          --tls-key FILE          PEM private key for tls:// listeners
          --tls-ca FILE           CA certificates (PEM) to verify the TLS peers we call with (default: the
                                  system's); the certificate must also name the host or address called
          --tls-insecure          do not verify the TLS peers we call (by default they are verified)
          --user-agent TEXT       our User-Agent and Server header (default "Parley", without a version)
          --data-dir DIR          data directory: the call history (DIR/history.sqlite), and the control socket
                                  and token too (default $PARLEY_DATA_DIR, likewise, else $XDG_DATA_HOME/parley,
                                  else ~/.local/share/parley, with the control socket and token in
                                  $XDG_RUNTIME_DIR/parley when the session has a runtime directory)
          --no-history            record nothing
          --history CONNINFO      keep the history in PostgreSQL instead: a postgresql:// URI or libpq
                                  key=value pairs (e.g. "host=/run/postgresql dbname=parley"); several parleyd
                                  may share one database, each seeing its account's lines (docs/scale-out.md)
          --history-account AOR   the account this parleyd's lines are filed under (default: the --register
                                  address of record, else sip:USER@HOST of the first listener)
          --websocket HOST:PORT   also serve the control API over WebSocket (and the web softphone) on this
                                  loopback address; with --websocket-tls, any address of this machine
          --websocket-tls CERT KEY  serve them over HTTPS and WSS with this PEM certificate and key (a page
                                  off localhost needs a secure context for the microphone; docs/web-softphone.md)
          --allow-origin ORIGIN   a browser Origin allowed on the WebSocket (repeatable; none by default)
          --control-clients N     client slots on each control endpoint (default 64; when full, an idle client
                                  that never subscribed makes room; connections still saying hello hold none)
          --no-control            no control socket (by default frontends connect to control.sock, with the
                                  token in control.token, both in $XDG_RUNTIME_DIR/parley or DATA_DIR as
                                  --data-dir says; see docs/control-api.md). Started by systemd's parleyd.socket
                                  (socket activation: a listening socket named "control"), parleyd serves that one
          --dbus on|off           serve org.parley.Parley on the session D-Bus, post call notifications there
                                  and hold logind's sleep inhibitor during calls (default on when a bus is
                                  reachable: DBUS_SESSION_BUS_ADDRESS, the system bus; docs/desktop.md)
          --video                 take video calls: offer and answer an m=video stream (VP8, H.264), carried
                                  with --media gstreamer (docs/media.md "Video"), and report isVideo
          --video-source WHAT     what video calls send: test:PATTERN (smpte, ball, red, blue…), camera,
                                  camera:/dev/videoN or file:PATH (default: camera when /dev/video0 exists,
                                  else test:smpte)
          --video-sink WHERE      where received video goes: window, file:DIR (a WebM or Matroska file per
                                  call, as received) or null (default: window on a desktop, else null)
          --video-files DIR       the folder whose video files a frontend may send in a call (setVideoSource
                                  file:PATH; default none: only --video-source names a file)
          --video-codecs LIST     the video codecs offered and accepted, in order: vp8, h264 (default vp8,h264;
                                  h264 only where GStreamer has openh264)
          --media MODE            gstreamer: carry calls' audio as RTP on GStreamer (default); external: a
                                  frontend carries it (it names its RTP address in join/start and hears the
                                  negotiated session in mediaChanged events); off: signalling only
          --audio-source WHAT     what calls send: tone:HZ, file:PATH.wav, device or silence (default: device
                                  when a sound server runs, else silence)
          --audio-sink WHERE      where received audio goes: file:DIR (one WAV per call), device or null
                                  (default: device when a sound server runs, else null)
          --ringtone off|theme|FILE  what an incoming call rings with while it rings, on a phone-role stream: the
                                  sound theme's phone-incoming-call (theme, the default; the far end's ringing is
                                  phone-outgoing-calling), a sound file, or off (no ringback either). Only calls
                                  whose audio sink is the device ring (docs/desktop.md)
          --echo-cancel auto|on|off  WebRTC echo cancellation of calls that capture and play on the device
                                  (default auto: on unless the capture is the sound server's own canceller;
                                  off asks the server's canceller instead)
          --rtp-ports LOW-HIGH    local RTP/RTCP ports, a pair per call (default 40000-40999)
          --max-media-calls N     calls with audio at once; a new call beyond gets 503 (default 50 per core, at most the --rtp-ports pairs)
          --max-recording LENGTH  one call's recording (--audio-sink file:DIR) stops after this much of the call, as 3600, 90m or 2h,
                                  or off (default 2h); the call goes on
          --media-encryption none|auto|sdes|dtls  what our offers use: plain RTP (default: a peer without
                                  SRTP refuses an encrypted offer), SRTP keyed by SDES (RFC 4568) when the call's
                                  signalling is TLS (auto: its keys travel in the SDP), or always (sdes), or SRTP
                                  keyed by DTLS on the media path (dtls, RFC 5763: the peer's certificate is
                                  checked against its SDP fingerprint; our certificate is DATA_DIR/identity/
                                  dtls-certificate.pem). Encrypted offers are always answered in kind (docs/media.md)
          --require-media-encryption  refuse plain media (488): a call never carries unencrypted audio; our offers
                                  are then DTLS-SRTP unless --media-encryption says otherwise
          --ice on|off            ICE (RFC 8445) for our calls' media: candidates in our SDP, checks, the pair that
                                  works (default on when a STUN or TURN server is named; on alone: host candidates)
          --stun-server HOST[:PORT]  a STUN server for server-reflexive candidates (the NAT's mapping; port 3478)
          --turn-server turn:HOST[:PORT][?transport=udp|tcp]  a TURN server relaying for us (symmetric NATs), with
                                  --turn-user NAME and --turn-password-file F (mode 0600); docs/nat.md
          --contacts FILE         name callers from a contacts file (JSON or vCard)
          --user NAME             our SIP user name (default parley)
          --display-name NAME     the name callers see (default: the user name, or "Parley" for the default user)
          --auto-answer MS        answer incoming calls after MS milliseconds (default: never)
          --decline 486|603       how End refuses a ringing call (default 486 Busy Here)
          --on-new-call hold|none  what a call you place or answer does to the calls that are up: hold them
                                  (default: call waiting) or leave them as they are
          --ring-timeout SECONDS  how long a call may ring unanswered (default 60)
          --media-timeout SECONDS|off  end a connected call whose peer sent no RTP or RTCP for this long,
                                  unless the call is held (default 30; reason mediaTimeout)
          --session-timer SECONDS|off  RFC 4028 session interval our INVITEs propose, refreshed by re-INVITE at
                                  half of it; a call not refreshed in time ends (default 1800, at least 90;
                                  reason sessionExpired)
          --max-calls N           live calls at most (default 10000); new INVITEs beyond get 503 Retry-After: 5
          --max-ringing-per-source N  calls ringing at once from one address at most (default 30); beyond: 503
          --group-rate N          group messages one sender may send per second, bursts of 2N (default 20;
                          docs/group-activities.md)
          --max-requests-per-source N  new requests one address may send per second (default 500, 0: no limit);
                                  beyond: 503, then nothing for the --source-ban (IPv6 counts by /64)
          --source-ban SECONDS    how long a flooding address is ignored (default 60)
          --exempt-source ADDR    an address the per-source limits never apply to, e.g. a proxy in front
                                  (repeatable)
          --no-overload-control   never shed new requests when the engine thread is saturated (by default
                                  they get 503 with Retry-After; docs/robustness.md)
          --parse-on-loop         parse SIP messages on the engine's thread too (by default a second thread
                                  parses them, so two cores share the work; docs/architecture.md)
          --send-on-loop          send UDP datagrams on the engine's thread too (by default a thread of their
                                  own sends each loop turn's datagrams with sendmmsg; docs/architecture.md)
          --max-connections N     TCP and TLS connections at most (default 4096)
          --max-connections-per-source N  connections accepted from one address at most (default 64)
          --connection-idle-timeout S  close a TCP/TLS connection that completes no message for S seconds (default 300)
          --accept-from WHO       who may ring: any (default), contacts (callers --contacts names), or a
                                  comma-separated list of SIP URIs and numbers; others get 403 and no record
          --record-blocked        a caller --accept-from refuses leaves a "blocked" record (read, not missed)
          --accept-refer WHEN     always (default): a call's peer may transfer us (its REFER: we call whom it
                                  names, and our call with it ends once that one answers); contacts: only the
                                  peers --contacts names; never: 603
          --dnd                   start with do-not-disturb on: calls are refused with 486 and never ring
                                  (parley dnd on|off, the web page or D-Bus change it while running)
          --forward-always URI    forward every incoming call before it rings (302 with URI as Contact)
          --forward-busy URI      forward calls refused as busy (do-not-disturb, every line taken)
          --forward-no-answer URI forward calls not answered within --forward-after S seconds (default 20)
                                  (URI: sip:user@host or user@host; parley forward changes them while running)
          --phone-domain HOST     the domain phone numbers are called at
          --public-address IP     the address peers are given in Via, Contact and SDP (a host behind a static
                                  NAT); by default the listener's, or with --listen on 0.0.0.0 or [::] the
                                  address of the interface toward each peer
          --register URI          register with this registrar (e.g. sip:127.0.0.1:5060), refreshing before expiry
          --aor URI               the address of record to register (default sip:USER@REGISTRAR-HOST)
          --auth-user NAME        digest user name (default: the --aor user)
          --auth-password-file F  digest password from a file only you may read (mode 0600), or from the
                                  environment: --auth-password-env VAR, else $PARLEY_SIP_PASSWORD;
                                  --auth-password TEXT shows it to every `ps`
          --outbound-proxy URI    send every out-of-dialog request (INVITE, REGISTER) through this proxy
                                  (a pre-loaded Route with ;lr), e.g. sip:proxy.example.com;transport=tcp
          --dns-server ADDR[:PORT]  locate host names (NAPTR, SRV, A/AAAA: RFC 3263) with this server
                                  (repeatable; default: /etc/resolv.conf)
          --register-expires S    binding lifetime to ask for (default 3600)
          --keep-alive S|off      while registered, a keep-alive to the registrar every S seconds (default 25),
                                  so a NAT keeps our mapping open: CRLFCRLF (RFC 5626; on TCP/TLS the flow's
                                  ping); off sends none. Behind a NAT the registrar's Via received/rport becomes
                                  the address our Contact and SDP give (docs/nat.md)
          --keep-alive-method M   crlf (default) or options: an OPTIONS each time, re-registering when unanswered
          --push-service HOST:PORT  connect to the VoIP push simulator (parley push-sim) and take pushes
          --push-token TOKEN      the device token to register there (default: parleyd-USER); also sent in
                                  REGISTER's Contact as RFC 8599 pn-provider/pn-prid/pn-param
          --push-invite-wait S    how long a pushed call waits for its INVITE before it fails (default 10)
          --call URI              call URI once listening (repeatable)
          --call-id ID            the SIP Call-ID of the (single) --call, e.g. the one a push announced
          --script STEPS          run on each call once it is joined, e.g. "wait 500; hold; wait 500; resume;
                                  dtmf 12#; mute; unmute; end"
          --exit-after N          exit once N conversations have ended
          --log-level LEVEL       error, warning, info (default) or debug
          --config FILE           read options from FILE instead of $XDG_CONFIG_HOME/parley/parleyd.conf
                                  (~/.config/parley/parleyd.conf, read when it exists; --no-config: none). A
                                  file holding auth-password must be 0600. One "option value" per line (# comments); after
                                  them, several accounts, each in an [account NAME] section of its own
                                  (docs/accounts.md) with aor (required), register (default: the aor's
                                  domain), --transport udp|tcp|tls, auth-user, auth-password-file (or
                                  auth-password-env VAR), outbound-proxy, display-name, phone-domain,
                                  register-expires, keep-alive and keep-alive-method, and ICE of its own
                                  for its calls (ice on|off, stun-server, turn-server, turn-user,
                                  turn-password-file; the node's for what it leaves out); the first is the
                                  default account. --register and its companions are the one-account
                                  short form
          --help, --version

        Stops cleanly on SIGINT or SIGTERM: connected calls get a BYE. Exit codes: 0 ok, 1 failure, 64 usage error.
        """

    /// Parses the command line (and the config file it names).
    static func parse(_ commandLine: [String]) throws(UsageError) -> DaemonOptions {
        var arguments = Arguments(commandLine)
        let (file, configPath) = try Self.readConfig(&arguments)
        // The file's options come first, so the command line's single values win (last occurrence wins).
        var combined = Arguments(file.arguments + commandLine.filter { _ in true }.dropConfig())
        var options = try parse(&combined)
        options.configPath = configPath
        if !file.accounts.isEmpty {
            if options.node.registration != nil {
                throw UsageError("--register and the config file's [account] sections are one or the other: put that account in a section too")
            }
            var accounts: [Account] = []
            for section in file.accounts {
                let (account, ice) = try Self.account(
                    section, userName: options.node.userName, nodeICE: options.node.media?.ice, media: options.node.media)
                accounts.append(account)
                // Keyed as conversations name their account (the engine refuses two accounts of one address of record).
                if let ice { options.node.media?.accountICE[account.addressOfRecord.description] = ice }
            }
            options.node.accounts = accounts
            options.node.accounts = Self.withPushContact(options.node.accounts, node: options.node)
        }
        return options
    }

    private static func parse(_ arguments: inout Arguments) throws(UsageError) -> DaemonOptions {
        var options = DaemonOptions()
        for text in try arguments.options("--listen") {
            do {
                options.node.listen.append(try ListenAddress(parsing: text))
            } catch {
                throw UsageError("--listen \(text): \(error)")
            }
        }
        if options.node.listen.isEmpty { options.node.listen = [ListenAddress(kind: .udp, host: "127.0.0.1", port: 5070)] }
        let certificate = try arguments.option("--tls-cert"), key = try arguments.option("--tls-key")
        _ = arguments.flag("--tls-verify")  // the default now; still accepted
        let insecure = arguments.flag("--tls-insecure")
        let authorities = try arguments.option("--tls-ca")
        if insecure && authorities != nil { throw UsageError("--tls-insecure and --tls-ca contradict each other") }
        options.node.tls = TLSConfiguration(
            certificatePath: certificate, privateKeyPath: key, verifyPeer: !insecure, caFilePath: authorities)
        if let product = try arguments.option("--user-agent") {
            // It goes into header lines verbatim: no control characters (CR LF would inject headers).
            guard !product.isEmpty, product.count <= 128, product.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) })
            else { throw UsageError("--user-agent takes 1–128 printable ASCII characters") }
            options.node.product = product
        }
        let hasTLS = options.node.listen.contains { $0.kind == .tls }
        if hasTLS && (certificate == nil || key == nil) {
            throw UsageError("a tls:// listener needs --tls-cert FILE and --tls-key FILE")
        }
        options.node.dataDirectory = DataDirectory.resolve(try arguments.option("--data-dir"))
        options.node.keepsIdentity = true
        options.node.takesPassedControlSocket = true
        options.node.recordsHistory = !arguments.flag("--no-history")
        if let database = try arguments.option("--history") {
            guard database.hasPrefix("postgresql://") || database.hasPrefix("postgres://") || database.contains("=") else {
                throw UsageError(
                    "--history expects a PostgreSQL connection string (postgresql://… or key=value pairs), got '\(database)'; the SQLite history lives in --data-dir")
            }
            guard options.node.recordsHistory else { throw UsageError("--history and --no-history exclude each other") }
            options.node.historyDatabase = database
        }
        if let account = try arguments.option("--history-account") {
            guard !account.isEmpty, !account.contains(where: \.isWhitespace) else {
                throw UsageError("--history-account expects an address of record such as sip:alice@example.com, got '\(account)'")
            }
            options.node.historyAccount = account
        }
        options.node.control = !arguments.flag("--no-control")
        options.node.dbus = try arguments.option("--dbus", as: "on or off", { ["on": true, "off": false][$0] }) ?? true
        if let text = try arguments.option("--websocket") {
            guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
                throw UsageError("--websocket expects HOST:PORT, e.g. 127.0.0.1:5080, got '\(text)'")
            }
            var host = String(text[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            options.node.webSocket = NodeConfiguration.WebSocketEndpoint(host: host, port: port)
        }
        if let (certificate, key) = try arguments.optionPair("--websocket-tls") {
            guard options.node.webSocket != nil else { throw UsageError("--websocket-tls goes with --websocket HOST:PORT") }
            options.node.webSocket?.tls = TLSConfiguration(certificatePath: certificate, privateKeyPath: key)
        }
        let origins = Set(try arguments.options("--allow-origin"))
        if !origins.isEmpty && options.node.webSocket == nil {
            throw UsageError("--allow-origin goes with --websocket HOST:PORT")
        }
        options.node.webSocket?.allowedOrigins = origins
        options.node.contactsFile = try arguments.option("--contacts")
        if let user = try arguments.option("--user") { options.node.userName = user }
        options.node.displayName = try arguments.option("--display-name")
        if let name = options.node.displayName, name.isEmpty || name.count > 100 || name.contains(where: \.isNewline) {
            throw UsageError("--display-name must be 1–100 characters on one line")
        }
        options.node.autoAnswer = try arguments.option("--auto-answer", as: "milliseconds (0–600000)") { text in
            Int(text).flatMap { (0...600_000).contains($0) ? Duration.milliseconds($0) : nil }
        }
        if arguments.flag("--video") { options.node.manager.supportsVideo = true }
        if let clients = try arguments.option("--control-clients", as: "a number of clients (1–4096)", in: 1...4096) {
            options.node.controlLimits.maxClients = clients
        }
        if let decline = try arguments.option("--decline", as: "486 or 603", { Int($0).flatMap { [486, 603].contains($0) ? $0 : nil } }) {
            options.node.declineStatus = decline
        }
        if let policy = try arguments.option("--on-new-call", as: "hold or none", { NewCallPolicy(rawValue: $0) }) {
            options.node.onNewCall = policy
        }
        if let ring = try arguments.option("--ring-timeout", as: "seconds (1–3600)", in: 1...3600) {
            options.node.ringTimeout = .seconds(ring)
        }
        if let timeout = try arguments.option("--media-timeout", as: "seconds (1–86400) or off", {
            $0 == "off" ? .some(nil) : Int($0).flatMap { (1...86_400).contains($0) ? .some(Duration.seconds($0)) : nil }
        }) {
            options.node.mediaTimeout = timeout
        }
        if let interval = try arguments.option("--session-timer", as: "seconds (90–86400) or off", {
            $0 == "off" ? .some(nil) : Int($0).flatMap { (90...86_400).contains($0) ? .some($0) : nil }
        }) {
            options.node.sessionTimer = interval.map { SessionTimerConfiguration(interval: $0) }
        }
        if let limit = try arguments.option("--max-calls", as: "a number of calls (1–1000000)", in: 1...1_000_000) {
            options.node.maxCalls = limit
        }
        if let limit = try arguments.option("--max-ringing-per-source", as: "a number of calls (1–100000)", in: 1...100_000) {
            options.node.maxRingingPerSource = limit
        }
        if let rate = try arguments.option("--group-rate", as: "messages per second (1–1000000)", in: 1...1_000_000) {
            options.node.groupMessagesPerSecond = rate
        }
        if let limit = try arguments.option("--max-requests-per-source", as: "requests per second (0–1000000)", in: 0...1_000_000) {
            options.node.maxRequestsPerSource = limit
        }
        if let seconds = try arguments.option("--source-ban", as: "seconds (1–86400)", in: 1...86_400) {
            options.node.sourceBan = .seconds(seconds)
        }
        if arguments.flag("--no-overload-control") { options.node.overloadControl = false }
        if arguments.flag("--parse-on-loop") { options.node.parsesOnThread = false }
        if arguments.flag("--send-on-loop") { options.node.sendsOnThread = false }
        for address in try arguments.options("--exempt-source") {
            var host = address
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard EngineConfiguration.isNumericAddress(host) else {
                throw UsageError("--exempt-source expects a numeric IP address such as 192.0.2.10 or ::1, got '\(address)'")
            }
            options.node.exemptSources.append(host)
        }
        if let limit = try arguments.option("--max-connections", as: "a number of connections (1–100000)", in: 1...100_000) {
            options.node.transportLimits.maxConnections = limit
        }
        if let limit = try arguments.option("--max-connections-per-source", as: "a number of connections (1–100000)", in: 1...100_000) {
            options.node.transportLimits.maxConnectionsPerSource = limit
        }
        if let seconds = try arguments.option("--connection-idle-timeout", as: "seconds (1–86400)", in: 1...86_400) {
            options.node.transportLimits.idleConnectionTimeout = .seconds(seconds)
        }
        if let who = try arguments.option("--accept-from") {
            options.node.acceptFrom = try Self.acceptFrom(who, hasContacts: options.node.contactsFile != nil)
        }
        options.node.recordsBlockedCalls = arguments.flag("--record-blocked")
        if let when = try arguments.option("--accept-refer", as: "always, contacts or never", {
            ["always": NodeConfiguration.AcceptRefer.always, "contacts": .contacts, "never": .never][$0]
        }) {
            guard when != .contacts || options.node.contactsFile != nil else { throw UsageError("--accept-refer contacts needs --contacts FILE") }
            options.node.acceptRefer = when
        }
        options.node.doNotDisturb = arguments.flag("--dnd")
        options.node.forwarding = try Self.forwarding(&arguments)
        if options.node.forwarding.noAnswer != nil, options.node.forwarding.noAnswerAfter >= options.node.ringTimeout {
            throw UsageError("--forward-after must be shorter than --ring-timeout (\(options.node.ringTimeout.components.seconds) s): "
                + "the ring timeout's 480 would come first")
        }
        if options.node.recordsBlockedCalls && options.node.acceptFrom == .anyone {
            throw UsageError("--record-blocked goes with --accept-from contacts or a list (anyone may ring otherwise)")
        }
        options.node.media = try Self.media(&arguments, external: &options.node.externalMedia)
        let video = try Self.video(&arguments, taken: options.node.manager.supportsVideo, media: options.node.media)
        options.node.media?.video = video
        options.node.videoCodecs = try Self.videoCodecs(&arguments, taken: options.node.manager.supportsVideo, carried: video != nil)
        options.node.mediaEncryption = try Self.mediaEncryption(&arguments, media: options.node.media)
        let ice = try Self.ice(&arguments, media: options.node.media)
        options.node.media?.ice = ice
        options.node.phoneDomain = try arguments.option("--phone-domain")
        if let address = try arguments.option("--public-address") {
            guard IPAddress(address) != nil, !RouteProbe.isWildcard(address) else {
                throw UsageError("--public-address expects a numeric IPv4 or IPv6 address (what peers will send to), got '\(address)'")
            }
            options.node.publicAddress = address
        }
        options.calls = try arguments.options("--call")
        for target in options.calls {
            if let transport = SIPURI(target)?.transport, let problem = DialTarget.transportProblem(transport) {
                throw UsageError("--call \(target): \(problem.message)")
            }
        }
        options.callID = try arguments.option("--call-id")
        if let callID = options.callID {
            guard options.calls.count == 1 else { throw UsageError("--call-id goes with exactly one --call") }
            guard SIPGrammar.isCallID(callID) else {
                throw UsageError("--call-id expects a SIP Call-ID such as demo-1@parley, got '\(callID)'")
            }
        }
        if let script = try arguments.option("--script") {
            do {
                options.script = try CallScript(parsing: script)
            } catch {
                throw UsageError("--script: \(error)")
            }
        }
        options.exitAfter = try arguments.option("--exit-after", as: "a positive number") { Int($0).flatMap { $0 > 0 ? $0 : nil } }
        options.node.controlIsOptional = options.exitAfter != nil || !options.calls.isEmpty
        if let service = try arguments.option("--push-service") {
            guard let endpoint = PushEndpoint(service) else {
                throw UsageError("--push-service expects HOST:PORT (IPv6 as [::1]:PORT), got '\(service)'")
            }
            options.node.pushService = endpoint
        }
        options.node.pushToken = try arguments.option("--push-token")
        if options.node.pushToken != nil && options.node.pushService == nil {
            throw UsageError("--push-token needs --push-service HOST:PORT")
        }
        if let token = options.node.pushToken, token.isEmpty || token.count > 256 || token.contains(where: \.isWhitespace) {
            throw UsageError("--push-token must be 1–256 characters without spaces")
        }
        // Below the manager's 30 s action timeout, so a Join made before the INVITE cannot time out first.
        if let wait = try arguments.option("--push-invite-wait", as: "seconds (1–25)", in: 1...25) {
            options.node.pushInviteWait = .seconds(wait)
        }
        options.node.registration = try registration(&arguments, userName: options.node.userName)
        try Self.network(&arguments, into: &options.node)
        if let parameters = Self.pushContactParameters(options.node) {
            options.node.registration?.contactParameters = parameters
        }
        if let level = try arguments.option("--log-level", as: "error, warning, info or debug", EngineLog.Level.init(name:)) {
            options.logLevel = level
        }
        try arguments.finish()
        options.node.log = EngineLog(level: options.logLevel) { level, message in DaemonOutput.line(level, message) }
        return options
    }

    /// `--register` and its companions.
    /// `any`, `contacts` or a comma-separated list of SIP URIs and phone numbers.
    static func acceptFrom(_ text: String, hasContacts: Bool) throws(UsageError) -> NodeConfiguration.AcceptFrom {
        let keywords = ["any", "contacts"]
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "any": return .anyone
        case "contacts":
            guard hasContacts else { throw UsageError("--accept-from contacts needs --contacts FILE") }
            return .contacts
        default:
            let items = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            var handles: [Handle] = []
            for item in items {
                guard !item.isEmpty else { throw UsageError("--accept-from: an empty item in \"\(text)\"") }
                guard !keywords.contains(item.lowercased()) else {
                    throw UsageError("--accept-from: \(item) stands alone, not in a list of callers")
                }
                // A caller is named by a SIP URI or a phone number; a bare word would be taken for a user at our
                // own domain and match nobody.
                let lowered = item.lowercased()
                let named = lowered.hasPrefix("sip:") || lowered.hasPrefix("sips:") || lowered.first == "+"
                    || lowered.first?.isNumber == true
                guard named, let handle = DialTarget.parse(item) else {
                    throw UsageError("--accept-from: \"\(item)\" is not a SIP URI or a phone number (or any, contacts)")
                }
                handles.append(handle)
            }
            guard !handles.isEmpty else { throw UsageError("--accept-from takes any, contacts, or a list of callers") }
            return .only(handles)
        }
    }

    /// The registration of `--register` and its companions (`--aor`, `--auth-user`…), nil without `--register`; in
    /// a config file's account section (`inSection`), the registrar defaults to the address of record's domain, and
    /// `$PARLEY_SIP_PASSWORD` is not read (it cannot tell accounts apart).
    static func registration(
        _ arguments: inout Arguments, userName: String, inSection: Bool = false
    ) throws(UsageError) -> RegistrationConfiguration? {
        let aorText = try arguments.option("--aor")
        let user = try arguments.option("--auth-user")
        let password = try Self.password(&arguments, environment: !inSection)
        let expires = try arguments.option("--register-expires", as: "seconds (60–604800)") {
            Int($0).flatMap { (60...604_800).contains($0) ? $0 : nil }
        }
        let keepAlive = try arguments.option("--keep-alive", as: "seconds (1–3600) or off") { text -> Int?? in
            text == "off" ? .some(nil) : Int(text).flatMap { (1...3600).contains($0) ? .some($0) : nil }
        }
        let method = try arguments.option("--keep-alive-method", as: "crlf or options", KeepAlivePolicy.Method.init(rawValue:))
        let defaultRegistrar = inSection ? aorText.flatMap(SIPURI.init).map { SIPURI(scheme: $0.scheme, user: nil, host: $0.host) } : nil
        guard let registrarText = try arguments.option("--register") ?? defaultRegistrar?.description else {
            if aorText != nil || user != nil || expires != nil || keepAlive != nil || method != nil {
                throw UsageError("--aor, --auth-user, --register-expires and --keep-alive need --register URI")
            }
            return nil
        }
        if keepAlive == .some(nil), method != nil { throw UsageError("--keep-alive-method goes with keep-alives on") }
        let policy = keepAlive.map { seconds in seconds.map { KeepAlivePolicy(interval: .seconds($0)) } }
            ?? .standard
        guard let registrar = SIPURI(registrarText), registrar.isSIP, !registrar.host.isEmpty else {
            throw UsageError("--register expects a SIP URI such as sip:127.0.0.1:5060, got '\(registrarText)'")
        }
        let aor: SIPURI
        if let aorText {
            guard let parsed = SIPURI(aorText), parsed.isSIP, parsed.user != nil else {
                throw UsageError("--aor expects a SIP URI with a user, such as sip:alice@example.com, got '\(aorText)'")
            }
            aor = parsed
        } else {
            aor = SIPURI(scheme: registrar.scheme, user: userName, host: registrar.host)
        }
        let credentials = password.map { DigestCredentials(username: user ?? aor.user ?? userName, password: $0) }
        return RegistrationConfiguration(
            registrar: registrar, addressOfRecord: aor, credentials: credentials, expires: expires ?? 3600,
            keepAlive: policy.map { KeepAlivePolicy(interval: $0.interval, method: method ?? .crlf) })
    }
}

extension Array where Element == String {
    /// The arguments without `--config FILE` / `--config=FILE` and `--no-config`.
    fileprivate func dropConfig() -> [String] {
        var result: [String] = []
        var skip = false
        for argument in self {
            if skip { skip = false; continue }
            if argument == "--config" { skip = true; continue }
            if argument == "--no-config" { continue }
            if argument.hasPrefix("--config=") { continue }
            result.append(argument)
        }
        return result
    }
}
