/// A SIP request method: the ones Parley knows by name, or any other token (RFC 3261 §7.1, §27.4).
///
/// Methods are case-sensitive: `invite` is an extension method, not INVITE. Equality and hashing go by the token, so
/// `.extension("INVITE") == .invite` even if someone builds the extension case by hand; `SIPMethod(_:)` never does.
public enum SIPMethod: Sendable, Hashable, CustomStringConvertible {
    /// INVITE (RFC 3261).
    case invite
    /// ACK (RFC 3261).
    case ack
    /// BYE (RFC 3261).
    case bye
    /// CANCEL (RFC 3261).
    case cancel
    /// OPTIONS (RFC 3261).
    case options
    /// REGISTER (RFC 3261).
    case register
    /// PRACK (RFC 3262).
    case prack
    /// SUBSCRIBE (RFC 6665).
    case subscribe
    /// NOTIFY (RFC 6665).
    case notify
    /// PUBLISH (RFC 3903).
    case publish
    /// INFO (RFC 6086).
    case info
    /// REFER (RFC 3515).
    case refer
    /// MESSAGE (RFC 3428).
    case message
    /// UPDATE (RFC 3311).
    case update
    /// Any other method token, exactly as written (for example `NEWMETHOD` or `RE%47IST%45R`, which is not REGISTER).
    case `extension`(String)

    /// The method named by `token`, matched case-sensitively. The caller guarantees `token` is an RFC 3261 token.
    public init(_ token: String) {
        switch token {
        case "INVITE": self = .invite
        case "ACK": self = .ack
        case "BYE": self = .bye
        case "CANCEL": self = .cancel
        case "OPTIONS": self = .options
        case "REGISTER": self = .register
        case "PRACK": self = .prack
        case "SUBSCRIBE": self = .subscribe
        case "NOTIFY": self = .notify
        case "PUBLISH": self = .publish
        case "INFO": self = .info
        case "REFER": self = .refer
        case "MESSAGE": self = .message
        case "UPDATE": self = .update
        default: self = .extension(token)
        }
    }

    /// The method token as it goes on the wire.
    public var token: String {
        switch self {
        case .invite: "INVITE"
        case .ack: "ACK"
        case .bye: "BYE"
        case .cancel: "CANCEL"
        case .options: "OPTIONS"
        case .register: "REGISTER"
        case .prack: "PRACK"
        case .subscribe: "SUBSCRIBE"
        case .notify: "NOTIFY"
        case .publish: "PUBLISH"
        case .info: "INFO"
        case .refer: "REFER"
        case .message: "MESSAGE"
        case .update: "UPDATE"
        case .extension(let token): token
        }
    }

    /// True for every case but `.extension` with a token that is not one of the named methods.
    public var isKnown: Bool {
        if case .extension = SIPMethod(token) { return false }
        return true
    }

    /// The method token.
    public var description: String { token }

    /// Methods are equal when their tokens are. Two named methods compare by case, without building their tokens
    /// (the transaction layer compares methods several times per message).
    public static func == (lhs: SIPMethod, rhs: SIPMethod) -> Bool {
        if let left = lhs.namedCase, let right = rhs.namedCase { return left == right }
        return lhs.token == rhs.token
    }

    /// A number for each named case; nil for `.extension`.
    private var namedCase: UInt8? {
        switch self {
        case .invite: 0
        case .ack: 1
        case .bye: 2
        case .cancel: 3
        case .options: 4
        case .register: 5
        case .prack: 6
        case .subscribe: 7
        case .notify: 8
        case .publish: 9
        case .info: 10
        case .refer: 11
        case .message: 12
        case .update: 13
        case .extension: nil
        }
    }

    /// Hashes the token.
    public func hash(into hasher: inout Hasher) { hasher.combine(token) }
}
