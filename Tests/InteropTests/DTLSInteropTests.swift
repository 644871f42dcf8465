import ControlProtocol
import Foundation
import ParleyIO
import ParleyTestSupport
import Testing

/// Encrypted call media keyed by DTLS (issue 42): two parleyd, baresip 1.0 and an eavesdropper, audio checked by
/// frequency both ways; a signalling man in the middle who swaps the caller's fingerprint gets the call ended as
/// `mediaSecurityFailed` before any audio flows.
extension AudioInterop {
    @Suite("Interop: SRTP keyed by DTLS", .serialized, .timeLimit(.minutes(1)))
    struct DTLSInteropTests {
        typealias Audio = AudioInterop.AudioInteropTests

        /// The node's certificate as parleyd keeps it in its data directory (0600), read back.
        static func certificate(of daemon: Parleyd) throws -> (DTLSCertificate, mode: Int) {
            let path = daemon.dataDirectory.appending(path: "identity/dtls-certificate.pem").path
            let mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? 0
            return (try DTLSCertificate(pem: try String(contentsOfFile: path, encoding: .utf8)), mode)
        }

        @Test("two parleyd: a DTLS offer is answered in kind, both check the other's certificate, tones and hold work inside it")
        func twoParleyd() throws {
            let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let control = try ControlSession(callee)
            _ = try control.request(.subscribe(SubscribeParams()))
            let (caller, callerFolder) = try Audio.parleyd(
                tone: 1_000,
                ["--media-encryption", "dtls", "--call", "sip:parley@127.0.0.1:\(callee.port)",
                 "--script", "wait 1500; dtmf 12#; wait 1000; hold; wait 1500; resume; wait 1500; end"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            let media = try control.collect(timeout: 10, { if case .mediaChanged = $0 { true } else { false } }, until: { !$0.isEmpty })
            try caller.waitForEnded(1, timeout: .seconds(20))
            try callee.waitForEnded(1)
            #expect(caller.transitions == [["idle", "ringing", "joined", "paused", "joined", "leaving", "left (localEnded)"]])
            let (callersCertificate, mode) = try Self.certificate(of: caller)
            #expect(mode == 0o600, "the certificate's key is the node's alone: \(String(mode, radix: 8))")
            #expect(caller.process.lines.contains { $0.contains("made this node's DTLS certificate") })
            guard case .mediaChanged(let change)? = media.first, let info = change.media else {
                Issue.record("no media: \(media)")
                return
            }
            #expect(info.encryption == "dtls" && info.encryptionSuite == nil, "\(info)")
            #expect(info.peerFingerprint == "\(callersCertificate.fingerprint)", "the callee checks the caller's certificate: \(info)")
            // The callee answers passive: the caller starts each handshake.
            for (daemon, role) in [(caller, "client"), (callee, "server")] {
                #expect(daemon.process.lines.contains { $0.contains("keyed by DTLS (we are the \(role))") },
                    "\(daemon.process.lines.filter { $0.contains("audio") })")
                #expect(daemon.process.lines.contains { $0.contains("DTLS-SRTP established, the peer's certificate matches") })
                #expect(!daemon.process.lines.contains { $0.contains("PRIVATE KEY") }, "no key in the log")
            }
            for daemon in [caller, callee] {
                let record = try MultiAccountTests.lastRecord(in: daemon.dataDirectory)
                #expect(record["encryption"] as? String == "dtls", "the history keeps it: \(record)")
            }
            let received = callee.process.lines.compactMap { line in line.range(of: "the remote side sent tone ").map { String(line[$0.upperBound...]) } }
            #expect(received == ["1 (RFC 4733)", "2 (RFC 4733)", "# (RFC 4733)"], "\(received)")
            // As with SDES: about 5.1 s not on hold, the handshake taking a little of the start.
            let heardByCaller = try Audio.recording(in: callerFolder, of: caller)
            let heardByCallee = try Audio.recording(in: calleeFolder, of: callee)
            let callerSeconds = heardByCaller.seconds(at: 440), calleeSeconds = heardByCallee.seconds(at: 1_000)
            #expect(callerSeconds >= 0.75 * 5.1 && callerSeconds <= 5.7, "440 Hz for \(callerSeconds) s: \(heardByCaller.dominantFrequencies())")
            #expect(calleeSeconds >= 0.75 * 4 && calleeSeconds <= 5.7, "1,000 Hz for \(calleeSeconds) s: \(heardByCallee.dominantFrequencies())")
        }

        @Test("an eavesdropper on loopback sees the handshake and RTP headers of a DTLS call, but no tone")
        func eavesdropper() throws {
            let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let (caller, callerFolder) = try Audio.parleyd(
                tone: 1_000,
                // 4 s for the 2 s of audio checked below: the handshake comes first, and in a loaded CI run (many suites at
                // once) it took over a second of a 3 s call.
                ["--media-encryption", "dtls", "--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", "wait 4000; end"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            let capture = try LoopbackCapture(
                port: try SRTPInteropTests.localPort(of: callee), from: try SRTPInteropTests.localPort(of: caller))
            try caller.waitForEnded(1)
            let packets = capture.stop()
            try callee.waitForEnded(1)
            let (rtp, overheard) = capture.heardAsPCMU()
            // DTLS records (content types 20–25) are the few datagrams that are not RTP.
            #expect(rtp >= 100 && packets - rtp <= 10, "\(rtp) RTP headers in \(packets) datagrams")
            let seconds = overheard.seconds(at: 1_000)
            // Ciphertext decodes to noise, whose strongest frequency falls within 2 % of 1 kHz in about one window
            // (0.256 s) in a hundred: two such windows are chance; the tone itself fills nearly every window.
            #expect(seconds <= 0.6, "the eavesdropper heard 1,000 Hz for \(seconds) s: \(overheard.dominantFrequencies())")
            let heard = try Audio.recording(in: calleeFolder, of: callee)
            #expect(heard.seconds(at: 1_000) >= 2, "the callee heard it: \(heard.dominantFrequencies())")
        }

        @Test("a man in the middle of the signalling swaps the caller's fingerprint: the callee ends the call as mediaSecurityFailed, no audio")
        func wrongFingerprint() throws {
            let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let control = try ControlSession(callee)
            let forged = try DTLSCertificate.generate().fingerprint
            let (caller, callerFolder) = try Audio.parleyd(tone: 1_000, ["--media-encryption", "dtls"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            let relay = try LossyRelay(between: caller.port, and: callee.port, faultRate: 0, seed: 1) { text in
                // Every fingerprint the caller's SDP gives becomes another certificate's (the same length).
                guard let range = text.range(of: "a=fingerprint:sha-256 ") else { return text }
                let end = text[range.upperBound...].firstIndex(where: \.isNewline) ?? text.endIndex
                return text.replacingCharacters(in: range.upperBound..<end, with: "\(forged)".dropFirst("sha-256 ".count))
            }
            defer { relay.stop() }
            try ControlSession(caller).request(.start(StartParams(to: "sip:parley@127.0.0.1:\(relay.nearPort)")))
            do {
                try callee.waitForEnded(1, timeout: .seconds(14))
                try caller.waitForEnded(1)
            } catch {
                Issue.record("\(error): the callee said \(callee.process.lines.suffix(25)); the caller \(caller.process.lines.suffix(15))")
                throw error
            }
            #expect(callee.transitions.first?.last == "left (mediaSecurityFailed)", "\(callee.transitions)")
            #expect(caller.transitions.first?.last == "left (remoteEnded)", "\(caller.transitions)")
            #expect(callee.process.lines.contains { $0.contains("does not match the fingerprint of its SDP") }, "\(callee.process.lines.suffix(15))")
            #expect(!callee.process.lines.contains { $0.contains("DTLS-SRTP established") })
            let record = try HoldFiguresInteropTests.lastRecord(control)
            #expect(record["endedReason"] as? String == "mediaSecurityFailed", "\(record)")
            // No audio reached either side: the callee's valves never opened, so the caller heard nothing either.
            _ = try callee.process.waitForLine("a complete recording") { $0.contains("recording complete:") }
            let files = try FileManager.default.contentsOfDirectory(atPath: calleeFolder.path).filter { $0.hasSuffix(".wav") }
            for file in files {
                let path = calleeFolder.appending(path: file).path
                let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                if bytes > 44 {
                    let heard = try Recording(wavAt: path)
                    #expect(heard.seconds(at: 1_000) == 0, "the callee heard \(heard.dominantFrequencies())")
                }
            }
        }

        @Test("baresip with mediaenc=dtls_srtp calls parleyd and is called by it: audio both ways, its fingerprint verified")
        func baresip() throws {
            for parleydCalls in [false, true] {
                let baresipFolder = try AudioInterop.BaresipAudioTests.folder()
                defer { try? FileManager.default.removeItem(at: baresipFolder) }
                let baresip: Baresip
                let parleyd: Parleyd, parleydFolder: URL
                if parleydCalls {
                    baresip = try Baresip(recordTo: baresipFolder, mediaEncryption: "dtls_srtp")
                    (parleyd, parleydFolder) = try Audio.parleyd(
                        tone: 1_000, ["--media-encryption", "dtls", "--call", baresip.uri(.udp), "--script", "wait 3000; end"])
                } else {
                    (parleyd, parleydFolder) = try Audio.parleyd(tone: 1_000, ["--auto-answer", "0", "--script", "wait 3000; end"])
                    baresip = try Baresip(dial: parleyd.uri(.udp), recordTo: baresipFolder, mediaEncryption: "dtls_srtp")
                }
                defer { try? FileManager.default.removeItem(at: parleydFolder) }
                try baresip.quotingTranscript {
                    try parleyd.waitForEnded(1, timeout: .seconds(15))
                    try baresip.waitFor("the end of its call") { $0.contains("terminated (duration") || $0.contains("session closed") }
                    #expect(parleyd.process.lines.contains { $0.contains("keyed by DTLS") }, "\(parleyd.process.lines.filter { $0.contains("audio") })")
                    #expect(parleyd.process.lines.contains { $0.contains("DTLS-SRTP established") }, "parleyd checked baresip's certificate")
                    // baresip checks our certificate against our SDP's fingerprint, as we check its.
                    #expect(baresip.lines.contains { $0.contains("verified sha-256 fingerprint OK") },
                        "\(baresip.lines.filter { $0.lowercased().contains("dtls") || $0.contains("fingerprint") })")
                    let heardByParleyd = try Audio.recording(in: parleydFolder, of: parleyd)
                    let heardByBaresip = try AudioInterop.BaresipAudioTests.received(in: baresipFolder)
                    #expect(heardByParleyd.seconds(at: 440) >= 2, "parleyd heard \(heardByParleyd.dominantFrequencies())")
                    #expect(heardByBaresip.seconds(at: 1_000) >= 2, "baresip heard \(heardByBaresip.dominantFrequencies())")
                }
            }
        }
    }
}
