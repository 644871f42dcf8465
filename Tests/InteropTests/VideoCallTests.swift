import Foundation
import ParleyTestSupport
import Testing

/// Video between two parleyd on loopback, checked by colour: each sends a solid colour of its own (videotestsrc's
/// red and blue patterns) and writes what it receives to a WebM file, decoded afterwards; the audio (a tone each way)
/// is checked by frequency to show it never stopped.
@Suite("Interop: video between two parleyd", .serialized, .timeLimit(.minutes(4)))
struct VideoCallTests {
    /// A parleyd with video: `colour` and `tone` Hz out; the audio it hears into one folder, the video into another.
    struct Side {
        let daemon: Parleyd
        let audio: URL
        let video: URL

        init(colour: String, tone: Int, _ extra: [String]) throws {
            let base = FileManager.default.temporaryDirectory.appending(path: "parley-video-\(UUID().uuidString)")
            audio = base.appending(path: "audio")
            video = base.appending(path: "video")
            let ports = 20_000 + Int.random(in: 0..<400) * 100
            daemon = try Parleyd(
                ["--video", "--media", "gstreamer", "--audio-source", "tone:\(tone)", "--audio-sink", "file:\(audio.path)",
                 "--video-source", "test:\(colour)", "--video-sink", "file:\(video.path)", "--rtp-ports", "\(ports)-\(ports + 99)"]
                    + extra)
        }

