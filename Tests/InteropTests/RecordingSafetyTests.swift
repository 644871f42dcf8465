import Foundation
import Glibc
import ParleyTestSupport
import Testing

/// Recordings (issue 48): private whatever the umask, and playable after parleyd is killed mid-call.
@Suite("Interop: recordings private and crash-safe", .serialized, .timeLimit(.minutes(1)))
struct RecordingSafetyTests {
    typealias Audio = AudioInterop.AudioInteropTests

    static func mode(_ path: String) -> mode_t {
        var status = stat()
        return stat(path, &status) == 0 ? status.st_mode & 0o777 : 0
    }

    @Test("started under umask 000, parleyd records into a 0700 directory as 0600; killed mid-call, its restart completes the recording")
    func privateAndCrashSafe() throws {
        let (callee, _) = try Audio.parleyd(tone: 440, ["--auto-answer", "0", "--media-timeout", "3"])
        let folder = FileManager.default.temporaryDirectory.appending(path: "parley-recordings-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        // The child inherits the umask at its spawn: wide open for that moment only.
        let previous = umask(0)
        let caller: Parleyd
        do {
            defer { umask(previous) }
            caller = try Parleyd([
                "--media", "gstreamer", "--audio-source", "tone:1000", "--audio-sink", "file:\(folder.path)",
                "--call", "sip:parley@127.0.0.1:\(callee.port)",
            ])
        }
        _ = try caller.process.waitForLine("its audio line") { $0.contains(": audio PCMU to ") }
        Thread.sleep(forTimeInterval: 2)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".wav") }
        try #require(files.count == 1, "\(files)")
        let path = folder.appending(path: files[0]).path
        #expect(Self.mode(folder.path) == 0o700 && Self.mode(path) == 0o600, "directory \(String(Self.mode(folder.path), radix: 8)), file \(String(Self.mode(path), radix: 8))")
        kill(caller.process.process.processIdentifier, SIGKILL)
        caller.process.process.waitUntilExit()
        // The restart (same recordings) completes what the crash left.
        let restarted = try Parleyd(["--media", "gstreamer", "--audio-sink", "file:\(folder.path)"])
        _ = try restarted.process.waitForLine("the repair") { $0.contains("a crash left unfinished") }
        let heard = try Recording(wavAt: path)
        // About 2 s of the call, less what was still buffered (at most 16 KiB: a second) when it was killed.
        #expect(heard.seconds(at: 440) >= 0.5, "the crashed call's recording plays: \(heard.dominantFrequencies())")
        try callee.waitForEnded(1)
    }

    @Test("--max-recording 2: the recording stops, complete, after 2 s of the call, and the call goes on")
    func capped() throws {
        let (callee, _) = try Audio.parleyd(tone: 440, ["--auto-answer", "0"])
        let folder = FileManager.default.temporaryDirectory.appending(path: "parley-recordings-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let caller = try Parleyd([
            "--media", "gstreamer", "--audio-source", "tone:1000", "--audio-sink", "file:\(folder.path)",
            "--max-recording", "2", "--call", "sip:parley@127.0.0.1:\(callee.port)",
        ])
        _ = try caller.process.waitForLine(timeout: .seconds(15), "the cap") { $0.contains("reached its cap of 2 s") }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".wav") }
        try #require(files.count == 1, "\(files)")
        let path = folder.appending(path: files[0]).path
        func size() -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1 }
        let atCap = size()
        Thread.sleep(forTimeInterval: 2)
        #expect(size() == atCap, "nothing written after the cap")
        // The header is complete at once (sizes matching the file), not only when the call ends.
        let header = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(8))
        let riffSize = Int(header[4]) | Int(header[5]) << 8 | Int(header[6]) << 16 | Int(header[7]) << 24
        #expect(riffSize == atCap - 8, "RIFF size \(riffSize) for a file of \(atCap) bytes")
        #expect(!callee.process.lines.contains { $0.contains("→ left") } && caller.process.process.isRunning, "the call goes on")
        #expect(try caller.process.stop() == 0)
        let heard = try Recording(wavAt: path)
        #expect((1.9...2.2).contains(heard.duration), "\(heard.duration) s recorded")
        #expect(heard.seconds(at: 440) >= 1.2, "\(heard.dominantFrequencies())")
        #expect(size() == atCap, "the call's end adds nothing to a capped recording")
    }

    @Test("--max-recording takes off, seconds or a unit; anything else is a usage error (64)", arguments: [
        ("off", true), ("90m", true), ("0", false), ("2d", false), ("h", false), ("169h", false), ("-5", false),
    ])
    func option(value: String, valid: Bool) throws {
        let arguments = ["--media", "gstreamer", "--audio-sink", "null", "--max-recording", value]
        guard valid else {
            let run = try RunningProcess(
                try Interop.binary("parleyd"), arguments + ["--no-control", "--no-history"], name: "parleyd --max-recording \(value)")
            #expect(try run.waitForExit() == 64)
            #expect(run.standardError.contains("--max-recording expects"), "\(run.standardError)")
            return
        }
        let parleyd = try Parleyd(arguments)
        #expect(try parleyd.process.stop() == 0)
    }
}
