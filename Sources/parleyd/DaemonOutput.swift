import Foundation
import ParleyEngine

/// parleyd's version.
enum DaemonVersion {
    static let current = "0.3.0"
}

/// Log lines: `2026-11-29T17:02:03.123Z info conversation … → joined` on standard output, errors also on standard
/// error. Each line is one write, so lines from different threads never interleave.
enum DaemonOutput {
    // nonisolated(unsafe): ISO8601DateFormatter is not Sendable, but this one is only ever used inside
    // `lock.withLock` below, so no two threads touch it at once.
    nonisolated(unsafe) private static let formatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
    private static let lock = NSLock()

    static func line(_ level: EngineLog.Level, _ message: String) {
        let stamp = lock.withLock { formatter.string(from: Date()) }
        let text = "\(stamp) \(level) \(message)\n"
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func error(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }
}
