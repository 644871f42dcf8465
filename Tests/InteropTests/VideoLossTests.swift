import Foundation
import ParleyTestSupport
import Testing

/// Video over a lossy path: two parleyd in a network namespace of the test's own, where iptables drops a tenth of the
/// UDP packets bound for Bob's RTP ports (`-m statistic`: this kernel has no netem). Bob's jitter buffer asks for
/// what is missing (NACK), Alice resends it (RTX, RFC 4588), and a picture still lost is asked for again (PLI): the
/// picture Bob writes stays whole and nearly every frame arrives.
@Suite("Interop: video over a lossy path", .serialized, .timeLimit(.minutes(3)))
struct VideoLossTests {
    /// A parleyd in `namespace` sending `colour` on RTP ports from `base`, writing the video it receives to `folder`.
    static func parleyd(namespace: String, colour: String, base: Int, folder: URL, _ extra: [String]) throws -> (RunningProcess, URL, UInt16) {
        let port = Interop.freePort()
        let data = FileManager.default.temporaryDirectory.appending(path: "parleyd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let process = try RunningProcess(
            URL(fileURLWithPath: "/usr/sbin/ip"),
            ["netns", "exec", namespace, try Interop.binary("parleyd").path, "--listen", "udp://127.0.0.1:\(port)",
             "--data-dir", data.path, "--log-level", "debug", "--media", "gstreamer", "--video", "--audio-source", "tone:440",
             "--audio-sink", "null", "--video-source", "test:\(colour)", "--video-sink", "file:\(folder.path)",
             "--rtp-ports", "\(base)-\(base + 99)"] + extra, name: "parleyd in \(namespace)")
        try process.waitForLine("its listening line") { $0.contains("listening on") }
        return (process, data, port)
    }

    /// The video figures of `parley audio 1 --json` (nil before the first reading with video).
    static func videoFigures(dataDirectory: URL) throws -> [String: Any]? {
        let report = try ControlCLITests.parley(["audio", "1", "--json", "--data-dir", dataDirectory.path])
        let result = (try JSONSerialization.jsonObject(with: Data(report.output.utf8)) as? [String: Any])?["result"] as? [String: Any]
        return (result?["stats"] as? [String: Any])?["video"] as? [String: Any]
    }

    @Test("a tenth of the packets to Bob dropped: NACKs and retransmissions keep the picture whole, nearly every frame arrives")
    func nackAndRetransmission() throws {
        let namespace = try LoopbackNamespace()
        let folder = FileManager.default.temporaryDirectory.appending(path: "parley-video-loss-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let bobsPorts = 30_000 + Int.random(in: 0..<100) * 100
        let (bob, bobData, bobPort) = try Self.parleyd(
            namespace: namespace.name, colour: "blue", base: bobsPorts, folder: folder.appending(path: "bob"),
            ["--user", "bob", "--auto-answer", "0"])
        let (alice, aliceData, _) = try Self.parleyd(
            namespace: namespace.name, colour: "red", base: bobsPorts + 100, folder: folder.appending(path: "alice"), ["--user", "alice"])
        let drop = try RunningProcess(
            URL(fileURLWithPath: "/usr/sbin/ip"),
            ["netns", "exec", namespace.name, "iptables", "-A", "INPUT", "-p", "udp", "--dport", "\(bobsPorts):\(bobsPorts + 99)",
             "-m", "statistic", "--mode", "random", "--probability", "0.1", "-j", "DROP"], name: "iptables")
        try #require(try drop.waitForExit() == 0, "iptables: \(drop.standardError)")

        #expect(try ControlCLITests.parley(["call", "sip:bob@127.0.0.1:\(bobPort)", "--video", "--data-dir", aliceData.path]).status == 0)
        _ = try bob.waitForLine("video started") { $0.contains(": video VP8 to ") }
        let started = ContinuousClock.now
        // Six seconds of video; the figures read once they cover most of them.
        Thread.sleep(forTimeInterval: 6)
        var received: [String: Any]?
        for _ in 0..<40 {
            received = try Self.videoFigures(dataDirectory: bobData)
            if received?["framesReceived"] as? Int ?? 0 >= 120 { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        let sent = try Self.videoFigures(dataDirectory: aliceData)
        #expect(try ControlCLITests.parley(["end", "1", "--data-dir", aliceData.path]).status == 0)
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        _ = try bob.waitForLine("a complete video file") { $0.contains("video recording complete:") }
        _ = alice

        // Bob asked for what was lost and Alice resent it; most losses were repaired without a keyframe (without
        // retransmission every lost packet costs a request). On an idle machine one request (the first picture's) is
        // usual; a loaded one (CI's parallel tests) delays some retransmissions past the jitter buffer: 6 seen.
        let figures = "Bob: \(String(describing: received)); Alice: \(String(describing: sent))"
        let nacks = received?["nacksSent"] as? Int ?? 0
        #expect(nacks > 0 && (sent?["nacksReceived"] as? Int ?? 0) > 0, "\(figures)")
        #expect((received?["keyframeRequestsSent"] as? Int ?? 99) * 2 <= max(nacks, 4), "\(figures)")
        // Nearly every frame of the 30 a second arrived, and the picture is whole (red to its last frame).
        let file = try #require(try FileManager.default.contentsOfDirectory(atPath: folder.appending(path: "bob").path).first)
        let picture = try VideoFile(path: folder.appending(path: "bob").appending(path: file).path)
        #expect(Double(picture.frames) >= 0.85 * 30 * seconds, "\(picture.frames) frames in \(seconds) s; \(figures)")
        #expect(picture.isMostly("red"), "the last frame: \(picture.lastColour)")
    }
}
