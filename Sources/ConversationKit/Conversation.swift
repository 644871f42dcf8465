import Foundation

/// A snapshot of one conversation as the manager knows it: who is in it, what it can do, where it is in its
/// lifecycle. A value: the manager hands out copies, so a snapshot never changes under its reader.
///
/// LiveCommunicationKit keeps members and capabilities on `Conversation.Update` only; Parley also keeps the
/// accumulated result here (plus direction, video, mute, group and timestamps) because every frontend and the
/// call history need them.
public struct Conversation: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// Who started the conversation.
    public enum Direction: String, Sendable, Hashable, Codable, CaseIterable {
        /// Reported by the network (`reportNewIncomingConversation`).
        case incoming
        /// Started locally (a Start action).
        case outgoing
    }

    /// The conversation's identity, chosen by whoever created it.
    public let uuid: UUID
    /// Who started it.
    public let direction: Direction
    /// Where it is in its lifecycle.
    public internal(set) var state: State
    /// Who takes part, in one shared immutable box: most changes leave membership alone, so a snapshot copy
    /// retains one reference instead of two sets and a handle.
    private var membership: Membership

    /// The local participant's handle, when known.
    public internal(set) var localMember: Handle? {
        get { membership.localMember }
        set { membership = Membership(newValue, membership.members, membership.activeRemoteMembers) }
    }
    /// Everyone in the conversation, including invited remote members whose media is not flowing yet.
    public internal(set) var members: Set<Handle> {
        get { membership.members }
        set { membership = Membership(membership.localMember, newValue, membership.activeRemoteMembers) }
    }
    /// Remote members whose media is flowing.
    public internal(set) var activeRemoteMembers: Set<Handle> {
        get { membership.activeRemoteMembers }
        set { membership = Membership(membership.localMember, membership.members, newValue) }
    }
    /// What the conversation supports now; may change mid-conversation (audio → video).
    public internal(set) var capabilities: Capabilities
    /// The account it goes through: the address of record an outgoing conversation was placed from, or the one an
    /// incoming conversation was called at (like Telecom's `PhoneAccountHandle`); nil when it uses none.
    public internal(set) var account: String?
    /// How its media is protected once it was negotiated: `sdes` (SRTP keyed by SDES) or `dtls` (DTLS-SRTP); nil
    /// while plain or not negotiated. Once encrypted, a conversation keeps saying so.
    public internal(set) var encryption: String?
    /// The conversation whose peer transferred us into this one (its REFER asked for this call); nil otherwise.
    public internal(set) var transferredFrom: UUID?
    /// Whether the local member is muted (fulfilled Mute actions).
    public internal(set) var isMuted: Bool
    /// The group this conversation is merged into now, if any.
    public internal(set) var groupUUID: UUID? {
        didSet { if let groupUUID { lastGroupUUID = groupUUID } }
    }
    /// The last group it was merged into, kept after it leaves (a group of two dissolves when one member
    /// ends): what the call history links it by.
    public internal(set) var lastGroupUUID: UUID?
    /// Why it ended, once it has; `nil` while it is live. A fulfilled End records ``EndedReason/localEnded``.
    public internal(set) var endedReason: EndedReason?
    /// When the manager first knew of it (report or Start).
    public let createdAt: Date
    /// When it started connecting, if it has.
    public internal(set) var startedConnectingAt: Date?
    /// When media was first connected, if ever.
    public internal(set) var connectedAt: Date?
    /// When it reached `left`.
    public internal(set) var endedAt: Date?

    /// Whether the conversation carries video (its capabilities include `.video`).
    public var isVideo: Bool { capabilities.contains(.video) }
    /// The manager's identifier, for SwiftUI-style lists.
    public var id: UUID { uuid }
    /// Whether it ever reached `joined`.
    public var hasConnected: Bool { connectedAt != nil }

    init(uuid: UUID, direction: Direction, createdAt: Date, capabilities: Capabilities) {
        self.uuid = uuid
        self.direction = direction
        self.state = .idle
        self.membership = .nobody
        self.capabilities = capabilities
        self.isMuted = false
        self.groupUUID = nil
        self.lastGroupUUID = nil
        self.endedReason = nil
        self.createdAt = createdAt
    }

    /// Applies an update's non-nil fields.
    mutating func apply(_ update: Update) {
        if update.localMember != nil || update.members != nil || update.activeRemoteMembers != nil {
            membership = Membership(
                update.localMember ?? membership.localMember, update.members ?? membership.members,
                update.activeRemoteMembers ?? membership.activeRemoteMembers)
        }
        if let capabilities = update.capabilities { self.capabilities = capabilities }
        if let account = update.account { self.account = account }
        if let encryption = update.encryption { self.encryption = encryption }
        if let transferredFrom = update.transferredFrom { self.transferredFrom = transferredFrom }
    }

    /// Field-wise equality (membership by value).
    public static func == (lhs: Conversation, rhs: Conversation) -> Bool {
        lhs.uuid == rhs.uuid && lhs.direction == rhs.direction && lhs.state == rhs.state
            && (lhs.membership === rhs.membership || lhs.membership == rhs.membership)
            && lhs.capabilities == rhs.capabilities && lhs.account == rhs.account && lhs.encryption == rhs.encryption
            && lhs.transferredFrom == rhs.transferredFrom
            && lhs.isMuted == rhs.isMuted
            && lhs.groupUUID == rhs.groupUUID
            && lhs.lastGroupUUID == rhs.lastGroupUUID
            && lhs.endedReason == rhs.endedReason && lhs.createdAt == rhs.createdAt
            && lhs.startedConnectingAt == rhs.startedConnectingAt && lhs.connectedAt == rhs.connectedAt
            && lhs.endedAt == rhs.endedAt
    }

    /// Hashes the identity and state (enough to spread; equality decides).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(uuid)
        hasher.combine(state)
        hasher.combine(membership)
        hasher.combine(endedAt)
    }

    /// One line for logs: short uuid, direction, state and members.
    public var description: String {
        let who = members.map(\.description).sorted().joined(separator: ", ")
        let short = uuid.uuidString.prefix(8)
        return "\(short) \(direction.rawValue) \(state)\(endedReason.map { "(\($0))" } ?? "") [\(who)]"
    }
}

