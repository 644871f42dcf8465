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
    /// The contacts that name parties, so Recents shows "Alice Liddell" rather than a number or "sipp" (read at each
    /// record: a reloaded book names the next records).
    public let contacts: ContactBook?

    /// A recorder for a manager with `configuration`, naming parties from `contacts` (the SIP display name when no
    /// contact matches).
    public init(
        store: any CallHistoryStore, configuration: ConversationManager.Configuration, contacts: ContactBook? = nil
    ) {
        self.store = store
        self.normalizer = configuration.handleNormalizer
        self.includesConversationsInRecents = configuration.includesConversationInRecents
        self.contacts = contacts
    }

    /// Stores `conversation` if it has ended; returns the stored record (nil when nothing was recorded).
    @discardableResult
    public func conversationChanged(_ conversation: Conversation, callID: String? = nil) throws(CallHistoryError) -> CallRecord? {
        guard let record = record(for: conversation, callID: callID) else { return nil }
        return try store.insert(record)
    }

    /// The record of a call refused before it rang because the caller is not accepted (nil when Recents excludes
    /// conversations): read, not missed, with the caller as the SIP request named them, and the `account` (address of
    /// record) it came in on, if any.
    public func blockedRecord(
        from caller: Handle, to local: Handle?, callID: String?, at date: Date, account: String? = nil,
        status: CallStatus = .blocked
    ) -> CallRecord? {
        guard includesConversationsInRecents else { return nil }
        return CallRecord(
            uuid: UUID(), direction: .incoming, remoteHandles: [RecordedHandle(caller, normalizer: normalizer)],
            localHandle: local,
            status: status, endedReason: status == .forwarded ? .forwarded : .localEnded, startedAt: date, endedAt: date,
            callID: callID, isRead: status != .doNotDisturb && status != .forwarded, account: account)
    }

    /// The record `conversation` would be stored as (nil until it has ended, or when Recents excludes it), for a
    /// writer that batches inserts.
    public func record(for conversation: Conversation, callID: String? = nil) -> CallRecord? {
        guard includesConversationsInRecents, let record = CallRecord(conversation, normalizer: normalizer, callID: callID)
        else { return nil }
        return named(record)
    }

    /// The record a live `conversation` leaves if the node stops without ending it (`crashed`, ended `now`), for the
    /// journal of live calls; nil once it has left, or when Recents excludes it.
    public func crashRecord(for conversation: Conversation, callID: String? = nil, now: Date) -> CallRecord? {
        guard includesConversationsInRecents,
            let record = CallRecord(live: conversation, now: now, normalizer: normalizer, callID: callID)
        else { return nil }
        return named(record)
    }

    /// `record` with its parties named from the contacts.
    private func named(_ record: CallRecord) -> CallRecord {
        var record = record
        if let contacts {
            for index in record.remoteHandles.indices {
                // The person's own address book wins over the name the caller sent.
                if let name = contacts.contactName(for: record.remoteHandles[index].handle) {
                    record.remoteHandles[index].handle.displayName = name
                }
            }
        }
        return record
    }
}
