import Foundation
import Glibc
import ParleyIO

/// Why a ``ControlClient`` call failed.
public enum ControlClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing listens at the path (no socket file, or connecting was refused).
    case notListening(path: String)
    /// The path does not fit in a Unix socket address.
    case pathTooLong(path: String)
    /// The server answered the hello with an error (`unauthorized`, `tooManyClients`…) and closed.
    case refused(code: String, message: String)
    /// Nothing arrived within the timeout, in seconds.
    case timedOut(TimeInterval)
    /// The server closed the connection.
    case closedByServer
    /// The server sent something that is not part of the protocol where it was expected.
    case protocolViolation(String)
    /// ``ControlClient/close()`` was called before.
    case closed
    /// A system call failed.
    case system(operation: String, code: Int32)

    /// For people.
    public var description: String {
        switch self {
        case .notListening(let path):
            "no parleyd is listening at \(path) (is it running with --data-dir \((path as NSString).deletingLastPathComponent)?)"
        case .pathTooLong(let path):
            "control socket path \(path) is too long for a Unix socket (at most \(UnixSocket.maxPathBytes) bytes)"
        case .refused(let code, let message):
            "parleyd refused the connection (\(code)): \(message)"
        case .timedOut(let seconds):
            "no answer from parleyd within \(seconds) s"
        case .closedByServer:
            "parleyd closed the connection"
        case .protocolViolation(let what):
            "unexpected answer from parleyd: \(what)"
        case .closed:
            "the control connection is already closed"
        case .system(let operation, let code):
            "\(operation): \(String(cString: strerror(code)))"
        }
    }
}

/// A blocking connection to a ``ControlServer``, for the command-line tool and tests: connect and authenticate,
/// send lines, read lines with timeouts. One owner at a time (it is not `Sendable`); every call blocks the calling
/// thread for at most its timeout.
public final class ControlClient {
    /// Where the server listens.
    public let socketPath: String
    private var fd: Int32
    private var buffer: [UInt8] = []
    private var readChunk = [UInt8](repeating: 0, count: 65_536)
    /// The longest line accepted from the server (16 MiB): a bound, not a protocol limit.
    private let maxLineBytes = 16 * 1024 * 1024

    /// Connects to `socketPath`, says hello with `token` and waits (at most `timeout` seconds) for the welcome.
    /// A refusal throws ``ControlClientError/refused(code:message:)`` with the server's words.
    public init(socketPath: String, token: String, timeout: TimeInterval = 5) throws(ControlClientError) {
        self.socketPath = socketPath
        switch UnixSocket.connect(to: socketPath) {
        case .success(let fd):
            self.fd = fd
        case .failure(let error):
            switch error.code {
            case ENOENT, ECONNREFUSED: throw .notListening(path: socketPath)
            case ENAMETOOLONG: throw .pathTooLong(path: socketPath)
            default: throw .system(operation: "connect \(socketPath)", code: error.code)
            }
        }
        var sendTimeout = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        do throws(ControlClientError) {
            do throws(ControlClientError) {
                try send(ControlWire.hello(token: token))
            } catch .closedByServer {
                // Refused before our hello was read (too many clients): its error line may still be waiting.
            }
            let answer = try readLine(timeout: timeout)
            switch ControlWire.reply(answer) {
            case .welcome: return
            case .error(let code, let message): throw .refused(code: code, message: message)
            case .other: throw .protocolViolation(String(decoding: answer.prefix(200), as: UTF8.self))
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Whether ``close()`` has been called.
    public var isClosed: Bool { fd < 0 }

    /// Sends `line` (one JSON object without a newline; the LF is added).
    public func send(_ line: Data) throws(ControlClientError) {
        guard fd >= 0 else { throw .closed }
        var bytes = line
        bytes.append(0x0A)
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress! + written, raw.count - written, Int32(MSG_NOSIGNAL))
            }
            if result < 0 {
                let code = errno
                switch code {
                case EINTR: continue
                case EPIPE, ECONNRESET: throw .closedByServer
                case EAGAIN, EWOULDBLOCK: throw .timedOut(0)
                default: throw .system(operation: "send", code: code)
                }
            }
            written += result
        }
    }

    /// The next line from the server (without its LF/CR; empty lines are skipped), waiting at most `timeout`
    /// seconds: ``ControlClientError/timedOut(_:)`` when none came.
    public func readLine(timeout: TimeInterval) throws(ControlClientError) -> Data {
        guard fd >= 0 else { throw .closed }
        let deadline = Date().addingTimeInterval(timeout)
        var scanned = 0
        while true {
            while let newline = buffer[scanned...].firstIndex(of: 0x0A) {
                var end = newline
                if end > 0, buffer[end - 1] == 0x0D { end -= 1 }
                let line = Data(buffer[0..<end])
                buffer.removeFirst(newline + 1)
                scanned = 0
                if !line.isEmpty { return line }
            }
            scanned = buffer.count
            guard buffer.count <= maxLineBytes else { throw .protocolViolation("a line over \(maxLineBytes) bytes") }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw .timedOut(timeout) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&poller, 1, Int32(min(remaining * 1000, Double(Int32.max)).rounded(.up)))
            if ready < 0 {
                if errno == EINTR { continue }
                throw .system(operation: "poll", code: errno)
            }
            if ready == 0 { continue }  // the deadline check above ends the wait
            let count = readChunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count == 0 { throw .closedByServer }
            if count < 0 {
                let code = errno
                switch code {
                case EINTR, EAGAIN, EWOULDBLOCK: continue
                case ECONNRESET: throw .closedByServer
                default: throw .system(operation: "read", code: code)
                }
            }
            buffer.append(contentsOf: readChunk[0..<count])
        }
    }

    /// Closes the connection; idempotent.
    public func close() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }
}
