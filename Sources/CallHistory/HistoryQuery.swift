import ConversationKit
import Foundation

/// What to look for in the call history. Every field narrows the result; results come newest first.
public struct HistoryQuery: Sendable, Hashable {
    /// Conversations with a remote handle that matches this one (by kind and normalised value).
    public var handle: Handle?
    /// Only incoming or only outgoing.
    public var direction: Conversation.Direction?
    /// Only these statuses (empty: any).
    public var statuses: Set<CallStatus>
    /// Started at or after this time.
    public var startedFrom: Date?
    /// Started before this time.
    public var startedBefore: Date?
    /// A remote display name containing this text (case-insensitive for ASCII).
    public var displayNameContains: String?
    /// Only records not yet marked read.
    public var unreadOnly: Bool
    /// At most this many records per page (1…1000).
    public var limit: Int
    /// Continue after the page that returned this cursor.
    public var cursor: HistoryCursor?

    /// A query; with no arguments, the newest 50 records.
    public init(
        handle: Handle? = nil, direction: Conversation.Direction? = nil, statuses: Set<CallStatus> = [],
        startedFrom: Date? = nil, startedBefore: Date? = nil, displayNameContains: String? = nil,
        unreadOnly: Bool = false, limit: Int = 50, cursor: HistoryCursor? = nil
    ) {
        self.handle = handle
        self.direction = direction
        self.statuses = statuses
        self.startedFrom = startedFrom
        self.startedBefore = startedBefore
        self.displayNameContains = displayNameContains
        self.unreadOnly = unreadOnly
        self.limit = limit
        self.cursor = cursor
    }

    /// Missed calls, newest first.
    public static func missed(unreadOnly: Bool = false, limit: Int = 50) -> HistoryQuery {
        HistoryQuery(statuses: [.missed], unreadOnly: unreadOnly, limit: limit)
    }
}

/// Where a page of results ended: the next page starts strictly after it, so records added meanwhile (which
/// are newer) never shift or repeat what the next page returns.
public struct HistoryCursor: Sendable, Hashable, LosslessStringConvertible {
    /// The start time of the last record returned.
    public let startedAt: Date
    /// The id of the last record returned (breaks ties between equal start times).
    public let id: Int64

    /// A cursor after the record with this start time and id.
    public init(startedAt: Date, id: Int64) {
        self.startedAt = startedAt
        self.id = id
    }

    /// Parses the text form, `h1.<start time bits in hex>.<id>`.
    public init?(_ description: String) {
        let parts = description.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "h1", let bits = UInt64(parts[1], radix: 16),
            let id = Int64(parts[2]), id > 0
        else { return nil }
        let seconds = Double(bitPattern: bits)
        guard seconds.isFinite else { return nil }
        self.init(startedAt: Date(timeIntervalSinceReferenceDate: seconds), id: id)
    }

    /// The text form, safe to hand to clients and take back.
    public var description: String {
        "h1.\(String(startedAt.timeIntervalSinceReferenceDate.bitPattern, radix: 16)).\(id)"
    }
}

/// One page of query results.
public struct HistoryPage: Sendable, Hashable {
    /// The records, newest first.
    public let records: [CallRecord]
    /// Pass this to get the next page; nil when this page was the last.
    public let nextCursor: HistoryCursor?

    /// A page of `records`, continued after `nextCursor` (nil: the last page).
    public init(records: [CallRecord], nextCursor: HistoryCursor?) {
        self.records = records
        self.nextCursor = nextCursor
    }
}

/// One line of a phone-style Recents list: consecutive conversations with the same person, in the same
/// direction and of the same kind (missed or not), collapsed together.
public struct RecentsEntry: Sendable, Hashable, Identifiable {
    /// How many records a line keeps; a longer run is counted, not kept.
    public static let keptRecords = 100

    /// The newest records of the line (at most ``keptRecords``), newest first.
    public let records: [CallRecord]
    /// How many conversations the line stands for.
    public let count: Int
    /// Whether any of them is unread.
    public let hasUnread: Bool
    /// The newest record's id.
    public var id: Int64 { records[0].id }
    /// The newest record.
    public var latest: CallRecord { records[0] }

    /// A line of `records` (newest first), standing for `count` conversations.
    public init(records: [CallRecord], count: Int? = nil, hasUnread: Bool? = nil) {
        precondition(!records.isEmpty, "a Recents line has at least one record")
        self.records = records
        self.count = count ?? records.count
        self.hasUnread = hasUnread ?? records.contains { !$0.isRead }
    }
}
