import ConversationKit
import SystemdSupport

/// A conversation as a call object's properties (pure): GNOME Calls' State numbers and fields, LiveCommunicationKit's
/// lifecycle, mute, group and active members.
enum CallProperties {
    /// GNOME Calls' `State` numbers (`CallsCallState`).
    enum GnomeState: UInt32 {
        case unknown = 0, active = 1, held = 2, dialing = 3, alerting = 4, incoming = 5, disconnected = 7
    }

    /// The `State` of `conversation`: an outgoing call dials until the far end rings (alerting), an incoming one is
    /// incoming until answered; joined is active, paused held, leaving and left disconnected.
    static func gnomeState(of conversation: Conversation) -> GnomeState {
        let inbound = conversation.direction == .incoming
        switch conversation.state {
        case .idle: return .dialing
        case .ringing: return inbound ? .incoming : .alerting
        case .joining: return inbound ? .active : .dialing
        case .joined: return .active
        case .paused: return .held
        case .leaving, .left: return .disconnected
        }
    }

    /// The remote party: the first member that is not us, by value (a conversation of one peer has one).
    static func remote(of conversation: Conversation) -> Handle? {
        conversation.members.filter { $0 != conversation.localMember }.sorted { $0.value < $1.value }.first
    }

    /// Every property of the Call interface for `conversation`; `name` is the remote party's contact name, if any
    /// (else DisplayName is the name the peer sent).
    static func of(_ conversation: Conversation, name: String? = nil) -> [String: BusValue] {
        let remote = remote(of: conversation)
        return [
            "State": .uint32(gnomeState(of: conversation).rawValue),
            "Inbound": .bool(conversation.direction == .incoming),
            "Id": .string(remote?.value ?? ""),
            "DisplayName": .string(name ?? remote?.displayName ?? ""),
            "Encrypted": .bool(conversation.encryption != nil),
            "CanDtmf": .bool(conversation.capabilities.contains(.playingTones)),
            "Lifecycle": .string(conversation.state.rawValue),
            "Muted": .bool(conversation.isMuted),
            "Group": .string(conversation.groupUUID?.uuidString ?? ""),
            "ActiveRemoteMembers": .strings(conversation.activeRemoteMembers.map(\.value).sorted()),
            "Uuid": .string(conversation.uuid.uuidString),
        ]
    }

    /// The names whose values differ between `old` and `new`, in the interface's order.
    static func changed(from old: [String: BusValue], to new: [String: BusValue]) -> [String] {
        ParleyBus.call.properties.map(\.name).filter { old[$0] != new[$0] }
    }
}
