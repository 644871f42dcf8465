import Foundation
import Glibc

/// The state of one `SIPTransport`: its sockets, connections, TLS contexts, counters and handlers. Loop-confined: it
/// is created on any thread but reached only through `LoopBound`, so only the loop thread ever uses it.
final class TransportCore {
    /// A peer of a given transport kind, for finding a connection to reuse.
    private struct PeerKey: Hashable {
        let kind: SIPTransportKind
        let address: SIPPeerAddress
    }

    /// A callback waiting for the end of the current loop turn.
    private enum Notification {
        case sendFailure(SIPDestination, TransportError)
        case connectionClosed(ConnectionID)
    }

    let loop: SIPEventLoop
    let limits: TransportLimits
    /// `limits.idleConnectionTimeout` and `limits.connectionSetupTimeout` in nanoseconds (0: no limit).
    let idleTimeoutNanoseconds: UInt64
    let setupTimeoutNanoseconds: UInt64
    private let tlsConfiguration: TLSConfiguration?
    private let onMessage: (InboundSIPMessage) -> Void
    var onSendFailure: ((SIPDestination, TransportError) -> Void)?
    var onConnectionClosed: ((ConnectionID) -> Void)?
    var statistics = TransportStatistics()
    /// One buffer for every read on this transport (reads never nest: handlers run one at a time).
    let readBuffer: UnsafeMutableRawBufferPointer

    private var datagramListeners: [DatagramSocket] = []
    /// Unbound-by-the-user UDP sockets for families no listener serves, made on the first send.
    private var ephemeralSockets: [Int32: DatagramSocket] = [:]
    private var streamListeners: [StreamListener] = []
    private var connections: [ConnectionID: StreamConnection] = [:]
    private var connectionsByPeer: [PeerKey: [StreamConnection]] = [:]
    private var serverTLS: TLSContext?
    private var clientTLS: TLSContext?
    private var notifications: [Notification] = []
    private var isClosed = false

    init(loop: SIPEventLoop, tls: TLSConfiguration?, limits: TransportLimits, onMessage: @escaping (InboundSIPMessage) -> Void) {
        self.loop = loop
        self.limits = limits
        idleTimeoutNanoseconds = limits.idleConnectionTimeout.clampedNanoseconds
        setupTimeoutNanoseconds = limits.connectionSetupTimeout.clampedNanoseconds
        tlsConfiguration = tls
        self.onMessage = onMessage
        readBuffer = .allocate(byteCount: max(limits.maxMessageBytes + 1, 65_536), alignment: 16)
    }

    deinit {
        readBuffer.deallocate()
    }

    var listenAddresses: [ListenAddress] {
        datagramListeners.filter { !$0.isClosed }.map(\.local) + streamListeners.filter { !$0.isClosed }.map(\.local)
    }

    // MARK: - Listening

    func listen(_ address: ListenAddress) throws(TransportError) -> ListenAddress {
        guard !isClosed else { throw .transportClosed }
        if address.kind == .tls, serverTLS == nil {
            guard let tlsConfiguration else { throw .tlsNotConfigured }
            serverTLS = try TLSContext.server(tlsConfiguration)
        }
        let fd = try Socket.bound(address, limits: limits)
        guard let bound = Socket.localAddress(fd) else {
            let code = errno
            Glibc.close(fd)
            throw .system(operation: "getsockname", code: code)
        }
        let actual = ListenAddress(kind: address.kind, host: bound.ip.text, port: bound.port)
        do throws(TransportError) {
            switch address.kind {
            case .udp:
                datagramListeners.append(try DatagramSocket(core: self, fd: fd, local: actual, family: bound.family))
            case .tcp, .tls:
                guard Glibc.listen(fd, SOMAXCONN) == 0 else { throw .system(operation: "listen", code: errno) }
                streamListeners.append(try StreamListener(core: self, fd: fd, local: actual))
            }
        } catch {
            Glibc.close(fd)
            throw error
        }
        return actual
    }

