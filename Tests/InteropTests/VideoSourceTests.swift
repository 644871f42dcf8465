import Foundation
import ParleyTestSupport
import Testing

/// A frontend picking what one call's video sends (`setVideoSource`, `parley video-source`): the pick changes the
/// picture the peer receives at once, is kept for the call's later upgrades, and `default` gives parleyd's own back;
/// sources that cannot be sent are refused with a clear error.
@Suite("Interop: a call's video source picked through the control API", .serialized, .timeLimit(.minutes(3)))
struct VideoSourceTests {
    @Test("Alice's red becomes green mid-call (Bob's file goes red to green), stays green in the next upgrade, and is red again with default; an absent camera, an unreadable file, a bad form are refused")
    func pickPerCall() throws {
        let bob = try VideoCallTests.Side(colour: "blue", tone: 440, ["--user", "bob", "--auto-answer", "0"])
        let alice = try VideoCallTests.Side(colour: "red", tone: 1_000, ["--user", "alice"])
        defer {
            for side in [alice, bob] { try? FileManager.default.removeItem(at: side.audio.deletingLastPathComponent()) }
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
            ("camera:/dev/video97", "there is no camera /dev/video97"), ("file:/nonexistent/clip.webm", "no readable file"),
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
        #expect(first.isMostly("red", first: true) && first.isMostly("green"), "red then green: \(first.firstColour) … \(first.lastColour)")

        // Upgraded again: still green (kept for the call); default: parleyd's red again.
        #expect(try parley(["video", "1", "on"]).status == 0)
        Thread.sleep(forTimeInterval: 1.5)
        let back = try parley(["video-source", "1", "default", "--json"])
        #expect(back.status == 0 && back.output.contains(#""source":"test:red""#) && back.output.contains(#""chosen":false"#), "\(back.output)")
        Thread.sleep(forTimeInterval: 1.5)
        #expect(try parley(["end", "1"]).status == 0)
        try bob.waitForVideoFiles(2)
        let files = try bob.videoFiles()
        try #require(files.count == 2, "\(files)")
        let second = try VideoFile(path: files[1])
        #expect(second.isMostly("green", first: true) && second.isMostly("red"), "green then red: \(second.firstColour) … \(second.lastColour)")
        // Alice's own received video (Bob's blue) went on through her rebuilds, in parts.
        try alice.waitForVideoFiles(2)
        #expect(try alice.videoFiles().allSatisfy { try VideoFile(path: $0).isMostly("blue") })
    }
}
