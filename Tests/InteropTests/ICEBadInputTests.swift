import Foundation
import Glibc
import ParleyTestSupport
import Testing

/// What a hostile or broken peer's ICE gets from parleyd (docs/robustness.md): an offer of a thousand candidates, of
/// unusable and of our own addresses, credentials too short to use, and a STUN server that never answers.
@Suite("Interop: bad ICE input", .serialized, .timeLimit(.minutes(3)))
struct ICEBadInputTests {
    /// A sipp UAC scenario that offers PCMU with `ice` (its lines) and then, after the 200 (whose body must contain
    /// `a=ice-ufrag` when `answerHasICE`, else must not), either waits for parleyd's BYE (`byeFromParleyd`) or sends
    /// its own a second later. Written to a temporary file.
    static func scenario(ice: [String], answerHasICE: Bool, byeFromParleyd: Bool) throws -> URL {
        let bye = byeFromParleyd
            ? """
              <recv request="BYE" timeout="40000"/>
              <send>
                <![CDATA[
                  SIP/2.0 200 OK
                  [last_Via:]
                  [last_From:]
                  [last_To:]
                  [last_Call-ID:]
                  [last_CSeq:]
                  Content-Length: 0
                ]]>
              </send>
            """
            : """
              <pause milliseconds="1000"/>
              <send retrans="500">
                <![CDATA[
                  BYE [next_url] SIP/2.0
                  Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
                  From: sipp <sip:sipp@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
                  To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
                  Call-ID: [call_id]
                  CSeq: 2 BYE
                  Max-Forwards: 70
                  Content-Length: 0
                ]]>
              </send>
              <recv response="200"/>
            """
        let text = """
            <?xml version="1.0" encoding="ISO-8859-1" ?>
            <!DOCTYPE scenario SYSTEM "sipp.dtd">
            <scenario name="uac offering ICE">
              <send retrans="500">
                <![CDATA[
                  INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
                  Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
                  From: sipp <sip:sipp@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
                  To: <sip:[service]@[remote_ip]:[remote_port]>
                  Call-ID: [call_id]
                  CSeq: 1 INVITE
                  Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>
                  Max-Forwards: 70
                  Content-Type: application/sdp
                  Content-Length: [len]

                  v=0
                  o=user1 53655765 1 IN IP4 [local_ip]
                  s=-
                  c=IN IP4 [media_ip]
                  t=0 0
                  m=audio [media_port] RTP/AVP 0
                  a=rtpmap:0 PCMU/8000
            \(ice.joined(separator: "\n"))
                ]]>
              </send>
              <recv response="100" optional="true"/>
              <recv response="180" optional="true"/>
              <recv response="200" rrs="true">
                <action>
                  <ereg regexp="a=ice-ufrag:" search_in="body" check_it\(answerHasICE ? "" : "_inverse")="true" assign_to="ice"/>
                </action>
              </recv>
              <send>
                <![CDATA[
                  ACK [next_url] SIP/2.0
                  Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
                  From: sipp <sip:sipp@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
                  To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
                  Call-ID: [call_id]
                  CSeq: 1 ACK
                  Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>
                  Max-Forwards: 70
                  Content-Length: 0
                ]]>
              </send>
            \(bye)
              <Reference variables="ice"/>
            </scenario>
            """
        let file = FileManager.default.temporaryDirectory.appending(path: "parley-ice-\(UUID().uuidString).xml")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Runs `scenario` against `parleyd` (one call). (sipp reads a scenario file of at most 64 KiB: the candidates'
    /// lines are not indented.)
    static func sipp(_ scenario: URL, _ parleyd: Parleyd) throws -> SippRun {
        defer { try? FileManager.default.removeItem(at: scenario) }
        return try SippRun.run([
            "-sf", scenario.path, "127.0.0.1:\(parleyd.port)", "-i", "127.0.0.1", "-p", String(Interop.freePort()), "-t", "u1",
            "-s", "parley", "-m", "1",
        ])
    }

    static let credentials = ["a=ice-ufrag:sippUfrag", "a=ice-pwd:sippPasswordSippPassword22"]

    /// A UDP socket on 127.0.0.1 at a port the system picks, which takes what comes (a STUN server's Binding
    /// requests) and never answers: the descriptor (closed by the caller) and the port.
    static func silentServer() throws -> (Int32, Int) {
        let silent = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(silent, $0, length) == 0 && getsockname(silent, $0, &length) == 0 }
        }
        guard bound else {
            close(silent)
            throw InteropError("no silent UDP socket on 127.0.0.1")
        }
        return (silent, Int(UInt16(bigEndian: address.sin_port)))
    }

