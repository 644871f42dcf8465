import Dispatch
import Foundation
import Glibc

/// The server's state, confined to its queue.
// @unchecked Sendable: every mutable member is touched only on `queue`. The public entry points reach it through
// `perform` / `performAndWait` (inline when already on `queue`, which `onQueueKey` tells, else `queue.async` /
// `queue.sync`) or `queue.sync`; the listener's and channels' Dispatch handlers and the hello deadlines are all
// installed on `queue`. The `let` members are immutable; `socketsClosed` is a DispatchGroup, itself thread-safe.
final class ControlServerCore: @unchecked Sendable {
    let queue = DispatchQueue(label: "parley.control-server")
    let socketsClosed = DispatchGroup()
    private let onQueueKey = DispatchSpecificKey<Bool>()

    private let socketPath: String
    /// The socket file this server created: only that file is removed on stop.
    private let identity: FileIdentity
    private let token: [UInt8]
    private let limits: ControlLimits
    private let onLine: @Sendable (ControlClientID, Data) -> Void
    private let onClose: (@Sendable (ControlClientID) -> Void)?

    /// Where a connection is in its life.
    private enum Stage {
        /// Connected; its first line must be the hello.
        case awaitingHello
        /// The hello was good: lines go to `onLine`.
        case authenticated
    }

    private struct Connection {
        let channel: LineChannel
        var stage: Stage
    }

    private var listener: (any DispatchSourceRead)?
    /// Whether `listener` is suspended (accepting paused after an accept error).
    private var listenerSuspended = false
    private var connections: [ControlClientID: Connection] = [:]
    /// Connections closed but still flushing their last lines; `stop` cuts them short.
    private var lingering: [ControlClientID: LineChannel] = [:]
    private var nextID: UInt64 = 1
    private var stopped = false

    init(
        socketPath: String, identity: FileIdentity, token: [UInt8], limits: ControlLimits,
        onLine: @escaping @Sendable (ControlClientID, Data) -> Void, onClose: (@Sendable (ControlClientID) -> Void)?
    ) {
        self.socketPath = socketPath
        self.identity = identity
        self.token = token
        self.limits = limits
        self.onLine = onLine
        self.onClose = onClose
        queue.setSpecific(key: onQueueKey, value: true)
    }

    /// Runs `body` on the queue: now if already there (a handler calling back), else later, in submission order.
    func perform(_ body: @escaping @Sendable (ControlServerCore) -> Void) {
        if DispatchQueue.getSpecific(key: onQueueKey) == true {
            body(self)
        } else {
            queue.async { [self] in body(self) }
        }
    }

    /// Runs `body` on the queue and returns its result.
    func performAndWait<T>(_ body: (ControlServerCore) -> T) -> T {
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
        // Remove the socket file only if it is still the one we bound (not one a later server made).
        if case .success(let current) = UnixSockets.identity(of: socketPath), current == identity {
            unlink(socketPath)
        }
    }

    // MARK: Serving

    func send(_ line: Data, to client: ControlClientID) {
        guard let connection = connections[client], connection.stage == .authenticated else { return }
        connection.channel.send(line + Data([0x0A]))
    }

    func broadcast(_ line: Data) {
        let framed = line + Data([0x0A])
        // A snapshot: a client whose queue overflows is removed from `connections` while we go.
        for (_, connection) in connections where connection.stage == .authenticated {
            connection.channel.send(framed)
        }
    }

    func close(_ client: ControlClientID) {
        connections[client]?.channel.close(flushing: true, reason: "closed by the server")
    }

    // MARK: Connections

    private func acceptConnections(_ listener: Int32) {
        for _ in 0..<64 {
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
        let id = ControlClientID(nextID)
        nextID += 1
        let channel = LineChannel(
            fd: fd, queue: queue,
            limits: LineChannel.Limits(
                maxLineBytes: limits.maxLineBytes, maxQueuedBytes: limits.maxQueuedBytes, lingerTime: limits.lingerTime),
            closedGroup: socketsClosed)
        lingering = lingering.filter { !$0.value.isFinished }
        guard connections.count < limits.maxClients else {
            lingering[id] = channel
            channel.start(LineChannel.Handlers(onLine: { _ in }, onLineTooLarge: {}, onClose: { _ in }))
            reject(channel, .tooManyClients, "the server already serves \(limits.maxClients) clients")
            return
        }
        connections[id] = Connection(channel: channel, stage: .awaitingHello)
        channel.start(LineChannel.Handlers(
            onLine: { [weak self] line in self?.received(line, from: id) },
            onLineTooLarge: { [weak self] in
                guard let self else { return }
                let code: ControlErrorCode = connections[id]?.stage == .authenticated ? .frameTooLarge : .unauthorized
                connections[id]?.channel.send(
                    ControlWire.error(code, "a line is over \(limits.maxLineBytes) bytes; closing") + Data([0x0A]))
            },
            onClose: { [weak self] _ in self?.closed(id) }))
        queue.asyncAfter(deadline: .now() + limits.helloTimeout) { [weak self] in
            guard let self, let connection = connections[id], connection.stage == .awaitingHello else { return }
            reject(connection.channel, .unauthorized, "no hello within \(limits.helloTimeout) s")
        }
    }

    private func received(_ line: Data, from id: ControlClientID) {
        guard let connection = connections[id] else { return }
        switch connection.stage {
        case .awaitingHello:
            switch ControlWire.helloToken(in: line) {
            case .failure(let fault):
                reject(connection.channel, .unauthorized, fault.description)
            case .success(let given):
                guard ControlWire.tokensMatch(given, token) else {
                    reject(connection.channel, .unauthorized, "wrong token")
                    return
                }
                connections[id]?.stage = .authenticated
                connection.channel.send(ControlWire.welcome + Data([0x0A]))
            }
        case .authenticated:
            guard String(validating: line, as: UTF8.self) != nil else {
                connection.channel.send(
                    ControlWire.error(.invalidFrame, "a line is not valid UTF-8; it was skipped") + Data([0x0A]))
                return
            }
            onLine(id, line)
        }
    }

    /// Sends an error line and closes the connection once it is written.
    private func reject(_ channel: LineChannel, _ code: ControlErrorCode, _ message: String) {
        channel.send(ControlWire.error(code, message) + Data([0x0A]))
        channel.close(flushing: true, reason: message)
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
