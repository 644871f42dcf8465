import Foundation
import ParleyTestSupport
import Testing

/// A home network behind a NAT, made of three network namespaces this test creates (documentation addresses only,
/// nothing routed off the machine), removed again when the value goes:
///
/// ```
///   outside (203.0.113.1)          nat                                 inside (10.0.0.2)
///   Kamailio, the caller   ◀─veth─▶ 203.0.113.2 │ MASQUERADE │ 10.0.0.1 ◀─veth─▶ parleyd (default route via 10.0.0.1)
/// ```
///
/// The NAT namespace forwards and masquerades what leaves toward the outside (Linux keeps a socket's port when it is
/// free: a port-preserving NAT), drops new inbound UDP (a home router's firewall: only replies to what went out come
/// in — and a dropped packet leaves no conntrack entry that would make MASQUERADE pick another port later), and
/// forgets an idle UDP mapping, or TCP connection, after `udpTimeout` seconds (its conntrack timeouts).
final class NATLab {
    /// The namespaces' names: outside, nat, inside.
    let names: [String]
    static let outside = "203.0.113.1", natPublic = "203.0.113.2", inside = "10.0.0.2"

    init(udpTimeout: Int) throws {
        let tag = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
        names = ["parley-\(tag)-out", "parley-\(tag)-nat", "parley-\(tag)-in"]
        let (outLink, wan, lan, inLink) = ("o\(tag)", "w\(tag)", "l\(tag)", "h\(tag)")
        let (out, nat, home) = (names[0], names[1], names[2])
        do {
            for name in names { try NamespacePair.ip(["netns", "add", name]) }
            try NamespacePair.ip(["link", "add", outLink, "type", "veth", "peer", "name", wan])
            try NamespacePair.ip(["link", "add", lan, "type", "veth", "peer", "name", inLink])
            for (link, namespace, address) in [
                (outLink, out, "\(Self.outside)/24"), (wan, nat, "\(Self.natPublic)/24"), (lan, nat, "10.0.0.1/24"),
                (inLink, home, "\(Self.inside)/24"),
            ] {
                try NamespacePair.ip(["link", "set", link, "netns", namespace])
                try NamespacePair.ip(["-n", namespace, "addr", "add", address, "dev", link])
                try NamespacePair.ip(["-n", namespace, "link", "set", link, "up"])
            }
            for name in names { try NamespacePair.ip(["-n", name, "link", "set", "lo", "up"]) }
            try NamespacePair.ip(["-n", home, "route", "add", "default", "via", "10.0.0.1"])
            try Self.run(nat, "/usr/sbin/sysctl", ["-qw", "net.ipv4.ip_forward=1"])
            try Self.run(nat, "/usr/sbin/iptables", ["-t", "nat", "-A", "POSTROUTING", "-o", wan, "-j", "MASQUERADE"])
            try Self.run(nat, "/usr/sbin/iptables", [
                "-A", "INPUT", "-i", wan, "-p", "udp", "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP",
            ])
            // Per namespace since Linux 4.x; the masquerading rule loaded conntrack. An idle TCP connection is
            // forgotten as soon (its established timeout: a NAT that drops idle flows).
            try Self.run(nat, "/usr/sbin/sysctl", [
                "-qw", "net.netfilter.nf_conntrack_udp_timeout=\(udpTimeout)",
                "net.netfilter.nf_conntrack_udp_timeout_stream=\(udpTimeout)",
                "net.netfilter.nf_conntrack_tcp_timeout_established=\(udpTimeout)",
            ])
        } catch {
            remove()
            throw error
        }
    }

    /// Runs `executable` with `arguments` in namespace `side` (0 outside, 1 nat, 2 inside).
    func start(_ side: Int, _ executable: URL, _ arguments: [String], name: String) throws -> RunningProcess {
        try NamespacePair.start(in: names[side], executable, arguments, name: name)
    }

    /// The NAT's UDP mappings now, as `conntrack -L` lists them.
    func mappings() throws -> String {
        try Self.run(names[1], "/usr/sbin/conntrack", ["-L", "-p", "udp"], allowFailure: true)
    }

    @discardableResult
    private static func run(_ namespace: String, _ tool: String, _ arguments: [String], allowFailure: Bool = false) throws -> String {
        let process = try RunningProcess(
            URL(fileURLWithPath: "/usr/sbin/ip"), ["netns", "exec", namespace, tool] + arguments, name: tool)
        let status = try process.waitForExit(timeout: .seconds(10))
        guard status == 0 || allowFailure else {
            throw InteropError("\(tool) \(arguments.joined(separator: " ")) failed in \(namespace) (this test needs root, "
                + "iptables and conntrack: Scripts/debian-packages.txt): " + process.standardError)
        }
        return (process.lines + [process.standardError]).joined(separator: "\n")
    }