        /// The video files it wrote, oldest first.
        func videoFiles() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: video.path).filter { $0.hasSuffix(".webm") || $0.hasSuffix(".mkv") }
                .sorted { $0.count < $1.count }.map { video.appending(path: $0).path }
        }

        /// Waits until it said `count` video files are complete.
        func waitForVideoFiles(_ count: Int) throws {
            try daemon.process.waitForLine("\(count) complete video file(s)") { _ in
                daemon.process.lines.filter { $0.contains("video recording complete:") }.count >= count
            }
        }

        /// Where its video goes and comes from, as its log says once video starts: (peer's port, our port).
        func videoPorts() throws -> (remote: UInt16, local: UInt16) {
            let line = try daemon.process.waitForLine("video started") { $0.contains(": video VP8 to ") }
            let words = line.split(separator: " ")
            guard let to = words.firstIndex(of: "to"), let port = words[to + 1].split(separator: ":").last.flatMap({ UInt16($0.filter(\.isNumber)) }),
                let from = words.firstIndex(of: "port"), let local = UInt16(words[from + 1].filter(\.isNumber))
            else { throw InteropError("no ports in: \(line)") }
            return (port, local)
        }
    }

    static func parley(_ arguments: [String]) throws -> ControlCLITests.Run { try ControlCLITests.parley(arguments) }

    /// Waits (at most five seconds: figures are read every two) until the video frame rate `daemon` receives
    /// satisfies `matches`.
    static func waitForFrameRate(of daemon: Parleyd, _ matches: (Double) -> Bool) throws -> Bool {
        for _ in 0..<50 {
            let rate = try VideoLossTests.videoFigures(dataDirectory: daemon.dataDirectory)?["frameRateReceived"] as? Double
            if let rate, matches(rate) { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    @Test(
        "upgraded to video, each side receives the other's colour at 30 fps; a downgrade stops the frames, an upgrade starts them again, a hold stops them until the resume; the audio goes on; an eavesdropper sees VP8 keyframes only without encryption",
        arguments: ["none", "sdes", "dtls"])
    func upgradeCarriesPictures(keying: String) throws {
        let encrypted = keying != "none"
        let encryption = encrypted ? ["--media-encryption", keying] : []
        let bob = try Side(colour: "blue", tone: 440, ["--user", "bob", "--auto-answer", "0"] + encryption)
        let alice = try Side(colour: "red", tone: 1_000, ["--user", "alice"] + encryption)
        defer {
            for side in [alice, bob] { try? FileManager.default.removeItem(at: side.audio.deletingLastPathComponent()) }
        }
        let a = ["--data-dir", alice.daemon.dataDirectory.path]
        let began = ContinuousClock.now
        #expect(try Self.parley(["call", "sip:bob@127.0.0.1:\(bob.daemon.port)"] + a).status == 0)
        try bob.daemon.waitForTransition(to: "joined")
        try alice.daemon.waitForTransition(to: "joined")

        let upgrade = try Self.parley(["video", "1", "on"] + a)
        #expect(upgrade.status == 0 && upgrade.output.contains("video: done"), "\(upgrade.output)")
        let on = ContinuousClock.now
        let (bobsPort, alicesPort) = try alice.videoPorts()
        _ = try bob.videoPorts()
        let eavesdropper = try LoopbackCapture(port: bobsPort, from: alicesPort)
        Thread.sleep(forTimeInterval: 3)
        // The control API's view while video is on: the session, and its figures (read every two seconds: the first
        // reading that counts two seconds of frames, within three more).
        var report = try Self.parley(["audio", "1", "--json"] + a)
        var result: [String: Any]?
        var figures: [String: Any]?
        for _ in 0..<30 {
            result = (try JSONSerialization.jsonObject(with: Data(report.output.utf8)) as? [String: Any])?["result"] as? [String: Any]
            figures = (result?["stats"] as? [String: Any])?["video"] as? [String: Any]
            if figures?["framesReceived"] as? Int ?? 0 > 60 { break }
            Thread.sleep(forTimeInterval: 0.1)
            report = try Self.parley(["audio", "1", "--json"] + a)
        }
        let session = result?["video"] as? [String: Any]
        #expect(session?["codec"] as? String == "VP8" && session?["direction"] as? String == "sendrecv", "\(report.output)")
        #expect(session?["encryption"] as? String == (encrypted ? keying : nil), "\(report.output)")
        #expect((figures?["framesReceived"] as? Int ?? 0) > 60 && figures?["width"] as? Int == 640 && figures?["height"] as? Int == 480,
            "\(report.output)")
        #expect((25...35).contains(figures?["frameRateReceived"] as? Double ?? 0), "\(report.output)")
        #expect(try Self.parley(["video", "1", "off"] + a).status == 0)
        let seconds = Double((ContinuousClock.now - on).components.attoseconds) / 1e18 + Double((ContinuousClock.now - on).components.seconds)
        try alice.waitForVideoFiles(1)
        try bob.waitForVideoFiles(1)
        let datagrams = eavesdropper.stop()

        // Each side received the other's colour, at about 30 frames a second while video was on.
        for (side, colour) in [(alice, "blue"), (bob, "red")] {
            let files = try side.videoFiles()
            try #require(files.count == 1, "\(files)")
            let received = try VideoFile(path: files[0])
            #expect(received.isMostly(colour), "\(colour) expected: \(received.lastColour)")
            let rate = Double(received.frames) / seconds
            #expect(rate > 24 && rate < 32, "\(received.frames) frames in \(seconds) s")
        }
        // What an eavesdropper on the path makes of Alice's video.
        let keyframes = eavesdropper.vp8Keyframes()
        #expect(datagrams > 50, "\(datagrams) datagrams captured")
        if encrypted {
            #expect(keyframes.isEmpty, "SRTP: no VP8 keyframe may be readable, found \(keyframes)")
        } else {
            #expect(keyframes.contains { $0 == (640, 480) }, "plain RTP: 640×480 keyframes readable, found \(keyframes)")
        }

        // Downgraded: no frame arrives, the files stay as they are.
        let sizes = try [alice, bob].map { try FileManager.default.attributesOfItem(atPath: try $0.videoFiles()[0])[.size] as? Int }
        Thread.sleep(forTimeInterval: 1)
        #expect(try [alice, bob].map { try FileManager.default.attributesOfItem(atPath: try $0.videoFiles()[0])[.size] as? Int } == sizes)
        #expect(try [alice, bob].map { try $0.videoFiles().count } == [1, 1])

        // Upgraded again from Bob's side: a second file each, the colours again.
        #expect(try Self.parley(["video", "1", "on", "--data-dir", bob.daemon.dataDirectory.path]).status == 0)
        Thread.sleep(forTimeInterval: 2)
        // A hold stops the video both ways (and the audio); the resume brings it back.
        #expect(try Self.parley(["hold", "1"] + a).status == 0)
        let held = try Self.parley(["audio", "1", "--json"] + a).output
        #expect(held.contains(#""direction":"inactive""#), "\(held)")
        #expect(try Self.waitForFrameRate(of: alice.daemon, { $0 == 0 }), "no frames while held")
        #expect(try Self.parley(["resume", "1"] + a).status == 0)
        #expect(try Self.waitForFrameRate(of: alice.daemon, { $0 >= 20 }), "frames again after the resume")
        #expect(try Self.parley(["end", "1"] + a).status == 0)
        let call = Double((ContinuousClock.now - began).components.seconds)
        try bob.daemon.waitForEnded(1)
        try alice.waitForVideoFiles(2)
        try bob.waitForVideoFiles(2)
        for (side, colour) in [(alice, "blue"), (bob, "red")] {
            let files = try side.videoFiles()
            try #require(files.count == 2, "\(files)")
            let again = try VideoFile(path: files[1])
            #expect(again.isMostly(colour) && again.frames > 30, "\(colour) expected: \(again.lastColour), \(again.frames) frames")
        }
        // The audio went on through both upgrades and the downgrade (not through the hold's 1.5 s).
        for (side, tone) in [(alice, 440.0), (bob, 1_000.0)] {
            let heard = try AudioInterop.AudioInteropTests.recording(in: side.audio, of: side.daemon)
            #expect(heard.seconds(at: tone) >= call - 4.5, "\(tone) Hz for \(heard.seconds(at: tone)) s of a \(call) s call")
        }
    }

    @Test("H.264 when the caller prefers it (--video-codecs h264,vp8): openh264 both ways, each side's colour in its Matroska file")
    func h264WhenPreferred() throws {
        let bob = try Side(colour: "blue", tone: 440, ["--user", "bob", "--auto-answer", "0"])
        let alice = try Side(colour: "red", tone: 1_000, ["--user", "alice", "--video-codecs", "h264,vp8"])
        defer {
            for side in [alice, bob] { try? FileManager.default.removeItem(at: side.audio.deletingLastPathComponent()) }
        }
        let a = ["--data-dir", alice.daemon.dataDirectory.path]
        #expect(try Self.parley(["call", "sip:bob@127.0.0.1:\(bob.daemon.port)", "--video"] + a).status == 0)
        try bob.daemon.waitForTransition(to: "joined")
        _ = try alice.daemon.process.waitForLine("video started") { $0.contains(": video H264 to ") }
        let report = try Self.parley(["audio", "1", "--json"] + a).output
        #expect(report.contains(#""codec":"H264""#), "\(report)")
        Thread.sleep(forTimeInterval: 3)
        #expect(try Self.parley(["end", "1"] + a).status == 0)
        try alice.waitForVideoFiles(1)
        try bob.waitForVideoFiles(1)
        for (side, colour) in [(alice, "blue"), (bob, "red")] {
            let file = try #require(try side.videoFiles().first)
            #expect(file.hasSuffix(".mkv"), "\(file)")
            let received = try VideoFile(path: file)
            #expect(received.isMostly(colour) && received.frames >= 60, "\(colour): \(received.lastColour), \(received.frames) frames")
        }
    }
}

extension LoopbackCapture {
    /// The VP8 keyframes readable in the captured datagrams: what someone on the path sees of the picture.
    func vp8Keyframes() -> [(Int, Int)] { Self.vp8Keyframes(in: datagrams) }

    /// The VP8 keyframes readable in `datagrams` (RTP, RFC 7741's payload descriptor, then a keyframe's start code
    /// 9d 01 2a and its 14-bit width and height).
    static func vp8Keyframes(in datagrams: [[UInt8]]) -> [(Int, Int)] {
        var found: [(Int, Int)] = []
        for datagram in datagrams where datagram.count > 24 && datagram[0] >> 6 == 2 {
            let start = 12 + 4 * Int(datagram[0] & 0x0F)
            let payload = Array(datagram[start...].prefix(24))
            guard let code = (0..<max(0, payload.count - 7)).first(where: { payload[$0] == 0x9D && payload[$0 + 1] == 0x01 && payload[$0 + 2] == 0x2A })
            else { continue }
            let width = (Int(payload[code + 3]) | Int(payload[code + 4]) << 8) & 0x3FFF
            let height = (Int(payload[code + 5]) | Int(payload[code + 6]) << 8) & 0x3FFF
            found.append((width, height))
        }
        return found
    }
}
