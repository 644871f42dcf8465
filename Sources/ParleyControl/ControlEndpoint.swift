import CallHistory
import ControlChannel
import ControlProtocol
import ConversationKit
import Foundation
import ParleyEngine
import ParleyIO
import Synchronization

/// parleyd's control API endpoints: the Unix socket `DATA_DIR/control.sock` (mode 0600), and optionally a WebSocket
/// on a loopback port (for browser frontends; Origin-checked), both for clients holding `DATA_DIR/control.token`,
/// both on the control loop. Requests go to one ``ControlService``; clients that subscribed get every event.
///
/// Client slots are fair: when an endpoint is full, a new client takes the slot of the authenticated client that has
/// been idle longest among those that never subscribed and sent nothing for ``ControlLimits/evictionIdleTime``
/// (it gets an `evicted` error) — once the newcomer's hello carried the token. Subscribed clients — the frontends
/// showing calls — are never evicted. Connections that have not said hello hold no slot: they share a small budget
/// of their own (``ControlLimits/maxPendingConnections``, ``ControlLimits/maxPendingPerSource``), where a newcomer
/// sets the oldest idle one aside (unread, closed at its hello deadline), so connections that never say hello cannot
/// keep a client out.
public final class ControlEndpoint: Sendable {
    private let unix: ControlServer
    private let webSocket: ControlWebSocketServer?
    /// The service both endpoints serve.
    public let service: ControlService
    /// The WebSocket port actually bound, if any.
    public var webSocketPort: UInt16? { webSocket?.port }

    /// Sends on whichever server was created (set once, right after it exists: its handlers need it to reply).
    private final class Sender: Sendable {
        private let send = Mutex<(@Sendable (Data, ControlClientID) -> Void)?>(nil)
        func set(_ body: @escaping @Sendable (Data, ControlClientID) -> Void) { send.withLock { $0 = body } }
        func callAsFunction(_ line: Data, _ client: ControlClientID) { send.withLock { $0 }?(line, client) }
    }

    /// Marks subscribers on whichever server was created (set once, like ``Sender``).
    private final class Subscriber: Sendable {
        private let subscribe = Mutex<(@Sendable (ControlClientID, Bool) -> Void)?>(nil)
        func set(_ body: @escaping @Sendable (ControlClientID, Bool) -> Void) { subscribe.withLock { $0 = body } }
        func callAsFunction(_ client: ControlClientID, audioLevels: Bool) { subscribe.withLock { $0 }?(client, audioLevels) }
    }

