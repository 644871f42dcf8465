import Foundation
import ParleyTestSupport

/// What a received video file holds, read back as a viewer would: decoded by GStreamer (matroskademux reads WebM and
/// Matroska), each frame scaled to 16×12 RGB.
struct VideoFile {
    /// Frames decoded.
    let frames: Int
    /// The mean red, green and blue (0–255) of the first frame and of the last.
    let firstColour: (red: Double, green: Double, blue: Double)
    let lastColour: (red: Double, green: Double, blue: Double)
    /// The colour each frame mostly is (`red`, `green`, `blue`, or nil), in order.
    let frameColours: [String?]

    /// Decodes `path` (VP8 or H.264 in WebM or Matroska).
    init(path: String) throws {
        let raw = FileManager.default.temporaryDirectory.appending(path: "parley-frames-\(UUID().uuidString).rgb").path
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let decoder = path.hasSuffix(".mkv") ? "h264parse ! openh264dec" : "vp8dec"
        let description = "filesrc location=\(path) ! matroskademux ! \(decoder) ! videoconvert ! videoscale"
            + " ! video/x-raw,format=RGB,width=16,height=12 ! filesink location=\(raw)"
        let process = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/gst-launch-1.0"), ["-q"] + description.split(separator: " ").map(String.init),
            name: "gst-launch-1.0 (decode \(path))")
        guard try process.waitForExit(timeout: .seconds(30)) == 0 else {
            throw InteropError("\(path) did not decode: \(process.lines.suffix(5)) \(process.standardError)")
        }
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: raw)))
        let frameBytes = 16 * 12 * 3
        frames = bytes.count / frameBytes
        guard frames > 0 else {
            (firstColour, lastColour, frameColours) = ((0, 0, 0), (0, 0, 0), [])
            return
        }
        func mean(_ frame: ArraySlice<UInt8>) -> (red: Double, green: Double, blue: Double) {
            var sums = [0.0, 0.0, 0.0]
            for (index, byte) in frame.enumerated() { sums[index % 3] += Double(byte) }
            return (sums[0] / 192, sums[1] / 192, sums[2] / 192)
        }
        (firstColour, lastColour) = (mean(bytes.prefix(frameBytes)), mean(bytes.suffix(frameBytes)))
        frameColours = (0..<frames).map { index in
            Self.dominant(mean(bytes[index * frameBytes..<(index + 1) * frameBytes]))
        }
    }

    /// The colours the frames went through, each once, in order (frames of no single colour left out).
    var colourSequence: [String] {
        frameColours.compactMap { $0 }.reduce(into: []) { sequence, colour in if sequence.last != colour { sequence.append(colour) } }
    }

    /// `red`, `green` or `blue` when that channel is above 200 and the others below 60, else nil.
    static func dominant(_ colour: (red: Double, green: Double, blue: Double)) -> String? {
        let channels = [("red", colour.red), ("green", colour.green), ("blue", colour.blue)]
        return channels.first { name, value in value > 200 && channels.allSatisfy { $0.0 == name || $0.1 < 60 } }?.0
    }

    /// Whether the last frame (or the first) is mostly `colour` (`red`, `green` or `blue`): that channel above 200,
    /// the others below 60.
    func isMostly(_ colour: String, first: Bool = false) -> Bool {
        Self.dominant(first ? firstColour : lastColour) == colour
    }
}
