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

/// A subcommand's `--help` (or no arguments at all): its help printed, and the exit code to return (usage when it
/// was given nothing); nil when the subcommand should run.
func helpAnswer(_ commandLine: [String], _ arguments: inout Arguments, help: String) -> ExitCode? {
    guard arguments.flag("--help", "-h") || commandLine.isEmpty else { return nil }
    print(help)
    return commandLine.isEmpty ? .usage : .ok
}