    /// The endpoints for `engine`, with the token in `directory` and the Unix socket `directory/control.sock`, or
    /// `passedSocket` (a listening socket a service manager made, and its path) instead of binding one; `facts` are
    /// the daemon's own, for `status`.
    public init(
        directory: String, passedSocket: (descriptor: Int32, path: String)? = nil, engine: ParleyEngine,
        history: (any CallHistoryStore)?, contacts: ContactBook,
        webSocket: (host: String, port: UInt16, allowedOrigins: Set<String>, site: WebSite?, tls: TLSConfiguration?)?,
        limits: ControlLimits,
        loop: EventLoop, log: EngineLog, facts: @escaping @Sendable () -> DaemonFacts
    ) throws {
        let token = try ControlToken.loadOrCreate(in: directory)
        let webPage = Mutex<String?>(nil)
        let service = ControlService(
            engine: engine, history: history, contacts: contacts, connection: limits,
            facts: {
                var known = facts()
                known.webPage = webPage.withLock { $0 }
                return known
            })
        self.service = service
        let socketPath = passedSocket?.path ?? (directory as NSString).appendingPathComponent("control.sock")

        /// Each message goes to the service; a subscribe marks the client on its server.
        func handler(_ sender: Sender, subscribe: Subscriber) -> @Sendable (ControlClientID, Data) -> Void {
            { client, line in
                if case .subscribe(let levels) = service.handle(line, reply: { reply in sender(reply, client) }) {
                    subscribe(client, audioLevels: levels)
                }
            }
        }

        let unixSender = Sender()
        let unixSubscriber = Subscriber()
        if let passedSocket {
            unix = try ControlServer(
                inheriting: passedSocket.descriptor, socketPath: socketPath, token: token, limits: limits, loop: loop,
                onLine: handler(unixSender, subscribe: unixSubscriber))
        } else {
            unix = try ControlServer(
                socketPath: socketPath, token: token, limits: limits, loop: loop, onLine: handler(unixSender, subscribe: unixSubscriber))
        }
        unixSender.set { [unix] line, client in unix.send(line, to: client) }
        unixSubscriber.set { [unix] client, levels in unix.subscribe(client, audioLevels: levels) }

        if let webSocket {
            let webSender = Sender()
            let webSubscriber = Subscriber()
            let server = try ControlWebSocketServer(
                host: webSocket.host, port: webSocket.port, token: token, allowedOrigins: webSocket.allowedOrigins,
                site: webSocket.site, tls: webSocket.tls, limits: limits, loop: loop,
                onLine: handler(webSender, subscribe: webSubscriber))
            webSender.set { line, client in server.send(line, to: client) }
            webSubscriber.set { client, levels in server.subscribe(client, audioLevels: levels) }
            if let url = server.pageURL { webPage.withLock { $0 = url } }
            self.webSocket = server
        } else {
            self.webSocket = nil
        }
        service.publishEvents(
            to: { [unix, webSocket = self.webSocket] line, levelsOnly in
                unix.sendToSubscribers(line, audioLevelsOnly: levelsOnly)
                webSocket?.sendToSubscribers(line, audioLevelsOnly: levelsOnly)
            },
            listening: { [unix, webSocket = self.webSocket] in unix.hasSubscribers || webSocket?.hasSubscribers == true })
        engine.setAudioLevelDemand { [unix, webSocket = self.webSocket] in
            unix.hasLevelSubscribers || webSocket?.hasLevelSubscribers == true
        }
        let socketURL = self.webSocket?.socketURL
        let passed = passedSocket == nil ? "" : ", passed by the service manager"
        log.info("control socket \(socketPath)\(passed) (token in \(ControlToken.path(in: directory)))"
            + (socketURL.map { " and \($0)" } ?? "") + (webPage.withLock { $0 }.map { "; web softphone at \($0) (parley web)" } ?? ""))
    }

    /// The limits as the reference documents them.
    public static func documentedLimits(_ limits: ControlLimits = ControlLimits()) -> [ControlReference.Limit] {
        [
            .init("client slots per endpoint", "\(limits.maxClients)", "authenticated clients only; when all are taken, a new connection gets `tooManyClients` at once and is closed unless some client could be evicted; then its hello with the token takes the slot of the longest-idle client that never subscribed (`evicted`); a hello that finds them all taken is treated the same (`parleyd --control-clients N`)"),
            .init("connections still saying hello, per endpoint", "\(limits.maxPendingConnections)", "they hold no client slot; beyond it a new connection is let in and the oldest pending connection that has sent nothing yet (else the oldest), of the address holding the most, is set aside: no longer read, closed without a word at its hello deadline (at once beyond four times this many set aside), so a flood that reopens what is closed does not come straight back"),
            .init("connections still saying hello, per endpoint and address", "\(limits.maxPendingPerSource)", "the same within one address (IPv6 by its /64; every Unix-socket peer is one): the address's oldest pending connection that has sent nothing yet (else its oldest) is set aside for the newcomer, so idle connections cannot keep a client of the same address from saying hello; a client that sends its request or hello as it connects is read before more connections are accepted"),
            .init("idle time before a client can be evicted", "\(Int(limits.evictionIdleTime)) s", "clients that subscribed, or sent a request more recently (an action is answered within 30 s), keep their slot"),
            .init("hello deadline", "\(Int(limits.helloTimeout)) s", "`unauthorized`, closed"),
            .init("message size, client to parleyd (the LF not counted)", "\(limits.maxLineBytes / 1024) KiB", "`frameTooLarge`, closed (replies and events may be larger: `list` with 100 calls is about 75 KB)"),
            .init("queued output per client", "\(limits.maxQueuedBytes / 1024 / 1024) MiB", "a client that does not read is closed; others are not affected"),
            .init("request id", "\(ControlProtocol.maxIDBytes) bytes", "`invalidRequest`"),
        ]
    }

    /// Closes both endpoints and removes the socket file.
    public func stop() {
        webSocket?.stop()
        unix.stop()
    }
}
