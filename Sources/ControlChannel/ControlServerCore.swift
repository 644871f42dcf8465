import Foundation
import ParleyIO

/// The rules of a control API endpoint, whatever carries its messages: the hello with the token (within the hello
/// deadline), the welcome, the client cap (authenticated clients only; connections still saying hello share the
/// server's pending budget), the transport's own errors, and handing every message of an authenticated
/// client to `onLine`. One core for the Unix socket (``LineFraming``) and the WebSocket (``WebSocketFraming``), on a
/// ParleyIO ``StreamServer``. Loop-confined: the public servers reach it on their loop.
final class ControlServerCore<Framing: ControlFraming>: StreamServerDelegate {
    typealias Codec = Framing.Codec

    let loop: EventLoop
    private let framing: Framing
    private let token: [UInt8]
    private let limits: ControlLimits
    private let onLine: @Sendable (ControlClientID, Data) -> Void
    private let onClose: (@Sendable (ControlClientID) -> Void)?
    private var server: StreamServer<ControlServerCore>?
    private var sessions: [StreamClientID: Framing.Session] = [:]
    /// Clients that asked for events: they get ``sendToSubscribers(_:)`` and are never evicted.
    private var subscribers: Set<StreamClientID> = [] {
        didSet { subscriberCount.set(subscribers.count) }
    }
    /// Subscribers that also asked for audio levels.
    private var levelSubscribers: Set<StreamClientID> = [] {
        didSet { subscriberCount.setLevels(levelSubscribers.count) }
    }
    private let subscriberCount: SubscriberCount
    /// When each authenticated client last sent a message (monotonic nanoseconds).
    private var lastHeard: [StreamClientID: UInt64] = [:]
    /// Said to every connection the server stops.
    private static var stopReason: String { "the server is stopping" }

    init(
        loop: EventLoop, framing: Framing, token: [UInt8], limits: ControlLimits,
        onLine: @escaping @Sendable (ControlClientID, Data) -> Void, onClose: (@Sendable (ControlClientID) -> Void)?,
        subscriberCount: SubscriberCount
    ) {
        self.subscriberCount = subscriberCount
        self.loop = loop
        self.framing = framing
        self.token = token
        self.limits = limits
        self.onLine = onLine
        self.onClose = onClose
    }

    /// Starts serving the listening socket `fd` (over TLS with `tls`). On the loop thread.
    func start(listening fd: Int32, tls: TLSContext? = nil) throws(IOError) {
        let channel = StreamChannelOptions(
            maxQueuedBytes: limits.maxQueuedBytes, lingerTime: .seconds(atLeastAMillisecond: limits.lingerTime))
        let serverLimits = StreamServer<ControlServerCore>.Limits(
            maxClients: limits.maxClients, helloTimeout: .seconds(atLeastAMillisecond: limits.helloTimeout),
            channel: channel, socketSendBufferSize: limits.socketSendBufferSize, maxPending: limits.maxPendingConnections,
            maxPendingPerSource: limits.maxPendingPerSource)
        server = try StreamServer(
            loop: loop, listening: fd, limits: serverLimits, tls: tls, makeCodec: { [framing] in framing.makeCodec() },
            delegate: self)
    }

    /// Authenticated clients connected now.
    var authenticatedCount: Int { server?.authenticatedClients.count ?? 0 }

    /// Connections that have not said hello yet.
    var pendingCount: Int { server?.pendingCount ?? 0 }

    /// Stops listening and closes every connection (a WebSocket is offered a close frame 1001).
    func stop() {
        let sessions = self.sessions
        server?.stop(reason: Self.stopReason) { [framing] id in
            sessions[id].flatMap { framing.farewell(.goingAway, reason: Self.stopReason, session: $0) }
        }
        server = nil
        self.sessions = [:]
        subscribers = []
        levelSubscribers = []
        lastHeard = [:]
    }

    // MARK: Serving

    func send(_ message: Data, to client: ControlClientID) {
        guard let server, server.stage(of: client.rawValue) == .authenticated else { return }
        server.send(framing.encode(message), to: client.rawValue)
    }

    func broadcast(_ message: Data) {
        guard let server else { return }
        let framed = framing.encode(message)
        for client in server.authenticatedClients { server.send(framed, to: client) }
    }

    func subscribe(_ client: ControlClientID, audioLevels: Bool) {
        guard server?.stage(of: client.rawValue) == .authenticated else { return }
        subscribers.insert(client.rawValue)
        if audioLevels { levelSubscribers.insert(client.rawValue) } else { levelSubscribers.remove(client.rawValue) }
    }

    func sendToSubscribers(_ message: Data, audioLevelsOnly: Bool) {
        let receivers = audioLevelsOnly ? levelSubscribers : subscribers
        guard let server, !receivers.isEmpty else { return }
        let framed = framing.encode(message)
        for client in receivers { server.send(framed, to: client) }
    }

    func close(_ client: ControlClientID) {
        guard let server, let session = sessions[client.rawValue] else { return }
        let reason = "closed by the server"
        server.close(client.rawValue, reason: reason, lastWords: framing.farewell(.normal, reason: reason, session: session))
    }

    // MARK: StreamServerDelegate

    func server(_ server: StreamServer<ControlServerCore>, accepted client: StreamClientID, from peer: SocketAddress?) {
        sessions[client] = framing.makeSession()
    }

    func server(_ server: StreamServer<ControlServerCore>, turnedAway client: StreamClientID) {
        let session = framing.makeSession()
        sessions[client] = session
        // Full: with a client that could make room, the newcomer may still say hello (and take that slot); else a
        // WebSocket is turned away after its upgrade, so that a browser, which cannot read an HTTP refusal, learns
        // why, and a line connection at once.
        if evictable() == nil, framing.carriesMessages(session) { rejectTooMany(client) }
    }

