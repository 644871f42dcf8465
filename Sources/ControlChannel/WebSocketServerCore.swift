import Dispatch
import Foundation
import Glibc

/// The WebSocket server's state, confined to its queue; the WebSocket twin of ``ControlServerCore``.
// @unchecked Sendable: every mutable member is touched only on `queue`. The public entry points reach it through
// `perform` / `performAndWait` (inline when already on `queue`, which `onQueueKey` tells, else `queue.async` /
// `queue.sync`) or `queue.sync`; the listener's and channels' Dispatch handlers and the hello deadlines are all
// installed on `queue`. The `let` members are immutable; `socketsClosed` is a DispatchGroup, itself thread-safe.
final class WebSocketServerCore: @unchecked Sendable {
    let queue = DispatchQueue(label: "parley.control-websocket-server")
    let socketsClosed = DispatchGroup()
    private let onQueueKey = DispatchSpecificKey<Bool>()

    private let token: [UInt8]
    private let limits: ControlLimits
    private let allowedOrigins: Set<String>
    private let onLine: @Sendable (ControlClientID, Data) -> Void
    private let onClose: (@Sendable (ControlClientID) -> Void)?

    /// Where a connection is in its life.
    private enum Stage {
        /// Connected; the WebSocket handshake and then the hello message must follow.
        case awaitingHello
        /// The hello was good: messages go to `onLine`.
        case authenticated
    }

    private struct Connection {
        let channel: WebSocketChannel
        var stage: Stage
    }

    private var listener: (any DispatchSourceRead)?
    /// Whether `listener` is suspended (accepting paused after an accept error).
    private var listenerSuspended = false
    private var connections: [ControlClientID: Connection] = [:]
    /// Connections closed but still flushing their last messages; `stop` cuts them short.
    private var lingering: [ControlClientID: WebSocketChannel] = [:]
    private var nextID: UInt64 = 1
    private var stopped = false

    init(
        token: [UInt8], limits: ControlLimits, allowedOrigins: Set<String>,
        onLine: @escaping @Sendable (ControlClientID, Data) -> Void, onClose: (@Sendable (ControlClientID) -> Void)?
    ) {
        self.token = token
        self.limits = limits
        self.allowedOrigins = allowedOrigins
        self.onLine = onLine
        self.onClose = onClose
        queue.setSpecific(key: onQueueKey, value: true)
    }

    /// Runs `body` on the queue: now if already there (a handler calling back), else later, in submission order.
    func perform(_ body: @escaping @Sendable (WebSocketServerCore) -> Void) {
        if DispatchQueue.getSpecific(key: onQueueKey) == true {
            body(self)
        } else {
            queue.async { [self] in body(self) }
        }
    }

    /// Runs `body` on the queue and returns its result.
    func performAndWait<T>(_ body: (WebSocketServerCore) -> T) -> T {
        if DispatchQueue.getSpecific(key: onQueueKey) == true { return body(self) }
        return queue.sync { body(self) }
    }

    var authenticatedCount: Int {
        connections.values.count { $0.stage == .authenticated }
    }

