import Foundation

/// Where the engine's log lines go, and which of them are wanted.
public struct EngineLog: Sendable {
    /// How much to say.
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        /// Failures only.
        case error = 0
        /// What an operator should act on though nothing failed: overload shedding, the call limit, a source at its
        /// limit. At high call rates this is the level to run at: it says nothing per call.
        case warning = 1
        /// Conversation transitions and notable events (the default).
        case info = 2
        /// Every SIP decision, dropped message and refused event.
        case debug = 3

        /// The level named on the command line (`error`, `warning`, `info`, `debug`).
        public init?(name: String) {
            switch name.lowercased() {
            case "error": self = .error
            case "warning": self = .warning
            case "info": self = .info
            case "debug": self = .debug
            default: return nil
            }
        }

        /// Error < warning < info < debug.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The most detailed level written.
    public var level: Level
    /// Receives each line that passes the level.
    public var sink: @Sendable (Level, String) -> Void

    /// A log writing lines at `level` or above to `sink`.
    public init(level: Level = .info, sink: @escaping @Sendable (Level, String) -> Void) {
        self.level = level
        self.sink = sink
    }

    /// A log that writes nothing.
    public static let silent = EngineLog(level: .error) { _, _ in }

    /// Logs `message` at `level` (a machine's log effect carries its level).
    public func write(_ level: Level, _ message: @autoclosure () -> String) { if self.level >= level { sink(level, message()) } }
    /// Logs a failure.
    public func error(_ message: @autoclosure () -> String) { write(.error, message()) }
    /// Logs a condition an operator should act on.
    public func warning(_ message: @autoclosure () -> String) { write(.warning, message()) }
    /// Logs a transition or notable event.
    public func info(_ message: @autoclosure () -> String) { write(.info, message()) }
    /// Logs a detail.
    public func debug(_ message: @autoclosure () -> String) { write(.debug, message()) }
}
