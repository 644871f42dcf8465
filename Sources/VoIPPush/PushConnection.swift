import Foundation
import Glibc
import ParleyIO

/// Why a ``PushConnection`` call failed.
public enum PushConnectionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Connecting, reading or writing failed.
    case socket(PushSocketError)
    /// Nothing (or not all of it) happened within the timeout, in seconds.
    case timedOut(TimeInterval)
    /// The peer closed the connection.
    case closed
    /// The peer's byte stream is out of step (an oversize length).
    case frame(FrameError)
    /// The peer sent a frame this side cannot read.
    case undecodable(PushFault)
    /// The simulator answered with an `error` instead of what was asked for.
    case refused(PushFault)
    /// The simulator answered with a message that does not answer the request.
    case unexpected(PushMessage.Kind)

    /// For people.
    public var description: String {
        switch self {
        case .socket(let error): "\(error)"
        case .timedOut(let seconds): "no answer within \(seconds.formatted(.number.precision(.fractionLength(0...3)))) s"
        case .closed: "the simulator closed the connection"
        case .frame(let error): "the simulator's stream is out of step: \(error)"
        case .undecodable(let fault): "unreadable message from the simulator: \(fault.message)"
        case .refused(let fault): "the simulator refused the request: \(fault)"
        case .unexpected(let kind): "the simulator answered with an unexpected '\(kind.rawValue)' message"
        }
    }
}

/// A blocking connection to the push simulator, for programs and tests: connect, send messages, read
/// messages with timeouts. One owner at a time (it is not `Sendable`); every call blocks the calling thread
/// for at most its timeout. For a device that must stay connected, use ``PushDeviceClient``.
public final class PushConnection {
    /// The simulator's address.
    public let endpoint: PushEndpoint
    private var fd: Int32
    private var decoder: FrameDecoder
    private let encoder: FrameEncoder
    private var readBuffer = [UInt8](repeating: 0, count: 16_384)

    /// Connects to `endpoint`, waiting at most `timeout` seconds.
    public init(to endpoint: PushEndpoint, timeout: TimeInterval = 5, maxFrameLength: Int = PushFraming.defaultMaximumLength)
        throws(PushConnectionError)
    {
        self.endpoint = endpoint
        decoder = FrameDecoder(maximumLength: maxFrameLength)
        encoder = FrameEncoder(maximumLength: maxFrameLength)
        let started: (fd: Int32, connected: Bool)
        do {
            started = try Socket.startConnect(to: endpoint.socketAddress)
        } catch {
            throw .socket(PushSocketError(error))
        }
        fd = started.fd
        guard !started.connected else { return }
        guard Self.poll(fd, events: Int16(POLLOUT), until: Deadline(timeout)) else {
            Glibc.close(fd)
            throw .socket(PushSocketError("connect \(endpoint)", reason: "timed out after \(timeout) s"))
        }
        let code = Socket.pendingError(fd)
        guard code == 0 else {
            Glibc.close(fd)
            throw .socket(PushSocketError("connect \(endpoint)", code: code))
        }
    }

    deinit { close() }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { fd < 0 }

    /// Closes the connection; idempotent.
    public func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    /// Sends one message.
    public func send(_ message: PushMessage, timeout: TimeInterval = 5) throws(PushConnectionError) {
        let frame: Data
        do {
            frame = try encoder.frame(message)
        } catch {
            throw .frame(error)
        }
        try sendRaw(frame, timeout: timeout)
    }

    /// Sends bytes as they are (tests use it for broken frames).
    public func sendRaw(_ bytes: Data, timeout: TimeInterval = 5) throws(PushConnectionError) {
        guard fd >= 0 else { throw .closed }
        let deadline = Deadline(timeout)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if written >= 0 {
                offset += written
                continue
            }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else {
                if code == EPIPE || code == ECONNRESET { throw .closed }
                throw .socket(PushSocketError("send to \(endpoint)", code: code))
            }
            guard Self.poll(fd, events: Int16(POLLOUT), until: deadline) else { throw .timedOut(timeout) }
        }
    }

    /// The next message, waiting at most `timeout` seconds.
    public func receive(timeout: TimeInterval = 5) throws(PushConnectionError) -> PushMessage {
        guard fd >= 0 else { throw .closed }
        let deadline = Deadline(timeout)
        while true {
            let frame: Data?
            do {
                frame = try decoder.nextFrame()
            } catch {
                throw .frame(error)
            }
            if let frame {
                do {
                    return try PushCodec.decode(frame)
                } catch {
                    throw .undecodable(error)
                }
            }
            let count = readBuffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                decoder.feed(readBuffer[0..<count])
                continue
            }
            if count == 0 { throw .closed }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else {
                if code == ECONNRESET { throw .closed }
                throw .socket(PushSocketError("receive from \(endpoint)", code: code))
            }
            guard Self.poll(fd, events: Int16(POLLIN), until: deadline) else { throw .timedOut(timeout) }
        }
    }

    /// Sends `message` and returns the next message.
    public func request(_ message: PushMessage, timeout: TimeInterval = 5) throws(PushConnectionError) -> PushMessage {
        try send(message, timeout: timeout)
        return try receive(timeout: timeout)
    }

    /// Sends a push and waits for its outcome. The outcome of a push to a connected device comes only after the
    /// device's ack (or the simulator's ack timeout, 5 s by default), so `timeout` should be longer than that.
    public func send(_ request: PushSendRequest, timeout: TimeInterval = 10) throws(PushConnectionError) -> PushOutcome {
        switch try self.request(.send(request), timeout: timeout) {
        case .outcome(let outcome): return outcome
        case .error(let fault): throw .refused(fault)
        case let other: throw .unexpected(other.kind)
        }
    }

    /// Asks for the simulator's status.
    public func status(timeout: TimeInterval = 5) throws(PushConnectionError) -> PushStatusReport {
        switch try request(.status, timeout: timeout) {
        case .statusReport(let report): return report
        case .error(let fault): throw .refused(fault)
        case let other: throw .unexpected(other.kind)
        }
    }

    /// A point in monotonic time.
    private struct Deadline {
        let instant: ContinuousClock.Instant
        init(_ seconds: TimeInterval) {
            instant = .now + .milliseconds(Int64((max(0, seconds) * 1000).rounded(.up)))
        }
        /// Milliseconds left, for poll (0 once passed).
        var remainingMilliseconds: Int32 {
            let left = ContinuousClock.now.duration(to: instant)
            guard left > .zero else { return 0 }
            let (seconds, attoseconds) = left.components
            return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
        }
    }

    /// Waits for `events` on `fd`; false when the deadline passes first.
    private static func poll(_ fd: Int32, events: Int16, until deadline: Deadline) -> Bool {
        while true {
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let result = Glibc.poll(&entry, 1, deadline.remainingMilliseconds)
            if result > 0 { return true }  // ready, or an error/hang-up the next call will report
            if result == 0 { return false }
            if errno != EINTR { return true }
        }
    }
}
