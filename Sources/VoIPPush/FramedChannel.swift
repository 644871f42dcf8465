import Dispatch
import Foundation
import Glibc

/// A connected non-blocking TCP socket carrying frames, driven by Dispatch read/write sources on one serial
/// queue: incoming bytes become frame bodies, outgoing frames wait in a bounded queue.
///
/// Closing:
/// - ``close(flushing:reason:)`` with `flushing` stops reading frames, writes what is queued, shuts the write
///   side down and then discards input until the peer closes or the linger time passes — so the peer gets our
///   last frame (an `error`) instead of a reset caused by its own unread bytes;
/// - without `flushing` (and on EOF, a socket error or a full outgoing queue) it closes at once.
/// `onClose` runs exactly once, when the channel stops being usable; the descriptor itself is closed when both
/// Dispatch sources have been cancelled (libdispatch requires that order).
// @unchecked Sendable: every mutable member is touched only on `queue`. `start`, `send` and `close` must be called
// on it (each checks with dispatchPrecondition), and every Dispatch handler the channel installs — the read and
// write sources' event and cancel handlers, the linger deadline — is submitted to that same serial queue, so all
// accesses are serialised by it. The Sendable conformance only lets those handlers capture the channel.
final class FramedChannel: @unchecked Sendable {
    /// Sizes and times.
    struct Limits: Sendable {
        var maxFrameLength = PushFraming.defaultMaximumLength
        var maxQueuedBytes = 256 * 1024
        var lingerTime: TimeInterval = 1
    }

    /// What the owner hears.
    struct Handlers {
        var onFrame: (Data) -> Void
        var onFrameError: (FrameError) -> Void
        var onClose: (String) -> Void
    }

    private enum Phase {
        /// Reading frames and writing.
        case open
        /// Writing what is queued, then discarding input until EOF or the linger deadline.
        case draining
        /// Finished: sources cancelled, the descriptor closed or about to be.
        case closed
    }

    let fd: Int32
    let queue: DispatchQueue
    private let limits: Limits
    private var decoder: FrameDecoder
    private var outgoing = OutgoingBytes()
    private var phase = Phase.open
    private var handlers: Handlers?
    private var readSource: (any DispatchSourceRead)?
    private var writeSource: (any DispatchSourceWrite)?
    private var writeSourceRunning = false
    /// Sources created and not yet through their cancel handler.
    private var liveSources = 0
    private var readBuffer = [UInt8](repeating: 0, count: 65_536)
    /// Left once the descriptor is closed (lets a server wait for every socket to be gone).
    private let closedGroup: DispatchGroup?

    /// Takes ownership of `fd` (connected, non-blocking).
    init(fd: Int32, queue: DispatchQueue, limits: Limits, closedGroup: DispatchGroup? = nil) {
        self.fd = fd
        self.queue = queue
        self.limits = limits
        self.decoder = FrameDecoder(maximumLength: limits.maxFrameLength)
        self.closedGroup = closedGroup
        closedGroup?.enter()
    }

    /// Whether frames can still be sent.
    var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    /// Bytes waiting to be written.
    var queuedByteCount: Int { outgoing.byteCount }

