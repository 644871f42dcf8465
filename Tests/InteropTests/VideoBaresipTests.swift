import Foundation
import ParleyTestSupport
import Testing

/// Video with baresip 1.0 (Debian's `vp8.so`, its `fakevideo` test picture as camera, the `snapshot` module to save
/// what it receives): each side decodes the other's VP8. parleyd sends red; baresip's picture is its own grey-green
/// test frame at 320×240 and 15 fps.
@Suite("Interop: video with baresip", .serialized, .timeLimit(.minutes(3)))
struct VideoBaresipTests {
    /// The mean colour of a PNG file (16×12 after scaling), as GStreamer decodes it.
    static func colour(ofPNG path: String) throws -> (red: Double, green: Double, blue: Double) {
        let raw = FileManager.default.temporaryDirectory.appending(path: "parley-png-\(UUID().uuidString).rgb").path
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let process = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/gst-launch-1.0"),
            ["-q", "filesrc", "location=\(path)", "!", "pngdec", "!", "videoconvert", "!", "videoscale", "!",
             "video/x-raw,format=RGB,width=16,height=12", "!", "filesink", "location=\(raw)"], name: "gst-launch-1.0 (png)")
        guard try process.waitForExit() == 0 else { throw InteropError("\(path) did not decode: \(process.standardError)") }
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: raw)))
        guard bytes.count >= 576 else { throw InteropError("\(path): \(bytes.count) bytes decoded") }
        var sums = [0.0, 0.0, 0.0]
        for (index, byte) in bytes.prefix(576).enumerated() { sums[index % 3] += Double(byte) }
        return (sums[0] / 192, sums[1] / 192, sums[2] / 192)
    }

    @Test(
        "an audio call with baresip upgraded to video, and a video call (plain, and DTLS-SRTP: video's own handshake): baresip sees parleyd's red, parleyd receives baresip's 320x240 at 15 fps",
        arguments: [(false, false), (true, false), (true, true)])
    func upgradeWithBaresip(startsWithVideo: Bool, dtls: Bool) throws {
        let parleyd = try VideoCallTests.Side(colour: "red", tone: 1_000, ["--user", "parley"] + (dtls ? ["--media-encryption", "dtls"] : []))
        defer { try? FileManager.default.removeItem(at: parleyd.audio.deletingLastPathComponent()) }
        let baresip = try Baresip(mediaEncryption: dtls ? "dtls_srtp" : nil, video: true)
        let p = ["--data-dir", parleyd.daemon.dataDirectory.path]
        try baresip.quotingTranscript {
            #expect(try ControlCLITests.parley(["call", baresip.uri(.udp)] + (startsWithVideo ? ["--video"] : []) + p).status == 0)
            try baresip.waitFor("the call established") { $0.contains("Call established") }
            if !startsWithVideo {
                let upgrade = try ControlCLITests.parley(["video", "1", "on"] + p)
                #expect(upgrade.status == 0 && upgrade.output.contains("video: done"), "\(upgrade.output)")
            }
            try baresip.waitFor(timeout: .seconds(10), "our video arriving") { $0.contains("video: receiving with resolution 640 x 480") }
            Thread.sleep(forTimeInterval: 2)
            let snapshot = baresip.directory.appending(path: "received.png").path
            try baresip.send("/snapshot_recv \(snapshot)")
            try baresip.waitFor("the snapshot written") { $0.contains("png: wrote") }
            let figures = try VideoLossTests.videoFigures(dataDirectory: parleyd.daemon.dataDirectory)
            if dtls {
                let session = try ControlCLITests.parley(["audio", "1", "--json"] + p).output
                #expect(session.contains(#""encryption":"dtls""#) && !session.contains(#""encryption":null"#), "\(session)")
                _ = try parleyd.daemon.process.waitForLine("the video's own handshake checked") { $0.contains("video: secured (DTLS-SRTP") }
            }
            #expect(try ControlCLITests.parley(["end", "1"] + p).status == 0)
            try parleyd.waitForVideoFiles(1)

            let seen = try Self.colour(ofPNG: snapshot)
            #expect(seen.red > 200 && seen.green < 60 && seen.blue < 60, "baresip saw \(seen)")
            #expect(figures?["width"] as? Int == 320 && figures?["height"] as? Int == 240, "\(String(describing: figures))")
            #expect((12...17).contains(figures?["frameRateReceived"] as? Double ?? 0), "\(String(describing: figures))")
            let received = try VideoFile(path: try #require(try parleyd.videoFiles().first))
            #expect(received.frames >= 30, "parleyd decoded \(received.frames) frames of baresip's picture")
        }
    }
}
