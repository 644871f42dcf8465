import Foundation
import ParleyTestSupport
import Testing

/// ICE across the NAT lab (Scripts/nat-lab): parleyd in host1 calls parleyd in host2 through Kamailio, each with the
/// lab's STUN and (where it says) TURN server; audio checked by frequency both ways, the selected pair from the log.
@Suite("NAT lab: ICE with STUN and TURN between two homes", .serialized, .timeLimit(.minutes(3)))
struct NATLabICETests {
    /// What one call between the homes gave: each side's process (alice in host1 called bob in host2), what each
    /// heard, and each side's selected RTP pair as parleyd logged it.
    struct Call {
        let phones: [RunningProcess]
        let heard: [Recording]
        let pairs: [String?]
        let tones = [1_000.0, 440.0]

        /// Seconds alice heard bob's tone, and bob alice's.
        var seconds: [Double] { [heard[0].seconds(at: tones[1]), heard[1].seconds(at: tones[0])] }
        /// Each side's conversation, as it went.
        var conversations: [[String]] { phones.map { NATTraversalTests.transitions($0).first ?? [] } }
        /// What each side said about ICE.
        var ice: [[String]] { phones.map { $0.lines.filter { $0.contains("ICE") } } }
    }

    static let stun = ["--stun-server", NATLabScript.stunServer]

    /// TURN options with the lab's user and a password file holding `password` (0600).
    static func turn(_ lab: NATLabScript, password: String = NATLabScript.turnPassword) throws -> [String] {
        let file = lab.directory.appending(path: "turn-password-\(UUID().uuidString)")
        try (password + "\n").write(to: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        return ["--turn-server", "turn:\(NATLabScript.turnServer)", "--turn-user", NATLabScript.turnUser, "--turn-password-file", file.path]
    }

    /// alice (host1, 1,000 Hz) calls bob (host2, 440 Hz, answering) for `seconds`; `options` are each one's extra
    /// options, `ends` the number of conversations to wait for on each side.
    static func call(
        _ lab: NATLabScript, options: [[String]], seconds: Int = 3, bobScript: String? = nil, bobSide: NATLabScript.Side = .host2,
        during: ((RunningProcess) throws -> Void)? = nil
    ) throws -> Call {
        let parleyd = try Interop.binary("parleyd")
        let users = ["alice", "bob"], tones = [1_000, 440]
        let data = users.map { lab.directory.appending(path: $0) }
        let heard = users.map { lab.directory.appending(path: "\($0)-heard") }
        func phone(_ index: Int) throws -> RunningProcess {
            let script = index == 0 ? "wait \(seconds * 1_000); end" : bobScript ?? "wait 60000; end"
            var arguments: [String] = [
                "--listen", "udp://0.0.0.0:5070", "--user", users[index], "--data-dir", data[index].path,
                "--register", NATLabScript.registrar, "--keep-alive", "1", "--auto-answer", "100", "--script", script,
            ]
            arguments += [
                "--media", "gstreamer", "--audio-source", "tone:\(tones[index])", "--audio-sink", "file:\(heard[index].path)",
                "--rtp-ports", "4\(index + 1)000-4\(index + 1)099", "--log-level", "debug",
            ]
            return try lab.start(on: index == 0 ? .host1 : bobSide, parleyd, arguments + options[index], name: users[index])
        }
        let phones = [try phone(0), try phone(1)]
        for (index, phone) in phones.enumerated() {
            let behind = index == 0 || bobSide == .host2
            try phone.waitForLine("\(users[index]) registered\(behind ? " under nat\(index + 1)'s mapping" : "")") {
                $0.contains("registration: registered") && (!behind || $0.contains("as \(NATLabScript.natAddresses[index]):"))
            }
        }
        let call = try ControlCLITests.parley(["call", "sip:bob@\(NATLabScript.publicAddress):5060", "--data-dir", data[0].path])
        #expect(call.status == 0, "\(call.output)")
        try during?(phones[0])
        for phone in phones { try NATTraversalTests.waitForEnded(phone, 1, timeout: .seconds(60)) }
        for (index, phone) in phones.enumerated() {
            try phone.waitForLine("\(users[index])'s recording") { $0.contains("recording complete:") }
        }
        let pairs = phones.map { phone in phone.lines.last { $0.contains("ICE: RTP goes") }.map { String($0.split(separator: "ICE: ").last ?? "") } }
        return Call(phones: phones, heard: try heard.map { try NATLabTests.heard(in: $0) }, pairs: pairs)
    }

    @Test("two port-keeping NATs, ICE with STUN: each offers host and server-reflexive candidates, the checks select srflx↔srflx (each NAT's public address), and the audio goes through it both ways")
    func srflxBetweenHomes() throws {
        let lab = try NATLabScript()
        defer { try? lab.stop() }
        let call = try Self.call(lab, options: [Self.stun, Self.stun])
        print("NAT lab, ICE with STUN: pairs \(call.pairs), heard \(call.seconds) s")
        #expect(call.seconds.allSatisfy { $0 >= 0.8 * 3 }, "audio both ways: \(call.seconds); \(call.ice)")
        for index in 0..<2 {
            let pair = call.pairs[index] ?? ""
            #expect(pair.hasPrefix("RTP goes srflx \(NATLabScript.natAddresses[index]):")
                && pair.contains("↔ srflx \(NATLabScript.natAddresses[1 - index]):"), "\(call.ice[index])")
        }
        try lab.stop()
    }

