import Foundation
import ParleyEngine
import SIPMessages
import SIPTransport

/// A SIP environment on a manual timeline, for the engine's tests and its stateful fuzz target: what the engine
/// sends must parse and is collected, timers fire only when the caller advances time, and everything runs on the
/// caller's thread. The one exception to "must parse": an error response to a malformed request copies only the
/// headers that could be read (RFC 4475's `insuf` gets a 400 without From, To or Call-ID), so it is counted in
/// ``unparsedErrorResponses`` instead.
public final class ManualSIPEnvironment: SIPEnvironment, @unchecked Sendable {
    // @unchecked Sendable: one thread drives it; `isCurrent` is always true.
    /// One message the engine sent, and where to.
    public struct Sent: Sendable {
        public let message: SIPMessage
        public let destination: SIPDestination
    }
    private struct Timer {
        let id: UInt64
        let due: Duration
        let work: () -> Void
    }

    /// What was sent since the last ``takeSent()`` (while ``keepsSent``).
    public private(set) var sent: [Sent] = []
    /// Whether sent messages are parsed, kept and told to ``onSend``; off, they are dropped unread.
    public var keepsSent = true
    /// Told of each message sent (while ``keepsSent``).
    public var onSend: ((Sent) -> Void)?
    private var timers: [UInt64: Timer] = [:]
    private var nextID: UInt64 = 1
    /// How far the timeline has moved.
    public private(set) var elapsed: Duration = .zero
    /// The engine thread's idle time as the test says it is (nil: not measured, overload control off). A test sets
    /// it before the engine is made and moves it with the timeline to play a busy or an idle engine.
    public var idleTime: Duration?
    /// The wall-clock time at the start of the timeline.
    public let start: Date

    /// A timeline starting at `start`.
    public init(start: Date = Date(timeIntervalSince1970: 1_767_225_600)) { self.start = start }

    /// Error responses sent that do not parse (see the type's note).
    public private(set) var unparsedErrorResponses = 0
    /// Where keep-alive pings (bytes that are only CRs and LFs: RFC 5626's CRLFCRLF) went, in order.
    public private(set) var keepAlivesSent: [SIPDestination] = []

    public func send(_ bytes: Data, to destination: SIPDestination) {
        guard keepsSent else { return }
        if !bytes.isEmpty, bytes.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) {
            keepAlivesSent.append(destination)
            return
        }
        guard let message = try? SIPMessage.parse(bytes) else {
            let text = String(decoding: bytes, as: UTF8.self)
            if text.hasPrefix("SIP/2.0 4") || text.hasPrefix("SIP/2.0 5") {
                unparsedErrorResponses += 1
                return
            }
            fatalError("the engine sent something that does not parse:\n\(text)")
        }
        let sent = Sent(message: message, destination: destination)
        self.sent.append(sent)
        onSend?(sent)
    }

    public func schedule(after delay: Duration, _ work: @escaping () -> Void) -> EngineTimer {
        defer { nextID += 1 }
        timers[nextID] = Timer(id: nextID, due: elapsed + delay, work: work)
        return EngineTimer(id: nextID)
    }

    public func cancel(_ timer: EngineTimer) { timers[timer.id] = nil }
    public var now: Date {
        start.addingTimeInterval(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
    public var uptime: Duration { elapsed }
    public var isCurrent: Bool { true }
    public func execute(_ work: @escaping @Sendable () -> Void) { work() }

    /// Moves time forward, firing due timers in order (timers they start fire too if due).
    public func advance(by duration: Duration) {
        let end = elapsed + duration
        while let next = timers.values.filter({ $0.due <= end }).min(by: { ($0.due, $0.id) < ($1.due, $1.id) }) {
            timers[next.id] = nil
            elapsed = next.due
            next.work()
        }
        elapsed = end
    }

    /// Live timers.
    public var pendingTimers: Int { timers.count }

    /// Takes what was sent since the last call.
    public func takeSent() -> [Sent] {
        defer { sent.removeAll() }
        return sent
    }
}
