import Foundation
import Glibc
import ParleyIO

/// The state of one `SIPTransport`: its sockets, connections, TLS contexts, counters and handlers. Loop-confined: it
/// is created on any thread but reached only through `LoopBound`, so only the loop thread ever uses it.
///
/// It is the delegate of its stream listeners and of every connection's ``StreamChannel``: accepted sockets become
/// connections, framed messages go to `onMessage`, keep-alive pings are answered, and a connection's end reports the
/// messages it never sent.
final class TransportCore: StreamListenerDelegate, StreamChannelDelegate {
    typealias Codec = StreamFramer
    /// Each queued message remembers where it was going, so what never left is reported as a send failure.
    typealias Tag = SIPDestination

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

    /// A TCP or TLS listening socket and the address it serves.
    private struct Listener {
        let local: ListenAddress
        let socket: StreamListener
    }

    let loop: EventLoop
    let limits: TransportLimits
    private let tlsConfiguration: TLSConfiguration?
    private let onMessage: (InboundSIPMessage) -> Void
    var onSendFailure: ((SIPDestination, TransportError) -> Void)?
    var onConnectionClosed: ((ConnectionID) -> Void)?
    /// The counters kept here; the stream channels add theirs to `streamCounters`.
    private var counted = TransportStatistics()
    private let streamCounters = StreamCounters()
    private let channelOptions: StreamChannelOptions
    /// One buffer for every datagram read on this transport (reads never nest: handlers run one at a time), one byte
    /// over the message limit so that a datagram over it is seen as such.
    let readBuffer: UnsafeMutableRawBufferPointer

    private var datagramListeners: [DatagramSocket] = []
    /// Unbound-by-the-user UDP sockets for families no listener serves, made on the first send.
    private var ephemeralSockets: [Int32: DatagramSocket] = [:]
    private var streamListeners: [Listener] = []
    private var connections: [ConnectionID: StreamConnection] = [:]
    private var connectionsByPeer: [PeerKey: [StreamConnection]] = [:]
    private var serverTLS: TLSContext?
    private var clientTLS: TLSContext?
    private var notifications: [Notification] = []
    private var isClosed = false
    /// Accepted connections open now, by source address (`maxConnectionsPerSource`).
    private var acceptedBySource: [String: Int] = [:]
    /// Whether UDP datagrams leave from a thread of their own (`DatagramSender`, started on the first send).
    private let sendsDatagramsOnThread: Bool
    private var datagramSender: DatagramSender?
    /// This loop turn's datagrams, handed to `datagramSender` at its end (or once `DatagramSender.chunk` wait).
    private var pendingDatagrams: [DatagramSender.Datagram] = []

    init(
        loop: EventLoop, tls: TLSConfiguration?, limits: TransportLimits, sendsDatagramsOnThread: Bool,
        onMessage: @escaping (InboundSIPMessage) -> Void
    ) {
        self.loop = loop
        self.limits = limits
        tlsConfiguration = tls
        self.onMessage = onMessage
        self.sendsDatagramsOnThread = sendsDatagramsOnThread
        channelOptions = StreamChannelOptions(
            maxQueuedBytes: limits.maxQueuedBytesPerConnection, idleTimeout: limits.idleConnectionTimeout,
            setupTimeout: limits.connectionSetupTimeout, idleCountsFramesOnly: true)
        readBuffer = .allocate(byteCount: max(limits.maxMessageBytes + 1, 65_536), alignment: 16)
    }

    deinit {
        datagramSender?.stop()
        readBuffer.deallocate()
    }

    var listenAddresses: [ListenAddress] {
        datagramListeners.filter { !$0.isClosed }.map(\.local) + streamListeners.filter { !$0.socket.isClosed }.map(\.local)
    }

    /// The counters so far.
    var statistics: TransportStatistics {
        var statistics = counted
        statistics.bytesReceived += streamCounters.bytesReceived
        statistics.bytesSent += streamCounters.bytesSent + (datagramSender?.bytesSent ?? 0)
        statistics.tlsHandshakeFailures = streamCounters.tlsHandshakeFailures
        statistics.queueOverflows = streamCounters.queueOverflows
        statistics.idleConnectionsClosed = streamCounters.idleClosed
        statistics.acceptPauses = streamListeners.reduce(0) { $0 + $1.socket.pauses }
        statistics.connectionsOpen = connections.count
        return statistics
    }

    /// Counts what a datagram socket read and wrote.
    func countDatagram(received bytes: Int) {
        counted.datagramsReceived += 1
        counted.bytesReceived += bytes
    }

    func countDatagramDropped(oversize: Bool) {
        counted.datagramsDropped += 1
        if oversize { counted.oversizeMessages += 1 }
    }

