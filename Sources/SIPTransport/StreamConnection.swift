import Foundation
import Glibc

/// Why a connection closed; decides the error reported for the messages it still held.
enum ConnectionCloseReason: Equatable {
    /// The peer closed (FIN, or TLS close_notify).
    case peerClosed
    /// A socket error (ECONNRESET, EPIPE…).
    case socketError(Int32)
    /// connect(2) did not succeed.
    case connectFailed(Int32)
    /// The byte stream could not be framed.
    case framing(StreamFramingError)
    /// No traffic for `idleConnectionTimeout`.
    case idle
    /// The write queue passed its bound.
    case queueOverflow
    /// The TLS handshake failed.
    case handshakeFailed(String)
    /// TLS failed after the handshake (a bad record, a protocol error).
    case tlsFailed(String)
    /// `SIPTransport.close()` or `closeConnection(_:)`.
    case closedLocally
}

/// One TCP or TLS connection, accepted or opened: reads and frames messages, writes a bounded queue, runs the TLS
/// session over memory BIOs, and closes itself on peer faults. Loop-confined (it lives in a `TransportCore`).
///
/// ```
///  opened:   connecting ──(connected)──▶ open                       (TCP)
///            connecting ──(connected)──▶ handshaking ──▶ open       (TLS)
///  accepted:                             handshaking ──▶ open       (TLS)   or open at once (TCP)
///  any state ──(peer close, fault, idle, overflow, close())──▶ closed
/// ```
final class StreamConnection: LoopFDHandler {
    enum State: Equatable {
        /// Non-blocking connect in progress; sends are queued.
        case connecting
        /// TLS handshake in progress; plaintext sends wait in `pendingPlaintext`.
        case handshaking
        /// Messages flow both ways.
        case open
        /// The descriptor is closed and the connection forgotten by its transport.
        case closed
    }

    let id = ConnectionID.next()
    let kind: SIPTransportKind
    let remote: SIPPeerAddress
    /// The local end: the listener's address for accepted connections, the bound address for opened ones.
    private(set) var local: ListenAddress
    let isAccepted: Bool
    /// For opened TLS connections: the name the certificate was checked against (nil: the IP address).
    let serverName: String?
    private(set) var state: State
    private unowned let core: TransportCore
    private let fd: Int32
    private var token: UInt64 = 0
    private var interest: UInt32 = 0
    private var framer: StreamFramer
    private var tls: TLSSession?
    private var pendingPlaintext: [(bytes: Data, destination: SIPDestination?)] = []
    private var pendingPlaintextBytes = 0
    private var outbound = WriteQueue()
    private let createdAt = monotonicNanoseconds()
    private var lastActivity = monotonicNanoseconds()
    /// The one timer of the connection: idleness, and while not yet open the setup deadline.
    private var timer: LoopTimer?

    /// Wraps a connected (accepted) or connecting (opened) socket and registers it on the loop.
    init(
        core: TransportCore, fd: Int32, kind: SIPTransportKind, remote: SIPPeerAddress, local: ListenAddress,
        isAccepted: Bool, serverName: String?, tls: TLSSession?
    ) throws(TransportError) {
        self.core = core
        self.fd = fd
        self.kind = kind
        self.remote = remote
        self.local = local
        self.isAccepted = isAccepted
        self.serverName = serverName
        self.tls = tls
        framer = StreamFramer(maxMessageBytes: core.limits.maxMessageBytes)
        state = isAccepted ? (tls == nil ? .open : .handshaking) : .connecting
        interest = state == .connecting ? LoopInterest.readWrite : LoopInterest.readable
        token = try core.loop.register(fd, interest: interest, handler: self)
        armTimer()
    }

    /// Bytes queued and not yet on the wire (plaintext waiting for the handshake included).
    var queuedBytes: Int { outbound.byteCount + pendingPlaintextBytes }

    /// Whether a send to `destination` may use this connection: open or on its way, and for an opened TLS connection
    /// checked against the same name.
    func canCarry(_ destination: SIPDestination) -> Bool {
        state != .closed && (isAccepted || kind != .tls || serverName == destination.serverName)
    }

