import Foundation
import Glibc

/// What the owner of a ``StreamChannel`` hears, on the loop thread. The delegate may send on, or close, the channel
/// (or others) from inside every callback.
package protocol StreamChannelDelegate: AnyObject {
    /// How the channel's byte stream is cut into frames.
    associatedtype Codec: StreamCodec
    /// What each queued message is for (reported back for the messages a close left unsent).
    associatedtype Tag

    /// An outgoing connect finished (and, for TLS, the handshake): queued bytes are on their way. Also called when
    /// an accepted TLS channel finishes its handshake.
    func streamChannelDidOpen(_ channel: StreamChannel<Self>)
    /// One frame arrived.
    func streamChannel(_ channel: StreamChannel<Self>, received frame: Codec.Frame)
    /// The stream cannot be framed any further; no frame follows. The channel closes at once after this returns,
    /// unless the delegate started closing it (to flush a last error reply, say).
    func streamChannel(_ channel: StreamChannel<Self>, failedToDecode failure: Codec.Failure)
    /// The channel stopped being usable, for `reason`; `unsent` are the tags of the messages it never wrote. Called
    /// exactly once (for a flushing close, when it begins: the last bytes may still be on their way).
    func streamChannel(_ channel: StreamChannel<Self>, closedBecause reason: StreamCloseReason, unsent: [Tag])
    /// The descriptor is closed: nothing more will happen on the channel.
    func streamChannelFinished(_ channel: StreamChannel<Self>)
}

extension StreamChannelDelegate {
    /// Nothing to do by default.
    package func streamChannelDidOpen(_ channel: StreamChannel<Self>) {}
    /// Nothing to do by default.
    package func streamChannelFinished(_ channel: StreamChannel<Self>) {}
}

/// Why ``StreamChannel/send(_:tag:)`` did not take a message.
package enum StreamSendRefusal: Sendable, Hashable {
    /// The channel is closing or closed.
    case notOpen
    /// The message would have taken the queue over its limit; the channel is now closed.
    case overflow
}