    /// The authenticated client idle longest among those that never subscribed and have sent nothing for the
    /// eviction idle time: the one that gives up its slot to a newcomer when the server is full.
    private func evictable() -> StreamClientID? {
        guard let server else { return nil }
        let now = monotonicNanoseconds()
        let idleEnough = UInt64(min(max(0, limits.evictionIdleTime), 86_400) * 1e9)
        return server.authenticatedClients
            .filter { !subscribers.contains($0) && now &- (lastHeard[$0] ?? 0) >= idleEnough }
            .min { (lastHeard[$0] ?? 0, $0) < (lastHeard[$1] ?? 0, $1) }
    }

    /// A connection over the cap said hello with the right token: it gets the evictable client's slot (that one is
    /// told `evicted`), or is turned away when there is none. Only an authenticated newcomer evicts anyone.
    private func admitOverCap(_ client: StreamClientID) {
        guard let server, let victim = evictable() else { return rejectTooMany(client) }
        reject(victim, .evicted, "This connection was idle and never subscribed, so it was closed to make room for a new one.",
               closeCode: .tryAgainLater)
        server.admit(client)
        lastHeard[client] = monotonicNanoseconds()
        server.send(framing.encode(ControlWire.welcome), to: client)
    }

    func server(_ server: StreamServer<ControlServerCore>, received frame: Codec.Frame, from client: StreamClientID) {
        guard var session = sessions[client] else { return }
        let inbound = framing.interpret(frame, session: &session)
        sessions[client] = session
        handle(inbound, from: client)
    }

    func server(_ server: StreamServer<ControlServerCore>, failedToDecode failure: Codec.Failure, from client: StreamClientID) {
        guard let session = sessions[client] else { return }
        handle(framing.interpret(failure, session: session), from: client)
    }

    func server(_ server: StreamServer<ControlServerCore>, helloTimedOut client: StreamClientID) {
        switch server.stage(of: client) {
        case .awaitingHello: reject(client, .unauthorized, "No hello came within \(Int(limits.helloTimeout)) s.")
        case .turnedAway: rejectTooMany(client)
        case .authenticated, nil: break
        }
    }

    func server(
        _ server: StreamServer<ControlServerCore>, closed client: StreamClientID, stage: StreamClientStage,
        reason: StreamCloseReason
    ) {
        sessions[client] = nil
        subscribers.remove(client)
        levelSubscribers.remove(client)
        lastHeard[client] = nil
        switch stage {
        case .authenticated: onClose?(ControlClientID(client))
        case .awaitingHello, .turnedAway: break
        }
    }

    // MARK: Messages

    private func handle(_ inbound: ControlInbound, from client: StreamClientID) {
        guard let server, let stage = server.stage(of: client) else { return }
        switch inbound {
        case .nothing:
            break
        case .reply(let bytes):
            server.send(bytes, to: client)
        case .upgraded(let response):
            server.send(response, to: client)
            if stage == .turnedAway, evictable() == nil { rejectTooMany(client) }
        case .close(let lastWords, let reason):
            server.close(client, reason: reason, lastWords: lastWords)
        case .tooLarge(let closing):
            let what = framing.unitName
            let sentence = what.prefix(1).uppercased() + what.dropFirst() + " is over \(limits.maxLineBytes) bytes, so the connection is closed."
            server.send(framing.encode(ControlWire.error(.frameTooLarge, sentence)), to: client)
            server.close(client, reason: "\(what) over \(limits.maxLineBytes) bytes", lastWords: closing)
        case .message(let message):
            received(message, from: client, stage: stage)
        }
    }

    private func received(_ message: Data, from client: StreamClientID, stage: StreamClientStage) {
        switch stage {
        case .turnedAway, .awaitingHello:
            switch ControlWire.helloToken(in: message) {
            case .failure(let fault):
                reject(client, fault.code, fault.description)
            case .success(let given):
                guard ControlWire.tokensMatch(given, token) else {
                    return reject(client, .unauthorized, "The token is wrong: read it from parleyd's control.token.")
                }
                // Every slot may have been taken since this connection came in (waiting connections hold none).
                guard stage == .awaitingHello, server?.authenticate(client) == true else { return admitOverCap(client) }
                lastHeard[client] = monotonicNanoseconds()
                server?.send(framing.encode(ControlWire.welcome), to: client)
            }
        case .authenticated:
            guard String(validating: message, as: UTF8.self) != nil else {
                server?.send(
                    framing.encode(ControlWire.error(.invalidFrame, "A line was not UTF-8, so it was skipped.")), to: client)
                return
            }
            lastHeard[client] = monotonicNanoseconds()
            onLine(ControlClientID(client), message)
        }
    }

    private func rejectTooMany(_ client: StreamClientID) {
        reject(client, .tooManyClients, "parleyd serves as many clients as it takes; try again later.", closeCode: .tryAgainLater)
    }

    /// Sends an error (and for a WebSocket a close frame, or before the upgrade an HTTP 408) and closes once written.
    private func reject(
        _ client: StreamClientID, _ code: ControlErrorCode, _ message: String,
        closeCode: WebSocketCloseCode = .policyViolation
    ) {
        guard let server, let session = sessions[client] else { return }
        let words = framing.refusal(ControlWire.error(code, message), reason: message, closeCode: closeCode, session: session)
        server.close(client, reason: message, lastWords: words)
    }
}
