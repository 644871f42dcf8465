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
            (firstColour, lastColour) = ((0, 0, 0), (0, 0, 0))
            return
        }
        func mean(_ frame: ArraySlice<UInt8>) -> (red: Double, green: Double, blue: Double) {
            var sums = [0.0, 0.0, 0.0]
            for (index, byte) in frame.enumerated() { sums[index % 3] += Double(byte) }
            return (sums[0] / 192, sums[1] / 192, sums[2] / 192)
        }
        (firstColour, lastColour) = (mean(bytes.prefix(frameBytes)), mean(bytes.suffix(frameBytes)))
    }

    /// Whether the last frame (or the first) is mostly `colour` (`red`, `green` or `blue`): that channel above 200,
    /// the others below 60.
    func isMostly(_ colour: String, first: Bool = false) -> Bool {
        let frame = first ? firstColour : lastColour
        let channels = [("red", frame.red), ("green", frame.green), ("blue", frame.blue)]
        return channels.allSatisfy { name, value in name == colour ? value > 200 : value < 60 }
    }
}
