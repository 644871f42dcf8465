import Foundation
import Testing

/// sipp (Debian's sip-tester) against parleyd on loopback. Each test asserts sipp's verdict (exit code 0: every call
/// succeeded) and the exact lifecycle transitions parleyd logged.
@Suite("Interop: sipp", .serialized)
struct SippInteropTests {
    static func scenario(_ name: String) -> String { Interop.scenarios.appending(path: name).path }

    /// sipp calls parleyd with `scenario` (a built-in name or a file) over `transport` (u1, t1).
    static func sippCalls(
        _ parleyd: Parleyd, scenario: String, transport: String = "u1", calls: Int = 1
    ) throws -> SippRun {
        let scenarioArguments = scenario.hasSuffix(".xml") ? ["-sf", Self.scenario(scenario)] : ["-sn", scenario]
        return try SippRun.run(scenarioArguments + [
            "127.0.0.1:\(parleyd.port)", "-i", "127.0.0.1", "-p", String(Interop.freePort()), "-t", transport,
            "-s", "parley", "-m", String(calls), "-r", "10", "-d", "200",
        ])
    }

    /// parleyd calls a sipp UAS running `scenario`; parleyd runs `script` on the call once joined.
    static func parleydCalls(
        scenario: String, script: String? = nil, transport: String = "u1", timeout: Duration = .seconds(40),
        options: [String] = []
    ) throws -> (SippRun, Parleyd) {
        let port = Interop.freePort()
        let scenarioArguments = scenario.hasSuffix(".xml") ? ["-sf", Self.scenario(scenario)] : ["-sn", scenario]
        let sipp = try SippRun.start(scenarioArguments + ["-i", "127.0.0.1", "-p", String(port), "-t", transport, "-m", "1"])
        usleep(300_000)  // sipp binds its port
        let uriTransport = transport == "t1" ? ";transport=tcp" : ""
        var arguments = ["--call", "sip:service@127.0.0.1:\(port)\(uriTransport)"]
        if let script { arguments += ["--script", script] }
        let parleyd = try Parleyd(arguments + options)
        let status = try sipp.waitForExit(timeout: timeout)
        let run = SippRun(status: status, output: (sipp.lines + [sipp.standardError]).joined(separator: "\n"))
        return (run, parleyd)
    }

    @Test("sipp's built-in uac calls parleyd (auto-answer) over UDP and TCP; the caller hangs up", arguments: ["u1", "t1"])
    func builtInUAC(transport: String) throws {
        let parleyd = try Parleyd(["--auto-answer", "0"])
        let run = try Self.sippCalls(parleyd, scenario: "uac", transport: transport, calls: 3)
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(3)
        #expect(parleyd.transitions == Array(repeating: ["ringing", "joining", "joined", "left (remoteEnded)"], count: 3))
    }

    @Test("sipp's built-in uac calls parleyd over IPv6 loopback")
    func ipv6() throws {
        let port6 = Interop.freePort()
        let parleyd = try Parleyd(["--auto-answer", "0", "--listen", "udp://[::1]:\(port6)"])
        let run = try SippRun.run([
            "-sn", "uac", "[::1]:\(port6)", "-i", "::1", "-p", String(Interop.freePort()), "-s", "parley", "-m", "2",
            "-d", "100",
        ])
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(2)
        #expect(parleyd.transitions == Array(repeating: ["ringing", "joining", "joined", "left (remoteEnded)"], count: 2))
    }