    // MARK: - Receiving

    /// Hands one framed message to the transport's user.
    func deliver(_ message: InboundSIPMessage) {
        statistics.messagesDelivered += 1
        onMessage(message)
    }

    /// Takes an accepted socket: refused (closed at once) at the connection limit, else a new connection.
    func accept(_ fd: Int32, remote: SIPPeerAddress, listener: StreamListener) {
        guard !isClosed, connections.count < limits.maxConnections else {
            statistics.connectionsRefused += 1
            Glibc.close(fd)
            return
        }
        Socket.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        var local = listener.local
        if let address = Socket.localAddress(fd) { local.host = address.ip.text }
        do {
            let session = try listener.local.kind == .tls ? serverSession() : nil
            let connection = try StreamConnection(
                core: self, fd: fd, kind: listener.local.kind, remote: remote, local: local, isAccepted: true,
                serverName: nil, tls: session)
            statistics.connectionsAccepted += 1
            add(connection)
        } catch {
            statistics.connectionsRefused += 1
            Glibc.close(fd)
        }
    }

    private func serverSession() throws(TransportError) -> TLSSession {
        guard let serverTLS else { preconditionFailure("a TLS listener exists only once its context is loaded") }
        return try TLSSession(context: serverTLS, isServer: true, expectedName: nil, sniName: nil)
    }

    // MARK: - Sending

    func send(_ bytes: Data, to destination: SIPDestination) {
        guard !isClosed else { return reportSendFailure(destination, .transportClosed) }
        switch destination.kind {
        case .udp:
            sendDatagram(bytes, to: destination)
        case .tcp, .tls:
            do {
                try connection(for: destination).enqueue(bytes, destination: destination)
            } catch {
                reportSendFailure(destination, error)
            }
        }
    }

    private func sendDatagram(_ bytes: Data, to destination: SIPDestination) {
        guard let ip = IPAddress(destination.address.host) else {
            return reportSendFailure(destination, .invalidDestination(destination.address))
        }
        let socket: DatagramSocket
        if let listener = datagramListeners.first(where: { $0.family == ip.family && !$0.isClosed }) {
            socket = listener
        } else if let ephemeral = ephemeralSockets[ip.family] {
            socket = ephemeral
        } else {
            do throws(TransportError) {
                let any = ListenAddress(kind: .udp, host: ip.isIPv6 ? "::" : "0.0.0.0", port: 0)
                let fd = try Socket.bound(any, limits: limits)
                let port = Socket.localAddress(fd)?.port ?? 0
                do throws(TransportError) {
                    socket = try DatagramSocket(core: self, fd: fd, local: ListenAddress(kind: .udp, host: any.host, port: port), family: ip.family)
                } catch {
                    Glibc.close(fd)
                    throw error
                }
                ephemeralSockets[ip.family] = socket
            } catch {
                return reportSendFailure(destination, error)
            }
        }
        if let code = socket.send(bytes, to: ip.socketAddress(port: destination.address.port)) {
            reportSendFailure(destination, .system(operation: "sendto \(destination.address)", code: code))
        }
    }

    /// The named connection if it lives, else a live one to the same peer, else a new one.
    private func connection(for destination: SIPDestination) throws(TransportError) -> StreamConnection {
        if let id = destination.connection, let named = connections[id], named.kind == destination.kind, named.state != .closed {
            return named
        }
        let key = PeerKey(kind: destination.kind, address: destination.address)
        if let reusable = connectionsByPeer[key]?.first(where: { $0.canCarry(destination) }) {
            return reusable
        }
        return try open(destination)
    }