    @Test("two symmetric NATs, ICE with TURN: no server-reflexive pair can work, the checks select a path through the relay, and the audio goes through it both ways; mediaStats' kinds reach the history")
    func relayBetweenSymmetricNATs() throws {
        let lab = try NATLabScript(symmetric: "both")
        defer { try? lab.stop() }
        let call = try Self.call(lab, options: [Self.stun + (try Self.turn(lab)), Self.stun + (try Self.turn(lab))])
        print("NAT lab, ICE with TURN through symmetric NATs: pairs \(call.pairs), heard \(call.seconds) s")
        #expect(call.seconds.allSatisfy { $0 >= 0.7 * 3 }, "audio both ways: \(call.seconds); \(call.ice)")
        for index in 0..<2 {
            #expect(call.pairs[index]?.contains("relay \(NATLabScript.publicAddress):") == true, "through coturn: \(call.ice[index])")
        }
        try lab.stop()
    }

    @Test("two symmetric NATs, ICE with TURN and DTLS-SRTP: the handshake crosses the relay, each checks the other's certificate, and the encrypted audio goes both ways")
    func dtlsThroughRelay() throws {
        let lab = try NATLabScript(symmetric: "both")
        defer { try? lab.stop() }
        let dtls = ["--media-encryption", "dtls"]
        let call = try Self.call(lab, options: [Self.stun + (try Self.turn(lab)) + dtls, Self.stun + (try Self.turn(lab)) + dtls], seconds: 5)
        print("NAT lab, ICE with TURN and DTLS-SRTP: pairs \(call.pairs), heard \(call.seconds) s")
        #expect(call.seconds.allSatisfy { $0 >= 0.75 * 4 }, "audio both ways: \(call.seconds); \(call.ice)")
        for phone in call.phones {
            #expect(phone.lines.contains { $0.contains("DTLS-SRTP established, the peer's certificate matches") }, "\(call.ice)")
        }
        try lab.stop()
    }

    @Test("two symmetric NATs with STUN only: every check fails, and each side ends the call as iceFailed (BYE) in bounded time, not with silent audio")
    func stunOnlyBetweenSymmetricNATs() throws {
        let lab = try NATLabScript(symmetric: "both")
        defer { try? lab.stop() }
        let started = ContinuousClock.now
        let call = try Self.call(lab, options: [Self.stun, Self.stun], seconds: 60)
        let took = ContinuousClock.now - started
        print("NAT lab, STUN only through symmetric NATs: \(call.conversations) after \(took); \(call.ice)")
        #expect(call.conversations.contains { $0.last == "left (iceFailed)" }, "\(call.conversations)")
        #expect(call.seconds.allSatisfy { $0 == 0 }, "no audio: \(call.seconds)")
        #expect(took < .seconds(45), "\(took)")
        try lab.stop()
    }

