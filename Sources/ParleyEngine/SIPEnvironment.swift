import Foundation
import ParleyIO
import SIPMessages
import SIPTransport

/// A timer started through a ``SIPEnvironment``; opaque to the user agent.
public struct EngineTimer: Hashable, Sendable {
    /// The environment's identifier for it.
    public let id: UInt64

    /// Wraps an environment's identifier.
    public init(id: UInt64) { self.id = id }
}

/// Everything the user agent needs from the world outside it: sending bytes, timers, the wall clock and a way onto its
/// thread. The daemon's is the event loop with its transports (``LoopEnvironment``); tests use one with a manual
/// timeline, so nothing in the engine sleeps or reads a clock of its own.
///
/// All calls except ``execute(_:)``, ``executeAndWait(_:)`` and ``isCurrent`` happen on the environment's one thread.
public protocol SIPEnvironment: AnyObject, Sendable {
    /// Sends one message; failures come back through the transport-failure path, never as a throw.
    func send(_ bytes: Data, to destination: SIPDestination)
    /// Sends a message, serialised where the environment likes (by default here, then sent as bytes).
    func send(_ message: SIPMessage, to destination: SIPDestination)
    /// Runs `work` once after `delay` unless cancelled.
    func schedule(after delay: Duration, _ work: @escaping () -> Void) -> EngineTimer
    /// Cancels a timer; cancelling one that fired or was cancelled does nothing.
    func cancel(_ timer: EngineTimer)
    /// Wall-clock time, for the dates conversations carry.
    var now: Date { get }
    /// Monotonic time since the environment began, for rates and bans (it never jumps with the wall clock).
    var uptime: Duration { get }
    /// Whether the caller is on the environment's thread.
    var isCurrent: Bool { get }
    /// How long the environment's thread has been idle (waiting for work) since it began, for overload control; nil
    /// when it does not measure this (overload control is then off).
    var idleTime: Duration? { get }
    /// Runs `work` once the environment's thread is done with what it is handling now (the end of an event loop's
    /// turn), for work best done once for all of it; on the environment's thread.
    func atEndOfTurn(_ work: @escaping () -> Void)
    /// Runs `work` on the environment's thread, soon (from any thread).
    func execute(_ work: @escaping @Sendable () -> Void)
    /// Runs `work` on the environment's thread and waits for its result — at once when already there; nil when the
    /// environment runs no more work, or (with a timeout) did not run it in time.
    func executeAndWait<Value: Sendable>(within timeout: Duration?, _ work: @escaping @Sendable () -> Value) -> Value?
}

extension SIPEnvironment {
    /// Not measured.
    public var idleTime: Duration? { nil }

    /// For environments without turns: at once.
    public func atEndOfTurn(_ work: @escaping () -> Void) { work() }

    /// Serialised here and sent as bytes.
    public func send(_ message: SIPMessage, to destination: SIPDestination) {
        send(message.serialize(), to: destination)
    }

    /// `executeAndWait` with no timeout.
    public func executeAndWait<Value: Sendable>(_ work: @escaping @Sendable () -> Value) -> Value? {
        executeAndWait(within: nil, work)
    }

    /// For environments that run work on the caller's thread: at once.
    public func executeAndWait<Value: Sendable>(within timeout: Duration?, _ work: @escaping @Sendable () -> Value) -> Value? {
        precondition(isCurrent, "an environment off the caller's thread implements executeAndWait itself")
        return work()
    }
}