/// The members of a conversation; immutable and shared between snapshots.
final class Membership: Sendable, Hashable {
    let localMember: Handle?
    let members: Set<Handle>
    let activeRemoteMembers: Set<Handle>

    static let nobody = Membership(nil, [], [])

    init(_ localMember: Handle?, _ members: Set<Handle>, _ activeRemoteMembers: Set<Handle>) {
        self.localMember = localMember
        self.members = members
        self.activeRemoteMembers = activeRemoteMembers
    }

    static func == (lhs: Membership, rhs: Membership) -> Bool {
        lhs.localMember == rhs.localMember && lhs.members == rhs.members
            && lhs.activeRemoteMembers == rhs.activeRemoteMembers
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(localMember)
        hasher.combine(members)
        hasher.combine(activeRemoteMembers)
    }
}

extension Conversation {
    /// What the conversation can do; gates the matching actions. Raw values are Parley's own.
    public struct Capabilities: OptionSet, Sendable, Hashable, Codable, CustomStringConvertible {
        /// The raw bits.
        public let rawValue: Int
        /// Creates a set from raw bits.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// It may be merged with another conversation or group.
        public static let merging = Capabilities(rawValue: 1 << 0)
        /// It may be taken back out of its group.
        public static let unmerging = Capabilities(rawValue: 1 << 1)
        /// It may be paused (put on hold) and resumed.
        public static let pausing = Capabilities(rawValue: 1 << 2)
        /// It may play keypad tones (DTMF).
        public static let playingTones = Capabilities(rawValue: 1 << 3)
        /// It carries video.
        public static let video = Capabilities(rawValue: 1 << 4)

        /// Every capability with its name, in declaration order.
        public static let named: [(name: String, capability: Capabilities)] = [
            ("merging", .merging), ("unmerging", .unmerging), ("pausing", .pausing),
            ("playingTones", .playingTones), ("video", .video),
        ]

        /// Everything but video: what a plain audio SIP call offers.
        public static let audioCall: Capabilities = [.merging, .unmerging, .pausing, .playingTones]

        /// Parses one capability name.
        public init?(name: String) {
            guard let found = Self.named.first(where: { $0.name == name }) else { return nil }
            self = found.capability
        }

        /// The names of the capabilities in the set, e.g. `[pausing, video]`.
        public var names: [String] { Self.named.filter { contains($0.capability) }.map(\.name) }

        /// `[merging, pausing]`.
        public var description: String { "[" + names.joined(separator: ", ") + "]" }
    }

    /// A delta for a conversation: each non-nil field replaces the current value, nil means "no change".
    public struct Update: Sendable, Hashable, Codable {
        /// The local participant's handle.
        public var localMember: Handle?
        /// Everyone in the conversation, including invited-but-inactive remote members.
        public var members: Set<Handle>?
        /// Remote members with media flowing.
        public var activeRemoteMembers: Set<Handle>?
        /// What the conversation supports once the update is applied.
        public var capabilities: Capabilities?
        /// The account the conversation goes through (an address of record).
        public var account: String?
        /// How its media is protected (`sdes`, `dtls`).
        public var encryption: String?
        /// The conversation whose peer transferred us into this one.
        public var transferredFrom: UUID?

        /// Creates an update; omitted fields stay unchanged.
        public init(
            localMember: Handle? = nil, members: Set<Handle>? = nil,
            activeRemoteMembers: Set<Handle>? = nil, capabilities: Capabilities? = nil, account: String? = nil,
            encryption: String? = nil, transferredFrom: UUID? = nil
        ) {
            self.encryption = encryption
            self.transferredFrom = transferredFrom
            self.localMember = localMember
            self.members = members
            self.activeRemoteMembers = activeRemoteMembers
            self.capabilities = capabilities
            self.account = account
        }

        /// Every handle the update names.
        var allHandles: [Handle] {
            Array(members ?? []) + Array(activeRemoteMembers ?? []) + (localMember.map { [$0] } ?? [])
        }
    }

    /// Something that happened to a conversation, reported by the backend (the network side).
    public enum Event: Sendable, Hashable, Codable {
        /// The conversation was answered and its session is being set up: → `joining`.
        case startedConnecting(Date)
        /// Media is connected: → `joined`.
        case connected(Date)
        /// The conversation is over for a reason other than a local End: → `left`.
        case ended(Date, EndedReason)
        /// Members or capabilities changed (delta semantics); the state does not change.
        case updated(Update)
    }
}
