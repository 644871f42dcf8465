import Foundation
import ParleyTestSupport
import Testing

/// ICE between two parleyd on loopback (host candidates: no NAT here; the NAT lab's tests cross NATs), and toward
/// peers without ICE, audio checked by frequency both ways.
extension AudioInterop {
    @Suite("Interop: ICE between two parleyd on loopback", .serialized, .timeLimit(.minutes(3)))
    struct ICEInteropTests {
        typealias Audio = AudioInteropTests

        /// A callee (440 Hz, answering) and a caller (1,000 Hz) that calls it for 3 s; `calleeICE` and `callerICE` are
        /// their extra options.
        static func call(callee calleeOptions: [String], caller callerOptions: [String], seconds: Int = 3) throws
            -> (callee: Parleyd, caller: Parleyd, heardByCallee: Recording, heardByCaller: Recording)
        {
            let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0", "--log-level", "debug"] + calleeOptions)
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let (caller, callerFolder) = try Audio.parleyd(
                tone: 1_000,
                ["--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", "wait \(seconds * 1_000); end", "--log-level", "debug"]
                    + callerOptions)
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            try caller.waitForEnded(1)
            try callee.waitForEnded(1)
            return (callee, caller, try Audio.recording(in: calleeFolder, of: callee), try Audio.recording(in: callerFolder, of: caller))
        }

        /// Each heard the other's tone for at least `seconds` of the call (most of a 3 s call by default).
        static func expectAudioBothWays(
            _ run: (callee: Parleyd, caller: Parleyd, heardByCallee: Recording, heardByCaller: Recording), seconds: Double = 0.8 * 3
        ) {
            let ice = (run.caller.process.lines + run.callee.process.lines).filter { $0.contains("ICE") }
            #expect(run.heardByCallee.seconds(at: 1_000) >= seconds, "the callee heard \(run.heardByCallee.dominantFrequencies()); \(ice)")
            #expect(run.heardByCaller.seconds(at: 440) >= seconds, "the caller heard \(run.heardByCaller.dominantFrequencies()); \(ice)")
        }

        /// The lines of `daemon`'s SIP messages that are SDP ICE attributes.
        static func iceLines(_ daemon: Parleyd) -> [String] {
            daemon.process.lines.filter { $0.contains("a=candidate:") || $0.contains("a=ice-ufrag:") }
        }

        @Test("both with --ice on: the offer and the answer carry host candidates, the checks select a host↔host pair for RTP and RTCP, and the audio goes through it both ways")
        func hostPairBothWays() throws {
            let run = try Self.call(callee: ["--ice", "on"], caller: ["--ice", "on"])
            Self.expectAudioBothWays(run)
            for daemon in [run.caller, run.callee] {
                let pairs = daemon.process.lines.filter { $0.contains("ICE: RTP goes host 127.0.0.1:") && $0.contains("↔ host 127.0.0.1:") }
                #expect(pairs.count == 1, "one selected RTP pair, host↔host: \(daemon.process.lines.filter { $0.contains("ICE") })")
                #expect(daemon.process.lines.contains { $0.contains("ICE: RTCP goes host") })
                #expect(!daemon.process.lines.contains { $0.contains("iceFailed") || $0.contains("ICE failed") })
            }
            #expect(run.caller.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])
            for daemon in [run.caller, run.callee] {
                let record = try MultiAccountTests.lastRecord(in: daemon.dataDirectory)
                let quality = record["quality"] as? [String: Any]
                #expect(quality?["iceLocalType"] as? String == "host" && quality?["iceRemoteType"] as? String == "host",
                    "the history keeps the pair's kinds: \(record)")
            }
        }

        @Test("hold and resume over ICE: the re-INVITEs repeat the credentials and candidates (no restart), the agent keeps its pair, and the audio stops and comes back both ways")
        func holdAndResume() throws {
            let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0", "--ice", "on", "--log-level", "debug"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let (caller, callerFolder) = try Audio.parleyd(
                tone: 1_000,
                ["--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", "wait 1500; hold; wait 2000; resume; wait 1500; end",
                 "--ice", "on", "--log-level", "debug"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            try caller.waitForEnded(1)
            try callee.waitForEnded(1)
            #expect(caller.transitions == [["idle", "ringing", "joined", "paused", "joined", "leaving", "left (localEnded)"]])
            for daemon in [caller, callee] {
                let checking = daemon.process.lines.filter { $0.contains("ICE: checking") }
                #expect(checking.count == 1, "the peer's candidates were given once (the re-INVITEs repeat them): \(checking)")
                #expect(!daemon.process.lines.contains { $0.contains("ICE failed") })
            }
            // 3 s of the call are not on hold; the 2 s on hold carry nothing either way.
            for (heard, hertz) in [(try Audio.recording(in: calleeFolder, of: callee), 1_000.0), (try Audio.recording(in: callerFolder, of: caller), 440)] {
                let seconds = heard.seconds(at: hertz)
                #expect(seconds >= 0.8 * 3 && seconds <= 3.6, "\(hertz) Hz for \(seconds) s: \(heard.dominantFrequencies())")
            }
        }

        @Test("an ICE offer to a parleyd without ICE: the answer has none, and the caller closes its agent and goes on as plain RTP at the reserved pair its host candidate held (c=/m= named it), receive gate and all; audio both ways")
        func offerToPeerWithoutICE() throws {
            let run = try Self.call(callee: [], caller: ["--ice", "on"])
            Self.expectAudioBothWays(run)
            #expect(run.caller.process.lines.contains { $0.contains("ICE: the peer has none: plain RTP at our reserved ports") })
            #expect(!run.caller.process.lines.contains { $0.contains("ICE: RTP goes") }, "no pair: the agent went")
            #expect(!run.callee.process.lines.contains { $0.contains("ICE:") }, "the callee ran no ICE")
        }

        @Test("a plain offer to a parleyd with ICE on: it answers without ICE at its RTP port pair; audio both ways")
        func plainOfferToICE() throws {
            let run = try Self.call(callee: ["--ice", "on"], caller: [])
            Self.expectAudioBothWays(run)
            #expect(!run.callee.process.lines.contains { $0.contains("ICE:") }, "no agent for a call without ICE")
        }

        @Test("ICE with DTLS-SRTP: the handshake crosses the selected pair, the peer's certificate matches, and the audio is encrypted both ways")
        func iceWithDTLS() throws {
            // As DTLSInteropTests allow: the handshake takes a little of the start of a 5 s call.
            let run = try Self.call(
                callee: ["--ice", "on", "--media-encryption", "dtls"], caller: ["--ice", "on", "--media-encryption", "dtls"],
                seconds: 5)
            Self.expectAudioBothWays(run, seconds: 0.75 * 4)
            for daemon in [run.caller, run.callee] {
                #expect(daemon.process.lines.contains { $0.contains("ICE: RTP goes host") })
                #expect(daemon.process.lines.contains { $0.contains("encrypted: SRTP keyed by DTLS") })
                #expect(!daemon.process.lines.contains { $0.contains("media security failed") })
            }
        }
    }
}
