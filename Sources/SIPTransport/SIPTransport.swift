import Foundation
import ParleyIO

/// SIP over UDP, TCP and TLS on one `EventLoop`: listens, frames what arrives into single messages, and sends to
/// destinations, opening or reusing connections as needed. It does not parse SIP beyond framing.
///
/// Threading: everything runs on the loop thread, except, with `sendsDatagramsOnThread`, writing UDP datagrams (a
/// sender thread takes each turn's, so their refusals come back a turn or two later). Members say "loop thread" when they must be called there (they
/// trap elsewhere); `listenSync` and `closeSync` are for other threads. Handlers are called on the loop thread,
/// synchronously for `onMessage`, and at the end of the loop turn for `onSendFailure` and `onConnectionClosed`
/// (never from inside `send`).
///
/// Lifetime: `close()` (or the loop's shutdown) closes its sockets; so does dropping the last reference to it.
///
/// `Sendable`: its only stored state is the loop (`Sendable`) and a `LoopBound` holding the loop-confined core,
/// which traps when touched off the loop thread.
public final class SIPTransport: Sendable {
    /// The loop this transport runs on.
    public let loop: EventLoop
    private let core: LoopBound<TransportCore>

    /// A transport with no sockets yet. `onMessage` gets every framed message, on the loop thread; it is `sending`
    /// because it moves to that thread: whatever it captures must be `Sendable` or no longer used by the caller.
    ///
    /// `sendsDatagramsOnThread`: UDP datagrams leave from a thread of their own, handed over once per loop turn
    /// (`sendmmsg` there), so the kernel's share of sending runs beside the loop; refusals are reported as ever,
    /// only a turn or so later. Off: each datagram is sent inside `send`.
    public init(
        loop: EventLoop, tls: TLSConfiguration? = nil, limits: TransportLimits = .init(),
        sendsDatagramsOnThread: Bool = false, onMessage: sending @escaping (InboundSIPMessage) -> Void
    ) {
        self.loop = loop
        core = LoopBound(
            TransportCore(
                loop: loop, tls: tls, limits: limits, sendsDatagramsOnThread: sendsDatagramsOnThread, onMessage: onMessage),
            identity: loop.identity)
    }

    deinit {
        let core = self.core
        loop.execute { core.value.close() }
    }

    /// Opens a listening socket and returns its actual address (port 0 replaced by the chosen port). TLS listeners
    /// load the configured certificate and key on first use; their errors name the file. Loop thread.
    public func listen(_ address: ListenAddress) throws(TransportError) -> ListenAddress {
        try core.value.listen(address)
    }

    /// `listen(_:)` from another thread: runs it on the loop and waits for the result.
    public func listenSync(_ address: ListenAddress) throws(TransportError) -> ListenAddress {
        let core = self.core
        let result = loop.executeAndWait { () -> Result<ListenAddress, TransportError> in
            do throws(TransportError) {
                return .success(try core.value.listen(address))
            } catch {
                return .failure(error)
            }
        }
        guard let result else { throw .transportClosed }
        return try result.get()
    }

    /// Sends one message. UDP: one datagram from the first listener of the destination's address family (or an
    /// ephemeral socket). TCP/TLS: on `destination.connection` if it lives, else on a live connection to the same
    /// peer (for TLS opened with the same server name, or accepted), else on a new connection, the bytes queued
    /// until it is ready. Failures go to `onSendFailure`, never thrown. Loop thread.
    public func send(_ bytes: Data, to destination: SIPDestination) {
        core.value.send(.bytes(bytes), to: destination)
    }

    /// `send(_:to:)` for a message whose bytes `write` makes: over UDP with `sendsDatagramsOnThread` it is called on
    /// the sender thread (so serialising a message costs the loop nothing), otherwise at once. `write` must be a
    /// quick, pure function of what it captured: it must not block, wait for the loop or touch loop-confined state
    /// (the loop may be waiting for the sender meanwhile). Loop thread.
    public func send(to destination: SIPDestination, writing write: @escaping @Sendable () -> Data) {
        core.value.send(.deferred(write), to: destination)
    }

    /// Called when a message could not be sent (refused or reset connection, failed handshake, overflow, closed
    /// connection, unreachable address). Loop thread.
    public var onSendFailure: ((SIPDestination, TransportError) -> Void)? {
        get { core.value.onSendFailure }
        set { core.value.onSendFailure = newValue }
    }

    /// Called when a TCP or TLS connection has closed, for any reason. Loop thread.
    public var onConnectionClosed: ((ConnectionID) -> Void)? {
        get { core.value.onConnectionClosed }
        set { core.value.onConnectionClosed = newValue }
    }

    /// The counters so far. Loop thread.
    public var statistics: TransportStatistics { core.value.statistics }

    /// The addresses listened on, in the order they were opened. Loop thread.
    public var listenAddresses: [ListenAddress] { core.value.listenAddresses }

    /// Closes one connection; messages still queued on it are reported as failed. Loop thread.
    public func closeConnection(_ connection: ConnectionID) {
        core.value.closeConnection(connection)
    }

    /// Closes every listener and connection; later sends fail with `transportClosed`. Idempotent. Loop thread.
    public func close() {
        core.value.close()
    }

    /// `close()` from another thread, waiting until it is done.
    public func closeSync() {
        let core = self.core
        _ = loop.executeAndWait { core.value.close() }
    }

    /// Reads the counters from another thread (waits for the loop; zero counters once the loop is shut down).
    public func statisticsSync() -> TransportStatistics {
        let core = self.core
        return loop.executeAndWait { core.value.statistics } ?? TransportStatistics()
    }
}
