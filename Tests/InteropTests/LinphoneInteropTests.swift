import Foundation
import ParleyTestSupport
import Testing

/// Real audio with linphonec 5.1 (inside `unshare -n`), checked by frequency both ways: parleyd sends 1,000 Hz,
/// linphonec plays 440 Hz from a file; each records what it hears. Each side's hold stops the audio both ways.
extension AudioInterop {
    @Suite("Interop: audio with linphonec", .serialized)
    struct LinphoneInteropTests {
        /// 2.5 s of call, 1.5 s on hold, 2.5 s again: 5 s of audio each way.
        static let talked = 5.0
        /// The whole call.
        static let call = 6.5

        @Test("parleyd calls linphonec: audio both ways; parleyd's hold stops it and resume brings it back")
        func parleydCallsAndHolds() throws {
            let peers = try LinphoneAndParleyd { port in
                ["--call", "sip:bob@127.0.0.1:\(port)", "--script", "wait 2500; hold; wait 1500; resume; wait 2500; end"]
            }
            try peers.process.waitForLine(timeout: .seconds(20), "the call's end") { $0.contains("left (localEnded)") }
            try peers.waitForLinphone("connected")
            try Self.checkAudio(peers, parleydHears: Self.talked)
            #expect(peers.process.lines.contains { $0.contains("joined → paused") })
        }

        @Test("linphonec calls parleyd: opus both ways; linphonec's hold (pause) stops it and resume brings it back")
        func linphoneCallsAndHolds() throws {
            let peers = try LinphoneAndParleyd { _ in ["--auto-answer", "0"] }
            peers.send("call sip:parley@127.0.0.1:\(peers.parleydPort)")
            try peers.process.waitForLine("the call joined") { $0.contains("joining → joined") }
            Thread.sleep(forTimeInterval: 2.5)
            peers.send("pause")
            try peers.process.waitForLine("linphonec's hold") { $0.contains("put us on hold") }
            Thread.sleep(forTimeInterval: 1.5)
            peers.send("resume")
            try peers.process.waitForLine("linphonec's resume") { $0.contains("the remote side resumed") }
            Thread.sleep(forTimeInterval: 2.5)
            peers.send("terminate")
            try peers.process.waitForLine("the call's end") { $0.contains("left (remoteEnded)") }
            // linphonec holds with sendonly and plays its file as music on hold: parleyd takes it.
            try Self.checkAudio(peers, parleydHears: Self.call)
            // linphonec offers opus first, and parleyd takes it.
            #expect(peers.process.lines.contains { $0.contains("audio opus to 127.0.0.1:") }, "\(peers.process.lines)")
        }

        /// linphonec heard parleyd's tone for the time the call was not on hold, parleyd linphonec's for
        /// `parleydHears` seconds; neither heard its own.
        static func checkAudio(_ peers: LinphoneAndParleyd, parleydHears: Double) throws {
            Thread.sleep(forTimeInterval: 0.5)  // recordings complete
            let byParleyd = try peers.parleydHeard()
            let byLinphone = try peers.linphoneHeard()
            let log = peers.linphoneOutput
            let parleydSeconds = byParleyd.seconds(at: 440)
            let linphoneSeconds = byLinphone.seconds(at: 1_000)
            #expect(parleydSeconds >= 0.8 * parleydHears && parleydSeconds <= parleydHears + 0.8, "parleyd heard \(byParleyd.dominantFrequencies()); linphonec said \(log)")
            #expect(linphoneSeconds >= 0.8 * talked && linphoneSeconds <= talked + 0.8, "linphonec heard \(byLinphone.dominantFrequencies())")
            // parleyd never hears its own tone. linphonec's recording once held a moment of its own file around its
            // pause (a CI run where both calls' audio was right each way): a fraction of a second is allowed there.
            let echoed = byLinphone.seconds(at: 440)
            #expect(byParleyd.seconds(at: 1_000) == 0, "parleyd heard its own tone: \(byParleyd.dominantFrequencies())")
            #expect(echoed <= 0.5, "linphonec heard its own tone for \(echoed) s: \(byLinphone.dominantFrequencies())")
        }
    }
}