    @Test("parleyd calls sipp's built-in uas and hangs up itself")
    func builtInUAS() throws {
        let (run, parleyd) = try Self.parleydCalls(scenario: "uas", script: "wait 200; end")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])
    }

    @Test("sipp calls, parleyd (the callee) hangs up: sipp receives the BYE")
    func calleeHangsUp() throws {
        let parleyd = try Parleyd(["--auto-answer", "0", "--script", "wait 200; end"])
        let run = try Self.sippCalls(parleyd, scenario: "uac-callee-hangs-up.xml")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "leaving", "left (localEnded)"]])
    }

    @Test("parleyd calls, sipp (the callee) hangs up")
    func remoteCalleeHangsUp() throws {
        let (run, parleyd) = try Self.parleydCalls(scenario: "uas-callee-hangs-up.xml")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["idle", "ringing", "joined", "left (remoteEnded)"]])
    }

    @Test("sipp cancels before the answer: 200 and 487; the conversation ends cancelled")
    func cancelBeforeAnswer() throws {
        let parleyd = try Parleyd()
        let run = try Self.sippCalls(parleyd, scenario: "uac-cancel.xml")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["ringing", "left (cancelled)"]])
    }

    @Test("sipp refuses parleyd's call: 486 ends it busy, 603 declined", arguments: [
        ("uas-busy.xml", "left (busy)"), ("uas-decline.xml", "left (declined)"),
    ])
    func refused(scenario: String, ended: String) throws {
        let (run, parleyd) = try Self.parleydCalls(scenario: scenario)
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["idle", "ringing", ended]])
    }

    @Test("sipp holds and resumes parleyd by re-INVITE and sends INFO DTMF; parleyd answers recvonly, then sendrecv")
    func remoteHoldAndInfo() throws {
        let parleyd = try Parleyd(["--auto-answer", "0"])
        let run = try Self.sippCalls(parleyd, scenario: "uac-hold-info.xml")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]])
        #expect(parleyd.process.lines.contains { $0.contains("put us on hold") })
        #expect(parleyd.process.lines.contains { $0.contains("sent tone 5") })
    }

    @Test("parleyd holds and resumes sipp by re-INVITE (sendonly, sendrecv) and sends INFO DTMF")
    func localHoldAndInfo() throws {
        let (run, parleyd) = try Self.parleydCalls(
            scenario: "uas-held-info.xml", script: "wait 100; hold; wait 100; resume; dtmf 5; end")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["idle", "ringing", "joined", "paused", "joined", "leaving", "left (localEnded)"]])
    }

    @Test("codecs: a G.729-only offer gets 488; a PCMA-only one a PCMA answer, and its direction change sendonly")
    func codecNegotiation() throws {
        let parleyd = try Parleyd(["--auto-answer", "0"])
        let refused = try Self.sippCalls(parleyd, scenario: "uac-no-common-codec.xml")
        #expect(refused.status == 0, "\(refused.output)")
        let pcma = try Self.sippCalls(parleyd, scenario: "uac-pcma-only.xml")
        #expect(pcma.status == 0, "\(pcma.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]], "the 488 rang nothing")
        #expect(parleyd.process.lines.contains { $0.contains("audio PCMA to 127.0.0.1:") }, "\(parleyd.process.lines)")
    }

    @Test("a callee that answers PCMA only (our offer lists PCMU first) gets PCMA")
    func calleeTakesPCMA() throws {
        let (run, parleyd) = try Self.parleydCalls(scenario: "uas-pcma-only.xml")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["idle", "ringing", "joined", "left (remoteEnded)"]])
        #expect(parleyd.process.lines.contains { $0.contains("audio PCMA to 127.0.0.1:") }, "\(parleyd.process.lines)")
    }

    @Test("a retransmitted INVITE (as after UDP loss) is absorbed: one conversation, one answer")
    func retransmittedInvite() throws {
        let parleyd = try Parleyd(["--auto-answer", "100"])
        let run = try Self.sippCalls(parleyd, scenario: "uac-retransmitted-invite.xml")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]])
    }

    @Test("parleyd calls sipp's uas over TCP")
    func tcpOutgoing() throws {
        let (run, parleyd) = try Self.parleydCalls(scenario: "uas", script: "wait 100; end", transport: "t1")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])
    }
}

/// sipp as a registrar that challenges with MD5 digest (its own `verifyauth` checks the answer).
@Suite("Interop: sipp registrar", .serialized)
struct SippRegistrarTests {
    @Test("parleyd registers with digest authentication; a wrong password is refused and reported", arguments: [
        ("secret", "registered sip:alice@parley.test for 60 s"), ("wrong", "registration: 403 Forbidden"),
    ])
    func register(password: String, expected: String) throws {
        let port = Interop.freePort()
        let sipp = try SippRun.start([
            "-sf", SippInteropTests.scenario("registrar-digest.xml"), "-i", "127.0.0.1", "-p", String(port), "-m", "1",
        ])
        usleep(300_000)
        let parleyd = try Parleyd([
            "--register", "sip:127.0.0.1:\(port)", "--aor", "sip:alice@parley.test", "--auth-password", password,
        ])
        try parleyd.process.waitForLine("'\(expected)'") { $0.contains(expected) }
        #expect(try sipp.waitForExit() == 0, "sipp played its part: challenge, then 200 or 403")
    }
}
