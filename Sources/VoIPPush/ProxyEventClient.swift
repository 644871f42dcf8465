import Foundation
import Glibc
import ParleyIO
import Synchronization

/// The connection to a SIP proxy's event socket (Kamailio's evapi, netstrings of JSON): connects, reads
/// ``ProxyPushEvent``s and hands each to a closure; reconnects with back-off (``PushBackoff``) whenever the proxy
/// is unreachable or goes away. A bad event is reported and skipped; a stream out of step is reported and the
/// connection made again. The parsing is ``NetstringDecoder`` and ``ProxyPushEvent/parse(_:)``; this is only the
/// socket around them, on a thread of its own.
public final class ProxyEventClient: Sendable {
    /// What happens, in order, on the client's thread.
    public enum Event: Sendable, Hashable {
        /// Connected to the proxy.
        case connected(PushEndpoint)
        /// The connection failed or dropped (why); the next attempt follows in `retryIn` seconds.
        case disconnected(reason: String, retryIn: TimeInterval)
        /// An event from the proxy.
        case event(ProxyPushEvent)
        /// A payload that is not a usable event (skipped; the connection stays).
        case rejected(ProxyPushEventError)
        /// The byte stream is not netstrings (the connection is closed and made again).
        case outOfStep(NetstringError)
    }

    /// The proxy's event socket.
    public let endpoint: PushEndpoint
    private let backoff: PushBackoff
    private let connectTimeout: TimeInterval
    private let maximumLength: Int
    private let onEvent: @Sendable (Event) -> Void
    private let stopped = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)

    /// A client for `endpoint` (not connecting until ``start()``).
    public init(
        endpoint: PushEndpoint, backoff: PushBackoff = PushBackoff(), connectTimeout: TimeInterval = 5,
        maximumLength: Int = 65_536, onEvent: @escaping @Sendable (Event) -> Void
    ) {
        self.endpoint = endpoint
        self.backoff = backoff
        self.connectTimeout = connectTimeout
        self.maximumLength = maximumLength
        self.onEvent = onEvent
    }

    /// Starts connecting (once; later calls do nothing).
    public func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Thread.detachNewThread { [self] in run() }
    }

    /// Stops for good: the connection closes within a fifth of a second.
    public func stop() { stopped.store(true, ordering: .releasing) }

    private var isStopped: Bool { stopped.load(ordering: .acquiring) }

    private func run() {
        var failures = 0
        while !isStopped {
            let reason: String
            switch connect() {
            case .failed(let problem):
                reason = problem
            case .connected(let fd):
                failures = 0
                onEvent(.connected(endpoint))
                reason = read(fd)
                Glibc.close(fd)
            }
            if isStopped { return }
            failures += 1
            let delay = backoff.delay(afterFailures: failures)
            onEvent(.disconnected(reason: reason, retryIn: delay))
            let until = ContinuousClock.now + .milliseconds(Int64(delay * 1000))
            while !isStopped && ContinuousClock.now < until { usleep(20_000) }
        }
    }

    /// How a connection attempt went.
    private enum Attempt {
        /// The socket is connected.
        case connected(Int32)
        /// Why there is no connection.
        case failed(String)
    }

    /// A connected socket, or why there is none.
    private func connect() -> Attempt {
        let started: (fd: Int32, connected: Bool)
        do {
            started = try Socket.startConnect(to: endpoint.socketAddress)
        } catch {
            return .failed("connect \(endpoint): \(error)")
        }
        if started.connected { return .connected(started.fd) }
        let deadline = ContinuousClock.now + .milliseconds(Int64(connectTimeout * 1000))
        while !isStopped && ContinuousClock.now < deadline {
            var entry = pollfd(fd: started.fd, events: Int16(POLLOUT), revents: 0)
            let result = poll(&entry, 1, 200)
            if result == 0 || (result < 0 && errno == EINTR) { continue }
            let code = Socket.pendingError(started.fd)
            guard code == 0 else {
                Glibc.close(started.fd)
                return .failed("connect \(endpoint): \(IOError.text(code))")
            }
            return .connected(started.fd)
        }
        Glibc.close(started.fd)
        return .failed("connect \(endpoint): no answer within \(connectTimeout) s")
    }

    /// Reads events until the connection ends; why it ended.
    private func read(_ fd: Int32) -> String {
        var decoder = NetstringDecoder(maximumLength: maximumLength)
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while !isStopped {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, 200)
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 { return "the proxy closed the connection" }
            if count < 0 {
                let code = errno
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                return "read from \(endpoint): \(IOError.text(code))"
            }
            decoder.feed(buffer[0..<count])
            do {
                while let payload = try decoder.next() {
                    do {
                        onEvent(.event(try ProxyPushEvent.parse(payload)))
                    } catch {
                        onEvent(.rejected(error))
                    }
                }
            } catch {
                onEvent(.outOfStep(error))
                return "the stream is out of step: \(error)"
            }
        }
        return "stopped"
    }
}