    // MARK: - Events

    func handle(events: UInt32) {
        if state == .connecting {
            guard events & (LoopInterest.writable | LoopInterest.error | LoopInterest.hangUp) != 0 else { return }
            finishConnecting()
        }
        if state != .closed, events & (LoopInterest.readable | LoopInterest.error | LoopInterest.hangUp) != 0 {
            readAvailable()
        }
        if state != .closed, events & LoopInterest.writable != 0 {
            flush()
        }
    }

    func loopWillShutDown() {
        guard state != .closed else { return }
        state = .closed
        Glibc.close(fd)
        tls = nil
    }

    private func finishConnecting() {
        let code = Socket.option(fd, SOL_SOCKET, SO_ERROR)
        guard code == 0 else { return close(.connectFailed(code)) }
        if let address = Socket.localAddress(fd) {
            local = ListenAddress(kind: kind, host: address.ip.text, port: address.port)
        }
        if tls != nil {
            state = .handshaking
            advanceHandshake()  // the ClientHello
        } else {
            state = .open
            flush()
        }
    }

    /// Reads until the socket is drained (or 16 reads, then epoll, being level-triggered, calls again).
    private func readAvailable() {
        let buffer = core.readBuffer
        for _ in 0..<16 where state != .closed {
            let count = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if count == 0 { return close(.peerClosed) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { return }
                return close(.socketError(code))
            }
            core.statistics.bytesReceived += count
            lastActivity = monotonicNanoseconds()
            let received = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            if let tls {
                tls.feed(received)
                processTLSInput(tls)
            } else {
                framer.append(received)
                deliverFrames()
            }
            if count < buffer.count { return }
        }
    }

    private func processTLSInput(_ tls: TLSSession) {
        if state == .handshaking {
            advanceHandshake()
        }
        let buffer = core.readBuffer
        while state == .open {
            switch tls.read(into: buffer) {
            case .bytes(let count):
                framer.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                deliverFrames()
            case .needsInput:
                return flushTLSOutput()
            case .closed:
                return close(.peerClosed)
            case .failed(let reason):
                return close(.tlsFailed(reason))
            }
        }
    }

    private func advanceHandshake() {
        guard let tls, state == .handshaking else { return }
        switch tls.handshake() {
        case .complete:
            state = .open
            let waiting = pendingPlaintext
            pendingPlaintext = []
            pendingPlaintextBytes = 0
            for item in waiting where state == .open { encrypt(item.bytes, destination: item.destination, tls) }
            flushTLSOutput()
        case .needsInput:
            flushTLSOutput()
        case .failed(let reason):
            flushTLSOutput()  // the alert, best effort
            core.statistics.tlsHandshakeFailures += 1
            close(.handshakeFailed(reason))
        }
    }

    private func deliverFrames() {
        while state != .closed {
            let frame: StreamFrame?
            do {
                frame = try framer.next()
            } catch {
                core.statistics.framingErrors += 1
                if error == .oversize { core.statistics.oversizeMessages += 1 }
                return close(.framing(error))
            }
            switch frame {
            case nil:
                return
            case .message(let bytes):
                core.deliver(InboundSIPMessage(bytes: bytes, kind: kind, source: remote, connection: id, local: local))
            case .ping:
                core.statistics.keepAlivePongs += 1
                enqueue(Data("\r\n".utf8), destination: nil)
            }
        }
    }

    // MARK: - Writing

    /// Queues `bytes` and writes what the socket takes; a failure (closed, overflow) is reported for `destination`.
    func enqueue(_ bytes: Data, destination: SIPDestination?) {
        guard state != .closed else {
            if let destination { core.reportSendFailure(destination, .connectionClosed(remote)) }
            return
        }
        guard queuedBytes + bytes.count <= core.limits.maxQueuedBytesPerConnection else {
            core.statistics.queueOverflows += 1
            if let destination { core.reportSendFailure(destination, .queueOverflow(remote)) }
            return close(.queueOverflow)
        }
        if let tls {
            guard state == .open else {
                pendingPlaintext.append((bytes, destination))
                pendingPlaintextBytes += bytes.count
                return
            }
            encrypt(bytes, destination: destination, tls)
            flush()
        } else {
            outbound.append(bytes, destination: destination)
            if state == .open { flush() }
        }
    }