    @Test("an offer of 1,000 candidates, with unusable ones (0.0.0.0, multicast, link-local, port 0) and one naming parleyd's own SIP port: the answer carries ICE, at most 32 are checked, none on our listener; no check succeeds and the call ends as iceFailed with BYE, in bounded time")
    func thousandCandidates() throws {
        let parleyd = try Parleyd(["--auto-answer", "0", "--media", "gstreamer", "--audio-sink", "null", "--ice", "on"])
        var lines = Self.credentials + [
            "a=candidate:z1 1 UDP 2130706431 0.0.0.0 4000 typ host",
            "a=candidate:z2 1 UDP 2130706431 224.0.0.1 4000 typ host",
            "a=candidate:z3 1 UDP 2130706431 169.254.1.1 4000 typ host",
            "a=candidate:z4 1 UDP 2130706431 fe80::1 4000 typ host",
            "a=candidate:z5 1 UDP 2130706431 127.0.0.1 0 typ host",
            "a=candidate:own 1 UDP 2130706432 127.0.0.1 \(parleyd.port) typ host",
        ]
        lines += (0..<1_000).map { "a=candidate:\($0) \(1 + $0 % 2) UDP \(2_130_706_431 - $0) 127.0.0.1 \(20_000 + $0) typ host" }
        let started = ContinuousClock.now
        let run = try Self.sipp(try Self.scenario(ice: lines, answerHasICE: true, byeFromParleyd: true), parleyd)
        let took = ContinuousClock.now - started
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "left (iceFailed)"]])
        let checking = try #require(parleyd.process.lines.first { $0.contains("ICE: checking") })
        let count = checking.split(separator: " ").firstIndex(of: "checking").flatMap { index in
            Int(checking.split(separator: " ")[checking.split(separator: " ").index(after: index)])
        }
        #expect((1...32).contains(count ?? 0), "at most 16 a component: \(checking)")
        #expect(checking.contains("left out"), "\(checking)")
        #expect(took < .seconds(35), "the checks failed in bounded time: \(took)")
        print("1,000 candidates: \(checking.split(separator: ":").last ?? ""); the call ended iceFailed after \(took)")
        let record = try MultiAccountTests.lastRecord(in: parleyd.dataDirectory)
        #expect(record["endedReason"] as? String == "iceFailed" || "\(record)".contains("iceFailed"), "\(record)")
    }

    @Test("credentials too short to use (a 3-character ufrag, a 10-character pwd): the offer has no ICE, the answer none, and the call is plain RTP at the c= address", arguments: [
        ["a=ice-ufrag:abc", "a=ice-pwd:sippPasswordSippPassword22"], ["a=ice-ufrag:sippUfrag", "a=ice-pwd:tooshort10"],
        ["a=ice-ufrag:sippUfrag"],
    ])
    func unusableCredentials(lines: [String]) throws {
        let parleyd = try Parleyd(["--auto-answer", "0", "--media", "gstreamer", "--audio-sink", "null", "--ice", "on"])
        let run = try Self.sipp(
            try Self.scenario(
                ice: lines + ["a=candidate:1 1 UDP 2130706431 127.0.0.1 20000 typ host"], answerHasICE: false, byeFromParleyd: false),
            parleyd)
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]])
        #expect(!parleyd.process.lines.contains { $0.contains("ICE:") }, "no agent: \(parleyd.process.lines.filter { $0.contains("ICE") })")
    }

    @Test("a STUN server that never answers: the offer goes after the gathering timeout (2 s) with the host candidates, parleyd says why, and the call has audio")
    func silentSTUNServer() throws {
        let (silent, stunPort) = try Self.silentServer()
        defer { close(silent) }
        let run = try ICEInteropTestsRun.call(callee: ["--ice", "on"], caller: ["--stun-server", "127.0.0.1:\(stunPort)"])
        AudioInterop.ICEInteropTests.expectAudioBothWays(run)
        let waited = run.caller.process.lines.contains { $0.contains("ICE: the servers' candidates did not all come in time") }
        #expect(waited, "\(run.caller.process.lines.filter { $0.contains("ICE") })")
        #expect(run.caller.process.lines.contains { $0.contains("ICE: RTP goes host") })
    }
}