    func countReceiveBufferDrops(_ count: Int) { counted.receiveBufferDrops += count }
    func countDatagramKeepAlive() { counted.datagramKeepAlives += 1 }
    func countSent(_ bytes: Int) { counted.bytesSent += bytes }

    // MARK: - Listening

    func listen(_ address: ListenAddress) throws(TransportError) -> ListenAddress {
        guard !isClosed else { throw .transportClosed }
        if address.kind == .tls, serverTLS == nil {
            guard let tlsConfiguration else { throw .tlsNotConfigured }
            serverTLS = try TransportError.catching { () throws(TLSError) in try TLSContext.server(tlsConfiguration) }
        }
        guard let ip = IPAddress(address.host) else {
            throw .invalidListenAddress(address.description, reason: "'\(address.host)' is not a numeric IP address")
        }
        let fd: Int32
        do {
            fd = try Socket.bound(ip.socketAddress(port: address.port), stream: address.kind != .udp)
        } catch {
            throw error.operation.hasPrefix("bind") ? .bindFailed(address, code: error.code) : .system(error)
        }
        if address.kind == .udp { Self.tuneDatagramSocket(fd, limits: limits) }
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
                let socket = try TransportError.catching { () throws(IOError) in
                    try StreamListener(loop: loop, fd: fd, delegate: self)
                }
                streamListeners.append(Listener(local: actual, socket: socket))
            }
        } catch {
            Glibc.close(fd)
            throw error
        }
        return actual
    }

    /// Large buffers (the kernel may cap them at net.core.rmem_max); the drop counter and each datagram's arrival time
    /// (for its wait in the queue, which overload control reads) in ancillary data.
    static func tuneDatagramSocket(_ fd: Int32, limits: TransportLimits) {
        let size = Int32(clamping: limits.udpReceiveBuffer)
        Socket.setOption(fd, SOL_SOCKET, SO_RCVBUF, size)
        Socket.setOption(fd, SOL_SOCKET, SO_SNDBUF, size)
        Socket.setOption(fd, SOL_SOCKET, SO_RXQ_OVFL, 1)
        Socket.setOption(fd, SOL_SOCKET, SO_TIMESTAMPNS, 1)
    }

    // MARK: - Receiving

    /// Hands one framed message to the transport's user.
    func deliver(_ message: InboundSIPMessage) {
        counted.messagesDelivered += 1
        onMessage(message)
    }

    /// An accepted socket: refused (closed at once) at the connection limit, else a new connection.
    func streamListener(_ socket: StreamListener, accepted fd: Int32, from peer: SocketAddress?) {
        guard let listener = streamListeners.first(where: { $0.socket === socket }), let peer else {
            Glibc.close(fd)
            return
        }
        guard !isClosed, connections.count < limits.maxConnections else {
            counted.connectionsRefused += 1
            Glibc.close(fd)
            return
        }
        guard acceptedBySource[peer.peerAddress.host, default: 0] < limits.maxConnectionsPerSource else {
            counted.connectionsRefused += 1
            counted.connectionsRefusedPerSource += 1
            Glibc.close(fd)
            return
        }
        Socket.setNoDelay(fd)
        var local = listener.local
        if let address = Socket.localAddress(fd) { local.host = address.ip.text }
        do {
            let session = try listener.local.kind == .tls ? serverSession() : nil
            let id = ConnectionID.next()
            let channel = try TransportError.catching { () throws(IOError) in
                try StreamConnection.Channel(
                    loop: loop, fd: fd, connecting: false, codec: StreamFramer(maxMessageBytes: limits.maxMessageBytes),
                    tls: session, options: channelOptions, counters: streamCounters, delegate: self)
            }
            channel.userInfo = id.value
            counted.connectionsAccepted += 1
            add(StreamConnection(
                id: id, kind: listener.local.kind, remote: peer.peerAddress, local: local, isAccepted: true,
                serverName: nil, channel: channel))
        } catch {
            counted.connectionsRefused += 1
            Glibc.close(fd)
        }
    }

    private func serverSession() throws(TransportError) -> TLSSession {
        guard let serverTLS else { preconditionFailure("a TLS listener exists only once its context is loaded") }
        return try TransportError.catching { () throws(TLSError) in
            try TLSSession(context: serverTLS, isServer: true, expectedName: nil, sniName: nil)
        }
    }

    // MARK: - StreamChannelDelegate

    func streamChannelDidOpen(_ channel: StreamConnection.Channel) {
        guard let connection = connections[ConnectionID(value: channel.userInfo)], !connection.isAccepted,
            let address = channel.localAddress
        else { return }
        connection.local = ListenAddress(kind: connection.kind, host: address.ip.text, port: address.port)
    }

    func streamChannel(_ channel: StreamConnection.Channel, received frame: StreamFrame) {
        guard let connection = connections[ConnectionID(value: channel.userInfo)] else { return }
        switch frame {
        case .message(let bytes):
            deliver(InboundSIPMessage(
                bytes: bytes, kind: connection.kind, source: connection.remote, connection: connection.id,
                local: connection.local))
        case .ping:
            // RFC 5626 §3.5.1: the flow's client pings, its server answers. On a connection we opened we are the
            // client: CRLFs from the other end are pongs (two that arrive together read as a ping), never answered.
            guard connection.isAccepted else { return }
            counted.keepAlivePongs += 1
            channel.send(Data("\r\n".utf8))
        }
    }

    func streamChannel(_ channel: StreamConnection.Channel, failedToDecode failure: StreamFramingError) {
        counted.framingErrors += 1
        if failure == .oversize { counted.oversizeMessages += 1 }
        // Nothing after a framing fault can be trusted to start a message (RFC 3261 §18.3): closed at once.
        channel.close(.framing("\(failure)"))
    }

    /// A connection has closed: forget it, count it, report what it never sent.
    func streamChannel(
        _ channel: StreamConnection.Channel, closedBecause reason: StreamCloseReason, unsent: [SIPDestination]
    ) {
        guard let connection = connections.removeValue(forKey: ConnectionID(value: channel.userInfo)) else { return }
        let key = PeerKey(kind: connection.kind, address: connection.remote)
        connectionsByPeer[key]?.removeAll { $0 === connection }
        if connectionsByPeer[key]?.isEmpty == true { connectionsByPeer.removeValue(forKey: key) }
        if connection.isAccepted {
            acceptedBySource[connection.remote.host, default: 1] -= 1
            if acceptedBySource[connection.remote.host] == 0 { acceptedBySource.removeValue(forKey: connection.remote.host) }
        }
        counted.connectionsClosed += 1
        let error: TransportError =
            switch reason {
            case .peerClosed, .idle, .tlsFailed, .framing: .connectionClosed(connection.remote)
            case .socketError(let code), .connectFailed(let code): .connectionFailed(connection.remote, code: code)
            case .queueOverflow: .queueOverflow(connection.remote)
            case .handshakeFailed(let why): .tlsHandshakeFailed(connection.remote, reason: why)
            case .closed: isClosed ? .transportClosed : .connectionClosed(connection.remote)
            }
        for destination in unsent { reportSendFailure(destination, error) }
        notify(.connectionClosed(connection.id))
    }

    // MARK: - Sending

    func send(_ payload: OutgoingPayload, to destination: SIPDestination) {
        guard !isClosed else { return reportSendFailure(destination, .transportClosed) }
        switch destination.kind {
        case .udp:
            sendDatagram(payload, to: destination)
        case .tcp, .tls:
            do {
                let connection = try connection(for: destination)
                switch connection.channel.send(payload.bytes, tag: destination) {
                case nil: break
                case .overflow: reportSendFailure(destination, .queueOverflow(connection.remote))
                case .notOpen: reportSendFailure(destination, .connectionClosed(connection.remote))
                }
            } catch {
                reportSendFailure(destination, error)
            }
        }
    }

    private func sendDatagram(_ payload: OutgoingPayload, to destination: SIPDestination) {
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
                socket = try ephemeralSocket(for: ip)
            } catch {
                return reportSendFailure(destination, error)
            }
        }
        let address = ip.socketAddress(port: destination.address.port)
        if sendsDatagramsOnThread {
            queueDatagram(.init(fd: socket.fd, payload: payload, address: address, destination: destination))
        } else if let code = socket.send(payload.bytes, to: address) {
            reportSendFailure(destination, Self.sendError(.init(destination: destination, code: code)))
        }
    }

    /// Adds a datagram to this turn's batch for the sender thread (started on first use); the batch goes at the end
    /// of the turn, or at once when it is a full chunk.
    private func queueDatagram(_ datagram: DatagramSender.Datagram) {
        pendingDatagrams.append(datagram)
        if pendingDatagrams.count >= DatagramSender.chunk {
            handOverDatagrams()
        } else if pendingDatagrams.count == 1 {
            loop.atEndOfTurn { [weak self] in self?.handOverDatagrams() }
        }
    }

    private func handOverDatagrams() {
        guard !pendingDatagrams.isEmpty else { return }
        let sender = datagramSender ?? startDatagramSender()
        for refused in sender.submit(pendingDatagrams) {
            reportSendFailure(refused.destination, .sendQueueFull(refused.destination.address))
        }
        pendingDatagrams.removeAll(keepingCapacity: true)
    }

    private func startDatagramSender() -> DatagramSender {
        let core = LoopWeak(self, identity: loop.identity)
        let loop = self.loop
        let sender = DatagramSender(limit: limits.maxQueuedDatagrams) { refusals in
            loop.execute {
                guard let core = core.value else { return }
                for refusal in refusals { core.reportSendFailure(refusal.destination, Self.sendError(refusal)) }
            }
        }
        datagramSender = sender
        return sender
    }

    /// A datagram the kernel refused (`sendto` or `sendmmsg`), as a send failure.
    private static func sendError(_ refusal: DatagramSender.Refusal) -> TransportError {
        .system(operation: "sendto \(refusal.destination.address)", code: refusal.code)
    }

    /// Before a UDP socket closes: everything queued for it has left (its descriptor may be reused at once).
    func flushDatagrams() {
        handOverDatagrams()
        datagramSender?.drain()
    }

    /// The UDP socket for a family no listener serves, made on first use.
    private func ephemeralSocket(for ip: IPAddress) throws(TransportError) -> DatagramSocket {
        let any = ListenAddress(kind: .udp, host: ip.isIPv6 ? "::" : "0.0.0.0", port: 0)
        let fd: Int32
        do {
            fd = try Socket.bound(IPAddress(any.host)!.socketAddress(port: 0), stream: false)
        } catch {
            throw .system(error)
        }
        Self.tuneDatagramSocket(fd, limits: limits)
        let port = Socket.localAddress(fd)?.port ?? 0
        do throws(TransportError) {
            let socket = try DatagramSocket(
                core: self, fd: fd, local: ListenAddress(kind: .udp, host: any.host, port: port), family: ip.family)
            ephemeralSockets[ip.family] = socket
            return socket
        } catch {
            Glibc.close(fd)
            throw error
        }
    }

    /// The named connection if it lives, else a live one to the same peer, else a new one.
    private func connection(for destination: SIPDestination) throws(TransportError) -> StreamConnection {
        if let id = destination.connection, let named = connections[id], named.kind == destination.kind,
            named.channel.isUsable
        {
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
                clientTLS = try TransportError.catching { () throws(TLSError) in try TLSContext.client(tlsConfiguration) }
            }
            let context = clientTLS!
            session = try TransportError.catching { () throws(TLSError) in
                try TLSSession(
                    context: context, isServer: false, expectedName: destination.serverName ?? ip.text,
                    sniName: destination.serverName)
            }
        }
        counted.connectionsInitiated += 1
        let started: (fd: Int32, connected: Bool)
        do {
            started = try Socket.startConnect(to: ip.socketAddress(port: destination.address.port))
        } catch {
            throw error.operation == "socket" ? .system(error) : .connectionFailed(destination.address, code: error.code)
        }
        let local = ListenAddress(kind: destination.kind, host: ip.isIPv6 ? "::" : "0.0.0.0", port: 0)
        let id = ConnectionID.next()
        let channel: StreamConnection.Channel
        do {
            // A connect that finished at once is still reported through the channel's first writable event.
            channel = try StreamConnection.Channel(
                loop: loop, fd: started.fd, connecting: true,
                codec: StreamFramer(maxMessageBytes: limits.maxMessageBytes), tls: session, options: channelOptions,
                counters: streamCounters, delegate: self)
        } catch {
            Glibc.close(started.fd)
            throw .system(error)
        }
        channel.userInfo = id.value
        let connection = StreamConnection(
            id: id, kind: destination.kind, remote: SIPPeerAddress(host: ip.text, port: destination.address.port),
            local: local, isAccepted: false, serverName: destination.serverName, channel: channel)
        add(connection)
        return connection
    }

    // MARK: - Connections

    private func add(_ connection: StreamConnection) {
        connections[connection.id] = connection
        if connection.isAccepted { acceptedBySource[connection.remote.host, default: 0] += 1 }
        connectionsByPeer[PeerKey(kind: connection.kind, address: connection.remote), default: []].append(connection)
    }

    /// Closes one connection (no-op when it is already gone).
    func closeConnection(_ id: ConnectionID) {
        connections[id]?.channel.close(.closed("closed locally"))
    }

    /// Closes every listener and connection; later sends fail with `transportClosed`.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        for listener in datagramListeners { listener.close() }
        for socket in ephemeralSockets.values { socket.close() }
        for listener in streamListeners { listener.socket.close() }
        for connection in Array(connections.values) { connection.channel.close(.closed("the transport is closing")) }
        datagramListeners = []
        ephemeralSockets = [:]
        datagramSender?.stop()
    }

    // MARK: - Notifications

    /// Counts a failed send and reports it to `onSendFailure` at the end of this loop turn (never from inside `send`).
    func reportSendFailure(_ destination: SIPDestination, _ error: TransportError) {
        counted.sendFailures += 1
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
