import Foundation
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The two-NAT lab of issue 43 (Scripts/nat-lab through ``NATLabScript``): that it is the lab it says it is, that
/// TURN relays between hosts behind symmetric NATs, what a plain-RTP call between the two homes does today (the
/// control ICE will be measured against), and that the lab leaves nothing behind. Root only (network namespaces).
@Suite("NAT lab: two homes behind NATs, coturn and Kamailio on the public side (Scripts/nat-lab)", .serialized,
       .timeLimit(.minutes(3)))
struct NATLabTests {
    static let python3 = URL(fileURLWithPath: "/usr/bin/python3")
    static let turnProbe = Interop.packageRoot.appending(path: "Tests/Interop/nat-lab/turn-probe.py")

    /// `python3 -c SOURCE ARGUMENTS…` on `side` of `lab`, started.
    static func python(_ lab: NATLabScript, on side: NATLabScript.Side, _ source: String, _ arguments: [String] = [],
                       name: String) throws -> RunningProcess {
        try lab.start(on: side, python3, ["-c", source] + arguments, name: name)
    }

    /// Prints the source of the first UDP datagram to ADDRESS:PORT within 10 s (`from IP:PORT TEXT`), or `nothing`.
    static let listener = """
        import socket, sys
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((sys.argv[1], int(sys.argv[2])))
        s.settimeout(float(sys.argv[3]))
        print("listening", flush=True)
        try:
            data, source = s.recvfrom(100)
            print("from %s:%d %s" % (source[0], source[1], data.decode()), flush=True)
        except socket.timeout:
            print("nothing", flush=True)
        """

    /// Sends TEXT to ADDRESS:PORT from local port FROM, thrice.
    static let sender = """
        import socket, sys, time
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", int(sys.argv[3])))
        for _ in range(3):
            s.sendto(sys.argv[4].encode(), (sys.argv[1], int(sys.argv[2])))
            time.sleep(0.1)
        """

    /// Tries a TCP connection to ADDRESS:PORT (3 s at most): `connected`, or the error.
    static let connector = """
        import socket, sys
        s = socket.socket()
        s.settimeout(3)
        try:
            s.connect((sys.argv[1], int(sys.argv[2])))
            print("connected", flush=True)
        except OSError as error:
            print("not connected:", error, flush=True)
        """

