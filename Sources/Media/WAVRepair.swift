import Foundation

/// Completes WAV recordings a crash left unfinished (issue 48): wavenc writes placeholder sizes (0x7FFF0000 and
/// near it) when a recording starts and the real ones at its end of stream, so a process killed mid-call leaves a
/// file whose header lies about its length. At start-up the sizes are set from the file's length.
///
/// ```
///   RIFF <size> WAVE … "data" <size> samples…
///        data size is the placeholder, or more than the file holds ──► both sizes rewritten (header only)
///        otherwise (a finished file, chunks after the samples included) ──► left alone
/// ```
public enum WAVRepair {
    /// wavenc's placeholder data size.
    static let placeholder: UInt32 = 0x7FFF_0000

    /// Repairs every `.wav` directly in `directory` a crash left unfinished; the repaired files' names. Files that
    /// are not RIFF/WAVE with a data chunk in their first 4 KiB are left alone.
    public static func repair(directory: String) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.filter { $0.hasSuffix(".wav") }.sorted().filter { repair(file: directory + "/" + $0) }
    }

    /// Repairs one file; whether it needed it (and was written).
    static func repair(file path: String) -> Bool {
        guard let handle = FileHandle(forUpdatingAtPath: path) else { return false }
        defer { try? handle.close() }
        guard let length = try? handle.seekToEnd(), length >= 44, length <= UInt64(UInt32.max) else { return false }
        try? handle.seek(toOffset: 0)
        guard let head = try? handle.read(upToCount: 4_096), head.count >= 44,
            head.prefix(4) == Data("RIFF".utf8), head[8..<12] == Data("WAVE".utf8)
        else { return false }
        // The chunks after "WAVE": an id and a little-endian size each; the data chunk's samples run to the end.
        var offset = 12
        while offset + 8 <= head.count {
            let id = head[offset..<(offset + 4)]
            let size = Int(littleEndian(head, at: offset + 4))
            if id == Data("data".utf8) {
                let present = length - UInt64(offset + 8)
                guard UInt32(size) == placeholder || UInt64(size) > present else { return false }
                // Whole sample frames only (wavenc's are 2 bytes a sample, mono).
                let data = UInt32(present - present % 2), riff = UInt32(UInt64(offset + 8) + UInt64(data) - 8)
                do {
                    try handle.seek(toOffset: 4)
                    try handle.write(contentsOf: bytes(riff))
                    try handle.seek(toOffset: UInt64(offset + 4))
                    try handle.write(contentsOf: bytes(data))
                    return true
                } catch {
                    return false
                }
            }
            offset += 8 + size + size % 2
        }
        return false
    }

    private static func littleEndian(_ data: Data, at offset: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[data.startIndex + offset + $1]) << (8 * UInt32($1)) }
    }

    private static func bytes(_ value: UInt32) -> Data { Data((0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }) }
}
