import Foundation
import Glibc
import Testing

/// The test's logind (Tests/Interop/desktop/logind.py) on a private bus parleyd takes for its system bus: it answers
/// Inhibit with a pipe's write end and says when parleyd lets go of it, and plays the machine going to sleep and
/// waking. Stopped by its PID.
final class TestLogind {
    static let script = Interop.packageRoot.appending(path: "Tests/Interop/desktop/logind.py")
    let process: RunningProcess
    let bus: DBusSession

    init(on bus: DBusSession) throws {
        self.bus = bus
        process = try RunningProcess(URL(fileURLWithPath: "/usr/bin/python3"), [Self.script.path, bus.address], name: "logind")
        _ = try process.waitForLine("logind's name") { $0 == "READY" }
    }

    /// PrepareForSleep(`start`), as logind sends it before sleeping (true) and after waking (false).
    func sleep(_ start: Bool) throws {
        let sent = try bus.gdbus([
            "call", "--session", "--dest", "org.freedesktop.login1", "--object-path", "/org/freedesktop/login1",
            "--method", "org.parley.Test.Login.Sleep", start ? "true" : "false",
        ])
        #expect(sent.status == 0, "\(sent.output)")
    }

    deinit { _ = try? process.stop() }
}

/// parleyd and the machine under it (issue 49): a sleep inhibitor held while a call is live, registering again on
/// waking and when the default route changes (in a network namespace the test makes), and nothing lost without logind.
@Suite("Interop: sleep and the network", .serialized, .timeLimit(.minutes(2)))
struct SleepNetworkTests {
    /// parleyd with `bus` as its system bus (and no session bus).
    static func parleyd(_ arguments: [String], systemBus bus: DBusSession) throws -> Parleyd {
        try Parleyd(["--media", "off"] + arguments, environment: ["-u", "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)"])
    }

    @Test("a live call holds logind's sleep inhibitor (sleep:idle, block), released when it ends; the next call takes it again")
    func inhibitorDuringCalls() throws {
        let bus = try DBusSession()
        let logind = try TestLogind(on: bus)
        let alice = try Self.parleyd(["--user", "alice", "--auto-answer", "0"], systemBus: bus)
        for number in 1...2 {
            let bob = try Parleyd([
                "--user", "bob", "--media", "off", "--dbus", "off", "--call", "sip:alice@127.0.0.1:\(alice.port)", "--script", "wait 800; end",
            ])
            let asked = try logind.process.waitForLine("Inhibit \(number)") { $0.hasPrefix("INHIBIT \(number) ") }
            #expect(asked == "INHIBIT \(number) sleep:idle|Parley|A call is in progress|block")
            try bob.waitForEnded(1)
            try alice.waitForEnded(number)
            _ = try logind.process.waitForLine("lock \(number) released") { $0 == "RELEASED \(number)" }
        }
        #expect(logind.process.lines.filter { $0.hasPrefix("INHIBIT") }.count == 2)
    }

    @Test("waking from sleep (PrepareForSleep false) registers again long before the refresh is due")
    func wakingRegistersAgain() throws {
        let bus = try DBusSession()
        let logind = try TestLogind(on: bus)
        let port = Interop.freePort()
        let registrar = try SippRun.start([
            "-sf", SippInteropTests.scenario("registrar-twice.xml"), "-i", "127.0.0.1", "-p", String(port), "-m", "1",
        ])
        usleep(300_000)
        let alice = try Self.parleyd(["--register", "sip:127.0.0.1:\(port)", "--aor", "sip:alice@parley.test"], systemBus: bus)
        try alice.process.waitForLine("registered") { $0.contains("registration: registered sip:alice@parley.test for 600 s") }
        try logind.sleep(true)
        try logind.sleep(false)
        try alice.process.waitForLine("registering again on waking") { $0.contains("network: the machine woke from sleep: registering again") }
        #expect(try registrar.waitForExit() == 0, "sipp saw the second REGISTER and answered it")
    }

    @Test("no logind on the system bus, or no system bus: calls go on, said once")
    func withoutLogind() throws {
        let bus = try DBusSession()
        let alice = try Self.parleyd(["--user", "alice", "--auto-answer", "0"], systemBus: bus)
        for _ in 0..<2 {
            let bob = try Parleyd(["--user", "bob", "--media", "off", "--dbus", "off", "--call", "sip:alice@127.0.0.1:\(alice.port)", "--script", "wait 300; end"])
            try bob.waitForEnded(1)
            #expect(bob.transitions.first?.contains("joined") == true, "\(bob.transitions)")
        }
        let said = alice.process.lines.filter { $0.contains("sleep:") }
        #expect(said.count == 1 && said[0].contains("logind is not on the system bus"), "\(said)")

        let noBus = try Parleyd(["--media", "off"], environment: ["-u", "DBUS_SYSTEM_BUS_ADDRESS", "-u", "DBUS_SESSION_BUS_ADDRESS"])
        if access("/run/dbus/system_bus_socket", F_OK) != 0 {
            let line = noBus.process.lines.filter { $0.contains("sleep:") }
            #expect(line.count == 1 && line[0].contains("no system bus"), "\(line)")
        }
        #expect(noBus.process.process.isRunning)
    }

    @Test("the default route changing (added in the test's network namespace) registers again, once for the burst")
    func routeChangeRegistersAgain() throws {
        let hosts = try NamespacePair()
        let port = Interop.freePort(), sipPort = Interop.freePort()
        let data = FileManager.default.temporaryDirectory.appending(path: "parleyd-routes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let registrar = try hosts.start(0, try Interop.tool("sipp"), [
            "-sf", SippInteropTests.scenario("registrar-twice.xml"), "-i", "127.0.0.1", "-p", String(port), "-m", "1",
            "-nostdin", "-timeout", "30s", "-timeout_error", "-trace_err",
        ], name: "sipp")
        defer { _ = try? registrar.stop() }
        usleep(300_000)
        let alice = try hosts.start(0, try Interop.binary("parleyd"), [
            "--listen", "udp://127.0.0.1:\(sipPort)", "--data-dir", data.path, "--media", "off", "--dbus", "off",
            "--register", "sip:127.0.0.1:\(port)", "--aor", "sip:alice@parley.test",
        ], name: "parleyd")
        defer { _ = try? alice.stop() }
        try alice.waitForLine("registered") { $0.contains("registration: registered sip:alice@parley.test for 600 s") }
        // A default route, replaced at once: one burst of changes.
        try NamespacePair.ip(["-n", hosts.names[0], "route", "add", "default", "via", NamespacePair.v4[1]])
        try NamespacePair.ip(["-n", hosts.names[0], "route", "replace", "default", "via", NamespacePair.v4[1], "metric", "5"])
        try alice.waitForLine("registering again") { $0.contains("network: the IPv4 default route via \(NamespacePair.v4[1]) was added") }
        #expect(try registrar.waitForExit() == 0, "sipp saw the second REGISTER and answered it")
        usleep(1_500_000)
        #expect(alice.lines.filter { $0.contains("registering again") }.count == 1, "\(alice.lines)")
    }
}