    /// Starts reading; the handlers run on the queue.
    func start(_ handlers: Handlers) {
        dispatchPrecondition(condition: .onQueue(queue))
        self.handlers = handlers
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [self] in readAvailable() }
        source.setCancelHandler { [self] in sourceCancelled() }
        liveSources += 1
        readSource = source
        source.resume()
    }

    /// Queues a frame (already length-prefixed); closes the channel when the queue would exceed its limit.
    func send(_ frame: Data) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .open = phase else { return }
        guard outgoing.byteCount + frame.count <= limits.maxQueuedBytes else {
            let reason = "outgoing queue over \(limits.maxQueuedBytes) bytes: the peer is not reading"
            notifyClosed(reason)
            finish()
            return
        }
        outgoing.append(frame)
        flush()
    }

    /// Ends a lingering close at once (or closes an open channel without flushing).
    func abort(reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        if case .open = phase { notifyClosed(reason) }
        finish()
    }

    /// Whether the channel has finished (its descriptor closed or about to be).
    var isFinished: Bool {
        if case .closed = phase { return true }
        return false
    }

    /// Closes the channel (see the type's documentation); nothing if it is already closing.
    func close(flushing: Bool, reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .open = phase else { return }
        notifyClosed(reason)
        guard flushing else {
            finish()
            return
        }
        phase = .draining
        queue.asyncAfter(deadline: .now() + limits.lingerTime) { [self] in
            if case .draining = phase { finish() }
        }
        flush()
    }

    // MARK: Reading

    private func readAvailable() {
        if case .closed = phase { return }
        for _ in 0..<8 {
            let count = readBuffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                switch phase {
                case .open: deliver(count)
                case .draining: continue
                case .closed: return
                }
                if case .closed = phase { return }
            } else if count == 0 {
                if case .open = phase { notifyClosed("the peer closed the connection") }
                finish()
                return
            } else {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { return }
                if case .open = phase { notifyClosed("read: \(Sockets.errorText(code))") }
                finish()
                return
            }
        }
    }

    private func deliver(_ count: Int) {
        decoder.feed(readBuffer[0..<count])
        while case .open = phase {
            do {
                guard let frame = try decoder.nextFrame() else { return }
                handlers?.onFrame(frame)
            } catch {
                handlers?.onFrameError(error)
                // The stream is out of step: whatever the owner did, nothing more can be read from it.
                close(flushing: true, reason: error.description)
                return
            }
        }
    }

    // MARK: Writing

    private func flush() {
        if case .closed = phase { return }
        let (_, failure) = outgoing.write(to: fd)
        if let failure {
            if case .open = phase { notifyClosed("write: \(Sockets.errorText(failure))") }
            finish()
            return
        }
        if outgoing.byteCount == 0 {
            if writeSourceRunning {
                writeSource?.suspend()
                writeSourceRunning = false
            }
            if case .draining = phase { shutdown(fd, Int32(SHUT_WR)) }
            return
        }
        if writeSource == nil {
            let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
            source.setEventHandler { [self] in flush() }
            source.setCancelHandler { [self] in sourceCancelled() }
            liveSources += 1
            writeSource = source
        }
        if !writeSourceRunning {
            writeSource?.resume()
            writeSourceRunning = true
        }
    }

    // MARK: Closing

    private func notifyClosed(_ reason: String) {
        let handlers = self.handlers
        self.handlers = nil
        handlers?.onClose(reason)
    }

    /// Stops everything; the descriptor closes once both sources have been cancelled.
    private func finish() {
        if case .closed = phase { return }
        phase = .closed
        handlers = nil
        outgoing.removeAll()
        readSource?.cancel()
        if let writeSource {
            writeSource.cancel()
            // A suspended source never runs its cancel handler (and must not be released suspended).
            if !writeSourceRunning {
                writeSource.resume()
                writeSourceRunning = true
            }
        }
        if liveSources == 0 { closeDescriptor() }
    }

    private func sourceCancelled() {
        liveSources -= 1
        if liveSources == 0, case .closed = phase {
            readSource = nil
            writeSource = nil
            closeDescriptor()
        }
    }

    private func closeDescriptor() {
        Glibc.close(fd)
        closedGroup?.leave()
    }
}

/// Bytes waiting for a socket, in order.
struct OutgoingBytes {
    private var chunks: [Data] = []
    private var head = 0
    /// Bytes of `chunks[head]` already written.
    private var offset = 0
    private(set) var byteCount = 0

    mutating func append(_ bytes: Data) {
        guard !bytes.isEmpty else { return }
        chunks.append(bytes)
        byteCount += bytes.count
    }

    /// Writes what the socket takes without blocking; returns the bytes written and the errno that stopped it,
    /// if one other than EAGAIN did.
    mutating func write(to fd: Int32) -> (written: Int, error: Int32?) {
        var written = 0
        while head < chunks.count {
            let chunk = chunks[head]
            let result = chunk.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if result < 0 {
                let code = errno
                if code == EINTR { continue }
                compact()
                return (written, code == EAGAIN || code == EWOULDBLOCK ? nil : code)
            }
            written += result
            byteCount -= result
            offset += result
            if offset == chunk.count {
                head += 1
                offset = 0
            }
        }
        compact()
        return (written, nil)
    }

    mutating func removeAll() {
        chunks = []
        head = 0
        offset = 0
        byteCount = 0
    }

    private mutating func compact() {
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: chunks.capacity <= 64)
            head = 0
        } else if head >= 32, head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }
}