    private func encrypt(_ bytes: Data, destination: SIPDestination?, _ tls: TLSSession) {
        if let reason = tls.write(bytes) {
            if let destination { core.reportSendFailure(destination, .connectionClosed(remote)) }
            return close(.tlsFailed(reason))
        }
        while let record = tls.takeOutput() { outbound.append(record, destination: destination) }
    }

    private func flushTLSOutput() {
        guard let tls, state != .closed else { return }
        while let record = tls.takeOutput() { outbound.append(record, destination: nil) }
        flush()
    }

    /// Writes what the socket takes, and waits for EPOLLOUT only while something is left.
    private func flush() {
        guard state == .open || state == .handshaking else { return }
        if !outbound.isEmpty {
            let (written, error) = outbound.write(to: fd)
            if written > 0 {
                core.statistics.bytesSent += written
                lastActivity = monotonicNanoseconds()
            }
            if let error { return close(.socketError(error)) }
        }
        let wanted = outbound.isEmpty ? LoopInterest.readable : LoopInterest.readWrite
        if wanted != interest {
            interest = wanted
            core.loop.modify(token, interest: wanted)
        }
    }

    // MARK: - Closing

    /// Closes the descriptor, frees the TLS session and tells the transport (which reports the unsent messages).
    func close(_ reason: ConnectionCloseReason) {
        guard state != .closed else { return }
        if reason == .closedLocally || reason == .idle, state == .open, let tls {
            // close_notify, best effort: one non-blocking write, no waiting for the peer's.
            tls.shutdown()
            while let record = tls.takeOutput() { outbound.append(record, destination: nil) }
            _ = outbound.write(to: fd)
        }
        state = .closed
        if let timer { core.loop.cancel(timer) }
        timer = nil
        core.loop.deregister(token)
        Glibc.close(fd)
        tls = nil
        var unsent = outbound.removeAll()
        unsent += pendingPlaintext.compactMap(\.destination)
        pendingPlaintext = []
        pendingPlaintextBytes = 0
        framer = StreamFramer(maxMessageBytes: 0)
        core.connectionDidClose(self, reason: reason, unsent: unsent)
    }

    /// Arms the timer for the nearer of the idle deadline and, while not open, the setup deadline.
    private func armTimer() {
        let now = monotonicNanoseconds()
        var wait = UInt64.max
        if core.idleTimeoutNanoseconds > 0 {
            wait = core.idleTimeoutNanoseconds &- min(core.idleTimeoutNanoseconds, now &- lastActivity)
        }
        if state != .open, core.setupTimeoutNanoseconds > 0 {
            wait = min(wait, core.setupTimeoutNanoseconds &- min(core.setupTimeoutNanoseconds, now &- createdAt))
        }
        guard wait != .max else { return }
        timer = core.loop.schedule(after: .nanoseconds(Int64(clamping: wait))) { [self] in
            timer = nil
            timerFired()
        }
    }

    private func timerFired() {
        guard state != .closed else { return }
        let now = monotonicNanoseconds()
        if state != .open, core.setupTimeoutNanoseconds > 0, now &- createdAt >= core.setupTimeoutNanoseconds {
            if state == .handshaking {
                core.statistics.tlsHandshakeFailures += 1
                return close(.handshakeFailed("handshake not finished within the connection setup timeout"))
            }
            return close(.connectFailed(ETIMEDOUT))
        }
        if core.idleTimeoutNanoseconds > 0, now &- lastActivity >= core.idleTimeoutNanoseconds {
            core.statistics.idleConnectionsClosed += 1
            return close(.idle)
        }
        armTimer()
    }
}
