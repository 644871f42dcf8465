import CallHistory
import ControlProtocol
import ConversationKit
import Foundation
import ParleyEngine

/// The history and contacts methods: `history`, `markRead`, `deleteRecord`, `redial`, `contact`.
extension ControlService {
    func serveHistory(
        _ request: ControlRequest, history: any CallHistoryStore, reply: @escaping @Sendable (Data) -> Void
    ) throws(ControlError) -> Bool {
        let params = request.params
        switch request.method {
        case "history":
            var query = HistoryQuery(limit: try Self.int("limit", in: params, range: 1...200) ?? 20)
            if let text = params["cursor"] as? String {
                guard let cursor = HistoryCursor(text) else {
                    throw ControlError(.invalidParams, "\"cursor\" is not a cursor this parleyd gave out")
                }
                query.cursor = cursor
            }
            if try Self.bool("missed", in: params) == true { query.statuses = [.missed] }
            query.unreadOnly = try Self.bool("unread", in: params) ?? false
            if params["handle"] != nil { query.handle = Self.handle(for: try Self.string("handle", in: params)) }
            let page = try Self.storage { () throws(CallHistoryError) in try history.query(query) }
            var result: [String: Any] = ["records": page.records.map(Self.json)]
            result["nextCursor"] = page.nextCursor.map(\.description) ?? NSNull()
            reply(ControlEncoding.result(result, id: request.id))
        case "markRead":
            let changed: Int
            if try Self.bool("all", in: params) == true {
                changed = try Self.storage { () throws(CallHistoryError) in try history.markAllRead() }
            } else {
                let id = try Self.recordID(params)
                changed = try Self.storage { () throws(CallHistoryError) in try history.markRead(ids: [id]) }
            }
            reply(ControlEncoding.result(["changed": changed], id: request.id))
        case "deleteRecord":
            let id = try Self.recordID(params)
            try Self.storage { () throws(CallHistoryError) in try history.delete(id: id) }
            reply(ControlEncoding.result(["deleted": id], id: request.id))
        case "redial":
            let id = try Self.recordID(params)
            let record = try Self.storage { () throws(CallHistoryError) in try history.record(id: id) }
            try perform(record.redialAction(), request: request, reply: reply)
        default:
            return false
        }
        return true
    }

    /// A record as JSON (the same fields `parley history --json` prints).
    static func json(_ record: CallRecord) -> [String: Any] {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(record),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return ["id": record.id] }
        return object
    }

    static func recordID(_ params: [String: Any]) throws(ControlError) -> Int64 {
        guard let id = try int("id", in: params, range: 1...Int.max) else {
            throw ControlError(.invalidParams, "missing \"id\" (a history record id)")
        }
        return Int64(id)
    }

    static func int(_ key: String, in params: [String: Any], range: ClosedRange<Int>) throws(ControlError) -> Int? {
        guard let value = params[key] else { return nil }
        guard let number = value as? Int, range.contains(number) else {
            throw ControlError(.invalidParams, "\"\(key)\" must be an integer in \(range.lowerBound)…\(range.upperBound)")
        }
        return number
    }

    /// Runs a store call, turning its errors into control errors (an unknown id is `notFound`).
    static func storage<T>(_ body: () throws(CallHistoryError) -> T) throws(ControlError) -> T {
        do {
            return try body()
        } catch {
            if case .unknownRecord = error { throw ControlError(.notFound, "\(error)") }
            throw ControlError(.failed, "call history: \(error)")
        }
    }
}