    @Test("the lab: host1's UDP reaches the public side from nat1's address and port, nothing new gets through nat2 to host2, host1 has no route to host2's LAN, and a TURN allocation from behind nat1 relays to another (turnutils_uclient)")
    func labWorks() throws {
        let lab = try NATLabScript()
        defer { try? lab.stop() }
        let started = ContinuousClock.now

        let outside = try Self.python(lab, on: .public, Self.listener, [NATLabScript.publicAddress, "4000", "10"], name: "listener")
        try outside.waitForLine("the public listener") { $0 == "listening" }
        let inside = try Self.python(lab, on: .host2, Self.listener, ["0.0.0.0", "4002", "2"], name: "host2 listener")
        try inside.waitForLine("host2's listener") { $0 == "listening" }
        #expect(try Self.python(lab, on: .host1, Self.sender, [NATLabScript.publicAddress, "4000", "4001", "hello"], name: "sender")
            .waitForExit(timeout: .seconds(10)) == 0)
        #expect(try Self.python(lab, on: .host1, Self.sender, [NATLabScript.natAddresses[1], "4002", "4001", "unasked"], name: "sender")
            .waitForExit(timeout: .seconds(10)) == 0)
        let arrived = try outside.waitForLine(timeout: .seconds(12), "the datagram") { $0.hasPrefix("from ") || $0 == "nothing" }
        #expect(arrived == "from \(NATLabScript.natAddresses[0]):4001 hello", "masqueraded by nat1, its port kept")
        let unasked = try inside.waitForLine(timeout: .seconds(5), "host2's verdict") { $0.hasPrefix("from ") || $0 == "nothing" }
        #expect(unasked == "nothing", "nat2 let a datagram nobody behind it asked for through: \(unasked)")

        let direct = try Self.python(lab, on: .host1, Self.connector, [NATLabScript.hostAddresses[1], "5070"], name: "connector")
        let verdict = try direct.waitForLine(timeout: .seconds(6), "the connection attempt") { $0.contains("connected") }
        #expect(verdict.hasPrefix("not connected"), "host1 reached 10.2.0.2 directly: \(verdict)")

        // Two allocations from host1 (through nat1), each relaying to the other's relayed address (-y), 3 messages each.
        let checked = ContinuousClock.now - started, relayStarted = ContinuousClock.now
        let uclient = try lab.run(on: .host1, try Interop.tool("turnutils_uclient"), [
            "-u", NATLabScript.turnUser, "-w", NATLabScript.turnPassword, "-n", "3", "-m", "1", "-c", "-y", "-X",
            NATLabScript.publicAddress,
        ], timeout: .seconds(30))
        #expect(uclient.status == 0 && uclient.output.contains("tot_recv_msgs=6")
            && uclient.output.contains("Total lost packets 0 "), "\(uclient.output.suffix(800))")
        print("NAT lab: addresses and filtering checked in \(checked), turnutils_uclient took \(ContinuousClock.now - relayStarted)")
        try lab.stop()
    }

    @Test("TURN across two symmetric NATs: a client behind each allocates at coturn, and they hear each other relay to relay; coturn refuses a permission for a LAN address")
    func relayBetweenSymmetricNATs() throws {
        let lab = try NATLabScript(symmetric: "both")
        defer { try? lab.stop() }
        let files = ["1", "2"].map { lab.directory.appending(path: "relayed-\($0)").path }
        func probe(_ index: Int) throws -> RunningProcess {
            let denied: [String] = index == 0 ? [NATLabScript.hostAddresses[1]] : []
            let arguments: [String] = [
                Self.turnProbe.path, NATLabScript.turnServer, NATLabScript.turnUser, NATLabScript.turnPassword,
                files[index], files[1 - index], "from host\(index + 1)",
            ] + denied
            return try lab.start(on: index == 0 ? .host1 : .host2, Self.python3, arguments, name: "turn probe \(index + 1)")
        }
        let probes = [try probe(0), try probe(1)]
        let statuses = try probes.map { try $0.waitForExit(timeout: .seconds(20)) }
        let outputs = probes.map { ($0.lines + [$0.standardError]).joined(separator: "\n") }
        print("NAT lab, TURN relay to relay through symmetric NATs:\n" + outputs.joined(separator: "\n"))
        #expect(statuses == [0, 0], "\(outputs)")
        for index in 0..<2 {
            #expect(outputs[index].contains("mapped \(NATLabScript.natAddresses[index]):"), "coturn saw nat\(index + 1): \(outputs[index])")
            #expect(outputs[index].contains("heard from host\(2 - index) from \(NATLabScript.publicAddress):"), "\(outputs[index])")
        }
        #expect(outputs[0].contains("permission for \(NATLabScript.hostAddresses[1]): 403"), "\(outputs[0])")
        try lab.stop()
    }

    /// The recording of the one call in `folder`: an empty file (GStreamer's wavenc writes nothing when no audio
    /// came) is silence.
    static func heard(in folder: URL) throws -> Recording {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".wav") }
        try #require(files.count == 1, "one recording in \(folder.path): \(files)")
        let path = folder.appending(path: files[0]).path
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        return size == 0 ? Recording(sampleRate: 8_000, samples: []) : try Recording(wavAt: path)
    }

    @Test("control for issue 43: parleyd in host1 calls parleyd in host2 through Kamailio with plain RTP; the call is joined on both sides, each SDP names the other NAT's public address (parleyd's registrar-learned mapping), and audio crosses two port-keeping NATs but not a symmetric one (parleyd ends that call: no RTP)",
          arguments: [nil, "1", "both"] as [String?])
    func plainRTPBetweenHomes(symmetric: String?) throws {
        let lab = try NATLabScript(symmetric: symmetric)
        defer { try? lab.stop() }
        let parleyd = try Interop.binary("parleyd")
        let users = ["alice", "bob"], tones = [1_000.0, 440.0]
        let data = users.map { lab.directory.appending(path: $0) }
        let heard = users.map { lab.directory.appending(path: "\($0)-heard") }
        func phone(_ index: Int) throws -> RunningProcess {
            let arguments: [String] = [
                "--listen", "udp://0.0.0.0:5070", "--user", users[index], "--data-dir", data[index].path,
                "--register", NATLabScript.registrar, "--keep-alive", "1", "--auto-answer", "100",
                "--script", "wait 3000; end", "--media", "gstreamer", "--audio-source", "tone:\(Int(tones[index]))",
                "--audio-sink", "file:\(heard[index].path)", "--rtp-ports", "4\(index + 1)000-4\(index + 1)099",
                "--media-timeout", "2", "--log-level", "debug",
            ]
            return try lab.start(on: index == 0 ? .host1 : .host2, parleyd, arguments, name: users[index])
        }
        let phones = [try phone(0), try phone(1)]
        for (index, phone) in phones.enumerated() {
            try phone.waitForLine("\(users[index]) registered under nat\(index + 1)'s mapping") {
                $0.contains("registration: registered") && $0.contains("as \(NATLabScript.natAddresses[index]):")
            }
        }
        let started = ContinuousClock.now
        // parley on this machine reaches alice's parleyd inside the lab through the control socket in her data
        // directory: the lab's mount namespace is a copy of this one.
        let call = try ControlCLITests.parley(["call", "sip:bob@\(NATLabScript.publicAddress):5060", "--data-dir", data[0].path])
        #expect(call.status == 0, "\(call.output)")
        for phone in phones { try NATTraversalTests.waitForEnded(phone, 1) }
        let conversations = phones.map { NATTraversalTests.transitions($0) }
        #expect(conversations.allSatisfy { $0.count == 1 }, "one call each: \(conversations)")
        let calls: [[String]] = conversations.map { $0.first ?? [] }
        #expect(calls.allSatisfy { $0.contains("joined") }, "joined on both sides: \(calls)")
        for (index, phone) in phones.enumerated() {
            let other = NATLabScript.natAddresses[1 - index]
            #expect(phone.lines.contains { $0.contains("audio PCMU to \(other):") },
                    "\(users[index])'s peer's SDP named nat\(2 - index)'s address: \(phone.lines.filter { $0.contains("audio ") })")
            try phone.waitForLine("\(users[index])'s recording") { $0.contains("recording complete:") }
        }
        let recordings = try heard.map { try Self.heard(in: $0) }
        let seconds = [recordings[0].seconds(at: tones[1]), recordings[1].seconds(at: tones[0])]
        let timeouts = phones.map { $0.lines.filter { $0.contains("no RTP or RTCP from the peer") } }
        print("NAT lab, plain RTP, symmetric NATs: \(symmetric ?? "none"): alice heard 440 Hz for \(seconds[0]) s "
            + "of \(recordings[0].duration) s, bob heard 1000 Hz for \(seconds[1]) s of \(recordings[1].duration) s; "
            + "calls \(calls); parleyd said: \(Array(timeouts.joined())); \(ContinuousClock.now - started) from the call")
        if symmetric == nil {
            // Both send at once to the other NAT's public address and the very port they send from: each NAT's
            // outgoing flow opens it for the other's packets (the same 5-tuple), so audio crosses.
            #expect(seconds.allSatisfy { $0 >= 1.5 }, "audio both ways: \(seconds)")
            #expect(timeouts.joined().isEmpty, "\(timeouts)")
        } else {
            // The symmetric NAT sends from a port nobody was told of, and drops what arrives at the port the SDP named.
            #expect(seconds.allSatisfy { $0 == 0 }, "no audio either way: \(seconds)")
            #expect(!timeouts.joined().isEmpty, "a side ended the call for want of RTP: \(timeouts)")
            #expect(calls.joined().contains("left (mediaTimeout)"), "\(calls)")
        }
        try lab.stop()
    }

    /// The network namespace of `pid` (`net:[INODE]`), nil when it is gone.
    static func networkNamespace(_ pid: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net")
    }

    /// Whether `process` is one of the lab's lasting processes: not `mv` or a fork of the script about to exec.
    static func isLasting(_ process: NATLabScript.ProcessID) -> Bool {
        let name = (try? String(contentsOfFile: "/proc/\(process.pid)/comm", encoding: .utf8)) ?? ""
        return ["turnserver", "kamailio", "unshare", "nat-lab"].contains(name.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test("teardown leaves nothing: after stop() (SIGTERM) or when the script is SIGKILLed, no process of the lab runs — the script, coturn, Kamailio and its workers, what ran inside — and no process is left in the lab's network namespace",
          arguments: ["SIGTERM", "SIGKILL"])
    func teardownLeavesNothing(signal: String) throws {
        let lab = try NATLabScript()
        defer { try? lab.stop() }
        let named = ["pid", "turnserver_pid", "kamailio_pid"].compactMap { lab.ready[$0].flatMap(Int32.init) }
        let pids = named.compactMap(NATLabScript.process)
        #expect(named.count == 3 && pids.count == 3, "running: \(pids) of \(lab.ready)")
        let holder = try #require(NATLabScript.process(lab.holderPID))
        let inside = try lab.start(on: .host1, URL(fileURLWithPath: "/usr/bin/sleep"), ["60"], name: "sleep")
        let namespace = try #require(Self.networkNamespace(lab.holderPID))
        // The script, coturn, unshare, Kamailio and its workers (2 UDP, timers…): the lasting ones (not the script's
        // last mv, a fork of it about to exec, which end by themselves).
        Thread.sleep(forTimeInterval: 0.2)
        let ours = NATLabScript.processes(mentioning: lab.directory.path).filter { Self.isLasting($0) }
        #expect(ours.count >= 6, "\(ours)")

        let started = ContinuousClock.now
        if signal == "SIGKILL" {
            kill(lab.holderPID, SIGKILL)
            _ = try lab.process.waitForExit(timeout: .seconds(10))
            // Parent-death signals: coturn and Kamailio's unshare get SIGKILL, Kamailio with them (its PID namespace
            // takes the workers).
            let deadline = ContinuousClock.now + .seconds(5)
            while !NATLabScript.processes(mentioning: lab.directory.path).isEmpty && ContinuousClock.now < deadline {
                usleep(20_000)
            }
            #expect(NATLabScript.processes(mentioning: lab.directory.path).isEmpty, "\(NATLabScript.processes(mentioning: lab.directory.path))")
            #expect(inside.process.isRunning, "what the test started inside is the test's to stop")
        }
        try lab.stop()
        let took = ContinuousClock.now - started
        #expect(!inside.process.isRunning)
        #expect(!pids.contains(where: NATLabScript.isRunning), "\(pids.filter(NATLabScript.isRunning))")
        #expect(!ours.contains(where: NATLabScript.isRunning), "\(ours.filter(NATLabScript.isRunning))")
        #expect(!lab.process.process.isRunning && !NATLabScript.isRunning(holder), "the namespace holder is gone")
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        let stillInside = entries.compactMap(Int32.init).filter { Self.networkNamespace($0) == namespace }
        #expect(stillInside.isEmpty, "processes in the lab's network namespace \(namespace): \(stillInside)")
        if signal == "SIGTERM" {
            #expect(!FileManager.default.fileExists(atPath: lab.readyFile.path), "the script removes its ready file")
        }
        print("NAT lab teardown by \(signal): \(ours.count) processes of the lab gone in \(took)")
    }
}
