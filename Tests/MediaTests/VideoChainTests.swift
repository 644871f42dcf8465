import Foundation
import Testing

@testable import Media

/// The video chains (issue 47 groundwork) run through gst-launch-1.0 end to end, without a network: a solid colour
/// encoded, packetized, depacketized and decoded; the decoded frames keep the colour.
@Suite("Media: video chains (VP8, H.264)", .serialized, .timeLimit(.minutes(2)))
struct VideoChainTests {
    /// The last frame's mean red, green and blue (0-255) after `codec` carried `colour` (0xRRGGBB) through RTP, 64x48.
    static func carried(_ codec: VideoCodec, colour: UInt32) throws -> (red: Double, green: Double, blue: Double, frames: Int) {
        let file = NSTemporaryDirectory() + "parley-video-\(UUID().uuidString).rgb"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let payloadType = 96
        let description = "videotestsrc num-buffers=30 pattern=solid-color foreground-color=\(0xFF00_0000 | colour)"
            + " ! video/x-raw,format=I420,width=64,height=48,framerate=15/1 ! " + codec.sendChain(payloadType: payloadType)
            + " ! \(codec.rtpCaps(payloadType: payloadType)) ! " + codec.receiveChain
            + " ! videoconvert ! video/x-raw,format=RGB,width=64,height=48 ! filesink location=\(file)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gst-launch-1.0")
        process.arguments = ["-q"] + description.split(separator: " ").map(String.init)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "gst-launch-1.0 \(description)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        let frameBytes = 64 * 48 * 3
        let frames = bytes.count / frameBytes
        guard frames > 0 else { return (0, 0, 0, 0) }
        let last = bytes.suffix(frameBytes)
        var sums = [0.0, 0.0, 0.0]
        for (index, byte) in last.enumerated() { sums[index % 3] += Double(byte) }
        let pixels = Double(64 * 48)
        return (sums[0] / pixels, sums[1] / pixels, sums[2] / pixels, frames)
    }

    @Test("VP8 and H.264 each carry a solid colour: red stays red, blue stays blue", arguments: VideoCodec.allCases)
    func colourSurvives(_ codec: VideoCodec) throws {
        let red = try Self.carried(codec, colour: 0xFF0000)
        #expect(red.frames >= 20, "\(codec): \(red.frames) frames decoded of 30")
        #expect(red.red > 200 && red.green < 60 && red.blue < 60, "\(codec) red: \(red)")
        let blue = try Self.carried(codec, colour: 0x0000FF)
        #expect(blue.blue > 200 && blue.red < 60 && blue.green < 60, "\(codec) blue: \(blue)")
    }
}
