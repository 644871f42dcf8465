import CallHistory
import ControlProtocol
import ConversationKit
import Foundation
import ParleyEngine

/// The call-history methods of the control protocol. Every change is followed by a `historyChanged` event.
extension ControlService {
    func serveHistory(
        _ command: ControlCommand, history: any CallHistoryStore, id: ControlRequestID,
        reply: @escaping @Sendable (Data) -> Void
    ) throws(ControlError) {
        switch command {
        case .history(let params):
            var query = try self.query(params.filter)
            query.limit = params.limit ?? 20
            if let cursor = params.cursor {
                guard let parsed = HistoryCursor(cursor) else {
                    throw ControlError(.invalidParams, "\"cursor\" is not a cursor this parleyd gave.", field: "cursor")
                }
                query.cursor = parsed
            }
            let page = try Self.storage { () throws(CallHistoryError) in try history.query(query) }
            let result = HistoryResult(records: page.records.map(info(for:)), nextCursor: page.nextCursor?.description)
            reply(ControlMessage.result(result, id: id))
        case .historyCount(let filter):
            let query = try self.query(filter)
            let count = try Self.storage { () throws(CallHistoryError) in try history.count(query) }
            reply(ControlMessage.result(HistoryCountResult(count: count), id: id))
        case .markRead(let params):
            let changed: Int
            let ids: [Int64]
            if params.all == true {
                changed = try Self.storage { () throws(CallHistoryError) in try history.markAllRead() }
                ids = []
            } else {
                let record = try Self.recordID(params.id)
                changed = try Self.storage { () throws(CallHistoryError) in try history.markRead(ids: [record]) }
                ids = [record]
            }
            reply(ControlMessage.result(HistoryCountResult(count: changed), id: id))
            if changed > 0 { publish(HistoryChanged(change: "read", records: ids)) }
        case .deleteRecord(let params):
            let record = try Self.recordID(params.id)
            try Self.storage { () throws(CallHistoryError) in try history.delete(id: record) }
            reply(ControlMessage.result(HistoryCountResult(count: 1), id: id))
            publish(HistoryChanged(change: "deleted", records: [record]))
        case .clearHistory:
            let deleted = try Self.storage { () throws(CallHistoryError) in
                try history.deleteAll(endedBefore: .distantFuture)
            }
            reply(ControlMessage.result(HistoryCountResult(count: deleted), id: id))
            if deleted > 0 { publish(HistoryChanged(change: "cleared", records: [])) }
        case .redial(let params):
            let record = try Self.storage { () throws(CallHistoryError) in try history.record(id: params.id) }
            let action = record.redialAction()
            // Through the account the call went through, when parleyd still has it (else the default one).
            if let account = record.account { _ = engine.placeThrough(account: account, conversation: action.conversationUUID) }
            try perform(action, id: id, makingRoom: false, reply: reply)
        default:
            preconditionFailure("serveHistory serves only the history methods")
        }
    }

    /// The store's query for the protocol's filters.
    private func query(_ filter: HistoryFilter) throws(ControlError) -> HistoryQuery {
        var query = filter.missed == true ? HistoryQuery.missed(unreadOnly: filter.unread == true) : HistoryQuery()
        query.unreadOnly = filter.unread == true
        if let handle = filter.handle {
            query.handle = DialTarget.parse(handle) ?? Handle(kind: .generic, value: handle)
        }
        if let direction = filter.direction.flatMap(Conversation.Direction.init(rawValue:)) { query.direction = direction }
        return query
    }

    /// A record as the protocol writes it, named from the contacts as they are now.
    func info(for record: CallRecord) -> HistoryRecordInfo {
        let members = record.remoteHandles.map { HandleInfo($0.handle, contactName: contacts.contactName(for: $0.handle)) }
        return HistoryRecordInfo(
            id: record.id, uuid: record.uuid.uuidString, direction: record.direction.rawValue,
            status: record.status.rawValue, endedReason: record.endedReason.rawValue,
            displayName: members.isEmpty ? record.displayName : members.map(\.shownName).joined(separator: ", "),
            members: members, localMember: record.localHandle.map { HandleInfo($0, contactName: nil) },
            isVideo: record.isVideo, group: record.groupUUID?.uuidString, callID: record.callID,
            createdAt: ControlTime.string(record.startedAt), connectedAt: record.connectedAt.map(ControlTime.string),
            endedAt: ControlTime.string(record.endedAt), durationMs: ControlTime.milliseconds(record.duration),
            isRead: record.isRead, quality: record.quality.map(Self.stats), account: record.account,
            encryption: record.encryption)
    }

    static func recordID(_ id: Int64?) throws(ControlError) -> Int64 {
        guard let id, id > 0 else { throw ControlError(.invalidParams, "Missing \"id\" (a history record's id).", field: "id") }
        return id
    }

    /// Runs a store call, turning its errors into control errors (an unknown id is `notFound`).
    static func storage<T>(_ body: () throws(CallHistoryError) -> T) throws(ControlError) -> T {
        do {
            return try body()
        } catch {
            if case .unknownRecord = error {
                throw ControlError(.notFound, "That history record does not exist.", details: .init(technical: "\(error)"))
            }
            if case .unavailable = error {
                throw ControlError(
                    .unavailable, "The call history server cannot be reached right now; try again shortly.",
                    details: .init(technical: "\(error)"))
            }
            throw ControlError(.failed, "The call history could not be read or written.", details: .init(technical: "\(error)"))
        }
    }
}