    private func remove() {
        for name in names { try? NamespacePair.ip(["netns", "del", name]) }  // the veth pairs go with them
    }

    deinit { remove() }
}

/// A parleyd behind a NAT registers at a Kamailio outside it and is called through it. Kamailio runs the project's
/// example configuration, which has no NAT helper (no `fix_nated_contact`): it stores and uses the Contact parleyd
/// registers, so the call arrives only because parleyd learned the NAT's mapping from the REGISTER's 2xx (Via
/// `received`/`rport`) and registered it; it still arrives after the NAT's UDP timeout only because parleyd's
/// keep-alives held the mapping open. The control run switches keep-alives off: the mapping expires and the call is
/// lost at the NAT. Over TCP the same holds for the connection alice opened: Kamailio calls her on it (her Contact
/// names its mapping), and CRLF pings keep it alive at the NAT.
@Suite("NAT: a parleyd behind a masquerading NAT stays registered and reachable", .serialized, .timeLimit(.minutes(1)))
struct NATTraversalTests {
    /// The NAT forgets an idle UDP mapping after this many seconds…
    static let udpTimeout = 3
    /// …keep-alives go every this many seconds…
    static let keepAliveInterval = 1
    /// …and the test stays idle this long between calls.
    static let idle: Duration = .seconds(7)

    /// The lab, Kamailio outside, alice behind the NAT (registered, answering, a 1,000 Hz tone, recording), bob
    /// outside (a 440 Hz tone, recording).
    struct Setup {
        let lab: NATLab
        let kamailio: Kamailio
        let alice: RunningProcess
        let bob: RunningProcess
        let work: URL
        let bobData: URL

        /// Whether both have accounts at example.test, which Kamailio serves (reached as the outbound proxy), and dial
        /// each other by name; else alice registers at Kamailio's address and bob calls her there.
        let accounts: Bool

        /// `transport`: how alice registers (and Kamailio reaches her): udp, or tcp on the connection she opened.
        init(keepAlive: Bool, transport: String = "udp", accounts: Bool = false) throws {
            self.accounts = accounts
            lab = try NATLab(udpTimeout: NATTraversalTests.udpTimeout)
            kamailio = try Kamailio(
                .init(noReplyMilliseconds: 2_000, domain: accounts ? "example.test" : nil), port: 5060, evapiPort: 8448,
                host: NATLab.outside, namespace: lab.names[0])
            let proxy = kamailio.uri
            let account = { (user: String) -> [String] in
                ["--register", "sip:example.test", "--aor", "sip:\(user)@example.test", "--outbound-proxy", proxy]
            }
            let registrar = accounts
                ? account("alice") : ["--register", proxy + (transport == "udp" ? "" : ";transport=\(transport)")]
            work = FileManager.default.temporaryDirectory.appending(path: "parley-nat-\(UUID().uuidString)")
            bobData = work.appending(path: "bob")
            let parleyd = try Interop.binary("parleyd")
            alice = try lab.start(2, parleyd, [
                "--listen", "udp://0.0.0.0:5070", "--listen", "tcp://0.0.0.0:5070", "--user", "alice",
                "--data-dir", work.appending(path: "alice").path,
            ] + registrar + [
                "--keep-alive", keepAlive ? String(NATTraversalTests.keepAliveInterval) : "off",
                "--auto-answer", "100", "--script", "wait 3000; end", "--media", "gstreamer", "--audio-source", "tone:1000",
                "--audio-sink", "file:\(work.appending(path: "alice-heard").path)", "--rtp-ports", "41000-41099",
                "--log-level", "debug",
            ], name: "alice")
            bob = try lab.start(0, parleyd, [
                "--listen", "udp://\(NATLab.outside):5080", "--user", "bob", "--data-dir", bobData.path,
                "--media", "gstreamer", "--audio-source", "tone:440",
                "--audio-sink", "file:\(work.appending(path: "bob-heard").path)", "--rtp-ports", "42000-42099",
            ] + (accounts ? account("bob") + ["--auto-answer", "100", "--script", "wait 3000; end"] : []), name: "bob")
            try bob.waitForLine("bob listening") { $0.contains("listening on") }
        }

        /// Bob calls alice: by name through his account, else at Kamailio's address (`parley call` on his control
        /// socket).
        func call() throws -> ControlCLITests.Run {
            try ControlCLITests.parley(["call", accounts ? "alice" : kamailio.address("alice"), "--data-dir", bobData.path])
        }

