import Foundation
import ParleyTestSupport
import Testing

/// ICE between parleyd and baresip 1.0.0 (libre 1.1.0) across the NAT lab (Scripts/nat-lab): parleyd (alice, 1,000 Hz)
/// in host1, baresip (bob, its `ausine` 440 Hz, `sndfile` recordings) in host2, both registered at Kamailio; audio
/// checked by frequency both ways, each side's selected path from its log.
///
/// baresip's checks go one pair at a time, and a pair that gets no answer takes it about 2.3 s to give up (each
/// component's host↔host pair first, then the others): its ICE completes some 4.6 s into a call between two
/// port-keeping NATs (two components, one failing pair each) and about 9.2 s behind a symmetric NAT (two failing
/// pairs each). It sends no audio and records nothing before its ICE completes, so its recordings start then: the
/// audio checks are against how long baresip sent, with a floor, and the calls last long enough for it.
@Suite("NAT lab: ICE between parleyd and baresip 1.0", .serialized, .timeLimit(.minutes(3)))
struct NATLabBaresipTests {
    /// What one call gave.
    struct Call {
        let parleyd: RunningProcess
        let baresip: Baresip
        /// What parleyd heard; what baresip received and what it sent (nil: it recorded nothing, its audio never
        /// started).
        let parleydHeard: Recording
        let baresipHeard: Recording?
        let baresipSent: Recording?
        /// parleyd's selected RTP pair (`RTP goes srflx … ↔ srflx …`), as it logged it last.
        let pair: String?
        /// How the call went on parleyd's side.
        var conversation: [String] { NATTraversalTests.transitions(parleyd).first ?? [] }
        /// Seconds parleyd heard 440 Hz, baresip 1,000 Hz, and baresip sent its tone.
        var seconds: (parleyd: Double, baresip: Double, sent: Double) {
            (parleydHeard.seconds(at: 440), baresipHeard?.seconds(at: 1_000) ?? 0, baresipSent?.duration ?? 0)
        }
        /// What each side said about ICE (baresip: its check list, candidates and TURN client).
        var ice: String {
            let ours = parleyd.lines.filter { $0.contains("ICE") }
            let prefixes = ["ice:", "{", "chklist", "connchk", "stream: mnat", "audio: Dumping"]
            let theirs = baresip.lines.filter { line in
                prefixes.contains { line.hasPrefix($0) } || line.contains("{comp=") || line.contains("fnd=")
            }
            return (["parleyd:"] + ours + ["baresip:"] + theirs).joined(separator: "\n")
        }
    }

    static let registrarHost = NATLabScript.publicAddress
    /// baresip's `stunserver` parameters: the lab's STUN-only server, or coturn as TURN with its credential.
    static let baresipSTUN = "stunserver=stun:\(NATLabScript.stunServer)"
    static let baresipTURN = "stunserver=turn:\(NATLabScript.turnServer);stunuser=\(NATLabScript.turnUser);stunpass=\(NATLabScript.turnPassword)"

    /// parleyd (host1) and baresip (host2, `medianat=ice` with `baresipNAT`) register at Kamailio; then parleyd calls
    /// baresip (or baresip parleyd, with `baresipCalls`), parleyd hangs up after `seconds` (or a call that ends
    /// otherwise is waited for), and both recordings are read.
    static func call(
        _ lab: NATLabScript, parleydOptions: [String], baresipNAT: String, baresipCalls: Bool = false, seconds: Int
    ) throws -> Call {
        let folder = lab.directory.appending(path: "baresip-recordings")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let baresip = try Baresip(
            recordTo: folder, account: "<sip:bob@\(registrarHost)>;regint=60;answermode=auto;medianat=ice;\(baresipNAT)",
            modules: ["stun.so", "turn.so", "ice.so"], verbose: true,
            lab: (lab, .host2, NATLabScript.hostAddresses[1]))
        return try baresip.quotingTranscript {
            try baresip.waitFor("its registration at Kamailio") { $0.contains("{0/UDP/v4} 200 OK") }
            let data = lab.directory.appending(path: "alice"), heard = lab.directory.appending(path: "alice-heard")
            let parleyd = try lab.start(
                on: .host1, try Interop.binary("parleyd"),
                [
                    "--listen", "udp://0.0.0.0:5070", "--user", "alice", "--data-dir", data.path,
                    "--register", NATLabScript.registrar, "--keep-alive", "1", "--auto-answer", "100",
                    "--script", "wait \(seconds * 1_000); end", "--media", "gstreamer", "--audio-source", "tone:1000",
                    "--audio-sink", "file:\(heard.path)", "--rtp-ports", "41000-41099", "--log-level", "debug",
                ] + parleydOptions, name: "alice")
            try parleyd.waitForLine("alice registered under nat1's mapping") {
                $0.contains("registration: registered") && $0.contains("as \(NATLabScript.natAddresses[0]):")
            }
            if baresipCalls {
                try baresip.send("/dial sip:alice@\(registrarHost):5060")
            } else {
                let call = try ControlCLITests.parley(["call", "sip:bob@\(registrarHost):5060", "--data-dir", data.path])
                #expect(call.status == 0, "\(call.output)")
            }
            try NATTraversalTests.waitForEnded(parleyd, 1, timeout: .seconds(seconds + 30))
            try parleyd.waitForLine("alice's recording") { $0.contains("recording complete:") }
            // Its recordings are complete once its audio is gone (a debug line).
            try baresip.waitFor(timeout: .seconds(10), "the end of its call") { $0.hasPrefix("audio: destroyed") }
            let recordings = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            func recording(_ suffix: String) throws -> Recording? {
                let files = recordings.filter { $0.hasSuffix(suffix) }
                try #require(files.count <= 1, "one call's recordings in \(folder.path): \(recordings)")
                return try files.first.map { try Recording(wavAt: folder.appending(path: $0).path) }
            }
            let pair = parleyd.lines.last { $0.contains("ICE: RTP goes") }.map { String($0.split(separator: "ICE: ").last ?? "") }
            return Call(
                parleyd: parleyd, baresip: baresip, parleydHeard: try NATLabTests.heard(in: heard),
                baresipHeard: try recording("-dec.wav"), baresipSent: try recording("-enc.wav"), pair: pair)
        }
    }

