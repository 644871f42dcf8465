/// Bounds that keep a peer from taking more than its share.
public struct TransportLimits: Sendable, Hashable {
    /// Largest message accepted, in bytes (header section and body); larger datagrams are dropped and larger stream
    /// messages close their connection.
    public var maxMessageBytes: Int
    /// Most TCP and TLS connections open at once, accepted and opened together; accepts beyond it are closed at once.
    public var maxConnections: Int
    /// Most accepted connections from one source address; accepts beyond it are closed at once, so one host cannot
    /// take every slot.
    public var maxConnectionsPerSource: Int
    /// Most bytes waiting to be written on one connection; beyond it the connection is closed.
    public var maxQueuedBytesPerConnection: Int
    /// SO_RCVBUF and SO_SNDBUF asked for on UDP sockets (the kernel may give less: net.core.rmem_max).
    public var udpReceiveBuffer: Int
    /// Most UDP datagrams waiting for the sender thread (`sendsDatagramsOnThread`); beyond it a datagram is dropped
    /// and reported as a send failure (`sendQueueFull`), as the kernel refuses one when a socket's buffer is full.
    public var maxQueuedDatagrams: Int
    /// A connection that has completed no message (nor a keep-alive ping) for this long is closed (zero: never).
    /// Single bytes do not count: a peer dripping a message a byte at a time cannot hold a connection.
    public var idleConnectionTimeout: Duration
    /// How long a connection may take to become usable: the TCP connect of an opened connection plus, for TLS, the
    /// handshake (accepted ones too, so a peer cannot hold a connection by dribbling a handshake). Zero: no limit.
    public var connectionSetupTimeout: Duration

    /// Limits from their parts; the defaults suit a busy SIP server.
    public init(
        maxMessageBytes: Int = 65_536, maxConnections: Int = 4096, maxConnectionsPerSource: Int = 64,
        maxQueuedBytesPerConnection: Int = 1 << 20,
        udpReceiveBuffer: Int = 4 << 20, idleConnectionTimeout: Duration = .seconds(300),
        connectionSetupTimeout: Duration = .seconds(10), maxQueuedDatagrams: Int = 16_384
    ) {
        precondition(maxQueuedDatagrams > 0, "the UDP send queue holds at least one datagram")
        self.maxQueuedDatagrams = maxQueuedDatagrams
        self.maxMessageBytes = maxMessageBytes
        self.maxConnections = maxConnections
        self.maxConnectionsPerSource = maxConnectionsPerSource
        self.maxQueuedBytesPerConnection = maxQueuedBytesPerConnection
        self.udpReceiveBuffer = udpReceiveBuffer
        self.idleConnectionTimeout = idleConnectionTimeout
        self.connectionSetupTimeout = connectionSetupTimeout
    }
}

/// Counters of one transport since it was made (connectionsOpen is a current value).
public struct TransportStatistics: Sendable, Hashable {
    /// UDP datagrams read, dropped ones included.
    public var datagramsReceived = 0
    /// UDP datagrams dropped unread: empty, or over `maxMessageBytes`.
    public var datagramsDropped = 0
    /// Datagrams the kernel dropped because a UDP socket's receive buffer was full (SO_RXQ_OVFL).
    public var receiveBufferDrops = 0
    /// Messages handed to `onMessage`.
    public var messagesDelivered = 0
    /// Bytes read from sockets (for TLS: encrypted bytes).
    public var bytesReceived = 0
    /// Bytes written to sockets (for TLS: encrypted bytes).
    public var bytesSent = 0
    /// Messages over `maxMessageBytes`, datagram or stream.
    public var oversizeMessages = 0
    /// Connections closed because their byte stream could not be framed (no, bad or oversized Content-Length,
    /// endless header section).
    public var framingErrors = 0
    /// Keep-alive pings (CRLFCRLF) answered with a pong (CRLF).
    public var keepAlivePongs = 0
    /// UDP datagrams of only CRs and LFs (at most four bytes): NAT keep-alives, dropped unanswered.
    public var datagramKeepAlives = 0
    /// TCP and TLS connections open now.
    public var connectionsOpen = 0
    /// Connections accepted from peers.
    public var connectionsAccepted = 0
    /// Connections Parley opened (attempts, including ones that failed).
    public var connectionsInitiated = 0
    /// Connections refused at accept because `maxConnections` were open.
    public var connectionsRefused = 0
    /// Of those, refused because their source had `maxConnectionsPerSource` open.
    public var connectionsRefusedPerSource = 0
    /// Times accepting paused for 100 ms because the process ran out of descriptors or memory.
    public var acceptPauses = 0
    /// Connections closed, for any reason.
    public var connectionsClosed = 0
    /// Connections closed after `idleConnectionTimeout` without traffic.
    public var idleConnectionsClosed = 0
    /// TLS handshakes that failed (bad peer, wrong protocol, failed verification, too slow).
    public var tlsHandshakeFailures = 0
    /// Connections closed because their write queue passed `maxQueuedBytesPerConnection`.
    public var queueOverflows = 0
    /// Messages that could not be sent (each is also reported to `onSendFailure`).
    public var sendFailures = 0

    /// All zero.
    public init() {}
}
