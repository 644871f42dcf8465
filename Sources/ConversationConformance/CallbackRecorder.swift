import ConversationKit
import Foundation
import Synchronization

/// The runner's delegate: records every callback and the last snapshot of each conversation, and never
/// completes an action on its own — the scenario's fulfill and fail steps do.
final class CallbackRecorder: ConversationManagerDelegate, Sendable {
    /// A callback as recorded, conversations by uuid.
    enum Callback: Sendable {
        case begin
        case reset
        case changed(UUID, Conversation.State)
        case perform(String, UUID)
        case timedOut(String, UUID)
        case activate(UUID)
        case deactivate(UUID)
    }

    private struct State {
        var log: [Callback] = []
        var lastSeen: [UUID: Conversation] = [:]
    }

    private let state = Mutex(State())

    /// The callbacks recorded since the previous call, oldest first.
    func take() -> [Callback] {
        state.withLock { state in
            defer { state.log.removeAll() }
            return state.log
        }
    }

    /// The last snapshot `conversationChanged` delivered for `uuid`.
    func lastSeen(_ uuid: UUID) -> Conversation? {
        state.withLock { $0.lastSeen[uuid] }
    }

    private func record(_ callback: Callback) {
        state.withLock { $0.log.append(callback) }
    }

    func conversationManagerDidBegin(_ manager: ConversationManager) { record(.begin) }

    func conversationManagerDidReset(_ manager: ConversationManager) { record(.reset) }

    func conversationManager(_ manager: ConversationManager, conversationChanged conversation: Conversation) {
        state.withLock { state in
            state.log.append(.changed(conversation.uuid, conversation.state))
            state.lastSeen[conversation.uuid] = conversation
        }
    }

    func conversationManager(_ manager: ConversationManager, perform action: ConversationAction) {
        record(.perform(Self.name(of: action.kind), action.conversationUUID))
    }

    func conversationManager(_ manager: ConversationManager, timedOutPerforming action: ConversationAction) {
        record(.timedOut(Self.name(of: action.kind), action.conversationUUID))
    }

    func conversationManager(_ manager: ConversationManager, didActivateMediaFor conversation: Conversation) {
        record(.activate(conversation.uuid))
    }

    func conversationManager(_ manager: ConversationManager, didDeactivateMediaFor conversation: Conversation) {
        record(.deactivate(conversation.uuid))
    }

    /// The scenario's name for an action kind: `join`, `pause`/`resume`, `mute`/`unmute`…
    static func name(of kind: ConversationAction.Kind) -> String { kind.name }
}

/// The scenario's names for conversations and actions, and the deterministic uuids behind them: the n-th
/// distinct conversation name gets `00000000-0000-0000-0000-<n in hex>`, the n-th action
/// `00000000-0000-0000-0001-<n in hex>`; a name that is itself a uuid string is used as is.
struct NameTable {
    private var conversationUUIDs: [String: UUID] = [:]
    private var conversationNames: [UUID: String] = [:]
    private var actionUUIDs: Set<UUID> = []
    private var nextConversation = 1
    private var nextAction = 1
    /// The action objects by scenario id.
    var actions: [String: ConversationAction] = [:]

    /// The uuid of a conversation name, assigning one on first use.
    mutating func conversation(_ name: String) -> UUID {
        if let uuid = conversationUUIDs[name] { return uuid }
        var uuid = UUID(uuidString: name)
        while uuid == nil || conversationNames[uuid!] != nil {
            uuid = Self.uuid(group: "0000", number: nextConversation)
            nextConversation += 1
        }
        conversationUUIDs[name] = uuid!
        conversationNames[uuid!] = name
        return uuid!
    }

    /// The uuid of a conversation name already used, if any.
    func existingConversation(_ name: String) -> UUID? { conversationUUIDs[name] }

    /// The scenario's name for a conversation uuid (the uuid itself when the scenario never named it).
    func name(of uuid: UUID) -> String { conversationNames[uuid] ?? uuid.uuidString }

    /// A fresh uuid for the action with this id.
    mutating func newActionUUID(for id: String) -> UUID {
        var uuid = UUID(uuidString: id)
        while uuid == nil || actionUUIDs.contains(uuid!) {
            uuid = Self.uuid(group: "0001", number: nextAction)
            nextAction += 1
        }
        actionUUIDs.insert(uuid!)
        return uuid!
    }

    private static func uuid(group: String, number: Int) -> UUID {
        let hex = String(number, radix: 16, uppercase: true)
        return UUID(uuidString: "00000000-0000-0000-\(group)-" + String(repeating: "0", count: max(0, 12 - hex.count)) + hex)!
    }
}
