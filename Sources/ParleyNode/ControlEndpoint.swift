import CallHistory
import ControlChannel
import ControlProtocol
import ConversationKit
import Foundation
import ParleyControl
import ParleyEngine
import ParleyIO
import Synchronization

/// A node's control API endpoints: the Unix socket `DATA_DIR/control.sock` (mode 0600), and optionally a WebSocket
/// on a loopback port (for browser frontends; Origin-checked), both for clients holding `DATA_DIR/control.token`,
/// both on the node's control loop. Requests go to the engine's ``ControlService``; clients that subscribed get
/// every event.
final class ControlEndpoint: Sendable {
    private let unix: ControlServer
    private let webSocket: ControlWebSocketServer?
    /// The WebSocket port actually bound, if any.
    var webSocketPort: UInt16? { webSocket?.port }

    /// The clients that asked for events, per endpoint.
    private final class Subscribers: Sendable {
        let clients = Mutex<Set<ControlClientID>>([])
    }

    /// Sends on whichever server was created (set once, right after it exists: its handlers need it to reply).
    private final class Sender: Sendable {
        private let send = Mutex<(@Sendable (Data, ControlClientID) -> Void)?>(nil)
        func set(_ body: @escaping @Sendable (Data, ControlClientID) -> Void) { send.withLock { $0 = body } }
        func callAsFunction(_ line: Data, _ client: ControlClientID) { send.withLock { $0 }?(line, client) }
    }

    init(
        directory: DataDirectory, engine: ParleyEngine, history: (any CallHistoryStore)?, contacts: ContactDirectory?,
        webSocket: NodeConfiguration.WebSocketEndpoint?, loop: EventLoop, log: EngineLog,
        status: @escaping @Sendable () -> [String: Any]
    ) throws {
        try directory.create()
        let token = try ControlToken.loadOrCreate(in: directory.path)
        let service = ControlService(engine: engine, history: history, contacts: contacts, status: status)
        let socketPath = directory.controlSocketPath

        func handlers(_ subscribers: Subscribers, _ sender: Sender) -> (
            onLine: @Sendable (ControlClientID, Data) -> Void, onClose: @Sendable (ControlClientID) -> Void
        ) {
            (
                { client, line in
                    let directive = service.handle(line) { reply in sender(reply, client) }
                    if case .subscribe = directive { _ = subscribers.clients.withLock { $0.insert(client) } }
                },
                { client in _ = subscribers.clients.withLock { $0.remove(client) } }
            )
        }

        let unixSubscribers = Subscribers()
        let unixSender = Sender()
        let unixHandlers = handlers(unixSubscribers, unixSender)
        unix = try ControlServer(
            socketPath: socketPath, token: token, loop: loop, onLine: unixHandlers.onLine, onClose: unixHandlers.onClose)
        unixSender.set { [unix] line, client in unix.send(line, to: client) }

        let webSubscribers = Subscribers()
        if let webSocket {
            let webSender = Sender()
            let webHandlers = handlers(webSubscribers, webSender)
            let server = try ControlWebSocketServer(
                host: webSocket.host, port: webSocket.port, token: token, allowedOrigins: webSocket.allowedOrigins,
                loop: loop, onLine: webHandlers.onLine, onClose: webHandlers.onClose)
            webSender.set { line, client in server.send(line, to: client) }
            self.webSocket = server
        } else {
            self.webSocket = nil
        }
        engine.observeEvents { [unix, webSocket = self.webSocket] event in
            let unixClients = unixSubscribers.clients.withLock { $0 }
            let webClients = webSubscribers.clients.withLock { $0 }
            guard !unixClients.isEmpty || !webClients.isEmpty else { return }
            let line = ControlService.event(for: event)
            for client in unixClients { unix.send(line, to: client) }
            if let webSocket { for client in webClients { webSocket.send(line, to: client) } }
        }
        log.info("control socket \(socketPath) (token in \(ControlToken.path(in: directory.path)))"
            + (self.webSocket.map { " and ws://\(webSocket?.host ?? "127.0.0.1"):\($0.port)/" } ?? ""))
    }

    /// Closes both endpoints and removes the socket file.
    func stop() {
        webSocket?.stop()
        unix.stop()
    }
}
