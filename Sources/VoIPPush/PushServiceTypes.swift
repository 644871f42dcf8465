import Foundation

/// One connection to the simulator, as its driver numbers them (`#1`, `#2`, …). The service never opens or
/// reads sockets: it only names connections in its inputs and effects.
public struct PushConnectionID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The driver's number for the connection.
    public let rawValue: UInt64

    /// Wraps a connection number.
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// `#3`.
    public var description: String { "#\(rawValue)" }

    /// By number.
    public static func < (lhs: PushConnectionID, rhs: PushConnectionID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A timer the service asks its driver to run; the driver calls ``PushService/timerFired(_:now:)`` when it is
/// due. A timer that fires after it was cancelled, or twice, is ignored.
public enum PushTimer: Sendable, Hashable, CustomStringConvertible {
    /// The device has not acked push `pushID` yet.
    case ackTimeout(pushID: String)
    /// Stored push `pushID` expires.
    case storedExpiry(pushID: String)

    /// `ackTimeout(p1)`.
    public var description: String {
        switch self {
        case .ackTimeout(let pushID): "ackTimeout(\(pushID))"
        case .storedExpiry(let pushID): "storedExpiry(\(pushID))"
        }
    }
}

extension PushService {
    /// The simulator's rules, tunable.
    public struct Configuration: Sendable, Hashable {
        /// Strikes after which a token is disabled (3 by default; at least 1).
        public var maxFailures: Int
        /// How long a device has to ack a push before it counts as not reported (5 s by default).
        public var ackTimeout: TimeInterval
        /// Pushes kept per offline device; the oldest is dropped when a newer one would exceed it (100).
        public var maxStoredPerToken: Int

        /// A configuration; traps on values that make no sense (a caller's bug, not a peer fault).
        public init(maxFailures: Int = 3, ackTimeout: TimeInterval = 5, maxStoredPerToken: Int = 100) {
            precondition(maxFailures >= 1, "maxFailures must be at least 1")
            precondition(ackTimeout > 0 && ackTimeout.isFinite, "ackTimeout must be a positive number of seconds")
            precondition(maxStoredPerToken >= 1, "maxStoredPerToken must be at least 1")
            self.maxFailures = maxFailures
            self.ackTimeout = ackTimeout
            self.maxStoredPerToken = maxStoredPerToken
        }
    }

    /// What the driver must do after an input, in order.
    public enum Effect: Sendable, Hashable, CustomStringConvertible {
        /// Write `message` to connection `to` (ignored when that connection has gone).
        case send(PushMessage, to: PushConnectionID)
        /// Close the connection after writing what is queued for it, then report ``PushService/connectionClosed(_:reason:now:)``.
        case close(PushConnectionID, reason: String)
        /// Run `timer` at `at` (replacing a pending one with the same identity).
        case startTimer(PushTimer, at: Date)
        /// Forget `timer`.
        case cancelTimer(PushTimer)
        /// Print one log line.
        case log(String)

        /// For test failures.
        public var description: String {
            switch self {
            case .send(let message, let connection): "send \(message.kind.rawValue) to \(connection)"
            case .close(let connection, let reason): "close \(connection) (\(reason))"
            case .startTimer(let timer, let date): "start \(timer) at \(WireDate.text(date))"
            case .cancelTimer(let timer): "cancel \(timer)"
            case .log(let line): "log \(line)"
            }
        }
    }
}
