import Dispatch
import Foundation
import Glibc

/// A connected non-blocking TCP socket speaking WebSocket as the server, driven by Dispatch read/write sources on
/// one serial queue: first the opening handshake (an HTTP/1.1 upgrade request), then frames. Text messages go to
/// the owner; pings, closes and protocol faults are answered here; outgoing messages wait in a bounded queue.
///
/// Closing works as in ``LineChannel``: a flushing close writes what is queued (a close frame, an HTTP refusal),
/// shuts the write side down and discards input until the peer closes or the linger time passes. `onClose` runs
/// exactly once; the descriptor is closed once every Dispatch source has been cancelled.
// @unchecked Sendable: every mutable member is touched only on `queue`. `start`, `send`, `reject`, `close` and
// `abort` must be called on it (each checks with dispatchPrecondition), and every Dispatch handler the channel
// installs — the read and write sources' event and cancel handlers, the linger deadline — is submitted to that same
// serial queue, so all accesses are serialised by it. The Sendable conformance only lets those handlers capture it.
final class WebSocketChannel: @unchecked Sendable {
    /// Sizes and times.
    struct Limits: Sendable {
        var maxMessageBytes: Int
        var maxQueuedBytes: Int
        var lingerTime: TimeInterval
        var allowedOrigins: Set<String>
    }

    /// What the owner hears, on the queue.
    struct Handlers {
        /// The handshake succeeded: messages may be sent.
        var onOpen: () -> Void
        /// A complete text message (valid UTF-8).
        var onMessage: (Data) -> Void
        /// A message over the limit arrived; the channel closes with 1009 right after this returns.
        var onMessageTooLarge: () -> Void
        /// The channel stopped being usable, and why.
        var onClose: (String) -> Void
    }

    /// Where the byte stream is.
    private enum Stage {
        /// Reading the HTTP request head into `head`.
        case handshake
        /// Upgraded: reading frames with `decoder`; `fragments` holds a text message begun by a frame without FIN.
        case frames
    }

    /// Where the connection is in its life.
    private enum Phase {
        /// Reading and writing.
        case open
        /// Writing what is queued, then discarding input until EOF or the linger deadline.
        case draining
        /// Finished: sources cancelled, the descriptor closed or about to be.
        case closed
    }

