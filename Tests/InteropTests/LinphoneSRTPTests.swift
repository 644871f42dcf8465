import Foundation
import ParleyTestSupport
import Testing

/// SRTP keyed by SDES with linphonec 5.1 (`media_encryption=srtp`, mandatory), both ways, audio checked by frequency:
/// parleyd sends 1,000 Hz, linphonec plays 440 Hz; each records what it hears.
extension AudioInterop {
    @Suite("Interop: SRTP with linphonec", .serialized, .timeLimit(.minutes(1)))
    struct LinphoneSRTPTests {
        static let srtp = ["media_encryption=srtp", "media_encryption_mandatory=1"]

        /// Both heard the other's tone for most of `seconds`, the call is encrypted in parleyd's words, and linphonec
        /// says so too.
        static func check(_ peers: LinphoneAndParleyd, seconds: Double) throws {
            Thread.sleep(forTimeInterval: 0.5)  // recordings complete
            #expect(peers.process.lines.contains { $0.contains("keyed by SDES") }, "\(peers.process.lines.filter { $0.contains("audio") })")
            let byParleyd = try peers.parleydHeard(), byLinphone = try peers.linphoneHeard()
            #expect(byParleyd.seconds(at: 440) >= 0.8 * seconds, "parleyd heard \(byParleyd.dominantFrequencies()); linphonec said \(peers.linphoneOutput)")
            #expect(byLinphone.seconds(at: 1_000) >= 0.8 * seconds, "linphonec heard \(byLinphone.dominantFrequencies())")
        }

        @Test("linphonec (srtp, mandatory) calls parleyd: the SAVP offer is answered in kind, audio both ways")
        func linphoneCalls() throws {
            let peers = try LinphoneAndParleyd(sipOptions: Self.srtp) { _ in ["--auto-answer", "0"] }
            peers.send("call sip:parley@127.0.0.1:\(peers.parleydPort)")
            try peers.process.waitForLine("the call joined") { $0.contains("joining → joined") }
            Thread.sleep(forTimeInterval: 3)
            peers.send("terminate")
            try peers.process.waitForLine("the call's end") { $0.contains("left (remoteEnded)") }
            try Self.check(peers, seconds: 3)
        }

        @Test("parleyd (--media-encryption sdes) calls linphonec (srtp, mandatory): audio both ways")
        func parleydCalls() throws {
            let peers = try LinphoneAndParleyd(sipOptions: Self.srtp) { port in
                ["--media-encryption", "sdes", "--call", "sip:bob@127.0.0.1:\(port)", "--script", "wait 3000; end"]
            }
            try peers.process.waitForLine(timeout: .seconds(20), "the call's end") { $0.contains("left (localEnded)") }
            try Self.check(peers, seconds: 3)
        }
    }
}
