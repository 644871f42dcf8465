import CommandLineSupport
import Foundation

/// The version printed by `parley --version`.
enum ParleyVersion {
    static let current = "0.1.0"
}

/// Writes a line to standard error.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Flushes standard output (before exiting or when output is piped and watched live).
func flushOutput() {
    fflush(nil)
}
