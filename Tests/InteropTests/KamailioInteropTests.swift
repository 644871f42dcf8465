import Foundation
import Testing

/// parleyd behind a real SIP proxy: Kamailio 5.6 running Examples/kamailio/kamailio.cfg (registrar, record-routing
/// stateful proxy, dispatcher pool, tsilo-held INVITEs for sleeping devices woken through evapi → `parley
/// push-gateway` → `parley push-sim`). Everything on 127.0.0.1 at ports chosen per run; every process ended by PID.
@Suite("Interop: Kamailio", .serialized, .timeLimit(.minutes(1)))
struct KamailioInteropTests {
    static func parley(_ arguments: [String]) throws -> ControlCLITests.Run { try ControlCLITests.parley(arguments) }

    /// A parleyd registered at `kamailio` as `user`.
    static func registered(_ user: String, at kamailio: Kamailio, _ extra: [String] = []) throws -> Parleyd {
        let parleyd = try Parleyd(["--user", user, "--register", kamailio.uri] + extra)
        try parleyd.process.waitForLine("its registration") { $0.contains("registration: registered") }
        return parleyd
    }

    /// The Call-ID in a push-gateway line (`push call-id=ID token=…`).
    static func callID(in line: String) -> String? {
        guard let range = line.range(of: "call-id=") else { return nil }
        return String(line[range.upperBound...].prefix { $0 != " " })
    }

