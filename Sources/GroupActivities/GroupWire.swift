import Foundation

/// The body Parley peers exchange in SIP MESSAGE (`application/vnd.parley.group+json`), version 1. Every kind names
/// its session; fields a newer version adds are ignored, and so is a kind this version does not know.
///
/// ```
///  host ──session (roster; active:false = ended)──▶ member      member ──join {name}, leave──▶ host
///  member ──message {id, to, mode, type, data}──▶ host ──message {seq, source, …}──▶ every other member
///  host ──receipt {id, seq, deliveredTo, failed, unsupported, error}──▶ the member who sent it
/// ```
public struct GroupWire: Sendable, Hashable, Codable {
    /// The body's media type between Parley peers.
    public static let contentType = "application/vnd.parley.group+json"
    /// The version this side writes.
    public static let version = 1

    /// What the body is.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The host's roster (offer, update, or `active: false`: over).
        case session
        /// A member joins (with its name) or leaves.
        case join, leave
        /// A message: a member's to the host (`id`), or the host's stamped one (`seq`, `source`).
        case message
        /// The host's answer to a member's reliable message.
        case receipt
    }

    /// An error in a receipt.
    public struct ErrorInfo: Sendable, Hashable, Codable {
        public var code: String
        public var retryAfterMs: Int?
        public var size: Int?
        public var limit: Int?
    }

    public var v: Int? = GroupWire.version
    /// The kind's name as sent (`kind` is nil for one this version does not know).
    public var kindName: String
    public var session: String
    // session
    public var activity: GroupActivity?
    public var host: String?
    public var you: String?
    public var participants: [GroupParticipant]?
    public var active: Bool?
    // join: the member's own name (its display name), which the host shows the others.
    public var name: String?
    // message
    public var id: UInt64?
    public var seq: UInt64?
    public var source: String?
    public var to: [String]?
    public var mode: String?
    public var type: String?
    public var keep: Bool?
    public var data: JSONValue?
    // receipt
    public var deliveredTo: [String]?
    public var failed: [String]?
    public var unsupported: [String]?
    public var error: ErrorInfo?

    enum CodingKeys: String, CodingKey {
        case v, session, activity, host, you, participants, active, name, id, seq, source, to, mode, type, keep, data,
            deliveredTo, failed, unsupported, error
        case kindName = "kind"
    }

    /// A body of `kind` for `session`.
    public init(_ kind: Kind, session: String) {
        kindName = kind.rawValue
        self.session = session
    }

    /// The kind, when this version knows it.
    public var kind: Kind? { Kind(rawValue: kindName) }

    /// The delivery mode a message names (reliable when absent or unknown).
    public var deliveryMode: GroupDeliveryMode { mode.flatMap(GroupDeliveryMode.init(rawValue:)) ?? .reliable }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// The body's bytes.
    public func encoded() -> Data {
        // Encoding these fields cannot fail: every one is a string, number, bool or JSONValue.
        (try? Self.encoder.encode(self)) ?? Data()
    }

    /// A received body, or why it is unusable.
    public static func decode(_ body: Data) -> Result<GroupWire, GroupWireProblem> {
        guard body.count <= 64 * 1024 else { return .failure(.tooLarge(body.count)) }
        do {
            let wire = try JSONDecoder().decode(GroupWire.self, from: body)
            guard !wire.session.isEmpty, wire.session.utf8.count <= 128 else { return .failure(.invalid("no usable session id")) }
            return .success(wire)
        } catch {
            return .failure(.invalid("not a group message body: \(error)"))
        }
    }
}

/// Why a received group body was refused (the SIP response says so).
public enum GroupWireProblem: Error, Sendable, Hashable {
    /// Over 64 KiB (its size).
    case tooLarge(Int)
    /// Not a group body (why).
    case invalid(String)
}
