import Foundation

/// Where call history lives. `SQLiteCallHistory` is the embedded default; a server database can implement the
/// same protocol later.
public protocol CallHistoryStore: Sendable {
    /// Stores a record durably and returns it with its id. Storing a conversation uuid that is already there
    /// returns the stored record unchanged (so replays after a crash are harmless).
    @discardableResult
    func insert(_ record: CallRecord) throws(CallHistoryError) -> CallRecord
    /// Stores many records in one transaction; returns how many were new.
    @discardableResult
    func insert(contentsOf records: [CallRecord]) throws(CallHistoryError) -> Int
    /// Stores many records in one transaction; returns them with their ids (a conversation already there keeps
    /// its first record, whose id the returned one carries).
    func insertReturningRecords(_ records: [CallRecord]) throws(CallHistoryError) -> [CallRecord]
    /// The record with this id.
    func record(id: Int64) throws(CallHistoryError) -> CallRecord
    /// The record of this conversation, if stored.
    func record(uuid: UUID) throws(CallHistoryError) -> CallRecord?
    /// One page of records matching `query`, newest first.
    func query(_ query: HistoryQuery) throws(CallHistoryError) -> HistoryPage
    /// How many records match `query` (its limit and cursor are ignored).
    func count(_ query: HistoryQuery) throws(CallHistoryError) -> Int
    /// The newest `limit` Recents lines.
    func recents(limit: Int) throws(CallHistoryError) -> [RecentsEntry]
    /// Marks records read; returns how many changed. Unknown ids are an error and nothing changes.
    @discardableResult
    func markRead(ids: [Int64]) throws(CallHistoryError) -> Int
    /// Marks every record read; returns how many changed.
    @discardableResult
    func markAllRead() throws(CallHistoryError) -> Int
    /// Deletes one record.
    func delete(id: Int64) throws(CallHistoryError)
    /// Deletes every record that ended before `date`; returns how many.
    @discardableResult
    func deleteAll(endedBefore date: Date) throws(CallHistoryError) -> Int
    /// Checks the storage's consistency; returns the problems found (empty when sound).
    func check() throws(CallHistoryError) -> [String]
}