    @Test("two registered parleyd call each other through Kamailio; ACK and BYE follow the Record-Route")
    func callThroughProxy() throws {
        let kamailio = try Kamailio()
        let alice = try Self.registered("alice", at: kamailio, ["--auto-answer", "0"])
        let bob = try Self.registered("bob", at: kamailio, ["--auto-answer", "0", "--script", "wait 200; end"])
        #expect(try Self.parley(["call", kamailio.address("bob"), "--data-dir", alice.dataDirectory.path]).status == 0)
        try bob.waitForEnded(1)
        try alice.waitForEnded(1)
        #expect(try Self.parley(["call", kamailio.address("alice"), "--data-dir", bob.dataDirectory.path]).status == 0)
        try bob.waitForEnded(2)
        try alice.waitForEnded(2)
        #expect(alice.transitions == [
            ["idle", "ringing", "joined", "left (remoteEnded)"], ["ringing", "joining", "joined", "left (remoteEnded)"],
        ])
        #expect(bob.transitions == [
            ["ringing", "joining", "joined", "leaving", "left (localEnded)"], ["idle", "ringing", "joined", "leaving", "left (localEnded)"],
        ])
        let callIDs = alice.callIDs
        #expect(callIDs.count == 2 && callIDs == bob.callIDs)
        for callID in callIDs {
            // The callee's BYE (first call) and the caller's (second) both reach the proxy: the route sets were kept.
            try kamailio.waitForLog("the BYE of \(callID)") { $0.contains("in-dialog BYE \(callID) via the record-route") }
            #expect(kamailio.log.contains { $0.contains("in-dialog ACK \(callID) via the record-route") })
        }
    }

    @Test("the dispatcher spreads calls for sip:support@ round robin over two parleyd, fails over when one stops, probes it back in when it returns")
    func dispatcherPool() throws {
        let member = ["--user", "support", "--auto-answer", "0", "--script", "wait 200; end"]
        let first = try Parleyd(member), second = try Parleyd(member)
        let kamailio = try Kamailio(.init(pool: [first.port, second.port], noReplyMilliseconds: 1_500, pingSeconds: 1))
        let caller = try Parleyd(["--user", "carol"])
        let call = ["call", kamailio.address("support"), "--data-dir", caller.dataDirectory.path]
        func calls(_ count: Int) throws { for _ in 0..<count { #expect(try Self.parley(call).status == 0) } }
        try calls(4)
        try first.waitForEnded(2)
        try second.waitForEnded(2)
        #expect(first.transitions.count == 2 && second.transitions.count == 2, "round robin: two calls each")

        _ = try first.process.stop()
        try calls(2)
        try second.waitForEnded(4)
        let failover = try kamailio.waitForLog("a failover") { $0.contains("fails over to sip:127.0.0.1:\(second.port)") }
        #expect(kamailio.log.filter { $0.contains("fails over") } == [failover], "one of the two calls met the stopped member")
        try calls(1)
        try second.waitForEnded(5)
        #expect(kamailio.log.filter { $0.contains("fails over") }.count == 1, "a member marked down is skipped")

        // The member returns on its old port: the OPTIONS probe brings it back into the rotation.
        let revived = try Parleyd(member + ["--listen", "udp://127.0.0.1:\(first.port)"])
        try kamailio.waitForLog("the member probed up", timeout: .seconds(10)) {
            $0.contains("member sip:127.0.0.1:\(first.port) is up")
        }
        try calls(2)
        try revived.waitForEnded(1)
        try second.waitForEnded(6)
        try caller.waitForEnded(9)
        #expect(caller.transitions.count == 9 && caller.transitions.allSatisfy { $0.contains("joined") },
                "every call was answered: \(caller.transitions)")
    }

    @Test("a sleeping device is called: Kamailio holds the INVITE, the push wakes a fresh parleyd, which registers and answers the pushed conversation")
    func pushWakesSleepingDevice() throws {
        let kamailio = try Kamailio()
        let push = try PushPath(evapiPort: kamailio.evapiPort)
        defer { push.stop() }
        try push.sleep(try push.device("alice", token: "tok-alice", at: kamailio), token: "tok-alice")

        let caller = try Parleyd(["--user", "bob", "--call", kamailio.address("alice"), "--script", "wait 300; end"])
        let pushed = try push.gateway.waitForLine("the push") { $0.contains("push call-id=") && $0.contains("stored push=") }
        #expect(pushed.contains("token=tok-alice for sip:alice@"), "\(pushed)")
        let callID = try #require(Self.callID(in: pushed))

        let device = try push.device("alice", token: "tok-alice", at: kamailio, ["--auto-answer", "100"])
        try device.waitForEnded(1)
        try caller.waitForEnded(1)
        #expect(device.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]])
        #expect(device.callIDs == [callID])
        let uuid = try #require(device.conversationUUIDs.first)
        // The push and the INVITE are one conversation, whichever reached the woken device first.
        let handled = try #require(device.process.lines.first { $0.contains("for call-id \(callID): ") && $0.contains("push p") })
        #expect(handled.hasSuffix("reported \(uuid)"), "\(handled)")
        #expect(caller.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])
        #expect(kamailio.log.contains { $0.contains("registered sip:alice@") && $0.contains("from 127.0.0.1:\(device.port)") })
        try kamailio.waitForLog("the BYE") { $0.contains("in-dialog BYE \(callID) via the record-route") }
    }

    @Test("the push reaches the woken device before its REGISTER: the INVITE ts_append sends joins the pushed conversation")
    func pushBeforeRegister() throws {
        let kamailio = try Kamailio()
        let push = try PushPath(evapiPort: kamailio.evapiPort)
        defer { push.stop() }
        try push.sleep(try push.device("judy", token: "tok-judy", at: kamailio), token: "tok-judy")
        let caller = try Parleyd(["--user", "bob", "--call", kamailio.address("judy"), "--script", "wait 300; end"])
        let pushed = try push.gateway.waitForLine("the push") { $0.contains("push call-id=") && $0.contains("stored push=") }
        let callID = try #require(Self.callID(in: pushed))

        // Woken without --register, so the push comes first; its registration is then sipp's, naming its address.
        let device = try Parleyd([
            "--user", "judy", "--push-service", "127.0.0.1:\(push.simulatorPort)", "--push-token", "tok-judy",
            "--auto-answer", "100",
        ])
        try device.process.waitForLine("the pushed conversation") { $0.contains("for call-id \(callID): reported") }
        try device.process.waitForLine("it ringing") { $0.contains("→ ringing") }
        #expect(kamailio.log.filter { $0.contains("registered sip:judy@") }.count == 1, "only the sleeping device's binding so far")
        let register = try SippRun.run([
            "-sf", SippInteropTests.scenario("uac-register-contact.xml"), "127.0.0.1:\(kamailio.port)", "-i", "127.0.0.1",
            "-p", String(Interop.freePort()), "-s", "judy", "-key", "contact", "sip:judy@127.0.0.1:\(device.port)", "-m", "1",
        ])
        #expect(register.status == 0, "\(register.output)")
        try device.waitForEnded(1)
        try caller.waitForEnded(1)
        #expect(device.process.lines.contains { $0.contains("the INVITE for a pushed call arrived") })
        #expect(device.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]])
        #expect(device.callIDs == [callID])
        #expect(caller.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])
    }

    @Test("the caller cancels while the device sleeps: 487 from the proxy, and the woken device's push ends as cancelled")
    func cancelWhileAsleep() throws {
        let kamailio = try Kamailio()
        let push = try PushPath(evapiPort: kamailio.evapiPort)
        defer { push.stop() }
        try push.sleep(try push.device("dave", token: "tok-dave", at: kamailio), token: "tok-dave")

        let caller = try Parleyd(["--user", "bob"])
        // The Start settles at the first 180, which a sleeping device never sends: the command runs on meanwhile.
        let call = try RunningProcess(
            try Interop.binary("parley"), ["call", kamailio.address("dave"), "--data-dir", caller.dataDirectory.path],
            name: "parley call")
        let pushed = try push.gateway.waitForLine("the push stored") { $0.contains("push call-id=") && $0.contains("stored push=p1") }
        let callID = try #require(Self.callID(in: pushed))
        let end = try Self.parley(["end", "1", "--data-dir", caller.dataDirectory.path])
        #expect(end.status == 0, "\(end.output)")
        #expect(try call.waitForExit(timeout: .seconds(10)) == 1, "the Start never settled: the call was ended first")
        try caller.waitForEnded(1)
        #expect(caller.transitions == [["idle", "leaving", "left (localEnded)"]])
        #expect(caller.process.lines.contains { $0.contains("\(callID): 487 Request Terminated → cancelled") })
        try kamailio.waitForLog("the 487") { $0.contains("held INVITE \(callID) cancelled by the caller: 487") }
        try push.gateway.waitForLine("the cancel push") { $0.contains("cancel call-id=\(callID) token=tok-dave") && $0.contains("stored") }

        let device = try push.device("dave", token: "tok-dave", at: kamailio)
        try device.waitForEnded(1)
        #expect(device.transitions == [["ringing", "left (unanswered)"]])
        let uuid = try #require(device.conversationUUIDs.first)
        #expect(device.process.lines.contains { $0.contains("for call-id \(callID): cancelled \(uuid)") })
        #expect(!device.process.lines.contains { $0.contains("the INVITE for a pushed call arrived") })
    }

    @Test("nobody wakes within the hold time: the caller gets 480 Temporarily Unavailable (not 408) and the push is withdrawn")
    func holdExpires() throws {
        let kamailio = try Kamailio(.init(holdMilliseconds: 3_000, noReplyMilliseconds: 1_500))
        let push = try PushPath(evapiPort: kamailio.evapiPort)
        defer { push.stop() }
        try push.sleep(try push.device("erin", token: "tok-erin", at: kamailio), token: "tok-erin")
        let started = ContinuousClock.now
        let caller = try Parleyd(["--user", "bob", "--call", kamailio.address("erin")])
        try caller.waitForEnded(1)
        let waited = ContinuousClock.now - started
        #expect(caller.transitions == [["idle", "left (unanswered)"]])
        #expect(caller.process.lines.contains { $0.contains("480 Temporarily Unavailable → unanswered") })
        // tm's timers tick every 62.5 ms: the hold (3 s), not the no-reply timer (1.5 s), ended it.
        #expect(waited >= .milliseconds(2_700) && waited < .seconds(10), "held for HOLD_MS: \(waited)")
        let callID = try #require(caller.callIDs.first)
        #expect(kamailio.log.contains { $0.contains("held INVITE \(callID): no device answered in time: 480") })
        try push.gateway.waitForLine("the withdrawing cancel push") { $0.contains("cancel call-id=\(callID) token=tok-erin") }
    }

    @Test("pike: an address flooding the proxy is cut off, and let back in once it slows down")
    func floodLimit() throws {
        let kamailio = try Kamailio()
        let flood = try SippRun.run([
            "-sn", "uac", "127.0.0.1:\(kamailio.port)", "-i", "127.0.0.1", "-p", String(Interop.freePort()), "-s", "nobody",
            "-r", "500", "-m", "600", "-recv_timeout", "2000",
        ])
        #expect(flood.status != 0, "calls to a blocked address go unanswered")
        try kamailio.waitForLog("pike blocking the flood") { $0.contains("pike: 127.0.0.1 is flooding") }
        #expect(kamailio.log.contains { $0.contains("no binding for sip:nobody@") }, "the first requests were served (404)")
        // Quiet again: the same address registers (REGISTER retransmissions carry it past the block).
        let parleyd = try Parleyd(["--user", "heidi", "--register", kamailio.uri])
        try parleyd.process.waitForLine(timeout: .seconds(20), "its registration") { $0.contains("registration: registered") }
    }
}
