import CallHistory
import ConversationKit
import Foundation

/// How call history is shown: the table of `parley history` (also printed by the demo), Recents lines, one
/// record in full, and the JSON forms.
enum HistoryRendering {
    // MARK: Pieces

    /// A start time in local time, to the second: `2026-11-29 14:02:05`.
    static func when(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: date)
    }

    /// Text from the network made safe for a terminal: control characters (escape sequences, newlines) are
    /// shown as `\u{…}` instead of acting on the screen.
    static func printable(_ text: String) -> String {
        String(text.unicodeScalars.map { scalar -> String in
            scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format
                ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
        }.joined())
    }

    /// `Alice Liddell <415-555-0100>`, or just the value when the display name is the value.
    static func who(_ handle: Handle) -> String {
        let value = printable(handle.value.trimmingCharacters(in: .whitespaces))
        let name = printable(handle.displayName.trimmingCharacters(in: .whitespaces))
        return name == value || name.isEmpty ? value : "\(name) <\(value)>"
    }

    /// Every remote party of a record, or "unknown".
    static func who(_ record: CallRecord) -> String {
        record.remoteHandles.isEmpty ? "unknown" : record.remoteHandles.map { who($0.handle) }.joined(separator: ", ")
    }

    /// Talk time as `m:ss` (`h:mm:ss` past an hour); `—` for a call that never connected.
    static func duration(_ record: CallRecord) -> String {
        guard record.connectedAt != nil else { return "—" }
        let total = Int(record.duration.rounded())
        let (hours, minutes, seconds) = (total / 3600, total / 60 % 60, total % 60)
        return hours > 0
            ? String(format: "%d:%02d:%02d", hours, minutes, seconds) : String(format: "%d:%02d", minutes, seconds)
    }

    /// Columns padded to their widest cell, two spaces apart, without trailing spaces.
    static func columns(_ rows: [[String]], rightAligned: Set<Int> = []) -> [String] {
        guard let width = rows.first?.count else { return [] }
        let widths = (0..<width).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                if rightAligned.contains(column) { return pad + cell }
                return column == width - 1 ? cell : cell + pad
            }.joined(separator: "  ")
        }.map { line in String(line.reversed().drop(while: { $0 == " " }).reversed()) }
    }

    // MARK: The table

    /// The history table, newest first: unread marker, id, when, direction, status, who, duration, video, how each
    /// call's media was protected (`sdes`, `dtls`) and the account each call went through, each of the last two only
    /// when a record on the page has one (a page without them has no such column). `more` is the command that shows
    /// the next page, printed when there is one.
    static func table(_ page: ShownPage, more: ((HistoryCursor) -> String)?) -> String {
        guard !page.records.isEmpty else { return "no calls match" }
        let withEncryption = page.records.contains { $0.encryption != nil }
        let withAccounts = page.records.contains { $0.account != nil }
        let header =
            ["", "id", "when", "direction", "status", "who", "duration", "video"]
            + (withEncryption ? ["encryption"] : []) + (withAccounts ? ["account"] : [])
        let rows = page.records.map { record in
            [
                record.isRead ? "" : "*", String(record.id), when(record.startedAt), record.direction.rawValue,
                record.status.rawValue, who(record), duration(record), record.isVideo ? "video" : "",
            ]
                + (withEncryption ? [record.encryption.map(printable) ?? "—"] : [])
                + (withAccounts ? [record.account.map(printable) ?? "—"] : [])
        }
        var lines = columns([header] + rows, rightAligned: [1, 6])
        if page.records.contains(where: { !$0.isRead }) { lines.append("(* unread)") }
        if let cursor = page.nextCursor, let more {
            lines.append("more: \(more(cursor))")
        }
        return lines.joined(separator: "\n")
    }

    // MARK: Recents

    /// Phone-style Recents lines: `Alice Liddell (3)  incoming  missed  2026-11-29 14:02:05  #12`.
    static func recents(_ entries: [RecentsEntry]) -> String {
        guard !entries.isEmpty else { return "no recent calls" }
        let rows = entries.map { entry in
            let latest = entry.latest
            let name = latest.remoteHandles.first.map {
                printable($0.handle.displayName.isEmpty ? $0.handle.value : $0.handle.displayName)
            } ?? "Unknown"
            let unread = entry.hasUnread
            return [
                name + (entry.count > 1 ? " (\(entry.count))" : ""), latest.direction.rawValue, latest.status.rawValue,
                when(latest.startedAt), "#\(latest.id)" + (unread ? " *" : ""),
            ]
        }
        return columns(rows).joined(separator: "\n")
    }

    // MARK: One record

    /// Every field of one record.
    static func detail(_ record: CallRecord) -> String {
        let handles = record.remoteHandles.map { remote in
            "\(who(remote.handle)) [\(remote.handle.kind)" + (remote.normalizedValue.map { ", matches \($0)" } ?? "") + "]"
        }
        let rows: [[String]] = [
            ["uuid", record.uuid.uuidString],
            ["direction", record.direction.rawValue],
            ["status", "\(record.status) (ended: \(record.endedReason))"],
            ["with", handles.isEmpty ? "unknown" : handles.joined(separator: "\n                ")],
            ["local", record.localHandle.map { "\(who($0)) [\($0.kind)]" } ?? "—"],
            ["account", record.account.map(printable) ?? "—"],
            ["started", when(record.startedAt)],
            ["connected", record.connectedAt.map(when) ?? "—"],
            ["ended", when(record.endedAt)],
            ["duration", duration(record)],
            ["video", record.isVideo ? "yes" : "no"],
            ["encryption", record.encryption.map(printable) ?? "—"],
            ["group", record.groupUUID?.uuidString ?? "—"],
            ["SIP Call-ID", record.callID ?? "—"],
            ["read", record.isRead ? "yes" : "no (unread)"],
        ]
        let body = rows.map { "  " + $0[0].padding(toLength: 12, withPad: " ", startingAt: 0) + "  " + $0[1] }
        let redial = record.remoteHandles.isEmpty ? [] : ["  redial with: parley redial \(record.id)"]
        return (["record \(record.id)"] + body + redial).joined(separator: "\n")
    }

    // MARK: JSON

    /// A JSON encoder with ISO-8601 dates, sorted keys, pretty-printed.
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return encoder
    }

    /// `value` as JSON text.
    static func json<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try encoder().encode(value), as: UTF8.self)
    }
}