    func start(listener fd: Int32) {
        socketsClosed.enter()
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in acceptConnections(fd) }
        source.setCancelHandler { [self] in
            Glibc.close(fd)
            socketsClosed.leave()
        }
        listener = source
        source.resume()
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        listener?.cancel()
        if listenerSuspended {
            listener?.resume()  // a suspended source never runs its cancel handler (and must not be released so)
            listenerSuspended = false
        }
        listener = nil
        let open = connections.values.map(\.channel) + Array(lingering.values)
        connections = [:]
        lingering = [:]
        for channel in open { channel.abort(reason: "the server is stopping") }
    }

    // MARK: Serving

    func send(_ line: Data, to client: ControlClientID) {
        guard let connection = connections[client], connection.stage == .authenticated else { return }
        connection.channel.send(line)
    }

    func broadcast(_ line: Data) {
        // A snapshot: a client whose queue overflows is removed from `connections` while we go.
        for (_, connection) in connections where connection.stage == .authenticated {
            connection.channel.send(line)
        }
    }

    func close(_ client: ControlClientID) {
        connections[client]?.channel.close(.normal, reason: "closed by the server")
    }

    // MARK: Connections

    private func acceptConnections(_ listener: Int32) {
        for _ in 0..<64 {
            // UnixSockets.accept is plain accept(2) plus flags: it serves a TCP listener as well.
            switch UnixSockets.accept(listener) {
            case .none:
                return
            case .failed:
                // Out of descriptors, say: pause accepting instead of spinning on a readable listener.
                guard !listenerSuspended else { return }
                self.listener?.suspend()
                listenerSuspended = true
                queue.asyncAfter(deadline: .now() + 0.1) { [self] in
                    guard !stopped, listenerSuspended else { return }
                    self.listener?.resume()
                    listenerSuspended = false
                }
                return
            case .connection(let fd):
                open(fd)
            }
        }
    }

    private func open(_ fd: Int32) {
        if let size = limits.socketSendBufferSize { UnixSockets.setSendBuffer(fd, bytes: size) }
        var noDelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        let id = ControlClientID(nextID)
        nextID += 1
        let channel = WebSocketChannel(
            fd: fd, queue: queue,
            limits: WebSocketChannel.Limits(
                maxMessageBytes: limits.maxLineBytes, maxQueuedBytes: limits.maxQueuedBytes,
                lingerTime: limits.lingerTime, allowedOrigins: allowedOrigins),
            closedGroup: socketsClosed)
        lingering = lingering.filter { !$0.value.isFinished }
        guard connections.count < limits.maxClients else {
            // Turned away after the upgrade, so that a browser, which cannot read an HTTP refusal, learns why.
            lingering[id] = channel
            let message = "the server already serves \(limits.maxClients) clients"
            channel.start(WebSocketChannel.Handlers(
                onOpen: { [weak self] in self?.reject(channel, .tooManyClients, message, closeCode: .tryAgainLater) },
                onMessage: { _ in }, onMessageTooLarge: {}, onClose: { _ in }))
            queue.asyncAfter(deadline: .now() + limits.helloTimeout) { [weak self] in
                self?.reject(channel, .tooManyClients, message, closeCode: .tryAgainLater)
            }
            return
        }
        connections[id] = Connection(channel: channel, stage: .awaitingHello)
        channel.start(WebSocketChannel.Handlers(
            onOpen: {},
            onMessage: { [weak self] message in self?.received(message, from: id) },
            onMessageTooLarge: { [weak self] in
                guard let self else { return }
                let code: ControlErrorCode = connections[id]?.stage == .authenticated ? .frameTooLarge : .unauthorized
                connections[id]?.channel.send(ControlWire.error(code, "a message is over \(limits.maxLineBytes) bytes; closing"))
            },
            onClose: { [weak self] _ in self?.closed(id) }))
        queue.asyncAfter(deadline: .now() + limits.helloTimeout) { [weak self] in
            guard let self, let connection = connections[id], connection.stage == .awaitingHello else { return }
            reject(connection.channel, .unauthorized, "no hello within \(limits.helloTimeout) s")
        }
    }

    private func received(_ message: Data, from id: ControlClientID) {
        guard let connection = connections[id] else { return }
        switch connection.stage {
        case .awaitingHello:
            switch ControlWire.helloToken(in: message) {
            case .failure(let fault):
                reject(connection.channel, .unauthorized, fault.description)
            case .success(let given):
                guard ControlWire.tokensMatch(given, token) else {
                    reject(connection.channel, .unauthorized, "wrong token")
                    return
                }
                connections[id]?.stage = .authenticated
                connection.channel.send(ControlWire.welcome)
            }
        case .authenticated:
            // The channel has checked the UTF-8 (a text message that is not is closed with 1007).
            onLine(id, message)
        }
    }

    /// Sends an error message and a close frame (or, before the upgrade, an HTTP 408) and closes once written.
    private func reject(
        _ channel: WebSocketChannel, _ code: ControlErrorCode, _ message: String,
        closeCode: WebSocketCloseCode = .policyViolation
    ) {
        channel.reject(
            message: ControlWire.error(code, message), code: closeCode, refusal: WebSocketHandshake.timedOut,
            reason: message)
    }

    private func closed(_ id: ControlClientID) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        if !connection.channel.isFinished { lingering[id] = connection.channel }
        switch connection.stage {
        case .awaitingHello: break
        case .authenticated: onClose?(id)
        }
    }
}
