import Foundation
import ParleyTestSupport
import Testing

/// The audio interop suites, one at a time: each runs real-time pipelines, and two of them side by side on a
/// 2-core machine busy with the other suites would starve each other's audio.
@Suite("Interop: audio", .serialized)
struct AudioInterop {}

/// Real audio between two parleyd on loopback, checked by frequency: each records what it hears to a WAV file.
extension AudioInterop {
    @Suite("Interop: audio between two parleyd", .serialized)
    struct AudioInteropTests {
        /// A parleyd carrying audio: `tone` Hz out, what it hears into its own folder, RTP ports at a place picked now.
        static func parleyd(tone: Int, _ arguments: [String]) throws -> (Parleyd, URL) {
            let folder = FileManager.default.temporaryDirectory.appending(path: "parley-audio-\(UUID().uuidString)")
            let base = 20_000 + Int.random(in: 0..<400) * 100
            let daemon = try Parleyd(
                ["--media", "gstreamer", "--audio-source", "tone:\(tone)", "--audio-sink", "file:\(folder.path)",
                 "--rtp-ports", "\(base)-\(base + 99)"] + arguments)
            return (daemon, folder)
        }

        /// The one recording in `folder`, made by `daemon` (whose audio log lines a failure quotes).
        static func recording(in folder: URL, of daemon: Parleyd) throws -> Recording {
            // The pipeline is torn down off the SIP loop, after the conversation left: wait until parleyd says the
            // recording is complete.
            _ = try daemon.process.waitForLine("a complete recording") { $0.contains("recording complete:") }
            let log = daemon.process.lines.filter { $0.contains("audio") || $0.contains("media") || $0.contains(" error ") }
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".wav") }
            try #require(files.count == 1, "one recording in \(folder.path): \(files); parleyd said: \(log)")
            do {
                return try Recording(wavAt: folder.appending(path: files[0]).path)
            } catch {
                throw InteropError("\(error); parleyd said: \(log)")
            }
        }

        @Test("1,000 Hz one way and 440 Hz the other: each side records the other's tone for most of the call")
        func toneBothWays() throws {
            let (callee, calleeFolder) = try Self.parleyd(tone: 440, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let (caller, callerFolder) = try Self.parleyd(
                tone: 1_000, ["--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", "wait 3000; end"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            try caller.waitForEnded(1)
            try callee.waitForEnded(1)
            #expect(caller.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])
            let heardByCallee = try Self.recording(in: calleeFolder, of: callee)
            let heardByCaller = try Self.recording(in: callerFolder, of: caller)
            #expect(heardByCallee.seconds(at: 1_000) >= 0.8 * 3, "the callee heard \(heardByCallee.dominantFrequencies())")
            #expect(heardByCaller.seconds(at: 440) >= 0.8 * 3, "the caller heard \(heardByCaller.dominantFrequencies())")
            #expect(heardByCallee.seconds(at: 440) == 0 && heardByCaller.seconds(at: 1_000) == 0)
            #expect(callee.process.lines.contains { $0.contains("audio PCMU to 127.0.0.1:") })
        }

        @Test("hold stops the audio both ways and resume restarts it, in the same pipeline")
        func holdAndResume() throws {
            let (callee, calleeFolder) = try Self.parleyd(tone: 440, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let (caller, callerFolder) = try Self.parleyd(
                tone: 1_000,
                ["--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", "wait 1500; hold; wait 2000; resume; wait 1500; end"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            try caller.waitForEnded(1)
            try callee.waitForEnded(1)
            #expect(caller.transitions == [["idle", "ringing", "joined", "paused", "joined", "leaving", "left (localEnded)"]])
            // 3 s of the call are not on hold; the 2 s on hold carry nothing either way.
            for (heard, hertz) in [(try Self.recording(in: calleeFolder, of: callee), 1_000.0), (try Self.recording(in: callerFolder, of: caller), 440)] {
                let seconds = heard.seconds(at: hertz)
                #expect(seconds >= 0.8 * 3 && seconds <= 3.6, "\(hertz) Hz for \(seconds) s: \(heard.dominantFrequencies())")
            }
        }

        @Test("keypad tones go in the stream (RFC 4733) between two parleyd, not as INFO, and arrive in order")
        func tonesInStream() throws {
            let (callee, calleeFolder) = try Self.parleyd(tone: 440, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let (caller, callerFolder) = try Self.parleyd(
                tone: 1_000, ["--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", "wait 500; dtmf 12#; wait 1500; end"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            try caller.waitForEnded(1)
            try callee.waitForEnded(1)
            let received = callee.process.lines.compactMap { line -> String? in
                guard let range = line.range(of: "the remote side sent tone ") else { return nil }
                return String(line[range.upperBound...])
            }
            #expect(received == ["1 (RFC 4733)", "2 (RFC 4733)", "# (RFC 4733)"], "\(callee.process.lines)")
            #expect(caller.process.lines.contains { $0.contains("tones 12# in the media stream") })
        }

        @Test("bad media options are usage errors that say what is expected")
        func badOptions() throws {
            let cases: [([String], String)] = [
                (["--media", "alsa"], "--media expects gstreamer, external or off"),
                (["--media", "gstreamer", "--audio-source", "tone:abc"], "--audio-source takes tone:HZ"),
                (["--media", "gstreamer", "--audio-source", "tone:5000"], "--audio-source takes tone:HZ"),
                (["--media", "gstreamer", "--audio-sink", "speaker"], "--audio-sink takes file:DIR"),
                (["--media", "gstreamer", "--rtp-ports", "80-90"], "--rtp-ports expects LOW-HIGH"),
                (["--media", "gstreamer", "--rtp-ports", "40001-40001"], "--rtp-ports expects LOW-HIGH"),
                (["--media", "off", "--audio-source", "silence"], "go with --media gstreamer"),
                (["--media", "gstreamer", "--media-encryption", "none", "--require-media-encryption"], "contradict each other"),
                (["--media", "off", "--media-encryption", "sdes"], "encrypted media needs parleyd's own media"),
                (["--media", "gstreamer", "--media-encryption", "zrtp"], "none, auto, sdes or dtls"),
                (["--media", "external", "--media-encryption", "dtls"], "encrypted media needs parleyd's own media"),
            ]
            for (arguments, message) in cases {
                let refused = try RunningProcess(
                    try Interop.binary("parleyd"), arguments + ["--no-control", "--no-history"], name: "parleyd media options")
                #expect(try refused.waitForExit() == 64, "\(arguments)")
                #expect(refused.standardError.contains(message), "\(arguments): \(refused.standardError)")
            }
        }
    }
}
