import Foundation
import ParleyTestSupport
import Testing

/// Real audio with baresip 1.0.0, checked by frequency: its `ausine` source sends 440 Hz and its `sndfile` module
/// records what it receives; parleyd sends 1,000 Hz and records into its own folder.
extension AudioInterop {
    @Suite("Interop: audio with baresip", .serialized)
    struct BaresipAudioTests {
        /// A folder for baresip's recordings, and baresip's recording of what it received.
        static func received(in folder: URL) throws -> Recording {
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix("-dec.wav") }
            try #require(files.count == 1, "one recording of what baresip received in \(folder.path): \(files)")
            return try Recording(wavAt: folder.appending(path: files[0]).path)
        }

        static func folder() throws -> URL {
            let folder = FileManager.default.temporaryDirectory.appending(path: "baresip-audio-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder
        }

        @Test("baresip calls parleyd: its 440 Hz reaches parleyd and parleyd's 1,000 Hz reaches it, for most of the call")
        func audioBothWays() throws {
            let (parleyd, parleydFolder) = try AudioInteropTests.parleyd(tone: 1_000, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: parleydFolder) }
            let baresipFolder = try Self.folder()
            defer { try? FileManager.default.removeItem(at: baresipFolder) }
            let baresip = try Baresip(dial: parleyd.uri(.udp), recordTo: baresipFolder)
            try baresip.quotingTranscript {
                try parleyd.waitForTransition(to: "joined")
                let joined = Date()
                Thread.sleep(forTimeInterval: 3)
                try baresip.send("/hangup")
                let duration = Date().timeIntervalSince(joined)
                try parleyd.waitForEnded(1, timeout: .seconds(5))
                try baresip.waitFor("the end of its call") { $0.contains("terminated (duration") }
                let heardByParleyd = try AudioInteropTests.recording(in: parleydFolder, of: parleyd)
                let heardByBaresip = try Self.received(in: baresipFolder)
                #expect(heardByParleyd.seconds(at: 440) >= 0.8 * duration, "parleyd heard \(heardByParleyd.dominantFrequencies())")
                #expect(heardByBaresip.seconds(at: 1_000) >= 0.8 * duration, "baresip heard \(heardByBaresip.dominantFrequencies())")
            }
        }

        // baresip 1.0.0's sndfile recorder stops writing what it receives at the call's first re-INVITE (its decoding
        // filters are not set up again; what it sends is still written), so a hold is checked by what parleyd hears,
        // with baresip's recording covering the part of the call before it.

        @Test("parleyd holds baresip and resumes: the audio stops for the hold and comes back")
        func parleydHolds() throws {
            let baresipFolder = try Self.folder()
            defer { try? FileManager.default.removeItem(at: baresipFolder) }
            let baresip = try Baresip(recordTo: baresipFolder)
            let (parleyd, parleydFolder) = try AudioInteropTests.parleyd(
                tone: 1_000, ["--call", baresip.uri(.udp), "--script", "wait 1500; hold; wait 2000; resume; wait 1500; end"])
            defer { try? FileManager.default.removeItem(at: parleydFolder) }
            try baresip.quotingTranscript {
                try parleyd.waitForEnded(1, timeout: .seconds(15))
                try baresip.waitFor("the end of its session") { $0.contains("session closed") }
                #expect(parleyd.transitions == [["idle", "ringing", "joined", "paused", "joined", "leaving", "left (localEnded)"]])
                // baresip answers the hold recvonly and stops sending: 1.5 s before it and 1.5 s after the resume.
                let heard = try AudioInteropTests.recording(in: parleydFolder, of: parleyd)
                let seconds = heard.seconds(at: 440)
                #expect(seconds >= 0.8 * 3 && seconds <= 3.6, "parleyd heard 440 Hz for \(seconds) s: \(heard.dominantFrequencies())")
                let before = try Self.received(in: baresipFolder).seconds(at: 1_000)
                #expect(before >= 0.8 * 1.5, "baresip heard 1,000 Hz for \(before) s before the hold")
            }
        }

        @Test("baresip holds parleyd (sendonly) and resumes: its audio stops for the hold and comes back")
        func baresipHolds() throws {
            let (parleyd, parleydFolder) = try AudioInteropTests.parleyd(tone: 1_000, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: parleydFolder) }
            let baresip = try Baresip(dial: parleyd.uri(.udp))
            try baresip.quotingTranscript {
                try parleyd.waitForTransition(to: "joined")
                let joined = Date()
                Thread.sleep(forTimeInterval: 1.5)
                try baresip.send("/hold")
                try parleyd.process.waitForLine("the remote hold") { $0.contains("the remote side put us on hold") }
                Thread.sleep(forTimeInterval: 2)
                try baresip.send("/resume")
                try parleyd.process.waitForLine("the resume") { $0.contains("the remote side resumed") }
                Thread.sleep(forTimeInterval: 1.5)
                try baresip.send("/hangup")
                let duration = Date().timeIntervalSince(joined)
                try parleyd.waitForEnded(1, timeout: .seconds(5))
                // baresip sends nothing while it holds (its sendonly carries no music on hold): 1.5 s before, about as
                // long after the resume, none of the 2 s between.
                let heard = try AudioInteropTests.recording(in: parleydFolder, of: parleyd)
                let seconds = heard.seconds(at: 440)
                #expect(seconds >= 0.8 * (duration - 2) && seconds <= duration - 1.4, "parleyd heard 440 Hz for \(seconds) of \(duration) s")
                #expect(parleyd.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]])
            }
        }

        @Test("parleyd's keypad tones reach baresip as RFC 4733 events in the stream, in order, each with its end")
        func tonesInStream() throws {
            let baresip = try Baresip()
            let (parleyd, folder) = try AudioInteropTests.parleyd(
                tone: 1_000, ["--call", baresip.uri(.udp), "--script", "wait 500; dtmf 12#; wait 1500; end"])
            defer { try? FileManager.default.removeItem(at: folder) }
            try baresip.quotingTranscript {
                try parleyd.waitForEnded(1, timeout: .seconds(10))
                try baresip.waitFor("the end of its session") { $0.contains("session closed") }
                let events = baresip.lines.filter { $0.hasPrefix("received event: ") }
                #expect(events == ["received event: '1' (end=0)", "received event: '1' (end=1)", "received event: '2' (end=0)",
                    "received event: '2' (end=1)", "received event: '#' (end=0)", "received event: '#' (end=1)"])
            }
        }
    }
}