    let fd: Int32
    let queue: DispatchQueue
    private let limits: Limits
    private var stage = Stage.handshake
    private var head: [UInt8] = []
    private var decoder: WebSocketFrameDecoder
    private var fragments: [UInt8]?
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
        // Control frames need 125 bytes whatever the message limit; messages are checked on their own.
        self.decoder = WebSocketFrameDecoder(maxPayloadBytes: max(limits.maxMessageBytes, 125))
        self.closedGroup = closedGroup
        closedGroup?.enter()
    }

    /// Whether the handshake is done (messages are frames now).
    var isUpgraded: Bool {
        switch stage {
        case .handshake: false
        case .frames: true
        }
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

    /// Queues `message` as one text frame; nothing before the handshake is done. Closes the channel when the queue
    /// would exceed its limit.
    func send(_ message: Data) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard isUpgraded else { return }
        write(WebSocketFrameEncoder.text(message))
    }

    /// Refuses the connection: after the handshake, `message` as a text frame and a close frame with `code`; before
    /// it, an HTTP refusal (`status`). Then closes, flushing.
    func reject(message: Data, code: WebSocketCloseCode, refusal: WebSocketHandshake.Answer, reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .open = phase else { return }
        switch stage {
        case .handshake:
            if case .refuse(_, _, let response) = refusal { write(response) }
        case .frames:
            write(WebSocketFrameEncoder.text(message))
            write(WebSocketFrameEncoder.close(code, reason: reason))
        }
        close(flushing: true, reason: reason)
    }

    /// Closes with a close frame (`code`, `reason`) when upgraded, else without a word, writing what is queued.
    func close(_ code: WebSocketCloseCode, reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .open = phase else { return }
        if isUpgraded { write(WebSocketFrameEncoder.close(code, reason: reason)) }
        close(flushing: true, reason: reason)
    }

    /// Closes at once (a close frame 1001 is offered to the socket without waiting); `reason` reaches `onClose` if
    /// the channel was open.
    func abort(reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        if case .open = phase {
            notifyClosed(reason)
            if isUpgraded {
                outgoing.append(WebSocketFrameEncoder.close(.goingAway, reason: reason))
                _ = outgoing.write(to: fd)
            }
        }
        finish()
    }

    // MARK: Reading

    private func readAvailable() {
        if case .closed = phase { return }
        for _ in 0..<8 {
            let count = readBuffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                switch phase {
                case .open: received(readBuffer[0..<count])
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

    private func received(_ bytes: ArraySlice<UInt8>) {
        switch stage {
        case .handshake:
            head.append(contentsOf: bytes)
            guard let end = WebSocketHandshake.headEnd(in: head) else {
                if head.count > WebSocketHandshake.maxRequestHeadBytes { refuse(WebSocketHandshake.headTooLarge) }
                return
            }
            guard end <= WebSocketHandshake.maxRequestHeadBytes else {
                refuse(WebSocketHandshake.headTooLarge)
                return
            }
            switch WebSocketHandshake.answer(Array(head[..<end]), allowedOrigins: limits.allowedOrigins) {
            case .refuse(let status, let reason, let response):
                refuse(.refuse(status: status, reason: reason, response: response))
            case .accept(let response):
                decoder.feed(head[end...])
                head = []
                stage = .frames
                write(response)
                handlers?.onOpen()
                readFrames()
            }
        case .frames:
            decoder.feed(bytes)
            readFrames()
        }
    }

    private func refuse(_ answer: WebSocketHandshake.Answer) {
        switch answer {
        case .accept:
            preconditionFailure("refuse takes a refusal")
        case .refuse(let status, let reason, let response):
            write(response)
            close(flushing: true, reason: "handshake refused with \(status): \(reason)")
        }
    }

    private func readFrames() {
        while case .open = phase {
            switch decoder.next() {
            case nil:
                return
            case .failure(let error):
                if case .tooLarge = error { handlers?.onMessageTooLarge() }
                close(error.closeCode, reason: error.description)
            case .success(let frame):
                handle(frame)
            }
        }
    }

    private func handle(_ frame: WebSocketFrame) {
        switch frame.opcode {
        case .text:
            guard fragments == nil else { return close(.protocolError, reason: "a new message inside a fragmented one") }
            if frame.isFinal {
                deliver(Array(frame.payload))
            } else {
                fragments = Array(frame.payload)
                if frame.payload.count > limits.maxMessageBytes { tooLarge() }
            }
        case .continuation:
            guard var message = fragments else { return close(.protocolError, reason: "a continuation frame outside a message") }
            fragments = nil
            message.append(contentsOf: frame.payload)
            guard message.count <= limits.maxMessageBytes else { return tooLarge() }
            if frame.isFinal {
                deliver(message)
            } else {
                fragments = message
            }
        case .binary:
            close(.unsupportedData, reason: "binary messages are not accepted")
        case .ping:
            write(WebSocketFrameEncoder.encode(WebSocketFrame(.pong, frame.payload)))
        case .pong:
            break
        case .close:
            closeReceived(frame.payload)
        }
    }

    private func deliver(_ message: [UInt8]) {
        guard message.count <= limits.maxMessageBytes else { return tooLarge() }
        guard String(validating: message, as: UTF8.self) != nil else {
            return close(.invalidPayload, reason: "a text message is not valid UTF-8")
        }
        handlers?.onMessage(Data(message))
    }

    private func tooLarge() {
        handlers?.onMessageTooLarge()
        close(.messageTooBig, reason: "message too big")
    }

    /// Answers the client's close frame (RFC 6455 §5.5.1): echo its code, then close the connection.
    private func closeReceived(_ payload: Data) {
        guard !payload.isEmpty else {
            write(WebSocketFrameEncoder.encode(WebSocketFrame(.close, Data())))
            return close(flushing: true, reason: "the client closed the WebSocket")
        }
        guard payload.count >= 2 else { return close(.protocolError, reason: "a close frame with a 1-byte body") }
        let code = UInt16(payload[payload.startIndex]) << 8 | UInt16(payload[payload.startIndex + 1])
        // §7.4: 1000–1003, 1007–1011 and 1012–1014 are defined for the wire, 3000–4999 are for applications.
        guard (1000...1003).contains(code) || (1007...1014).contains(code) || (3000...4999).contains(code) else {
            return close(.protocolError, reason: "close code \(code) may not be sent")
        }
        guard String(validating: payload.dropFirst(2), as: UTF8.self) != nil else {
            return close(.invalidPayload, reason: "a close reason is not valid UTF-8")
        }
        write(WebSocketFrameEncoder.encode(WebSocketFrame(.close, payload.prefix(2))))
        close(flushing: true, reason: "the client closed the WebSocket with \(code)")
    }

    // MARK: Writing

    /// Queues bytes; closes the channel when the queue would exceed its limit.
    private func write(_ bytes: Data) {
        guard case .open = phase else { return }
        guard outgoing.byteCount + bytes.count <= limits.maxQueuedBytes else {
            notifyClosed("outgoing queue over \(limits.maxQueuedBytes) bytes: the client is not reading")
            finish()
            return
        }
        outgoing.append(bytes)
        flush()
    }

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

    /// Stops reading messages, writes what is queued, then lingers (see the type's documentation).
    private func close(flushing: Bool, reason: String) {
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
