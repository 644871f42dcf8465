import Foundation
import ParleyIO
import SIPMessages
import SIPTransport

/// The daemon's environment: one ``EventLoop`` thread runs the transports, the timers and the whole SIP side.
public final class LoopEnvironment: SIPEnvironment {
    /// The loop everything runs on.
    public let loop: EventLoop
    private let transportBox = TransportBox()

    /// An environment on `loop`; attach the transport with ``attach(_:)`` before traffic starts.
    public init(loop: EventLoop) {
        self.loop = loop
    }

    /// Sets the transport messages go out through (once, before the first send).
    public func attach(_ transport: SIPTransport) {
        transportBox.set(transport)
    }

    /// Sends through the attached transport (loop thread).
    public func send(_ bytes: Data, to destination: SIPDestination) {
        transportBox.transport?.send(bytes, to: destination)
    }

    /// Sends through the attached transport, which serialises the message where it sends it (over UDP, on its
    /// sender thread) (loop thread).
    public func send(_ message: SIPMessage, to destination: SIPDestination) {
        transportBox.transport?.send(to: destination) { message.serialize() }
    }

    /// A loop timer (loop thread).
    public func schedule(after delay: Duration, _ work: @escaping () -> Void) -> EngineTimer {
        EngineTimer(id: loop.schedule(after: delay, work).id)
    }

    /// Cancels a loop timer (loop thread).
    public func cancel(_ timer: EngineTimer) { loop.cancel(LoopTimer(id: timer.id)) }
    /// The wall clock.
    public var now: Date { Date() }
    /// The continuous clock since the environment was made.
    public var uptime: Duration { ContinuousClock.now - started }
    private let started = ContinuousClock.now
    /// The loop thread's time waiting for work (loop thread).
    public var idleTime: Duration? { loop.idleTime }
    /// Whether the caller runs on the loop thread.
    public var isCurrent: Bool { loop.inEventLoop }
    /// Runs `work` at the end of the loop's turn (loop thread).
    public func atEndOfTurn(_ work: @escaping () -> Void) { loop.atEndOfTurn(work) }
    /// Runs `work` on the loop thread.
    public func execute(_ work: @escaping @Sendable () -> Void) { loop.execute(work) }
    /// Runs `work` on the loop thread and waits for it (nil once the loop is shut down, or after `timeout`).
    public func executeAndWait<Value: Sendable>(within timeout: Duration?, _ work: @escaping @Sendable () -> Value) -> Value? {
        guard let timeout else { return loop.executeAndWait(work) }
        return loop.executeAndWait(within: timeout, work)
    }
}

/// The transport, set once after the environment exists (the transport's handler needs the engine, which needs the
/// environment).
// @unchecked Sendable: `transport` is written once by `set` before the loop delivers any message or runs any engine
// code that sends (the daemon attaches it before listening), and only read afterwards, on the loop thread.
private final class TransportBox: @unchecked Sendable {
    private(set) var transport: SIPTransport?
    func set(_ transport: SIPTransport) {
        precondition(self.transport == nil, "the transport is attached once")
        self.transport = transport
    }
}
