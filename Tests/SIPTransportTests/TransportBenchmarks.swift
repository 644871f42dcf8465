import Foundation
import Synchronization
import Testing

@testable import SIPTransport
@testable import ParleyIO
import ParleyTestSupport

/// A transport reachable from its own handler (set once, right after it is made).
private final class TransportReference: Sendable {
    let transport = Mutex<SIPTransport?>(nil)
}

/// Echo round trips on loopback, printed, not judged: `PARLEY_TRANSPORT_BENCH=1 swift test -c release --filter
/// TransportBenchmarks`. Off by default (it takes seconds and its numbers depend on the machine).
@Suite("Transport benchmarks", .serialized, .enabled(if: ProcessInfo.processInfo.environment["PARLEY_TRANSPORT_BENCH"] != nil))
struct TransportBenchmarks {
    @Test("echo round trips per second", arguments: [SIPTransportKind.udp, .tcp, .tls], [1, 64])
    func echo(kind: SIPTransportKind, window: Int) throws {
        let total = Int(ProcessInfo.processInfo.environment["PARLEY_TRANSPORT_BENCH_COUNT"] ?? "") ?? 100_000
        let serverLoop = try EventLoop(name: "bench-server")
        let clientLoop = try EventLoop(name: "bench-client")
        defer {
            clientLoop.shutdown()
            serverLoop.shutdown()
        }
        let certificate = try TestCertificate.shared.get()
        let serverReference = TransportReference()
        let server = SIPTransport(loop: serverLoop, tls: certificate.server) { message in
            serverReference.transport.withLock { $0 }?.send(message.bytes, to: message.replyDestination)
        }
        serverReference.transport.withLock { $0 = server }
        let address = try server.listenSync(ListenAddress(kind: kind, host: "127.0.0.1", port: 0))
        let destination = SIPDestination(kind: kind, address: SIPPeerAddress(host: "127.0.0.1", port: address.port))
        let message = sipMessage("bench", body: String(repeating: "v", count: 400), transport: kind.viaToken)

        let clientReference = TransportReference()
        let done = EventRecorder<Duration>()
        let progress = Mutex((sent: 0, received: 0, start: ContinuousClock.now))
        let client = SIPTransport(loop: clientLoop, tls: TLSConfiguration(verifyPeer: false)) { _ in
            let (sendMore, finished) = progress.withLock { state -> (Bool, Duration?) in
                state.received += 1
                if state.received == total { return (false, ContinuousClock.now - state.start) }
                guard state.sent < total else { return (false, nil) }
                state.sent += 1
                return (true, nil)
            }
            if sendMore { clientReference.transport.withLock { $0 }?.send(message, to: destination) }
            if let finished { done.record(finished) }
        }
        clientReference.transport.withLock { $0 = client }
        if kind == .udp { _ = try client.listenSync(ListenAddress(parsing: "udp://127.0.0.1:0")) }
        // Warm-up (connection, handshake), then the timed run.
        clientLoop.execute { client.send(message, to: destination) }
        _ = clientLoop.executeAndWait {
            client.onSendFailure = { _, error in Issue.record("send failed: \(error)") }
        }
        progress.withLock { $0 = (sent: 1, received: 0, start: ContinuousClock.now) }
        clientLoop.execute {
            let count = progress.withLock { state -> Int in
                let more = min(window - 1, total - state.sent)
                state.sent += more
                return more
            }
            for _ in 0..<count { client.send(message, to: destination) }
        }
        let elapsed = try #require(done.first(within: .seconds(120)))
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let stats = server.statisticsSync()
        print(
            "bench \(kind.rawValue) window \(window): \(total) round trips in \(String(format: "%.2f", seconds)) s = "
                + "\(Int(Double(total) / seconds))/s; server drops \(stats.datagramsDropped + stats.receiveBufferDrops)")
        withExtendedLifetime((server, client)) {}
    }
}