        /// Alice, behind the NAT, calls bob by name through her account.
        func callBack() throws -> ControlCLITests.Run {
            try ControlCLITests.parley(["call", "bob", "--data-dir", work.appending(path: "alice").path])
        }

        /// Stops everything by PID (parleyd first, then Kamailio); the lab's namespaces go with the value.
        func stop() {
            _ = try? alice.stop()
            _ = try? bob.stop()
            kamailio.stop()
            try? FileManager.default.removeItem(at: work)
        }
    }

    /// The states of each of `process`'s conversations, as parleyd logs them.
    static func transitions(_ process: RunningProcess) -> [[String]] { process.conversationTransitions }

    /// Waits until `process` has `count` conversations that left.
    static func waitForEnded(_ process: RunningProcess, _ count: Int, timeout: Duration = .seconds(15)) throws {
        try process.waitForLine(timeout: timeout, "\(count) ended conversation(s)") { _ in
            transitions(process).filter { $0.last?.hasPrefix("left") == true }.count >= count
        }
    }

    /// The recordings in `folder`, oldest first.
    static func recordings(in folder: URL) throws -> [Recording] {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".wav") }
        let dated = try files.map { file -> (Date, String) in
            let path = folder.appending(path: file).path
            return ((try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? .distantPast, path)
        }
        return try dated.sorted { $0.0 < $1.0 }.map { try Recording(wavAt: $0.1) }
    }

    @Test("registered through the NAT under its mapping, called through Kamailio with audio both ways; after an idle spell longer than the NAT's UDP timeout, keep-alives kept it reachable")
    func reachableAcrossIdle() throws {
        let setup = try Setup(keepAlive: true)
        defer { setup.stop() }
        let registered = try setup.alice.waitForLine("alice registered under the NAT's mapping") {
            $0.contains("registration: registered") && $0.contains("as \(NATLab.natPublic):5070")
        }
        #expect(setup.alice.lines.contains { $0.contains("the registrar saw us at \(NATLab.natPublic):5070") }, "\(registered)")

        #expect(try setup.call().status == 0)
        try Self.waitForEnded(setup.alice, 1)
        try Self.waitForEnded(setup.bob, 1)
        #expect(Self.transitions(setup.alice).first?.last == "left (localEnded)", "\(Self.transitions(setup.alice))")

        // Idle: only keep-alives cross the NAT now.
        Thread.sleep(forTimeInterval: Double(Self.idle.components.seconds))
        let mapping = try setup.lab.mappings()
        #expect(mapping.contains("sport=5070") && mapping.contains("dport=5060"), "the signalling mapping is alive: \(mapping)")

        #expect(try setup.call().status == 0)
        try Self.waitForEnded(setup.alice, 2)
        try Self.waitForEnded(setup.bob, 2)
        let calls = Self.transitions(setup.alice)
        #expect(calls.count == 2 && calls.allSatisfy { $0.contains("joined") }, "both calls reached alice: \(calls)")
        let pings = setup.alice.lines.filter { $0.contains("keep-alive:") }
        print("NAT lab: idle \(Self.idle) between calls, UDP timeout \(Self.udpTimeout) s, "
            + "keep-alive every \(Self.keepAliveInterval) s; alice said: \(pings.prefix(2))")

        // Audio both ways through the NAT, with the mapped address in alice's SDP.
        _ = try setup.alice.waitForLine("alice's recordings") { _ in
            setup.alice.lines.filter { $0.contains("recording complete:") }.count >= 2
        }
        _ = try setup.bob.waitForLine("bob's recordings") { _ in
            setup.bob.lines.filter { $0.contains("recording complete:") }.count >= 2
        }
        let aliceHeard = try Self.recordings(in: setup.work.appending(path: "alice-heard"))
        let bobHeard = try Self.recordings(in: setup.work.appending(path: "bob-heard"))
        for (index, (alice, bob)) in zip(aliceHeard, bobHeard).enumerated() {
            print("NAT lab call \(index + 1): alice heard 440 Hz for \(alice.seconds(at: 440)) s of \(alice.duration) s, "
                + "bob heard 1000 Hz for \(bob.seconds(at: 1_000)) s of \(bob.duration) s")
            #expect(alice.seconds(at: 440) >= 1.5, "call \(index + 1): alice heard bob: \(alice.dominantFrequencies())")
            #expect(bob.seconds(at: 1_000) >= 1.5, "call \(index + 1): bob heard alice: \(bob.dominantFrequencies())")
        }
        #expect(aliceHeard.count == 2 && bobHeard.count == 2)
    }

    @Test("accounts at example.test through Kamailio as outbound proxy: bob calls alice behind the NAT by name, audio both ways; after an idle spell she calls him by name")
    func byNameThroughNAT() throws {
        let setup = try Setup(keepAlive: true, accounts: true)
        defer { setup.stop() }
        try setup.alice.waitForLine("alice registered under the NAT's mapping") {
            $0.contains("registration: registered") && $0.contains("as \(NATLab.natPublic):5070")
        }
        try setup.bob.waitForLine("bob registered") { $0.contains("registration: registered") }
        let toAlice = try setup.call()
        #expect(toAlice.status == 0, "\(toAlice.output)")
        try Self.waitForEnded(setup.alice, 1)
        try Self.waitForEnded(setup.bob, 1)
        #expect(Self.transitions(setup.alice).first?.contains("joined") == true, "\(Self.transitions(setup.alice))")
        _ = try setup.bob.waitForLine("bob's recording") { $0.contains("recording complete:") }
        let bobHeard = try #require(try Self.recordings(in: setup.work.appending(path: "bob-heard")).first)
        #expect(bobHeard.seconds(at: 1_000) >= 1.5, "bob heard alice through the NAT: \(bobHeard.dominantFrequencies())")
        _ = try setup.alice.waitForLine("alice's recording") { $0.contains("recording complete:") }
        let aliceHeard = try #require(try Self.recordings(in: setup.work.appending(path: "alice-heard")).first)
        #expect(aliceHeard.seconds(at: 440) >= 1.5, "alice heard bob: \(aliceHeard.dominantFrequencies())")

        Thread.sleep(forTimeInterval: Double(Self.idle.components.seconds))
        let toBob = try setup.callBack()
        #expect(toBob.status == 0, "\(toBob.output)")
        try Self.waitForEnded(setup.bob, 2)
        #expect(Self.transitions(setup.bob).last?.contains("joined") == true, "alice reached bob by name: \(Self.transitions(setup.bob))")
    }

    @Test("over TCP: registered under the NAT's mapping of her connection, called on it, still after an idle spell longer than the NAT's timeout (CRLF ping and pong on the flow)")
    func reachableOverTCP() throws {
        let setup = try Setup(keepAlive: true, transport: "tcp")
        defer { setup.stop() }
        let registered = try setup.alice.waitForLine("alice registered under the NAT's mapping") {
            $0.contains("registration: registered") && $0.contains("as \(NATLab.natPublic):")
        }
        #expect(try setup.call().status == 0)
        try Self.waitForEnded(setup.alice, 1)
        Thread.sleep(forTimeInterval: Double(Self.idle.components.seconds))
        let mapping = try setup.lab.mappings()
        #expect(try setup.call().status == 0, "\(registered); NAT: \(mapping)")
        try Self.waitForEnded(setup.alice, 2)
        try Self.waitForEnded(setup.bob, 2)
        let calls = Self.transitions(setup.alice)
        #expect(calls.count == 2 && calls.allSatisfy { $0.contains("joined") }, "both calls reached alice: \(calls)")
        #expect(!setup.kamailio.log.contains { $0.contains("ERROR") && $0.contains("tcp") }, "\(setup.kamailio.log.suffix(20))")
    }

    @Test("control: without keep-alives the NAT forgets the mapping while idle, and the next call never reaches the parleyd behind it",
          arguments: ["udp", "tcp"])
    func lostWithoutKeepAlives(transport: String) throws {
        let setup = try Setup(keepAlive: false, transport: transport)
        defer { setup.stop() }
        try setup.alice.waitForLine("alice registered under the NAT's mapping") {
            $0.contains("registration: registered") && $0.contains("as \(NATLab.natPublic):")
        }
        #expect(try setup.call().status == 0)
        try Self.waitForEnded(setup.alice, 1)
        try Self.waitForEnded(setup.bob, 1)

        Thread.sleep(forTimeInterval: Double(Self.idle.components.seconds))
        let mapping = try setup.lab.mappings()
        #expect(!mapping.contains("sport=5070 dport=5060"), "the signalling mapping expired: \(mapping)")

        let lost = try setup.call()
        #expect(lost.status == 1 && lost.output.contains("408"), "Kamailio's INVITE was lost at the NAT: \(lost.output)")
        try Self.waitForEnded(setup.bob, 2)
        let bobCalls = Self.transitions(setup.bob)
        #expect(bobCalls.count == 2 && !(bobCalls.last ?? []).contains("joined"), "bob's second call failed: \(bobCalls)")
        #expect(Self.transitions(setup.alice).count == 1, "the second INVITE never reached alice: \(Self.transitions(setup.alice))")
    }
}
