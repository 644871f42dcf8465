import Foundation
import Testing

/// ICE per account between two parleyd on loopback: a call made or received through an account with a STUN server
/// of its own gathers a server-reflexive candidate from that server, where the node has none; a call through an
/// account that says `ice off` has no ICE, where the node has it. Audio checked by frequency.
extension AudioInterop {
    @Suite("Interop: ICE per account between two parleyd", .serialized, .timeLimit(.minutes(2)))
    struct AccountICEInteropTests {
        typealias Audio = AudioInteropTests

        /// The lines of `daemon`'s log that contain `text`.
        static func lines(_ daemon: Parleyd, _ text: String) -> [String] { daemon.process.lines.filter { $0.contains(text) } }

        @Test("the desk (node: ICE on, host candidates only) calls through work (its own STUN server): its offer has server-reflexive candidates from that server, and audio goes both ways; through home (ice off): no ICE; called on work: its answer has them again")
        func accountsOwnSTUNServer() throws {
            // A port-keeping "NAT" at 127.0.0.77: the candidates it gives can only have come from this server.
            let stun = try ReflectingSTUNServer(mappedAddress: "127.0.0.77")
            defer { stun.stop() }
            let file = try AccountICEOptionTests.config(
                ["ice on", "auto-answer 0", "script wait 3000; end"],
                accounts: [("work", "alice", ["stun-server 127.0.0.1:\(stun.port)"]), ("home", "carol", ["ice off"])])
            defer { try? FileManager.default.removeItem(at: file) }
            let (peer, peerFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0", "--ice", "on"])
            defer { try? FileManager.default.removeItem(at: peerFolder) }
            let (desk, deskFolder) = try Audio.parleyd(
                tone: 1_000, ["--config", file.path, "--call", "sip:parley@127.0.0.1:\(peer.port)"])
            defer { try? FileManager.default.removeItem(at: deskFolder) }

            // 1. Out through work, the default account.
            try desk.waitForEnded(1)
            try peer.waitForEnded(1)
            let heardByPeer = try Audio.recording(in: peerFolder, of: peer)
            let heardByDesk = try Audio.recording(in: deskFolder, of: desk)
            let ice = Self.lines(desk, "ICE") + Self.lines(peer, "ICE")
            #expect(heardByPeer.seconds(at: 1_000) >= 0.8 * 3, "the peer heard \(heardByPeer.dominantFrequencies()); \(ice)")
            #expect(heardByDesk.seconds(at: 440) >= 0.8 * 3, "the desk heard \(heardByDesk.dominantFrequencies()); \(ice)")
            let gathered = Self.lines(desk, "candidate(s) gathered")
            #expect(gathered.count == 1 && gathered[0].contains("2 srflx"), "RTP's and RTCP's mapping: \(gathered)")
            let asked = stun.requestsFrom.count
            #expect(asked >= 2, "work's STUN server was asked for RTP and RTCP: \(stun.requestsFrom)")
            #expect(Self.lines(peer, "ICE: checking 4 candidate(s) of the peer").count == 1, "host and srflx each: \(ice)")
            #expect(Self.lines(desk, "ICE: RTP goes host 127.0.0.1:").count == 1, "\(ice)")

            // 2. Out through home (ice off): a plain offer, though the node has ICE on.
            let viaHome = try ControlCLIPolishTests.parley(
                ["call", "sip:parley@127.0.0.1:\(peer.port)", "--account", "home", "--data-dir", desk.dataDirectory.path])
            #expect(viaHome.status == 0, "\(viaHome.stderr)")
            try desk.waitForEnded(2)
            try peer.waitForEnded(2)
            #expect(Self.lines(desk, "candidate(s) gathered").count == 1, "no agent for home's call")
            #expect(Self.lines(peer, "ICE: checking").count == 1, "home's offer had no ICE")
            #expect(stun.requestsFrom.count == asked)
            #expect(try MultiAccountTests.lastRecord(in: desk.dataDirectory)["account"] as? String == "sip:carol@127.0.0.1")

            // 3. In on work (its address of record in the To): the answer gathers from work's server again.
            let toWork = try ControlCLIPolishTests.parley(
                ["call", "sip:alice@127.0.0.1:\(desk.port)", "--data-dir", peer.dataDirectory.path])
            #expect(toWork.status == 0, "\(toWork.stderr)")
            try desk.waitForEnded(3)
            try peer.waitForEnded(3)
            let again = Self.lines(desk, "candidate(s) gathered")
            #expect(again.count == 2 && again[1].contains("2 srflx"), "\(again)")
            #expect(stun.requestsFrom.count >= asked + 2)
            #expect(Self.lines(peer, "ICE: checking 4 candidate(s) of the peer").count == 2, "\(Self.lines(peer, "ICE"))")
            let incoming = try MultiAccountTests.lastRecord(in: desk.dataDirectory)
            #expect(incoming["account"] as? String == "sip:alice@127.0.0.1" && incoming["direction"] as? String == "incoming")
            #expect(desk.transitions.allSatisfy { $0.last == "left (localEnded)" }, "\(desk.transitions)")
        }
    }
}
