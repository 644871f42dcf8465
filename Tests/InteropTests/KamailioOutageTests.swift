import Foundation
import Testing

/// Kamailio unreachable, then there: parleyd's registration and the push gateway's evapi connection both back off
/// and recover on their own.
@Suite("Interop: Kamailio unreachable", .serialized, .timeLimit(.minutes(1)))
struct KamailioOutageTests {
    /// The seconds in `retrying in 0.4 s` (the gateway) or `retrying in 10.0 seconds` (parleyd's registration).
    static func retryDelay(_ line: String) -> Double? {
        guard let range = line.range(of: "retrying in ") else { return nil }
        return Double(line[range.upperBound...].prefix { $0.isNumber || $0 == "." })
    }

    @Test("no registrar listening: the REGISTER fails, is retried after the back-off (not at once), and succeeds once Kamailio is up")
    func registrationBackOff() throws {
        let port = Interop.freePort()
        let parleyd = try Parleyd(["--user", "frank", "--register", "sip:127.0.0.1:\(port);transport=tcp"])
        let failure = try parleyd.process.waitForLine("the failed registration") {
            $0.contains("registration: ") && $0.contains("retrying in")
        }
        let failedAt = ContinuousClock.now
        let delay = try #require(Self.retryDelay(failure), "\(failure)")
        #expect(delay >= 5, "parleyd backs off 5 s doubling to 5 min: \(failure)")
        let kamailio = try Kamailio(port: port)
        try parleyd.process.waitForLine(timeout: .seconds(Int64(delay) + 10), "the registration") {
            $0.contains("registration: registered")
        }
        let waited = ContinuousClock.now - failedAt
        #expect(waited >= .milliseconds(Int64(delay * 1000) - 1500), "the retry waited for its back-off: \(waited)")
        #expect(parleyd.process.lines.filter { $0.contains("retrying in") }.count == 1, "one failed attempt, then the retry")
        try kamailio.waitForLog("the binding") { $0.contains("registered sip:frank@") }
    }

    @Test("the push gateway backs off while Kamailio is away, connects when it comes, reconnects after a restart and still pushes")
    func gatewayReconnects() throws {
        let port = Interop.freePort(), evapiPort = Interop.freePort()
        let push = try PushPath(evapiPort: evapiPort, waitForConnection: false)
        defer { push.stop() }
        try push.gateway.waitForLine("three failed attempts") { _ in
            push.gateway.lines.filter { $0.contains("retrying in") }.count >= 3
        }
        let delays = push.gateway.lines.compactMap(Self.retryDelay)
        #expect(delays.prefix(3) == [0.2, 0.4, 0.8], "back-off doubles from 0.2 s: \(delays)")

        var kamailio = try Kamailio(port: port, evapiPort: evapiPort)
        try push.gateway.waitForLine(timeout: .seconds(10), "its connection") { $0.contains("connected to evapi") }
        kamailio.stop()
        try push.gateway.waitForLine("the lost connection") { $0.contains("the proxy closed the connection") }
        kamailio = try Kamailio(port: port, evapiPort: evapiPort)
        try push.gateway.waitForLine(timeout: .seconds(10), "its second connection") { _ in
            push.gateway.lines.filter { $0.contains("connected to evapi") }.count == 2
        }

        try push.sleep(try push.device("grace", token: "tok-grace", at: kamailio), token: "tok-grace")
        let caller = try Parleyd(["--user", "bob", "--call", kamailio.address("grace")])
        try push.gateway.waitForLine("a push after the restart") { $0.contains("push call-id=") && $0.contains("token=tok-grace") }
        _ = caller
    }
}
