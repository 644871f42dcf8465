import Foundation
import ParleyTestSupport
import Testing

/// A frontend picking what one call's video sends (`setVideoSource`, `parley video-source`): the pick changes the
/// picture the peer receives at once (the source swapped while the pipeline plays: what is received, and a DTLS
/// association, go on untouched), is kept for the call's later upgrades, and `default` gives parleyd's own back;
/// sources that cannot be sent are refused with a clear error.
@Suite("Interop: a call's video source picked through the control API", .serialized, .timeLimit(.minutes(3)))
struct VideoSourceTests {
    /// A three-second blue VP8 WebM file in `folder` (a video file a user would pick).
    static func blueClip(in folder: URL) throws -> URL {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let clip = folder.appending(path: "blue.webm")
        let make = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/gst-launch-1.0"),
            ["-q", "videotestsrc", "pattern=blue", "num-buffers=90", "!", "video/x-raw,width=320,height=240,framerate=30/1", "!",
             "vp8enc", "!", "webmmux", "!", "filesink", "location=\(clip.path)"], name: "gst-launch-1.0 (a blue clip)")
        guard try make.waitForExit(timeout: .seconds(30)) == 0 else { throw InteropError("no clip: \(make.standardError)") }
        return clip
    }

    @Test(
        "Alice's red becomes green mid-call (Bob's file goes red to green), stays green in the next upgrade, then a file's blue, then red again with default; Alice's own received video goes on in one file a session; an absent camera, an unreadable file, a bad form are refused",
        arguments: ["none", "dtls"])
    func pickPerCall(keying: String) throws {
        let encryption = keying == "none" ? [] : ["--media-encryption", keying]
        let clips = FileManager.default.temporaryDirectory.appending(path: "parley-clips-\(UUID().uuidString)")
        let clip = try Self.blueClip(in: clips)
        let bob = try VideoCallTests.Side(colour: "blue", tone: 440, ["--user", "bob", "--auto-answer", "0"] + encryption)
        let alice = try VideoCallTests.Side(colour: "red", tone: 1_000, ["--user", "alice", "--video-files", clips.path] + encryption)
        defer {
            for side in [alice, bob] { try? FileManager.default.removeItem(at: side.audio.deletingLastPathComponent()) }
            try? FileManager.default.removeItem(at: clips)
        }
        let a = ["--data-dir", alice.daemon.dataDirectory.path]
        func parley(_ arguments: [String]) throws -> ControlCLITests.Run { try ControlCLITests.parley(arguments + a) }

        // The cameras: a list (this machine may have none), as text and as the protocol's JSON.
        let cameras = try parley(["video-source", "--json"])
        let listed = (try JSONSerialization.jsonObject(with: Data(cameras.output.utf8)) as? [String: Any])?["result"] as? [String: Any]
        #expect(cameras.status == 0 && listed?["devices"] is [Any], "\(cameras.output)")
        #expect(try parley(["video-source"]).status == 0)

        #expect(try parley(["call", "sip:bob@127.0.0.1:\(bob.daemon.port)", "--video"]).status == 0)
        try bob.daemon.waitForTransition(to: "joined")
        _ = try bob.videoPorts()
        Thread.sleep(forTimeInterval: 1.5)
        let green = try parley(["video-source", "1", "test:green"])
        #expect(green.status == 0 && green.output.contains("video sends test:green"), "\(green.output)")
        _ = try alice.daemon.process.waitForLine("the new source") { $0.contains("video: now sending test:green") }
        Thread.sleep(forTimeInterval: 1.5)

        // What cannot be sent is refused, and the call's video goes on as it was.
        for (source, says) in [
            ("camera:/dev/video97", "there is no camera /dev/video97"), ("file:\(clips.path)/missing.webm", "no readable file"),
            ("file:/etc/hostname", "not in the --video-files folder"), ("file:\(clips.path)/../\(clips.lastPathComponent)", "not in the --video-files folder"),
            ("webcam", "source must be camera"), ("test:purple", "a video source is test:PATTERN"),
        ] {
            let refused = try parley(["video-source", "1", source])
            #expect(refused.status == 1 && refused.output.contains(says), "\(source): \(refused.output)")
        }
        #expect(try parley(["video-source", "1"]).status == 64)

        // Downgraded: Bob's file went from red to green.
        #expect(try parley(["video", "1", "off"]).status == 0)
        try bob.waitForVideoFiles(1)
        let first = try VideoFile(path: try #require(try bob.videoFiles().first))
        #expect(first.colourSequence == ["red", "green"], "\(first.colourSequence)")

        // Upgraded again: still green (kept for the call); then the clip's blue; then, with default, parleyd's red.
        #expect(try parley(["video", "1", "on"]).status == 0)
        _ = try alice.daemon.process.waitForLine("the second video") { $0.contains("video: the first frame arrived") && $0.contains("(640x480") }
        Thread.sleep(forTimeInterval: 1.5)
        // The clip (3 s) plays out: its last picture stays, nothing more is sent, and the next source still goes.
        #expect(try parley(["video-source", "1", "file:blue.webm"]).status == 0)
        Thread.sleep(forTimeInterval: 4)
        let back = try parley(["video-source", "1", "default", "--json"])
        #expect(back.status == 0 && back.output.contains(#""source":"test:red""#) && back.output.contains(#""chosen":false"#), "\(back.output)")
        Thread.sleep(forTimeInterval: 1.5)
        #expect(try parley(["end", "1"]).status == 0)
        try bob.waitForVideoFiles(2)
        let files = try bob.videoFiles()
        try #require(files.count == 2, "\(files)")
        let second = try VideoFile(path: files[1])
        #expect(second.colourSequence == ["green", "blue", "red"], "\(second.colourSequence)")
        #expect(second.frames >= 140, "\(second.frames) frames in about 6 s of pictures in the second session")

        // Alice's own received video (Bob's blue) went on through the swaps: one whole file a session.
        try alice.waitForVideoFiles(2)
        let received = try alice.videoFiles()
        #expect(received.count == 2, "\(received)")
        #expect(try received.allSatisfy { try VideoFile(path: $0).colourSequence == ["blue"] })
        if keying == "dtls" {
            #expect(alice.daemon.process.lines.filter { $0.contains("video: secured (DTLS-SRTP") }.count == 2, "one handshake a session")
        }
    }
}
