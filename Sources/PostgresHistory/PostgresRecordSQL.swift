import CallHistory
import ConversationKit
import Foundation

/// The statement that stores one record with its handles, and its parameters.
enum PostgresRecordSQL {
    /// One statement per batch: the conversation rows whose uuid is not stored for the account yet, their handle
    /// rows, and for every input row (by its `ord`) the id it has now and whether this statement stored it. The
    /// records come as one JSON array; the account is `$1`. Stored ids are looked up one by one through the unique
    /// (account, uuid) index: the planner takes the JSON for 100 rows and, as a join, hashed all of the account's
    /// conversations (5 ms at 20,000). (A statement per record ran the executor and the
    /// change trigger once per record: 7,000 records/s where this does several times more.)
    static let insertBatch = """
        WITH input AS (
            SELECT * FROM jsonb_to_recordset($2::jsonb) AS r(ord integer, uuid uuid, direction text, status text,
                ended_reason text, started_at double precision, connected_at double precision, ended_at double precision,
                is_video integer, is_read integer, local_kind integer, local_value text, local_display text,
                group_uuid uuid, call_id text, quality text, call_account text, encryption text, handles jsonb)),
        new AS (
            INSERT INTO conversation (account, uuid, direction, status, ended_reason, started_at, connected_at, ended_at,
                is_video, is_read, local_kind, local_value, local_display, group_uuid, call_id, quality, call_account,
                encryption)
            SELECT $1, uuid, direction, status, ended_reason, started_at, connected_at, ended_at, is_video, is_read,
                local_kind, local_value, local_display, group_uuid, call_id, quality, call_account, encryption
            FROM input ORDER BY ord
            ON CONFLICT (account, uuid) DO NOTHING RETURNING id, uuid),
        handles AS (
            INSERT INTO remote_handle (conversation_id, account, position, kind, value, normalized, display_name, started_at)
            SELECT new.id, $1, h.position, h.kind, h.value, h.normalized, h.display_name, first.started_at
            FROM new JOIN (SELECT DISTINCT ON (uuid) * FROM input ORDER BY uuid, ord) AS first ON first.uuid = new.uuid,
                jsonb_to_recordset(first.handles)
                    AS h(position integer, kind integer, value text, normalized text, display_name text))
        SELECT i.ord,
            coalesce(n.id, (SELECT c.id FROM conversation c WHERE c.account = $1 AND c.uuid = i.uuid)),
            n.id IS NOT NULL
        FROM input i LEFT JOIN new n ON n.uuid = i.uuid
        ORDER BY i.ord
        """

    /// One record as ``insertBatch`` takes it. Times are text (Swift's shortest exact form), so they reach the
    /// database bit for bit.
    private struct RecordRow: Encodable {
        let ord: Int
        let uuid: String
        let direction: String
        let status: String
        let ended_reason: String
        let started_at: String
        let connected_at: String?
        let ended_at: String
        let is_video: Int
        let is_read: Int
        let local_kind: Int?
        let local_value: String?
        let local_display: String?
        let group_uuid: String?
        let call_id: String?
        let quality: String?
        let call_account: String?
        let encryption: String?
        let handles: [HandleRow]
    }

    /// The handle rows as the statement takes them (a missing `normalized` reads as NULL).
    private struct HandleRow: Encodable {
        let position: Int
        let kind: Int
        let value: String
        let normalized: String?
        let display_name: String
    }

    /// The parameters of ``insertBatch`` for `records` (in order: `ord` is the index); each record's handles
    /// normalised again with the database's rules, and two raw values of one person (e.g. "+1 415…" and "415…") kept
    /// once, as the SQLite store does.
    static func parameters(ofBatch records: some Collection<CallRecord>, account: String, normalizer: HandleNormalizer) -> [SQLValue] {
        let rows = records.enumerated().map { ord, record in
            RecordRow(
                ord: ord, uuid: record.uuid.uuidString, direction: record.direction.rawValue, status: record.status.rawValue,
                ended_reason: record.endedReason.rawValue, started_at: "\(record.startedAt.timeIntervalSinceReferenceDate)",
                connected_at: record.connectedAt.map { "\($0.timeIntervalSinceReferenceDate)" },
                ended_at: "\(record.endedAt.timeIntervalSinceReferenceDate)", is_video: record.isVideo ? 1 : 0,
                is_read: record.isRead ? 1 : 0, local_kind: record.localHandle?.kind.rawValue,
                local_value: record.localHandle?.value, local_display: record.localHandle?.displayName,
                group_uuid: record.groupUUID?.uuidString, call_id: record.callID, quality: RecordRules.qualityText(record),
                call_account: record.account, encryption: record.encryption, handles: handleRows(of: record, normalizer: normalizer))
        }
        let json = (try? JSONEncoder().encode(rows)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
        return [.text(account), .text(json)]
    }

    private static func handleRows(of record: CallRecord, normalizer: HandleNormalizer) -> [HandleRow] {
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
        return handles
    }
}
