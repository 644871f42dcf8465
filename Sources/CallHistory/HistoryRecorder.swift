import ConversationKit
import Foundation

/// Records conversations into a store as they end. The engine's delegate hands it every changed conversation;
/// it writes the ones that reached `left` (unless the configuration keeps them out of Recents) before
/// returning, so a conversation reported as ended is already durable.
public struct HistoryRecorder: Sendable {
    /// Where records go.
    public let store: any CallHistoryStore
    /// How handles are normalised for matching.
    public let normalizer: HandleNormalizer
    /// Whether ended conversations are recorded at all (`Configuration.includesConversationInRecents`).
    public let includesConversationsInRecents: Bool

    /// A recorder for a manager with `configuration`.
    public init(store: any CallHistoryStore, configuration: ConversationManager.Configuration) {
        self.store = store
        self.normalizer = configuration.handleNormalizer
        self.includesConversationsInRecents = configuration.includesConversationInRecents
    }

    /// Stores `conversation` if it has ended; returns the stored record (nil when nothing was recorded).
    @discardableResult
    public func conversationChanged(_ conversation: Conversation, callID: String? = nil) throws(CallHistoryError) -> CallRecord? {
        guard includesConversationsInRecents,
            let record = CallRecord(conversation, normalizer: normalizer, callID: callID)
        else { return nil }
        return try store.insert(record)
    }
}
