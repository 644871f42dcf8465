import CallHistory
import ConversationKit
import Foundation

/// The statement that stores one record with its handles, and its parameters.
enum PostgresRecordSQL {
    /// One statement per record: the conversation row unless its uuid is already stored for the account (then the
    /// stored id comes back, marked not new), and its handle rows, handed over as one JSON array.
    static let insert = """
        WITH new AS (
            INSERT INTO conversation (account, uuid, direction, status, ended_reason, started_at, connected_at, ended_at,
                is_video, is_read, local_kind, local_value, local_display, group_uuid, call_id, quality)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
            ON CONFLICT (account, uuid) DO NOTHING RETURNING id),
        handles AS (
            INSERT INTO remote_handle (conversation_id, account, position, kind, value, normalized, display_name, started_at)
            SELECT new.id, $1, h.position, h.kind, h.value, h.normalized, h.display_name, $6
            FROM new, jsonb_to_recordset($17::jsonb)
                AS h(position integer, kind integer, value text, normalized text, display_name text))
        SELECT id, true FROM new
        UNION ALL
        SELECT id, false FROM conversation WHERE account = $1 AND uuid = $2 AND NOT EXISTS (SELECT 1 FROM new)
        """

    /// The handle rows as the statement takes them (a missing `normalized` reads as NULL).
    private struct HandleRow: Encodable {
        let position: Int
        let kind: Int
        let value: String
        let normalized: String?
        let display_name: String
    }

    /// `record`'s parameters for ``insert``; its handles normalised again with the database's rules, and two raw
    /// values of one person (e.g. "+1 415…" and "415…") kept once, as the SQLite store does.
    static func parameters(of record: CallRecord, account: String, normalizer: HandleNormalizer) -> [SQLValue] {
        var seen: Set<String> = []
        var handles: [HandleRow] = []
        for (position, given) in record.remoteHandles.enumerated() {
            let remote = RecordedHandle(given.handle, normalizer: normalizer)
            if let key = remote.normalizedValue, !seen.insert("\(remote.handle.kind.rawValue):\(key)").inserted { continue }
            handles.append(
                HandleRow(
                    position: position, kind: remote.handle.kind.rawValue, value: remote.handle.value,
                    normalized: remote.normalizedValue, display_name: remote.handle.displayName))
        }
        let json = (try? JSONEncoder().encode(handles)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
        func optional(_ text: String?) -> SQLValue { text.map(SQLValue.text) ?? .null }
        func optional(_ number: Int?) -> SQLValue { number.map { .integer(Int64($0)) } ?? .null }
        return [
            .text(account), .text(record.uuid.uuidString), .text(record.direction.rawValue), .text(record.status.rawValue),
            .text(record.endedReason.rawValue), .real(record.startedAt.timeIntervalSinceReferenceDate),
            record.connectedAt.map { .real($0.timeIntervalSinceReferenceDate) } ?? .null,
            .real(record.endedAt.timeIntervalSinceReferenceDate), .integer(record.isVideo ? 1 : 0),
            .integer(record.isRead ? 1 : 0), optional(record.localHandle?.kind.rawValue), optional(record.localHandle?.value),
            optional(record.localHandle?.displayName), optional(record.groupUUID?.uuidString), optional(record.callID),
            optional(RecordRules.qualityText(record)), .text(json),
        ]
    }
}