    /// Audio both ways: baresip sent for at least `floor` seconds (its ICE completed in time), heard parleyd's tone
    /// for most of what it recorded, and parleyd heard baresip's for most of what baresip sent.
    static func expectAudioBothWays(_ call: Call, floor: Double) {
        let seconds = call.seconds
        #expect(seconds.sent >= floor, "baresip sent \(seconds.sent) s (its ICE completed late or never)\n\(call.ice)")
        #expect(seconds.baresip >= max(floor, 0.8 * (call.baresipHeard?.duration ?? 0)),
                "baresip heard 1,000 Hz for \(seconds.baresip) of \(call.baresipHeard?.duration ?? 0) s recorded\n\(call.ice)")
        #expect(seconds.parleyd >= max(floor, 0.8 * seconds.sent),
                "parleyd heard 440 Hz for \(seconds.parleyd) s of the \(seconds.sent) s baresip sent\n\(call.ice)")
    }

    /// baresip's selected remote address, from `stream: mnat 'ice' connected: raddr RTP RTCP`.
    static func baresipRemote(_ call: Call) -> String? {
        call.baresip.lines.last { $0.hasPrefix("stream: mnat 'ice' connected: raddr ") }
            .map { String($0.dropFirst("stream: mnat 'ice' connected: raddr ".count)) }
    }

    @Test("parleyd calls baresip across two port-keeping NATs, both ICE with STUN: srflx↔srflx (each NAT's public address) on both sides, audio both ways")
    func parleydCallsBaresip() throws {
        let lab = try NATLabScript()
        defer { try? lab.stop() }
        let call = try Self.call(
            lab, parleydOptions: ["--stun-server", NATLabScript.stunServer], baresipNAT: Self.baresipSTUN, seconds: 12)
        print("NAT lab, parleyd → baresip, ICE with STUN: parleyd's pair \(call.pair ?? "-"), baresip's remote \(Self.baresipRemote(call) ?? "-"), heard/sent \(call.seconds) s")
        Self.expectSrflxBetweenHomes(call)
        Self.expectAudioBothWays(call, floor: 4)
        #expect(call.conversation.last == "left (localEnded)", "\(call.conversation)")
        try lab.stop()
    }

    @Test("baresip calls parleyd across two port-keeping NATs, both ICE with STUN: srflx↔srflx on both sides, audio both ways")
    func baresipCallsParleyd() throws {
        let lab = try NATLabScript()
        defer { try? lab.stop() }
        let call = try Self.call(
            lab, parleydOptions: ["--stun-server", NATLabScript.stunServer], baresipNAT: Self.baresipSTUN, baresipCalls: true,
            seconds: 12)
        print("NAT lab, baresip → parleyd, ICE with STUN: parleyd's pair \(call.pair ?? "-"), baresip's remote \(Self.baresipRemote(call) ?? "-"), heard/sent \(call.seconds) s")
        Self.expectSrflxBetweenHomes(call)
        Self.expectAudioBothWays(call, floor: 4)
        #expect(call.conversation.last == "left (localEnded)", "\(call.conversation)")
        try lab.stop()
    }

    static func expectSrflxBetweenHomes(_ call: Call) {
        let nats = NATLabScript.natAddresses
        #expect(call.pair?.hasPrefix("RTP goes srflx \(nats[0]):") == true && call.pair?.contains("↔ srflx \(nats[1]):") == true,
                "parleyd's pair: \(call.ice)")
        #expect(Self.baresipRemote(call)?.hasPrefix("\(nats[0]):") == true, "baresip's path to nat1: \(call.ice)")
    }

    // baresip 1.0 with TURN does not work in this lab: see relayFailsInBaresip. The working relay case with baresip is
    // parleyd's relay candidate: parleyd behind a symmetric NAT with TURN, baresip behind a port-keeping one with STUN.

    @Test("TURN on parleyd's side: parleyd behind a symmetric NAT (TURN) calls baresip behind a port-keeping NAT (STUN only): the path is parleyd's relay ↔ baresip's srflx, audio both ways through coturn")
    func parleydRelayToBaresip() throws {
        let lab = try NATLabScript(symmetric: "1")
        defer { try? lab.stop() }
        let call = try Self.call(
            lab, parleydOptions: ["--stun-server", NATLabScript.stunServer] + (try NATLabICETests.turn(lab)),
            baresipNAT: Self.baresipSTUN, seconds: 16)
        print("NAT lab, parleyd (symmetric NAT, TURN) → baresip (STUN): parleyd's pair \(call.pair ?? "-"), baresip's remote \(Self.baresipRemote(call) ?? "-"), heard/sent \(call.seconds) s")
        #expect(call.pair?.hasPrefix("RTP goes relay \(NATLabScript.publicAddress):") == true
            && call.pair?.contains("↔ srflx \(NATLabScript.natAddresses[1]):") == true, "parleyd's pair: \(call.ice)")
        #expect(Self.baresipRemote(call)?.hasPrefix("\(NATLabScript.publicAddress):") == true, "baresip's path to parleyd's relay: \(call.ice)")
        Self.expectAudioBothWays(call, floor: 4)
        #expect(call.conversation.last == "left (localEnded)", "\(call.conversation)")
        try lab.stop()
    }

    @Test("baresip 1.0 with TURN (both NATs symmetric): coturn refuses baresip's permission for parleyd's LAN candidate (403 Forbidden IP); when libre then drops baresip's whole TURN client its checks fail, it never sends audio, and parleyd ends the call as iceFailed in bounded time; when its relay pair completed first (one CI run in several), the audio goes both ways")
    func relayFailsInBaresip() throws {
        let lab = try NATLabScript(symmetric: "both")
        defer { try? lab.stop() }
        let started = ContinuousClock.now
        let call = try Self.call(
            lab, parleydOptions: ["--stun-server", NATLabScript.stunServer] + (try NATLabICETests.turn(lab)),
            baresipNAT: Self.baresipTURN, seconds: 40)
        let took = ContinuousClock.now - started
        let lines = call.baresip.lines
        print("NAT lab, parleyd (TURN) → baresip (TURN), symmetric NATs: \(call.conversation) after \(took); heard/sent \(call.seconds) s\n"
            + lines.filter { $0.contains("TURN Client error") || $0.contains("connchk") || $0.contains("connectivity check") }.joined(separator: "\n"))
        #expect(lines.contains { $0.hasPrefix("ice: relay gathered for comp 1") }, "baresip allocated at coturn: \(call.ice)")
        #expect(lines.contains { $0.contains("TURN Client error: 403 Forbidden IP") }, "\(call.ice)")
        #expect(lab.log("turnserver.log").contains("A peer IP \(NATLabScript.hostAddresses[0]) denied"), "coturn: \(lab.log("turnserver.log"))")
        // baresip's own verdict (`ice: connectivity check failed`) comes only when its slow checks run out, which
        // parleyd's BYE may overtake: it is printed above, not required.
        // libre drops its TURN client after the 403, unless its relay pair's check completed first: a race in the
        // peer, seen both ways. parleyd does the right thing in each.
        if lines.contains(where: { $0.contains("connectivity check is complete") }) {
            Self.expectAudioBothWays(call, floor: 4)
            #expect(call.conversation.last == "left (localEnded)", "baresip's checks completed: the call runs its course: \(call.conversation)")
        } else {
            #expect(call.conversation.last == "left (iceFailed)", "\(call.conversation)")
            #expect(call.seconds.parleyd == 0 && call.seconds.sent == 0, "no audio: \(call.seconds)")
            #expect(took < .seconds(35), "\(took)")
        }
        try lab.stop()
    }
}
