import ControlChannel
import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// A frontend that carries the video itself (`parleyd --media external --video`): it names a video port beside its
/// audio port in `start`, learns the video session from the control API, and receives the peer's VP8 there.
@Suite("Interop: a frontend carrying its own video (--media external)", .serialized, .timeLimit(.minutes(2)))
struct VideoExternalTests {
    @Test("start names the frontend's video port; the session says it; the peer's 640x480 VP8 arrives there")
    func frontendTakesTheVideo() throws {
        let callee = try VideoCallTests.Side(colour: "red", tone: 1_000, ["--auto-answer", "0"])
        defer { try? FileManager.default.removeItem(at: callee.audio.deletingLastPathComponent()) }
        let daemon = try Parleyd(["--media", "external", "--video"])
        let (audio, video) = (try RTPFrontend(), try RTPFrontend())
        let control = try ControlSession(daemon)
        let media = MediaEndpointParams(address: "127.0.0.1", port: audio.port, videoPort: video.port)
        let started = try control.request(.start(StartParams(to: "sip:parley@127.0.0.1:\(callee.daemon.port)", video: true, media: media)))
        let uuid = try #require((started["conversation"] as? [String: Any])?["uuid"] as? String)
        _ = try callee.videoPorts()
        let report = try ControlCLITests.parley(["audio", "1", "--json", "--data-dir", daemon.dataDirectory.path]).output
        let result = (try JSONSerialization.jsonObject(with: Data(report.utf8)) as? [String: Any])?["result"] as? [String: Any]
        let session = result?["video"] as? [String: Any]
        #expect(session?["localPort"] as? Int == video.port && session?["codec"] as? String == "VP8", "\(report)")
        // The callee sends to the frontend's video port only once the frontend's own packets or its SDP say where: the
        // SDP does. Two seconds of it.
        let packets = video.receivePackets(seconds: 2)
        let vp8 = packets.filter { $0.count > 12 && $0[1] & 0x7F == 96 }
        #expect(vp8.count > 30, "\(vp8.count) VP8 packets of \(packets.count) datagrams")
        #expect(LoopbackCapture.vp8Keyframes(in: vp8).contains { $0 == (640, 480) }, "a 640x480 keyframe among them")
        _ = try control.request(.end(ConversationParams(conversation: uuid)))
        try callee.daemon.waitForEnded(1)

        // A video port too close to the audio's is refused, naming its field.
        let clash = MediaEndpointParams(address: "127.0.0.1", port: audio.port, videoPort: audio.port + 1)
        #expect(throws: (any Error).self) {
            _ = try control.request(.start(StartParams(to: "sip:parley@127.0.0.1:\(callee.daemon.port)", video: true, media: clash)))
        }
    }
}