/// An INVITE without SDP: parleyd's offer goes in its 200, and with ICE it waits for its candidates like any offer.
@Suite("Interop: ICE in a late offer (an INVITE without SDP)", .serialized, .timeLimit(.minutes(2)))
struct ICELateOfferTests {
    /// sipp's INVITE without a body; the 200 must carry our offer with ICE; sipp's ACK answers without ICE (plain
    /// RTP at its address), and sipp hangs up a second later.
    static let scenario = """
        <?xml version="1.0" encoding="ISO-8859-1" ?>
        <!DOCTYPE scenario SYSTEM "sipp.dtd">
        <scenario name="uac, late offer">
          <send retrans="500">
            <![CDATA[
              INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
              Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
              From: sipp <sip:sipp@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
              To: <sip:[service]@[remote_ip]:[remote_port]>
              Call-ID: [call_id]
              CSeq: 1 INVITE
              Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>
              Max-Forwards: 70
              Content-Length: 0
            ]]>
          </send>
          <recv response="100" optional="true"/>
          <recv response="180" optional="true"/>
          <recv response="200" rrs="true">
            <action>
              <ereg regexp="a=ice-ufrag:" search_in="body" check_it="true" assign_to="ice"/>
              <ereg regexp="a=candidate:" search_in="body" check_it="true" assign_to="candidate"/>
            </action>
          </recv>
          <send>
            <![CDATA[
              ACK [next_url] SIP/2.0
              Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
              From: sipp <sip:sipp@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
              To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
              Call-ID: [call_id]
              CSeq: 1 ACK
              Contact: <sip:sipp@[local_ip]:[local_port];transport=[transport]>
              Max-Forwards: 70
              Content-Type: application/sdp
              Content-Length: [len]

              v=0
              o=user1 53655765 1 IN IP4 [local_ip]
              s=-
              c=IN IP4 [media_ip]
              t=0 0
              m=audio [media_port] RTP/AVP 0
              a=rtpmap:0 PCMU/8000
            ]]>
          </send>
          <pause milliseconds="1000"/>
          <send retrans="500">
            <![CDATA[
              BYE [next_url] SIP/2.0
              Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
              From: sipp <sip:sipp@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
              To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
              Call-ID: [call_id]
              CSeq: 2 BYE
              Max-Forwards: 70
              Content-Length: 0
            ]]>
          </send>
          <recv response="200"/>
          <Reference variables="ice,candidate"/>
        </scenario>
        """

    @Test("parleyd's offer in its 200 carries ICE and waits for its candidates (a STUN server that never answers: the gathering timeout), and an answer without ICE in the ACK makes the call plain RTP")
    func lateOffer() throws {
        let (silent, stunPort) = try ICEBadInputTests.silentServer()
        defer { close(silent) }
        let parleyd = try Parleyd([
            "--auto-answer", "0", "--media", "gstreamer", "--audio-sink", "null", "--stun-server", "127.0.0.1:\(stunPort)",
        ])
        let file = FileManager.default.temporaryDirectory.appending(path: "parley-late-offer-\(UUID().uuidString).xml")
        try Self.scenario.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try SippRun.run([
            "-sf", file.path, "127.0.0.1:\(parleyd.port)", "-i", "127.0.0.1", "-p", String(Interop.freePort()), "-t", "u1",
            "-s", "parley", "-m", "1",
        ])
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        let ice = parleyd.process.lines.filter { $0.contains("ICE") }
        #expect(ice.contains { $0.contains("the servers' candidates did not all come in time") }, "the 200 waited: \(ice)")
        #expect(ice.contains { $0.contains("ICE: the peer has none: plain RTP at our reserved ports") }, "\(ice)")
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]])
    }
}

