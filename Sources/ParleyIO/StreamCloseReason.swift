import Glibc

/// Why a ``StreamChannel`` stopped being usable.
package enum StreamCloseReason: Sendable, Hashable, CustomStringConvertible {
    /// The peer closed (FIN, or TLS close_notify).
    case peerClosed
    /// A socket error while reading or writing (ECONNRESET, EPIPE…).
    case socketError(Int32)
    /// The connect did not succeed (ETIMEDOUT when it did not finish within the setup timeout).
    case connectFailed(Int32)
    /// No traffic either way for the idle timeout.
    case idle
    /// The outgoing queue would have gone over its limit: the peer is not reading.
    case queueOverflow(limit: Int)
    /// The TLS handshake failed, or did not finish within the setup timeout.
    case handshakeFailed(String)
    /// TLS failed after the handshake (a bad record, a protocol error).
    case tlsFailed(String)
    /// The byte stream could not be framed any further (the codec's failure, in words).
    case framing(String)
    /// Closed by its owner, for this reason (a refusal, a stop).
    case closed(String)

    /// For logs and the peer's last line.
    package var description: String {
        switch self {
        case .peerClosed: "the peer closed the connection"
        case .socketError(let code): "socket error: \(IOError.text(code))"
        case .connectFailed(let code): "connect: \(IOError.text(code))"
        case .idle: "idle for too long"
        case .queueOverflow(let limit): "outgoing queue over \(limit) bytes: the peer is not reading"
        case .handshakeFailed(let reason): "TLS handshake failed: \(reason)"
        case .tlsFailed(let reason): "TLS failed: \(reason)"
        case .framing(let reason): reason
        case .closed(let reason): reason
        }
    }
}

/// Sizes and times of one ``StreamChannel``.
package struct StreamChannelOptions: Sendable {
    /// Most bytes waiting to be written; a send beyond it closes the channel (``StreamCloseReason/queueOverflow``).
    package var maxQueuedBytes: Int
    /// How long a flushing close waits for the peer to read our last bytes and close its side.
    package var lingerTime: Duration
    /// A channel with no traffic either way for this long is closed (zero: never).
    package var idleTimeout: Duration
    /// Whether only complete frames received count as traffic for ``idleTimeout`` (not single bytes either way): a
    /// peer dripping a byte at a time, never finishing a message, cannot hold the connection (a minimum-progress
    /// rule).
    package var idleCountsFramesOnly: Bool
    /// How long the channel may take to become usable: an outgoing connect plus, for TLS, the handshake (accepted
    /// ones too, so a peer cannot hold a connection by dribbling a handshake). Zero: no limit.
    package var setupTimeout: Duration

    /// Options from their parts.
    package init(
        maxQueuedBytes: Int, lingerTime: Duration = .seconds(1), idleTimeout: Duration = .zero,
        setupTimeout: Duration = .zero, idleCountsFramesOnly: Bool = false
    ) {
        self.idleCountsFramesOnly = idleCountsFramesOnly
        self.maxQueuedBytes = maxQueuedBytes
        self.lingerTime = lingerTime
        self.idleTimeout = idleTimeout
        self.setupTimeout = setupTimeout
    }
}

/// Counters several channels add to (a transport's statistics). Loop-confined, like the channels.
package final class StreamCounters {
    package var bytesReceived = 0
    package var bytesSent = 0
    package var tlsHandshakeFailures = 0
    package var queueOverflows = 0
    package var idleClosed = 0

    package init() {}
}
