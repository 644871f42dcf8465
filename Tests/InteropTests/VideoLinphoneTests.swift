import Foundation
import ParleyTestSupport
import Testing

/// Video with linphonec 5.1 (Debian's, VP8 through mediastreamer2's libvpx): its camera is mediastreamer2's static
/// picture (its "no webcam" image, a frame a second) and it has no display here, so what it received is read from
/// its decoder's log lines (the size it decoded, its first decoded frame); what parleyd received is decoded from
/// parleyd's WebM.
@Suite("Interop: video with linphonec", .serialized, .timeLimit(.minutes(3)))
struct VideoLinphoneTests {
    @Test("linphonec and parleyd carry VP8 both ways, in a video call and in an audio call upgraded to video", arguments: [true, false])
    func videoWithLinphone(startsWithVideo: Bool) throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "parley-video-linphone-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let pair = try LinphoneAndParleyd(video: true) { _ in
            ["--video", "--video-source", "test:red", "--video-sink", "file:\(folder.path)"]
        }
        let p = ["--data-dir", pair.parleydData.path]
        let call = try ControlCLITests.parley(["call", "sip:x@127.0.0.1:\(pair.linphonePort)"] + (startsWithVideo ? ["--video"] : []) + p)
        #expect(call.status == 0, "\(call.output)")
        try pair.waitForLinphone("Media streams established")
        if !startsWithVideo {
            let upgrade = try ControlCLITests.parley(["video", "1", "on"] + p)
            #expect(upgrade.status == 0 && upgrade.output.contains("video: done"), "\(upgrade.output)")
        }
        // linphonec decoded our 640x480 picture.
        try pair.waitForLinphone("MSVp8Dec: video is 640x480")
        try pair.waitForLinphone("First video frame decoded successfully")
        // parleyd receives linphonec's still picture (a frame a second): three of them.
        Thread.sleep(forTimeInterval: 3.5)
        var figures: [String: Any]?
        for _ in 0..<30 {
            figures = try VideoLossTests.videoFigures(dataDirectory: pair.parleydData)
            if figures?["framesReceived"] as? Int ?? 0 >= 3 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(try ControlCLITests.parley(["end", "1"] + p).status == 0)
        _ = try pair.process.waitForLine("a complete video file") { $0.contains("video recording complete:") }
        #expect((figures?["width"] as? Int ?? 0) > 0 && (figures?["framesReceived"] as? Int ?? 0) >= 3, "\(String(describing: figures))")
        let file = try #require(try FileManager.default.contentsOfDirectory(atPath: folder.path).first { $0.hasSuffix(".webm") })
        let received = try VideoFile(path: folder.appending(path: file).path)
        #expect(received.frames >= 3, "parleyd decoded \(received.frames) of linphonec's frames")
    }
}
