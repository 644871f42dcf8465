import Dispatch
import Foundation
import Glibc

/// A connected non-blocking stream socket carrying lines, driven by Dispatch read/write sources on one serial
/// queue: incoming bytes become lines, outgoing lines wait in a bounded queue.
///
/// Closing:
/// - ``close(flushing:reason:)`` with `flushing` stops reading lines, writes what is queued, shuts the write
///   side down and then discards input until the peer closes or the linger time passes — so the peer gets our
///   last line (an `error`) instead of a reset caused by its own unread bytes;
/// - without `flushing` (and on EOF, a socket error or a full outgoing queue) it closes at once.
/// `onClose` runs exactly once, when the channel stops being usable; the descriptor itself is closed when every
/// Dispatch source has been cancelled (libdispatch requires that order).
// @unchecked Sendable: every mutable member is touched only on `queue`. `start`, `send`, `close` and `abort` must
// be called on it (each checks with dispatchPrecondition), and every Dispatch handler the channel installs — the
// read and write sources' event and cancel handlers, the linger deadline — is submitted to that same serial queue,
// so all accesses are serialised by it. The Sendable conformance only lets those handlers capture the channel.
final class LineChannel: @unchecked Sendable {
    /// Sizes and times.
    struct Limits: Sendable {
        var maxLineBytes: Int
        var maxQueuedBytes: Int
        var lingerTime: TimeInterval
    }

    /// What the owner hears, on the queue.
    struct Handlers {
        /// A complete, non-empty line (without LF/CR).
        var onLine: (Data) -> Void
        /// A line over the limit arrived; the channel closes (flushing) right after this returns.
        var onLineTooLarge: () -> Void
        /// The channel stopped being usable, and why.
        var onClose: (String) -> Void
    }

    private enum Phase {
        /// Reading lines and writing.
        case open
        /// Writing what is queued, then discarding input until EOF or the linger deadline.
        case draining
        /// Finished: sources cancelled, the descriptor closed or about to be.
        case closed
    }

    let fd: Int32
    let queue: DispatchQueue
    private let limits: Limits
    private var decoder: LineDecoder
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
        self.decoder = LineDecoder(maximumLength: limits.maxLineBytes)
        self.closedGroup = closedGroup
        closedGroup?.enter()
    }

    /// Whether lines can still be sent.
    var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    /// Whether the channel has finished (its descriptor closed or about to be).
    var isFinished: Bool {
        if case .closed = phase { return true }
        return false
    }

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

    /// Queues bytes (a line with its LF); closes the channel when the queue would exceed its limit.
    func send(_ bytes: Data) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .open = phase else { return }
        guard outgoing.byteCount + bytes.count <= limits.maxQueuedBytes else {
            notifyClosed("outgoing queue over \(limits.maxQueuedBytes) bytes: the client is not reading")
            finish()
            return
        }
        outgoing.append(bytes)
        flush()
    }

    /// Closes at once, cutting a lingering close short; `reason` reaches `onClose` if the channel was open.
    func abort(reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        if case .open = phase { notifyClosed(reason) }
        finish()
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
                if case .open = phase { notifyClosed("the client closed the connection") }
                finish()
                return
            } else {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK { return }
                if case .open = phase { notifyClosed("read: \(Errno(code))") }
                finish()
                return
            }
        }
    }

    private func deliver(_ count: Int) {
        decoder.feed(readBuffer[0..<count])
        while case .open = phase {
            switch decoder.next() {
            case nil:
                return
            case .line(let line):
                handlers?.onLine(line)
            case .tooLarge:
                handlers?.onLineTooLarge()
                // The stream cannot be followed any further, whatever the owner did.
                close(flushing: true, reason: "a line over \(limits.maxLineBytes) bytes")
                return
            }
        }
    }

    // MARK: Writing

    private func flush() {
        if case .closed = phase { return }
        if let failure = outgoing.write(to: fd) {
            if case .open = phase { notifyClosed("write: \(Errno(failure))") }
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

    /// Stops everything; the descriptor closes once every source has been cancelled.
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
