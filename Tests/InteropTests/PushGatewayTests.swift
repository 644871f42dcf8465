import Foundation
import ParleyIO
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `parley push-gateway` against a stand-in for Kamailio's evapi socket that sends what a test writes, broken
/// events included.
@Suite("Interop: parley push-gateway", .serialized, .timeLimit(.minutes(1)))
struct PushGatewayTests {
    /// A listening TCP socket on loopback that accepts one connection at a time.
    final class FakeEvapi {
        let listener: Int32
        let port: UInt16
        private(set) var connection: Int32 = -1

        init() throws {
            let (fd, bound) = try Socket.listening(on: IPAddress("127.0.0.1")!.socketAddress(port: 0))
            listener = fd
            port = bound.port
        }

        /// Waits (at most `timeout`) for the gateway to connect.
        func accept(timeout: Duration = .seconds(10)) throws {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                var entry = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                guard poll(&entry, 1, 50) > 0 else { continue }
                if case .connection(let fd, _) = Socket.accept(listener) {
                    if connection >= 0 { close(connection) }
                    connection = fd
                    return
                }
            }
            throw InteropError("the gateway did not connect within \(timeout)")
        }

        /// Writes `bytes` to the connection.
        func send(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written > 0 { offset += written } else if errno != EAGAIN && errno != EINTR { return }
            }
        }

        func send(netstring text: String) { send(Array("\(text.utf8.count):\(text),".utf8)) }

        deinit {
            if connection >= 0 { close(connection) }
            close(listener)
        }
    }

    static func event(_ kind: String, token: String, callID: String) -> String {
        #"{"event":"\#(kind)","aor":"sip:ivan@127.0.0.1","callId":"\#(callID)","from":"sip:bob@127.0.0.1:9","fromName":"Bob","provider":"parley-sim","prid":"\#(token)","param":""}"#
    }

    @Test("bad events are logged and skipped; good ones around them become pushes with their Call-ID; a stream out of step is dropped and connected again")
    func badEventsAndReconnect() throws {
        let evapi = try FakeEvapi()
        let (simulator, simulatorPort) = try PushInteropTests.simulator()
        defer { _ = try? simulator.stop() }
        let device = try PushInteropTests.device(port: simulatorPort, token: "tok-ivan")
        let gateway = try RunningProcess(
            try Interop.binary("parley"),
            ["push-gateway", "--evapi", "127.0.0.1:\(evapi.port)", "--push-service", "127.0.0.1:\(simulatorPort)"],
            name: "push-gateway")
        defer { _ = try? gateway.stop() }
        try evapi.accept()
        evapi.send(netstring: "not json")
        evapi.send(netstring: #"{"event":"ring","aor":"a","callId":"c","from":"f","provider":"parley-sim","prid":"t"}"#)
        evapi.send(netstring: Self.event("push", token: "tok-ivan", callID: "gw-1@127.0.0.1").replacingOccurrences(of: "parley-sim", with: "apns"))
        evapi.send(netstring: Self.event("push", token: "tok-ivan", callID: "gw-2@127.0.0.1"))
        try gateway.waitForLine("the good push delivered") { $0.contains("push call-id=gw-2@127.0.0.1") && $0.contains("delivered") }
        let skipped = gateway.lines.filter { $0.contains("skipped") }
        #expect(skipped.count == 3, "\(skipped)")
        #expect(skipped.contains { $0.contains("not JSON") })
        #expect(skipped.contains { $0.contains("unknown event \"ring\"") })
        #expect(skipped.contains { $0.contains("call-id=gw-1@127.0.0.1") && $0.contains("provider apns is not served here") })
        try device.process.waitForLine("the push reported") { $0.contains("for call-id gw-2@127.0.0.1: reported") }

        evapi.send(Array("12x:".utf8))
        try gateway.waitForLine("the stream dropped") { $0.contains("out of step") }
        try evapi.accept()
        evapi.send(netstring: Self.event("cancel", token: "tok-ivan", callID: "gw-2@127.0.0.1"))
        try gateway.waitForLine("the cancel push") { $0.contains("cancel call-id=gw-2@127.0.0.1") && $0.contains("delivered") }
        try device.waitForEnded(1)
        #expect(device.transitions == [["ringing", "left (unanswered)"]])
        #expect(gateway.process.isRunning, "never crashes on a peer's fault")
    }

    @Test("usage errors exit 64", arguments: [
        [String](), ["--evapi", "127.0.0.1:1"], ["--evapi", "nowhere", "--push-service", "127.0.0.1:1"],
        ["--evapi", "127.0.0.1:1", "--push-service", "127.0.0.1:1", "--expires", "0"],
    ])
    func usage(arguments: [String]) throws {
        let run = try ControlCLITests.parley(["push-gateway"] + arguments)
        #expect(run.status == 64, "\(run.output)")
    }
}
