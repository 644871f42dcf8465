import Foundation
@testable import Media
import ParleyTestSupport
import Testing

/// Recordings a crash left unfinished (issue 48): their header's sizes set from the file's length at start-up.
@Suite("Media: WAV recordings completed after a crash")
struct WAVRepairTests {
    /// A 16-bit mono 8 kHz WAV of `seconds` of a `hertz` tone, its RIFF and data sizes as `sizes` (nil: the true ones).
    static func wav(hertz: Double, seconds: Double, sizes: (riff: UInt32, data: UInt32)?) -> Data {
        let samples = (0..<Int(8_000 * seconds)).map { Int16(12_000 * sin(2 * .pi * hertz * Double($0) / 8_000)) }
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let dataSize = UInt32(samples.count * 2)
        data.append(contentsOf: Array("RIFF".utf8)); append(sizes?.riff ?? dataSize + 36)
        data.append(contentsOf: Array("WAVEfmt ".utf8)); append(UInt32(16)); append(UInt16(1)); append(UInt16(1))
        append(UInt32(8_000)); append(UInt32(16_000)); append(UInt16(2)); append(UInt16(16))
        data.append(contentsOf: Array("data".utf8)); append(sizes?.data ?? dataSize)
        samples.forEach(append)
        return data
    }

    @Test("wavenc's placeholder sizes are completed and the audio plays; a finished file, one with a chunk after its samples and a non-WAV are left alone")
    func repairs() throws {
        let folder = try MediaSessionTests.directory()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Self.wav(hertz: 1_000, seconds: 1, sizes: (WAVRepair.placeholder + 36, WAVRepair.placeholder))
            .write(to: URL(fileURLWithPath: folder + "/crashed.wav"))
        // A finished file with a LIST chunk after the samples (wavenc writes tags there at its end of stream).
        var tagged = Self.wav(hertz: 440, seconds: 1, sizes: nil)
        tagged.append(contentsOf: Array("LIST".utf8) + [8, 0, 0, 0] + Array("INFOabcd".utf8))
        tagged.replaceSubrange(4..<8, with: withUnsafeBytes(of: UInt32(tagged.count - 8).littleEndian) { Array($0) })
        try tagged.write(to: URL(fileURLWithPath: folder + "/tagged.wav"))
        try Self.wav(hertz: 440, seconds: 1, sizes: nil).write(to: URL(fileURLWithPath: folder + "/finished.wav"))
        try Data("not a recording".utf8).write(to: URL(fileURLWithPath: folder + "/notes.wav"))
        let finished = try Data(contentsOf: URL(fileURLWithPath: folder + "/finished.wav"))
        #expect(WAVRepair.repair(directory: folder) == ["crashed.wav"])
        // Its sizes now say what it holds: the RIFF chunk's (the file less 8 bytes) and the data chunk's (at 40).
        let repaired = try Data(contentsOf: URL(fileURLWithPath: folder + "/crashed.wav"))
        let size = { (offset: Int) in (0..<4).reduce(0) { $0 | Int(repaired[offset + $1]) << (8 * $1) } }
        #expect(size(4) == repaired.count - 8 && size(40) == repaired.count - 44, "\(size(4)), \(size(40)) of \(repaired.count)")
        let heard = try Recording(wavAt: folder + "/crashed.wav")
        #expect(heard.seconds(at: 1_000) >= 0.7, "\(heard.dominantFrequencies())")
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/finished.wav")) == finished)
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/tagged.wav")) == tagged)
        #expect(try String(contentsOfFile: folder + "/notes.wav", encoding: .utf8) == "not a recording")
        #expect(WAVRepair.repair(directory: folder).isEmpty, "nothing left to repair")
    }
}