/// The loopback call of ``AudioInterop/ICEInteropTests``, reachable from other suites.
enum ICEInteropTestsRun {
    static func call(callee: [String], caller: [String], seconds: Int = 3) throws
        -> (callee: Parleyd, caller: Parleyd, heardByCallee: Recording, heardByCaller: Recording)
    {
        try AudioInterop.ICEInteropTests.call(callee: callee, caller: caller, seconds: seconds)
    }
}

/// parleyd's ICE options: what it takes, and the usage errors (64) for what it does not, the TURN password only from
/// a file its owner alone may read.
@Suite("parleyd: ICE options", .serialized, .timeLimit(.minutes(2)))
struct ICEOptionTests {
    /// A TURN password file with `mode`.
    static func passwordFile(mode: Int, text: String = "secret\n") throws -> URL {
        let file = FileManager.default.temporaryDirectory.appending(path: "parley-turn-\(UUID().uuidString)")
        try text.write(to: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file.path)
        return file
    }

    @Test("refused with a usage error that says why", arguments: [
        (["--ice", "maybe"], "--ice expects on or off"),
        (["--ice", "off", "--stun-server", "127.0.0.1"], "drop --ice off"),
        (["--stun-server", "127.0.0.1:0"], "a port of 1–65535"),
        (["--stun-server", "stun.invalid"], "cannot resolve stun.invalid"),
        (["--turn-server", "stun:127.0.0.1"], "expects turn:HOST[:PORT]"),
        (["--turn-server", "turn:127.0.0.1?transport=sctp"], "expects turn:HOST[:PORT]"),
        (["--turn-server", "turn:127.0.0.1"], "needs --turn-user and --turn-password-file"),
        (["--turn-user", "alice"], "go with --turn-server"),
        (["--media", "off", "--ice", "on"], "ICE needs parleyd's own media"),
    ])
    func refused(arguments: [String], says: String) throws {
        let run = try RunningProcess(
            try Interop.binary("parleyd"), arguments + ["--no-control", "--no-history"], name: "parleyd \(arguments)")
        #expect(try run.waitForExit() == 64, "\(run.standardError)")
        #expect(run.standardError.contains(says), "\(run.standardError)")
    }

    @Test("a TURN password file others may read is refused (64), and the password is never printed; one of mode 0600 is taken")
    func passwordFileMode() throws {
        let open = try Self.passwordFile(mode: 0o644, text: "hunter2-turn\n")
        defer { try? FileManager.default.removeItem(at: open) }
        let turn = ["--turn-server", "turn:127.0.0.1:3478?transport=udp", "--turn-user", "alice"]
        let refused = try RunningProcess(
            try Interop.binary("parleyd"), turn + ["--turn-password-file", open.path, "--no-control", "--no-history"],
            name: "parleyd (0644)")
        #expect(try refused.waitForExit() == 64)
        #expect(refused.standardError.contains("chmod 600"), "\(refused.standardError)")
        #expect(!refused.standardError.contains("hunter2"), "the password is never printed")
        let closed = try Self.passwordFile(mode: 0o600, text: "hunter2-turn\n")
        defer { try? FileManager.default.removeItem(at: closed) }
        let parleyd = try Parleyd(["--media", "gstreamer", "--audio-sink", "null"] + turn + ["--turn-password-file", closed.path])
        #expect(try parleyd.process.stop() == 0)
        #expect(!parleyd.process.lines.contains { $0.contains("hunter2") }, "the password is never logged")
    }
}
