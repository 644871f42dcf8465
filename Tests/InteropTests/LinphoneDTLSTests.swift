import Foundation
import ParleyTestSupport
import Testing

/// SRTP keyed by DTLS with linphonec 5.1 (`media_encryption=dtls`, mandatory), both ways, audio checked by frequency:
/// parleyd sends 1,000 Hz, linphonec plays 440 Hz; each records what it hears, and each checks the other's
/// certificate against its SDP fingerprint.
extension AudioInterop {
    @Suite("Interop: DTLS-SRTP with linphonec", .serialized, .timeLimit(.minutes(1)))
    struct LinphoneDTLSTests {
        static let dtls = ["media_encryption=dtls", "media_encryption_mandatory=1"]

        /// Both heard the other's tone for most of `seconds`, and parleyd says the call is keyed by DTLS with
        /// linphonec's certificate checked.
        static func check(_ peers: LinphoneAndParleyd, seconds: Double) throws {
            Thread.sleep(forTimeInterval: 0.5)  // recordings complete
            #expect(peers.process.lines.contains { $0.contains("keyed by DTLS") }, "\(peers.process.lines.filter { $0.contains("audio") })")
            #expect(peers.process.lines.contains { $0.contains("DTLS-SRTP established, the peer's certificate matches") },
                "\(peers.process.lines.filter { $0.contains("DTLS") || $0.contains("security") })")
            let byParleyd = try peers.parleydHeard(), byLinphone = try peers.linphoneHeard()
            #expect(byParleyd.seconds(at: 440) >= 0.7 * seconds, "parleyd heard \(byParleyd.dominantFrequencies()); linphonec said \(peers.linphoneOutput)")
            #expect(byLinphone.seconds(at: 1_000) >= 0.7 * seconds, "linphonec heard \(byLinphone.dominantFrequencies())")
        }

        @Test("linphonec (dtls, mandatory) calls parleyd: the UDP/TLS/RTP/SAVP offer is answered in kind, audio both ways")
        func linphoneCalls() throws {
            let peers = try LinphoneAndParleyd(sipOptions: Self.dtls) { _ in ["--auto-answer", "0"] }
            peers.send("call sip:parley@127.0.0.1:\(peers.parleydPort)")
            try peers.process.waitForLine("the call joined") { $0.contains("joining → joined") }
            // 4 s for 3 s of audio: the DTLS handshake comes first, and on a loaded machine (a CI run) it took 1 s.
            Thread.sleep(forTimeInterval: 4)
            peers.send("terminate")
            try peers.process.waitForLine("the call's end") { $0.contains("left (remoteEnded)") }
            try Self.check(peers, seconds: 3)
        }

        @Test("parleyd (--media-encryption dtls) calls linphonec (dtls, mandatory): audio both ways")
        func parleydCalls() throws {
            let peers = try LinphoneAndParleyd(sipOptions: Self.dtls) { port in
                ["--media-encryption", "dtls", "--call", "sip:bob@127.0.0.1:\(port)", "--script", "wait 4000; end"]
            }
            try peers.process.waitForLine(timeout: .seconds(20), "the call's end") { $0.contains("left (localEnded)") }
            try Self.check(peers, seconds: 3)
        }
    }
}