/// One page as `parley history` shows it: the records, and the cursor of the next page when more records follow.
struct ShownPage: Sendable {
    /// The records, newest first.
    let records: [CallRecord]
    /// Where the next page starts; nil on the last page.
    let nextCursor: HistoryCursor?

    /// The page of `store` that `query` asks for.
    static func fetch(_ query: HistoryQuery, from store: any CallHistoryStore) throws(CallHistoryError) -> ShownPage {
        let page = try store.query(query)
        return ShownPage(records: page.records, nextCursor: page.nextCursor)
    }
}

/// `{"records": [...], "nextCursor": "h1…" | null}`: one page of `parley history --json`.
struct HistoryPageJSON: Encodable {
    /// The page.
    let page: ShownPage

    /// The two keys of a page.
    private enum CodingKeys: String, CodingKey { case records, nextCursor }

    /// Writes `nextCursor` as null on the last page rather than leaving it out.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(page.records, forKey: .records)
        if let cursor = page.nextCursor {
            try container.encode(cursor.description, forKey: .nextCursor)
        } else {
            try container.encodeNil(forKey: .nextCursor)
        }
    }
}

/// One Recents line in JSON: `{"count": 3, "ids": [...], "latest": {record}}`.
struct RecentsEntryJSON: Encodable {
    /// How many conversations the line stands for.
    let count: Int
    /// Their record ids, newest first.
    let ids: [Int64]
    /// The newest record.
    let latest: CallRecord

    /// The JSON form of `entry`.
    init(_ entry: RecentsEntry) {
        count = entry.count
        ids = entry.records.map(\.id)
        latest = entry.latest
    }
}
