import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing

@testable import SIPTransport
@testable import ParleyIO
import ParleyTestSupport

/// An event loop for one test, shut down by `defer`.
func makeLoop() throws -> EventLoop {
    try EventLoop(name: "test-loop")
}

/// A transport whose messages go to a recorder.
func makeTransport(
    _ loop: EventLoop, tls: TLSConfiguration? = nil, limits: TransportLimits = .init(), sendsOnThread: Bool = false
) -> (SIPTransport, EventRecorder<InboundSIPMessage>) {
    let recorder = EventRecorder<InboundSIPMessage>()
    let transport = SIPTransport(loop: loop, tls: tls, limits: limits, sendsDatagramsOnThread: sendsOnThread) {
        recorder.record($0)
    }
    return (transport, recorder)
}

/// Records send failures and closed connections of a transport.
final class TransportEvents: Sendable {
    let failures = EventRecorder<SendFailure>()
    let closed = EventRecorder<ConnectionID>()

    init(_ transport: SIPTransport) {
        let failures = self.failures, closed = self.closed
        _ = transport.loop.executeAndWait {
            transport.onSendFailure = { failures.record(SendFailure(destination: $0, error: $1)) }
            transport.onConnectionClosed = { closed.record($0) }
        }
    }
}

/// One reported send failure.
struct SendFailure: Sendable {
    let destination: SIPDestination
    let error: TransportError
}

extension SIPTransport {
    /// `send` from the test thread.
    func sendSoon(_ bytes: Data, to destination: SIPDestination) {
        loop.execute { self.send(bytes, to: destination) }
    }
}

/// A small SIP request with a Content-Length matching `body`.
func sipMessage(_ tag: String, body: String = "", transport: String = "TCP") -> Data {
    let lines = [
        "OPTIONS sip:bob@127.0.0.1 SIP/2.0",
        "Via: SIP/2.0/\(transport) 127.0.0.1:5060;branch=z9hG4bK-\(tag)",
        "From: <sip:alice@127.0.0.1>;tag=\(tag)",
        "To: <sip:bob@127.0.0.1>",
        "Call-ID: \(tag)@test",
        "CSeq: 1 OPTIONS",
        "Content-Length: \(body.utf8.count)",
    ]
    return Data((lines.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8)
}

/// A blocking socket used as a hand-driven peer: raw bytes in and out, with receive timeouts.
final class RawSocket {
    let fd: Int32

    /// A TCP connection to `address` (blocking connect), from `source` when given (another loopback address,
    /// 127.0.0.2: a second host).
    init(connectingTo address: ListenAddress, from source: String? = nil) throws {
        let ip = try #require(IPAddress(address.host))
        fd = socket(ip.family, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        if let source {
            let local = try #require(IPAddress(source))
            let bound = local.socketAddress(port: 0).withSockAddr { Glibc.bind(fd, $0, $1) }
            try #require(bound == 0, "bind to \(source) failed: errno \(errno)")
        }
        Socket.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        var timeout = timeval(tv_sec: Int(patience.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = ip.socketAddress(port: address.port).withSockAddr { Glibc.connect(fd, $0, $1) }
        try #require(result == 0, "connect to \(address) failed: errno \(errno)")
    }

    /// A UDP socket bound to an ephemeral port of `family`.
    init(datagramFamily family: Int32) throws {
        fd = socket(family, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(fd >= 0)
    }

    deinit { close(fd) }

    /// Ends the connection both ways (the descriptor is closed with the object).
    func hangUp() { shutdown(fd, Int32(SHUT_RDWR)) }

    func write(_ bytes: Data) {
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                guard sent > 0 else { return }
                offset += sent
            }
        }
    }

    /// The port the socket is bound to (a datagram socket is bound by its first send).
    var localPort: Int {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return withUnsafeBytes(of: &address) { raw in
            Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))  // sin_port and sin6_port: offset 2
        }
    }

    func sendDatagram(_ bytes: Data, to address: ListenAddress) {
        let ip = IPAddress(address.host)!
        bytes.withUnsafeBytes { raw in
            _ = ip.socketAddress(port: address.port).withSockAddr { sendto(fd, raw.baseAddress, raw.count, 0, $0, $1) }
        }
    }

    /// Reads until `count` bytes arrived (or EOF, error or the timeout).
    func read(count: Int) -> Data {
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while result.count < count {
            let got = recv(fd, &buffer, min(buffer.count, count - result.count), 0)
            guard got > 0 else { break }
            result.append(contentsOf: buffer[0..<got])
        }
        return result
    }

    /// Whether the peer closes the connection within the timeout (EOF or reset), discarding what arrives before.
    func waitForClose() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let got = recv(fd, &buffer, buffer.count, 0)
            if got > 0 { continue }
            if got == 0 { return true }
            return errno == ECONNRESET
        }
    }
}

/// A port on which nothing listens (bound, read, closed).
func unusedTCPPort(host: String = "127.0.0.1") throws -> UInt16 {
    try unusedPort(host: host, type: SOCK_STREAM)
}

/// A UDP port on which nothing listens (bound, read, closed).
func unusedUDPPort(host: String = "127.0.0.1") throws -> UInt16 {
    try unusedPort(host: host, type: SOCK_DGRAM)
}

private func unusedPort(host: String, type: __socket_type) throws -> UInt16 {
    let ip = try #require(IPAddress(host))
    let fd = socket(ip.family, Int32(type.rawValue), 0)
    defer { close(fd) }
    _ = ip.socketAddress(port: 0).withSockAddr { bind(fd, $0, $1) }
    return try #require(Socket.localAddress(fd)?.port)
}