    @Test("a NAT forgets its mappings mid-call (a symmetric NAT's conntrack flushed: the packets of the phone behind it leave from new ports the relay does not know), alice's (controlling) or bob's (controlled): consent freshness (RFC 7675) notices, ICE restarts by re-INVITE (new credentials, RFC 8839 §4.4.1.1.1), the checks find a path again, and the audio comes back both ways", arguments: [1, 2])
    func mappingLostMidCall(nat: Int) throws {
        let lab = try NATLabScript(symmetric: "both")
        defer { try? lab.stop() }
        var flushed: ContinuousClock.Instant?, restored: ContinuousClock.Instant?
        let data = lab.directory.appending(path: "alice")
        let call = try Self.call(lab, options: [Self.stun + (try Self.turn(lab)), Self.stun + (try Self.turn(lab))], seconds: 90) { alice in
            try alice.waitForLine("alice's path") { $0.contains("ICE: RTP goes") }
            Thread.sleep(forTimeInterval: 3)
            let flush = try lab.run(on: nat == 1 ? .nat1 : .nat2, URL(fileURLWithPath: "/usr/sbin/conntrack"), ["-F"], timeout: .seconds(10))
            #expect(flush.status == 0, "\(flush.output)")
            flushed = .now
            // A path again: alice's RTP pair selected after the restart (hers, or her answer to bob's).
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline, restored == nil {
                let lines = alice.lines
                if let restart = lines.firstIndex(where: { $0.contains("ICE restarts") }),
                    lines[restart...].contains(where: { $0.contains("ICE: RTP goes") })
                {
                    restored = .now
                }
                Thread.sleep(forTimeInterval: 0.2)
            }
            Thread.sleep(forTimeInterval: 6)
            let end = try ControlCLITests.parley(["end", "1", "--data-dir", data.path])
            #expect(end.status == 0, "\(end.output)")
        }
        let lost = try #require(flushed)
        let back = try #require(restored, "no path after the restart: \(call.ice)")
        print("NAT lab, nat\(nat)'s mappings flushed mid-call: a path again \(lost.duration(to: back)) later; \(call.conversations); "
            + "heard \(call.seconds) s; \(call.ice[0].filter { $0.contains("restart") || $0.contains("RTP goes") })")
        #expect(call.conversations[0].last == "left (localEnded)", "\(call.conversations); \(call.ice)")
        #expect(call.conversations[1].last == "left (remoteEnded)", "\(call.conversations)")
        #expect(lost.duration(to: back) < .seconds(45), "a path again in bounded time")
        // About 3 s before the flush, none until the restart, 6 s after it: audio came back each way.
        #expect(call.seconds.allSatisfy { $0 > 6 }, "audio after the restart: \(call.seconds)")
        try lab.stop()
    }

    @Test("a TURN server that refuses our credentials: parleyd says so (never the password), and the call goes on the other paths: alice behind nat1 reaches bob on the public side, audio both ways")
    func refusedTURNCredentials() throws {
        let lab = try NATLabScript()
        defer { try? lab.stop() }
        // With a TURN server set, libnice takes the server-reflexive candidate from the allocation's answer (a Binding
        // answer from another STUN server fails its validation then): a refused allocation leaves host candidates, and
        // the path is found from the checks (peer-reflexive) toward a peer that can be reached.
        let call = try Self.call(
            lab, options: [Self.stun + (try Self.turn(lab, password: "wrong-password")), ["--ice", "on"]], bobSide: .public)
        print("NAT lab, TURN refusing alice's credentials: pairs \(call.pairs), heard \(call.seconds) s")
        #expect(call.phones[0].lines.contains { $0.contains("no relayed candidate from the TURN server") }, "\(call.ice[0])")
        #expect(!call.phones.contains { $0.lines.contains { $0.contains("wrong-password") } }, "the password is never logged")
        #expect(call.seconds.allSatisfy { $0 >= 0.8 * 3 }, "audio both ways: \(call.seconds); \(call.ice)")
        #expect(call.pairs[0]?.contains("↔ host \(NATLabScript.publicAddress):") == true, "\(call.ice[0])")
        try lab.stop()
    }
}
