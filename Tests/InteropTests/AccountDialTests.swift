import Foundation
import Testing

/// Accounts on a provider-shaped setup: Kamailio serving the domain example.test, located through DNS (dnsmasq on
/// loopback: SRV records) or reached through an outbound proxy; parleyd dials like a phone (a bare user, a number).
@Suite("Interop: accounts, RFC 3263 and the outbound proxy", .serialized, .timeLimit(.minutes(1)))
struct AccountDialTests {
    static func parley(_ arguments: [String]) throws -> ControlCLIPolishTests.Run { try ControlCLIPolishTests.parley(arguments) }

    /// A parleyd registered as `user@example.test` (registrar `sip:example.test`), with `network` saying how it
    /// finds it (`--dns-server`, `--outbound-proxy`).
    static func account(_ user: String, _ network: [String], _ extra: [String] = []) throws -> Parleyd {
        let parleyd = try Parleyd(
            ["--user", user, "--register", "sip:example.test", "--aor", "sip:\(user)@example.test", "--media", "off"]
                + network + extra)
        try parleyd.process.waitForLine("its registration") { $0.contains("registration: registered") }
        return parleyd
    }

    @Test("the domain located by SRV: both register, a bare name and a phone number reach the right account")
    func dialThroughDNS() throws {
        let kamailio = try Kamailio(.init(domain: "example.test"))
        let dns = try Dnsmasq([
            "--srv-host=_sip._udp.example.test,proxy.example.test,\(kamailio.port),10,10",
            "--host-record=proxy.example.test,127.0.0.1",
        ])
        let network = ["--dns-server", dns.address]
        let alice = try Self.account("alice", network)
        let bob = try Self.account("bob", network, ["--auto-answer", "0", "--script", "wait 200; end"])
        let carol = try Self.account("+14155550100", network, ["--auto-answer", "0", "--script", "wait 200; end"])
        let a = ["--data-dir", alice.dataDirectory.path]

        let byName = try Self.parley(["call", "bob", "--json"] + a)
        #expect(byName.status == 0, "\(byName.stdout) \(byName.stderr)")
        #expect(byName.stdout.first?.contains(#""value":"sip:bob@example.test""#) == true, "\(byName.stdout)")
        try bob.waitForEnded(1)
        let byNumber = try Self.parley(["call", "+1 415 555 0100", "--json"] + a)
        #expect(byNumber.status == 0, "\(byNumber.stderr)")
        #expect(byNumber.stdout.first?.contains(#""kind":"phoneNumber""#) == true, "\(byNumber.stdout.first ?? "")")
        try carol.waitForEnded(1)
        try alice.waitForEnded(2)
        #expect(bob.transitions == [["ringing", "joining", "joined", "leaving", "left (localEnded)"]])
        #expect(carol.transitions == [["ringing", "joining", "joined", "leaving", "left (localEnded)"]])
        #expect(dns.queries.contains { $0.contains("query[SRV] _sip._udp.example.test") }, "\(dns.queries)")
        // Each callee's conversation names it by the address called, its address of record, not its listener.
        let history = try Self.parley(["history", "--json", "--limit", "1", "--data-dir", bob.dataDirectory.path])
        let records = try JSONSerialization.jsonObject(with: Data(history.stdout.joined().utf8)) as? [String: Any]
        let local = ((records?["records"] as? [[String: Any]])?.first?["localHandle"] as? [String: Any])?["value"] as? String
        #expect(local == "sip:bob@example.test", "\(history.stdout)")

        let unknown = try Self.parley(["call", "sip:bob@nosuch.example.test"] + a)
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("Couldn't place the call: cannot locate a SIP server for sip:nosuch.example.test")
            && unknown.stderr.contains("NXDOMAIN"), "\(unknown.stderr)")
    }

    @Test("SRV failover: the first target has nobody listening (ICMP), the INVITE goes on to the second at once")
    func srvFailover() throws {
        let dead = Interop.freePort()
        let bob = try Parleyd(["--user", "bob", "--auto-answer", "0", "--script", "wait 200; end", "--media", "off"])
        let dns = try Dnsmasq([
            "--srv-host=_sip._udp.bob.example.test,dead.example.test,\(dead),10,10",
            "--srv-host=_sip._udp.bob.example.test,live.example.test,\(bob.port),20,10",
            "--host-record=dead.example.test,127.0.0.1", "--host-record=live.example.test,127.0.0.1",
        ])
        let alice = try Parleyd(["--user", "alice", "--dns-server", dns.address, "--media", "off"])
        let started = ContinuousClock.now
        let call = try Self.parley(["call", "sip:bob@bob.example.test", "--data-dir", alice.dataDirectory.path])
        #expect(call.status == 0, "\(call.stderr)")
        try bob.waitForEnded(1)
        #expect(ContinuousClock.now - started < .seconds(5), "the dead target costs an ICMP round trip, not timer B")
        #expect(alice.process.lines.contains { $0.contains("trying udp 127.0.0.1:\(bob.port) (RFC 3263)") }, "\(alice.process.lines.suffix(20))")
    }

    @Test("an outbound proxy: REGISTER and INVITE go to it with a pre-loaded Route, the domain is never looked up")
    func outboundProxy() throws {
        let kamailio = try Kamailio(.init(domain: "example.test"))
        // No --dns-server: a lookup of example.test would go to the machine's resolver; none must happen.
        let network = ["--outbound-proxy", "sip:127.0.0.1:\(kamailio.port)"]
        let alice = try Self.account("alice", network)
        let bob = try Self.account("bob", network, ["--auto-answer", "0", "--script", "wait 200; end"])
        let call = try Self.parley(["call", "bob", "--data-dir", alice.dataDirectory.path])
        #expect(call.status == 0, "\(call.stderr)")
        try bob.waitForEnded(1)
        try alice.waitForEnded(1)
        for method in ["REGISTER sip:example.test", "INVITE sip:bob@example.test"] {
            #expect(kamailio.log.contains { $0.contains("pre-loaded Route <sip:127.0.0.1:\(kamailio.port);lr> on \(method)") },
                "\(method): \(kamailio.log.filter { $0.contains("Route") })")
        }
        #expect(!alice.process.lines.contains { $0.contains("cannot resolve") || $0.contains("cannot locate") })
    }

    @Test("account options: a password file others may read, a config holding a password others may read, a DNS server by name and a proxy with a user are refused")
    func accountOptions() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "parley-account-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let password = directory.appending(path: "password").path
        try "pw-4217-zebra\n".write(toFile: password, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: password)
        let config = directory.appending(path: "parleyd.conf").path
        try "auth-password pw-4217-zebra\n".write(toFile: config, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: config)
        let register = ["--register", "sip:example.test", "--aor", "sip:alice@example.test"]
        let cases: [([String], String)] = [
            (register + ["--auth-password-file", password], "holds a secret and is readable by others (mode 644): chmod 600 it"),
            (register + ["--auth-password-file", directory.appending(path: "none").path], "--auth-password-file"),
            (["--config", config] + register, "holds a secret and is readable by others"),
            (["--dns-server", "dns.example.test"], "--dns-server expects a numeric address"),
            (["--dns-server", "127.0.0.1:0"], "--dns-server expects a numeric address"),
            (["--outbound-proxy", "sip:alice@proxy.example.test"], "--outbound-proxy expects a SIP URI without a user"),
        ]
        for (arguments, message) in cases {
            let refused = try RunningProcess(
                try Interop.binary("parleyd"), arguments + ["--no-control", "--no-history", "--media", "off"],
                name: "parleyd account options")
            #expect(try refused.waitForExit() == 64, "\(arguments)")
            #expect(refused.standardError.contains(message), "\(arguments): \(refused.standardError)")
            #expect(!refused.standardError.contains("zebra"), "the password itself is never printed")
        }
        // Made private, the same file is taken: parleyd registers (nobody answers at example.test: no DNS server
        // is named and the proxy below is a numeric address nobody listens on, so nothing leaves the machine).
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: password)
        let taken = try Parleyd(register + ["--auth-password-file", password, "--outbound-proxy", "sip:127.0.0.1:\(Interop.freePort())"])
        try taken.process.waitForLine("a registration attempt") { $0.contains("registration") }
    }

    @Test("a DNS server that never answers holds up only the call that asked it: another call connects meanwhile, and the first fails saying the server timed out")
    func slowDNS() throws {
        let port = Interop.freePort()
        let script = Interop.packageRoot.appending(path: "Tests/Interop/dns/bad-dns-server.py").path
        let server = try RunningProcess(URL(fileURLWithPath: "/usr/bin/python3"), ["-u", script, String(port)], name: "bad DNS server")
        defer { _ = try? server.stop() }
        usleep(300_000)
        let bob = try Parleyd(["--user", "bob", "--auto-answer", "0", "--script", "wait 200; end", "--media", "off"])
        let alice = try Parleyd(["--user", "alice", "--dns-server", "127.0.0.1:\(port)", "--media", "off"])
        let a = ["--data-dir", alice.dataDirectory.path]
        let stuck = try RunningProcess(
            try Interop.binary("parley"), ["call", "sip:carol@silent.example.test"] + a, name: "parley call (silent DNS)")
        usleep(200_000)
        let started = ContinuousClock.now
        let other = try Self.parley(["call", "sip:bob@127.0.0.1:\(bob.port)"] + a)
        let took = ContinuousClock.now - started
        #expect(other.status == 0, "\(other.stderr)")
        #expect(took < .seconds(1), "the other call was placed in \(took) while DNS was silent")
        #expect(stuck.process.isRunning, "the first call still waits for DNS")
        try bob.waitForEnded(1)
        #expect(try stuck.waitForExit(timeout: .seconds(15)) == 1)
        #expect(stuck.standardError.contains("silent.example.test") && stuck.standardError.contains("timed out"), "\(stuck.standardError)")
    }
}