    private func open(_ destination: SIPDestination) throws(TransportError) -> StreamConnection {
        guard let ip = IPAddress(destination.address.host) else { throw .invalidDestination(destination.address) }
        guard connections.count < limits.maxConnections else { throw .tooManyConnections(limit: limits.maxConnections) }
        var session: TLSSession?
        if destination.kind == .tls {
            if clientTLS == nil {
                guard let tlsConfiguration else { throw .tlsNotConfigured }
                clientTLS = try TLSContext.client(tlsConfiguration)
            }
            session = try TLSSession(
                context: clientTLS!, isServer: false, expectedName: destination.serverName ?? ip.text,
                sniName: destination.serverName)
        }
        statistics.connectionsInitiated += 1
        let fd = try Socket.open(family: ip.family, stream: true)
        Socket.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        let result = ip.socketAddress(port: destination.address.port).withSockAddr { Glibc.connect(fd, $0, $1) }
        guard result == 0 || errno == EINPROGRESS else {
            let code = errno
            Glibc.close(fd)
            throw .connectionFailed(destination.address, code: code)
        }
        let local = ListenAddress(kind: destination.kind, host: ip.isIPv6 ? "::" : "0.0.0.0", port: 0)
        let connection: StreamConnection
        do {
            connection = try StreamConnection(
                core: self, fd: fd, kind: destination.kind, remote: SIPPeerAddress(host: ip.text, port: destination.address.port),
                local: local, isAccepted: false, serverName: destination.serverName, tls: session)
        } catch {
            Glibc.close(fd)
            throw error
        }
        add(connection)
        return connection
    }

    // MARK: - Connections

    private func add(_ connection: StreamConnection) {
        connections[connection.id] = connection
        connectionsByPeer[PeerKey(kind: connection.kind, address: connection.remote), default: []].append(connection)
        statistics.connectionsOpen = connections.count
    }

    /// Called by a connection that has just closed: forget it, count it, report what it never sent.
    func connectionDidClose(_ connection: StreamConnection, reason: ConnectionCloseReason, unsent: [SIPDestination]) {
        connections.removeValue(forKey: connection.id)
        let key = PeerKey(kind: connection.kind, address: connection.remote)
        connectionsByPeer[key]?.removeAll { $0 === connection }
        if connectionsByPeer[key]?.isEmpty == true { connectionsByPeer.removeValue(forKey: key) }
        statistics.connectionsOpen = connections.count
        statistics.connectionsClosed += 1
        let error: TransportError =
            switch reason {
            case .peerClosed, .framing, .idle, .tlsFailed: .connectionClosed(connection.remote)
            case .socketError(let code), .connectFailed(let code): .connectionFailed(connection.remote, code: code)
            case .queueOverflow: .queueOverflow(connection.remote)
            case .handshakeFailed(let why): .tlsHandshakeFailed(connection.remote, reason: why)
            case .closedLocally: isClosed ? .transportClosed : .connectionClosed(connection.remote)
            }
        for destination in unsent { reportSendFailure(destination, error) }
        notify(.connectionClosed(connection.id))
    }

    /// Closes one connection (no-op when it is already gone).
    func closeConnection(_ id: ConnectionID) {
        connections[id]?.close(.closedLocally)
    }

    /// Closes every listener and connection; later sends fail with `transportClosed`.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        for listener in datagramListeners { listener.close() }
        for socket in ephemeralSockets.values { socket.close() }
        for listener in streamListeners { listener.close() }
        for connection in Array(connections.values) { connection.close(.closedLocally) }
        datagramListeners = []
        ephemeralSockets = [:]
        streamListeners = []
    }

    // MARK: - Notifications

    /// Counts a failed send and reports it to `onSendFailure` at the end of this loop turn (never from inside `send`).
    func reportSendFailure(_ destination: SIPDestination, _ error: TransportError) {
        statistics.sendFailures += 1
        notify(.sendFailure(destination, error))
    }

    private func notify(_ notification: Notification) {
        if notifications.isEmpty {
            loop.schedule(after: .zero) { [self] in deliverNotifications() }
        }
        notifications.append(notification)
    }

    private func deliverNotifications() {
        let batch = notifications
        notifications = []
        for notification in batch {
            switch notification {
            case .sendFailure(let destination, let error): onSendFailure?(destination, error)
            case .connectionClosed(let id): onConnectionClosed?(id)
            }
        }
    }
}
