import CallHistory
import ControlChannel
import ConversationKit
import ControlProtocol
import Foundation
import ParleyEngine
import Synchronization

/// parleyd's control socket: `DATA_DIR/control.sock` (mode 0600) for clients holding `DATA_DIR/control.token`;
/// requests go to the engine's ``ControlService``, and clients that subscribed get every conversation change.
final class ControlEndpoint: Sendable {
    private let server: ControlServer
    private let subscribers: Subscribers

    /// The clients that asked for events.
    private final class Subscribers: Sendable {
        let clients = Mutex<Set<ControlClientID>>([])
    }

    init(
        directory: String, engine: ParleyEngine, history: (any CallHistoryStore)?, contacts: ContactDirectory?,
        log: EngineLog, status: @escaping @Sendable () -> [String: Any]
    ) throws {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let token = try ControlToken.loadOrCreate(in: directory)
        let service = ControlService(engine: engine, history: history, contacts: contacts, status: status)
        let subscribers = Subscribers()
        self.subscribers = subscribers
        let box = ServerBox()
        let socketPath = (directory as NSString).appendingPathComponent("control.sock")
        server = try ControlServer(
            socketPath: socketPath, token: token,
            onLine: { client, line in
                let directive = service.handle(line) { reply in box.server?.send(reply, to: client) }
                if case .subscribe = directive { _ = subscribers.clients.withLock { $0.insert(client) } }
            },
            onClose: { client in _ = subscribers.clients.withLock { $0.remove(client) } })
        box.set(server)
        engine.observeEvents { [server, subscribers] event in
            let clients = subscribers.clients.withLock { $0 }
            guard !clients.isEmpty else { return }
            let line = ControlService.event(for: event)
            for client in clients { server.send(line, to: client) }
        }
        log.info("control socket \(socketPath) (token in \(ControlToken.path(in: directory)))")
    }

    /// Closes the socket and removes its file.
    func stop() { server.stop() }
}

/// The server, set once after it exists (its line handler needs it to reply).
private final class ServerBox: Sendable {
    private let value = Mutex<ControlServer?>(nil)
    var server: ControlServer? { value.withLock { $0 } }
    func set(_ server: ControlServer) { value.withLock { $0 = server } }
}