/// One connected (or connecting) non-blocking stream socket on an ``EventLoop``: reads and frames what arrives with
/// its ``StreamCodec``, writes a bounded ``ByteQueue``, runs an optional TLS session over memory BIOs, and closes
/// itself on peer faults, idleness and slow setup. The one stream channel of Parley: SIP over TCP and TLS, the
/// control API's lines and WebSocket frames, and the push channel's frames all run on it.
///
/// ```
///  outgoing:  connecting ──(connected)──▶ open                         (plain)
///             connecting ──(connected)──▶ handshaking ──(done)──▶ open (TLS)
///  accepted:                              handshaking ──(done)──▶ open (TLS), or open at once (plain)
///  open ──close(flushing: true)──▶ draining ──(written, peer closed or linger time passed)──▶ closed
///  any state ──(peer close, fault, idle, overflow, slow setup, close())──▶ closed
/// ```
/// A flushing close writes what is queued, shuts the write side down and discards input until the peer closes or the
/// linger time passes — so the peer reads our last words (an error, a close frame) instead of a reset caused by its
/// own unread bytes. Loop-confined: every member is used on the loop thread only.
package final class StreamChannel<Delegate: StreamChannelDelegate>: LoopFDHandler {
    package typealias Codec = Delegate.Codec
    package typealias Tag = Delegate.Tag

    /// Where the channel is in its life.
    package enum State: Equatable {
        /// An outgoing connect is in progress; sends are queued.
        case connecting
        /// The TLS handshake is in progress; plaintext sends wait for it.
        case handshaking
        /// Frames flow both ways.
        case open
        /// A flushing close: our last bytes are being written; input is discarded.
        case draining
        /// The descriptor is closed.
        case closed
    }

    /// The loop the channel runs on.
    package let loop: EventLoop
    /// The owner's key for this channel (a connection or client number).
    package var userInfo: UInt64 = 0
    /// Where the channel is.
    package private(set) var state: State
    /// Why it closed (set when it stops being usable).
    package private(set) var closeReason: StreamCloseReason?
    /// Who hears of frames and the end.
    package weak var delegate: Delegate?
    private let fd: Int32
    private var token: UInt64 = 0
    private var interest: UInt32
    /// The peer is no longer read (``pauseReading()``).
    private var readingPaused = false
    private var codec: Codec
    /// False after a framing failure: nothing is decoded any more.
    private var decoding = true
    private var tls: TLSSession?
    private var pendingPlaintext: [(bytes: Data, tag: Tag?)] = []
    private var pendingPlaintextBytes = 0
    private var outbound: ByteQueue<Tag>
    private let options: StreamChannelOptions
    private let counters: StreamCounters?
    private let idleNanoseconds: UInt64
    private let setupNanoseconds: UInt64
    private let createdAt = monotonicNanoseconds()
    private var lastActivity = monotonicNanoseconds()
    /// When draining began (for the linger deadline).
    private var drainingSince: UInt64 = 0
    private var writeSideShut = false
    /// A flush waits for the end of this loop turn.
    private var flushScheduled = false
    /// The one timer of the channel: idleness, the setup deadline while not open, the linger deadline while draining.
    private var timer: LoopTimer?

    /// Wraps a connected (accepted) socket, or one whose non-blocking connect is in progress (`connecting`), and
    /// registers it on `loop`. With `tls`, the channel handshakes before frames flow. On the loop thread.
    package init(
        loop: EventLoop, fd: Int32, connecting: Bool, codec: Codec, tls: TLSSession? = nil,
        options: StreamChannelOptions, counters: StreamCounters? = nil, delegate: Delegate
    ) throws(IOError) {
        self.loop = loop
        self.fd = fd
        self.codec = codec
        self.tls = tls
        self.options = options
        self.counters = counters
        self.delegate = delegate
        idleNanoseconds = options.idleTimeout.clampedNanoseconds
        setupNanoseconds = options.setupTimeout.clampedNanoseconds
        // Headroom over the limit for TLS records, close_notify and last words; `send` enforces the limit itself.
        outbound = ByteQueue(limit: options.maxQueuedBytes + 65_536)
        state = connecting ? .connecting : (tls == nil ? .open : .handshaking)
        interest = connecting ? LoopInterest.readWrite : LoopInterest.readable
        token = try loop.register(fd, interest: interest, handler: self)
        armTimer()
    }

    /// Bytes queued and not yet on the wire (plaintext waiting for the handshake included).
    package var queuedBytes: Int { outbound.byteCount + pendingPlaintextBytes }

    /// Whether messages can still be sent (connecting, handshaking or open).
    package var isUsable: Bool {
        switch state {
        case .connecting, .handshaking, .open: true
        case .draining, .closed: false
        }
    }

    /// Whether the descriptor is closed.
    package var isFinished: Bool { state == .closed }

    /// The socket's local address (an outgoing connection's is known once it is connected).
    package var localAddress: SocketAddress? { state == .closed ? nil : Socket.localAddress(fd) }

    // MARK: - Events

    package func handle(events: UInt32) {
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

    package func loopWillShutDown() {
        guard state != .closed else { return }
        state = .closed
        Glibc.close(fd)
        tls = nil
    }

    /// Reads what has already arrived, without waiting for the loop to report it (a server reads a connection it has
    /// just accepted, before accepting more). Nothing unless the channel is open or handshaking.
    package func readNow() {
        guard state == .open || state == .handshaking, !readingPaused else { return }
        readAvailable()
    }

    /// Stops reading the peer for good: what it sends waits in the kernel (a server holding a connection it will only
    /// close). The channel still closes on its timers, on an error or a hang-up, and writes what is queued.
    package func pauseReading() {
        guard state != .closed, !readingPaused else { return }
        readingPaused = true
        let wanted = outbound.isEmpty ? 0 : LoopInterest.writable
        if wanted != interest {
            interest = wanted
            loop.modify(token, interest: wanted)
        }
    }

    private func finishConnecting() {
        let code = Socket.pendingError(fd)
        guard code == 0 else { return close(.connectFailed(code)) }
        if tls != nil {
            state = .handshaking
            advanceHandshake()  // the ClientHello
        } else {
            state = .open
            flush()
            if state == .open { delegate?.streamChannelDidOpen(self) }
        }
    }

    /// Reads until the socket is drained (or 16 reads, then epoll, being level-triggered, calls again).
    private func readAvailable() {
        let buffer = loop.scratch
        for _ in 0..<16 where state != .closed {
            let count = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if count == 0 { return state == .draining ? finish() : close(.peerClosed) }
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { return }
                return state == .draining ? finish() : close(.socketError(code))
            }
            counters?.bytesReceived += count
            if !options.idleCountsFramesOnly { touch() }
            if state != .draining {
                let received = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                if let tls {
                    tls.feed(received)
                    processTLSInput(tls)
                } else {
                    codec.feed(received)
                    deliverFrames()
                }
            }
            if count < buffer.count { return }
        }
    }

    private func processTLSInput(_ tls: TLSSession) {
        if state == .handshaking { advanceHandshake() }
        let buffer = loop.scratch
        while state == .open {
            switch tls.read(into: buffer) {
            case .bytes(let count):
                codec.feed(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
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
            // Each message leaves the waiting list only once it is encrypted: a close on the way (the queue full,
            // a TLS error) then reports it and every one after it as unsent.
            while state == .open, let item = pendingPlaintext.first {
                guard encrypt(item.bytes, tag: item.tag, tls) else { break }
                pendingPlaintext.removeFirst()
                pendingPlaintextBytes -= item.bytes.count
            }
            flushTLSOutput()
            if state == .open { delegate?.streamChannelDidOpen(self) }
        case .needsInput:
            flushTLSOutput()
        case .failed(let reason):
            flushTLSOutput()  // the alert, best effort
            counters?.tlsHandshakeFailures += 1
            close(.handshakeFailed(reason))
        }
    }

    private func deliverFrames() {
        while state == .open, decoding {
            switch codec.decode() {
            case nil:
                return
            case .success(let frame):
                if options.idleCountsFramesOnly { touch() }
                delegate?.streamChannel(self, received: frame)
            case .failure(let failure):
                decoding = false
                delegate?.streamChannel(self, failedToDecode: failure)
                if isUsable { close(.framing("the stream cannot be framed: \(failure)")) }
                return
            }
        }
    }

    // MARK: - Writing

    /// Queues `bytes` (one message, or the owner's own bytes with no tag); what the socket takes is written at the end
    /// of the loop turn. A message that would take the queue over its limit closes the channel
    /// (``StreamSendRefusal/overflow``).
    @discardableResult
    package func send(_ bytes: Data, tag: Tag? = nil) -> StreamSendRefusal? {
        guard isUsable else { return .notOpen }
        guard queuedBytes + bytes.count <= options.maxQueuedBytes else {
            counters?.queueOverflows += 1
            close(.queueOverflow(limit: options.maxQueuedBytes))
            return .overflow
        }
        if let tls {
            guard state == .open else {
                pendingPlaintext.append((bytes, tag))
                pendingPlaintextBytes += bytes.count
                return nil
            }
            guard encrypt(bytes, tag: tag, tls) else { return .notOpen }
            flushAtEndOfTurn()
        } else {
            guard enqueue(bytes, tag: tag) else { return .overflow }
            if state == .open { flushAtEndOfTurn() }
        }
        return nil
    }

    /// Writes at the end of this loop turn, so that what a turn sends on the channel leaves in one system call: over
    /// TCP a turn answering a batch of one connection's requests wrote once per answer, and each write went through
    /// the whole TCP stack on its own (a third of the SIP loop's time at 11,000 calls/s).
    private func flushAtEndOfTurn() {
        guard !flushScheduled else { return }
        flushScheduled = true
        loop.atEndOfTurn { [weak self] in
            guard let self else { return }
            flushScheduled = false
            flush()
        }
    }

    /// Appends to the byte queue; when even its headroom is used up (TLS records of many small messages queued
    /// during the handshake), the channel closes as overflowing rather than drop bytes from the middle of a stream.
    private func enqueue(_ bytes: Data, tag: Tag? = nil) -> Bool {
        guard outbound.append(bytes, tag: tag) else {
            counters?.queueOverflows += 1
            close(.queueOverflow(limit: options.maxQueuedBytes))
            return false
        }
        return true
    }

    /// Encrypts into the queue; false (and the channel closed) when TLS fails.
    private func encrypt(_ bytes: Data, tag: Tag?, _ tls: TLSSession) -> Bool {
        if let reason = tls.write(bytes) {
            close(.tlsFailed(reason))
            return false
        }
        while let record = tls.takeOutput() {
            guard enqueue(record, tag: tag) else { return false }
        }
        return true
    }

    private func flushTLSOutput() {
        guard let tls, state != .closed else { return }
        while let record = tls.takeOutput() {
            guard enqueue(record) else { return }
        }
        flush()
    }

    /// Writes what the socket takes, and waits for EPOLLOUT only while something is left.
    private func flush() {
        guard state == .open || state == .handshaking || state == .draining else { return }
        if !outbound.isEmpty {
            let (written, error) = outbound.write(to: fd)
            if written > 0 {
                counters?.bytesSent += written
                if !options.idleCountsFramesOnly { touch() }
            }
            if let error { return state == .draining ? finish() : close(.socketError(error)) }
        }
        if state == .draining, outbound.isEmpty, !writeSideShut {
            writeSideShut = true
            shutdown(fd, Int32(SHUT_WR))
        }
        let wanted = (readingPaused ? 0 : LoopInterest.readable) | (outbound.isEmpty ? 0 : LoopInterest.writable)
        if wanted != interest {
            interest = wanted
            loop.modify(token, interest: wanted)
        }
    }

    // MARK: - Closing

    /// Closes the channel for `reason`. With `flushing` (on an open channel) what is queued, then `lastWords`, is
    /// written first and the peer is given the linger time to close its side; otherwise `lastWords` get one
    /// non-blocking write and the descriptor closes at once. A draining channel closed again without `flushing`
    /// is cut short. The delegate hears `closedBecause` once, then `finished`.
    package func close(_ reason: StreamCloseReason, flushing: Bool = false, lastWords: Data? = nil) {
        switch state {
        case .closed:
            return
        case .draining:
            if !flushing { finish() }
            return
        case .open where flushing:
            sayLastWords(lastWords, closeNotify: true)
            state = .draining
            closeReason = reason
            drainingSince = monotonicNanoseconds()
            rearmTimer()
            delegate?.streamChannel(self, closedBecause: reason, unsent: [])
            flush()
        case .open, .connecting, .handshaking:
            if state == .open {
                // close_notify (for our own reasons), last words, and what this turn sent (its flush was waiting
                // for the turn's end): one non-blocking write, no waiting for the peer.
                if sayLastWords(lastWords, closeNotify: Self.isLocal(reason)) || flushScheduled {
                    _ = outbound.write(to: fd)
                }
            }
            closeReason = reason
            let unsent = tearDown()
            delegate?.streamChannel(self, closedBecause: reason, unsent: unsent)
            delegate?.streamChannelFinished(self)
        }
    }

    /// Queues `lastWords` (encrypted, for TLS) and, when asked and TLS is on, close_notify; whether anything was
    /// queued.
    @discardableResult
    private func sayLastWords(_ lastWords: Data?, closeNotify: Bool) -> Bool {
        var said = false
        if let lastWords {
            if let tls {
                _ = tls.write(lastWords)
            } else {
                outbound.append(lastWords)
            }
            said = true
        }
        if let tls, closeNotify {
            tls.shutdown()
            said = true
        }
        if let tls {
            while let record = tls.takeOutput() { outbound.append(record) }
        }
        return said
    }

    /// The end of a drain: the descriptor closes.
    private func finish() {
        guard state != .closed else { return }
        _ = tearDown()
        delegate?.streamChannelFinished(self)
    }

    /// Closes the descriptor and frees the TLS session; returns the tags never written.
    private func tearDown() -> [Tag] {
        state = .closed
        if let timer { loop.cancel(timer) }
        timer = nil
        loop.deregister(token)
        Glibc.close(fd)
        tls = nil
        var unsent = outbound.removeAll()
        unsent += pendingPlaintext.compactMap(\.tag)
        pendingPlaintext = []
        pendingPlaintextBytes = 0
        return unsent
    }

    /// Closes our side decided on (as opposed to the peer's faults), which earn a TLS close_notify.
    private static func isLocal(_ reason: StreamCloseReason) -> Bool {
        switch reason {
        case .closed, .idle: true
        case .peerClosed, .socketError, .connectFailed, .queueOverflow, .handshakeFailed, .tlsFailed, .framing: false
        }
    }

    // MARK: - The timer

    private func touch() {
        if idleNanoseconds > 0 { lastActivity = monotonicNanoseconds() }
    }

    private func rearmTimer() {
        if let timer { loop.cancel(timer) }
        timer = nil
        armTimer()
    }

    /// Arms the timer for the nearest of the idle deadline, the setup deadline (while not open) and the linger
    /// deadline (while draining).
    private func armTimer() {
        let now = monotonicNanoseconds()
        var wait = UInt64.max
        func consider(_ limit: UInt64, since start: UInt64) {
            wait = min(wait, limit &- min(limit, now &- start))
        }
        switch state {
        case .connecting, .handshaking:
            if setupNanoseconds > 0 { consider(setupNanoseconds, since: createdAt) }
            if idleNanoseconds > 0 { consider(idleNanoseconds, since: lastActivity) }
        case .open:
            if idleNanoseconds > 0 { consider(idleNanoseconds, since: lastActivity) }
        case .draining:
            consider(options.lingerTime.clampedNanoseconds, since: drainingSince)
        case .closed:
            return
        }
        guard wait != .max else { return }
        timer = loop.schedule(after: .nanoseconds(Int64(clamping: wait))) { [self] in
            timer = nil
            timerFired()
        }
    }

    private func timerFired() {
        let now = monotonicNanoseconds()
        switch state {
        case .closed:
            return
        case .draining:
            if now &- drainingSince >= options.lingerTime.clampedNanoseconds { return finish() }
        case .connecting, .handshaking:
            if setupNanoseconds > 0, now &- createdAt >= setupNanoseconds {
                guard state == .handshaking else { return close(.connectFailed(ETIMEDOUT)) }
                counters?.tlsHandshakeFailures += 1
                return close(.handshakeFailed("handshake not finished within the connection setup timeout"))
            }
            fallthrough
        case .open:
            if idleNanoseconds > 0, now &- lastActivity >= idleNanoseconds {
                counters?.idleClosed += 1
                return close(.idle)
            }
        }
        armTimer()
    }
}
