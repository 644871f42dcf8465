import Foundation

/// Why a message was not sent, or not to everyone (Apple's `send` only throws an untyped error).
public enum GroupSendError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The message's `type` and `data` take `size` bytes; the session's legs take at most `limit`.
    case messageTooLarge(size: Int, limit: Int)
    /// The sender sent too many messages lately, or a leg has too much waiting: try again after this long.
    case throttled(retryAfter: Duration)
    /// This side has not joined the session (or it is over).
    case notJoined
    /// No active participant has this id.
    case unknownParticipant(String)
    /// The participant left before the message reached it.
    case participantLeft(String)
    /// The message itself is unusable (its type, or its data is not JSON).
    case invalidMessage(String)
    /// No such session here.
    case unknownSession(String)

    /// The stable code a frontend switches on.
    public var code: String {
        switch self {
        case .messageTooLarge: "messageTooLarge"
        case .throttled: "throttled"
        case .notJoined: "notJoined"
        case .unknownParticipant: "unknownParticipant"
        case .participantLeft: "participantLeft"
        case .invalidMessage: "invalidMessage"
        case .unknownSession: "unknownSession"
        }
    }

    public var description: String {
        switch self {
        case .messageTooLarge(let size, let limit): "the message has \(size) bytes; this session takes at most \(limit)"
        case .throttled(let wait): "too many messages; try again in \(GroupSendError.milliseconds(wait)) ms"
        case .notJoined: "this side has not joined the session"
        case .unknownParticipant(let id): "no active participant \(id)"
        case .participantLeft(let id): "participant \(id) left before the message reached it"
        case .invalidMessage(let why): why
        case .unknownSession(let id): "no group session \(id)"
        }
    }

    /// A duration in whole milliseconds, rounded up.
    public static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
