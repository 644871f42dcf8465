import Foundation
import ParleyTestSupport
import Testing

/// Encrypted call media (issue 42): SRTP keyed by SDES between two parleyd and with baresip, audio checked by
/// frequency both ways, and an eavesdropper on the loopback interface who hears the tone of a plain call and
/// nothing of an encrypted one.
@Suite("Interop: SRTP keyed by SDES", .serialized, .timeLimit(.minutes(1)))
struct SRTPInteropTests {
    typealias Audio = AudioInterop.AudioInteropTests

    /// The RTP port a parleyd receives a call's audio on, from its audio line (`… from port N, encrypted: …`).
    static func localPort(of daemon: Parleyd) throws -> UInt16 {
        let line = try daemon.process.waitForLine("its audio line") { $0.contains(": audio PCMU to ") }
        let digits = line.components(separatedBy: " from port ").last?.prefix { $0.isNumber } ?? ""
        return try #require(UInt16(digits), "\(line)")
    }

    @Test("two parleyd: an SDES offer is answered in kind, each hears the other's tone, tones and hold work inside SRTP")
    func twoParleyd() throws {
        let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0"])
        defer { try? FileManager.default.removeItem(at: calleeFolder) }
        let (caller, callerFolder) = try Audio.parleyd(
            tone: 1_000,
            ["--media-encryption", "sdes", "--call", "sip:parley@127.0.0.1:\(callee.port)",
             "--script", "wait 1500; dtmf 12#; wait 1000; hold; wait 1500; resume; wait 1500; end"])
        defer { try? FileManager.default.removeItem(at: callerFolder) }
        try caller.waitForEnded(1, timeout: .seconds(20))
        try callee.waitForEnded(1)
        #expect(caller.transitions == [["idle", "ringing", "joined", "paused", "joined", "leaving", "left (localEnded)"]])
        for daemon in [caller, callee] {
            #expect(daemon.process.lines.contains { $0.contains("encrypted: SRTP AES_CM_128_HMAC_SHA1_80 keyed by SDES") },
                "\(daemon.process.lines.filter { $0.contains("audio") })")
            #expect(!daemon.process.lines.contains { $0.contains("inline:") }, "no key in the log")
        }
        #expect(caller.process.lines.contains { $0.contains("offering SRTP keyed by SDES over udp") }, "the warning about SDES over UDP")
        for daemon in [caller, callee] {
            let record = try MultiAccountTests.lastRecord(in: daemon.dataDirectory)
            #expect(record["encryption"] as? String == "sdes", "the history keeps it: \(record)")
        }
        let received = callee.process.lines.compactMap { line in line.range(of: "the remote side sent tone ").map { String(line[$0.upperBound...]) } }
        #expect(received == ["1 (RFC 4733)", "2 (RFC 4733)", "# (RFC 4733)"], "\(received)")
        // About 5.1 s of the call are not on hold (1.5 s, three tones of 360 ms, 1 s, then 1.5 s after the resume);
        // the 1.5 s on hold carry nothing either way, and while the caller's tones play its audio gives way to them.
        let heardByCaller = try Audio.recording(in: callerFolder, of: caller)
        let heardByCallee = try Audio.recording(in: calleeFolder, of: callee)
        let callerSeconds = heardByCaller.seconds(at: 440), calleeSeconds = heardByCallee.seconds(at: 1_000)
        #expect(callerSeconds >= 0.8 * 5.1 && callerSeconds <= 5.7, "440 Hz for \(callerSeconds) s: \(heardByCaller.dominantFrequencies())")
        #expect(calleeSeconds >= 0.8 * 4 && calleeSeconds <= 5.7, "1,000 Hz for \(calleeSeconds) s: \(heardByCallee.dominantFrequencies())")
    }

    @Test("an eavesdropper on loopback hears a plain call's tone, and sees RTP headers but no tone in an encrypted one")
    func eavesdropper() throws {
        for encrypted in [false, true] {
            let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let (caller, callerFolder) = try Audio.parleyd(
                tone: 1_000,
                (encrypted ? ["--media-encryption", "sdes"] : [])
                    + ["--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", "wait 3000; end"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            let capture = try LoopbackCapture(port: try Self.localPort(of: callee), from: try Self.localPort(of: caller))
            try caller.waitForEnded(1)
            let packets = capture.stop()
            try callee.waitForEnded(1)
            let (rtp, overheard) = capture.heardAsPCMU()
            #expect(packets >= 100 && rtp == packets, "\(encrypted ? "SRTP" : "RTP"): \(rtp) RTP headers in \(packets) datagrams")
            let seconds = overheard.seconds(at: 1_000)
            if encrypted {
                // Ciphertext decodes to noise, whose strongest frequency falls within 2 % of 1 kHz in about one window
                // (0.256 s) in a hundred: two such windows are chance; the tone itself fills nearly every window.
                #expect(seconds <= 0.6, "the eavesdropper heard 1,000 Hz for \(seconds) s: \(overheard.dominantFrequencies())")
                let heard = try Audio.recording(in: calleeFolder, of: callee)
                #expect(heard.seconds(at: 1_000) >= 2, "the callee heard it: \(heard.dominantFrequencies())")
            } else {
                #expect(seconds >= 2, "a plain call is overheard: \(overheard.dominantFrequencies())")
            }
        }
    }

    @Test("--require-media-encryption: a plain offer gets 488 and no audio; a plain parleyd called by it hears nothing")
    func required() throws {
        let (strict, strictFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0", "--require-media-encryption"])
        defer { try? FileManager.default.removeItem(at: strictFolder) }
        let (plain, plainFolder) = try Audio.parleyd(
            tone: 1_000, ["--media-encryption", "none", "--call", "sip:parley@127.0.0.1:\(strict.port)"])
        defer { try? FileManager.default.removeItem(at: plainFolder) }
        try plain.waitForEnded(1)
        #expect(plain.transitions == [["idle", "left (failed)"]] || plain.transitions.first?.last == "left (failed)", "\(plain.transitions)")
        #expect(plain.process.lines.contains { $0.contains("488") }, "\(plain.process.lines.suffix(10))")
        #expect(strict.transitions.isEmpty, "the refused offer never rang: \(strict.transitions)")
    }

    @Test("baresip with mediaenc=srtp-mand calls parleyd and is called by it: audio both ways, encrypted")
    func baresip() throws {
        for parleydCalls in [false, true] {
            let baresipFolder = try AudioInterop.BaresipAudioTests.folder()
            defer { try? FileManager.default.removeItem(at: baresipFolder) }
            let baresip: Baresip
            let parleyd: Parleyd, parleydFolder: URL
            if parleydCalls {
                baresip = try Baresip(recordTo: baresipFolder, mediaEncryption: "srtp-mand")
                (parleyd, parleydFolder) = try Audio.parleyd(
                    tone: 1_000, ["--media-encryption", "sdes", "--call", baresip.uri(.udp), "--script", "wait 3000; end"])
            } else {
                (parleyd, parleydFolder) = try Audio.parleyd(tone: 1_000, ["--auto-answer", "0", "--script", "wait 3000; end"])
                baresip = try Baresip(dial: parleyd.uri(.udp), recordTo: baresipFolder, mediaEncryption: "srtp-mand")
            }
            defer { try? FileManager.default.removeItem(at: parleydFolder) }
            try baresip.quotingTranscript {
                try parleyd.waitForEnded(1, timeout: .seconds(15))
                try baresip.waitFor("the end of its call") { $0.contains("terminated (duration") || $0.contains("session closed") }
                #expect(parleyd.process.lines.contains { $0.contains("keyed by SDES") }, "\(parleyd.process.lines.filter { $0.contains("audio") })")
                let heardByParleyd = try Audio.recording(in: parleydFolder, of: parleyd)
                let heardByBaresip = try AudioInterop.BaresipAudioTests.received(in: baresipFolder)
                #expect(heardByParleyd.seconds(at: 440) >= 2.2, "parleyd heard \(heardByParleyd.dominantFrequencies())")
                #expect(heardByBaresip.seconds(at: 1_000) >= 2.2, "baresip heard \(heardByBaresip.dominantFrequencies())")
            }
        }
    }
}
