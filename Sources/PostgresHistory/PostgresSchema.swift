import CallHistory
import ConversationKit

/// The PostgreSQL history's schema and its migrations. `parley_schema` holds the version; migrations run in one
/// transaction under an advisory lock, so several parleyd starting together against one database migrate it once.
enum PostgresSchema {
    /// The version this code writes.
    static let currentVersion = 3
    /// The oldest version a store that may not migrate (the CLI) reads: version 1, its records' `call_account`
    /// (``callAccountsVersion``) and `encryption` (``encryptionVersion``) read as NULL where the schema lacks them, so
    /// a CLI newer than the parleyd that share the database still reads it.
    static let oldestReadableVersion = 1
    /// The first version whose records keep the account each call went through (`call_account`).
    static let callAccountsVersion = 2
    /// The first version whose records keep how each call's media was protected (`encryption`).
    static let encryptionVersion = 3
    /// The advisory lock key every Parley holds while it migrates ("PRLY", like the SQLite application id).
    static let lockKey: Int64 = 0x5052_4C59
    /// The channel every change is announced on (`LISTEN parley_history`).
    static let channel = "parley_history"

    /// Migration `n` takes a database from version `n` to `n + 1`.
    static let migrations: [String] = [
        // 0 → 1: the SQLite store's version-5 tables, with the account (address of record) each row belongs to, and a
        // trigger that announces every change on `parley_history`, whoever made it.
        """
        CREATE TABLE parley_setting (name TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE conversation (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            account TEXT NOT NULL,
            uuid UUID NOT NULL,
            direction TEXT NOT NULL CHECK (direction IN ('incoming', 'outgoing')),
            status TEXT NOT NULL,
            ended_reason TEXT NOT NULL,
            started_at DOUBLE PRECISION NOT NULL,
            connected_at DOUBLE PRECISION,
            ended_at DOUBLE PRECISION NOT NULL,
            is_video INTEGER NOT NULL DEFAULT 0,
            is_read INTEGER NOT NULL DEFAULT 0,
            local_kind INTEGER,
            local_value TEXT,
            local_display TEXT,
            group_uuid UUID,
            call_id TEXT,
            quality TEXT,
            UNIQUE (account, uuid)
        );
        CREATE TABLE remote_handle (
            conversation_id BIGINT NOT NULL REFERENCES conversation (id) ON DELETE CASCADE,
            account TEXT NOT NULL,
            position INTEGER NOT NULL,
            kind INTEGER NOT NULL,
            value TEXT NOT NULL,
            normalized TEXT,
            display_name TEXT NOT NULL,
            started_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (conversation_id, position)
        );
        CREATE INDEX conversation_by_start ON conversation (account, started_at DESC, id DESC);
        CREATE INDEX conversation_by_status ON conversation (account, status, started_at DESC, id DESC);
        CREATE INDEX conversation_unread_by_start ON conversation (account, started_at DESC, id DESC) WHERE is_read = 0;
        CREATE INDEX conversation_unread_by_status ON conversation (account, status, started_at DESC, id DESC)
            WHERE is_read = 0;
        CREATE INDEX conversation_by_end ON conversation (account, ended_at);
        CREATE INDEX conversation_by_group ON conversation (group_uuid) WHERE group_uuid IS NOT NULL;
        CREATE INDEX remote_handle_by_value
            ON remote_handle (account, kind, normalized, started_at DESC, conversation_id DESC);
        CREATE FUNCTION parley_history_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            -- One notification per account and 100 rows (a payload holds at most 8,000 bytes; 100 ids and uuids take ~5,000).
            IF TG_OP = 'DELETE' THEN
                PERFORM pg_notify('parley_history', json_build_object(
                    'source', current_setting('application_name'), 'account', account, 'change', 'deleted',
                    'records', json_agg(id), 'conversations', json_agg(uuid))::text)
                FROM (SELECT account, id, uuid, (row_number() OVER ()) / 100 AS chunk FROM changed_rows) AS r
                GROUP BY account, chunk;
            ELSE
                PERFORM pg_notify('parley_history', json_build_object(
                    'source', current_setting('application_name'), 'account', account,
                    'change', CASE TG_OP WHEN 'INSERT' THEN 'inserted' ELSE 'read' END,
                    'records', json_agg(id), 'conversations', json_agg(uuid))::text)
                FROM (SELECT account, id, uuid, (row_number() OVER ()) / 100 AS chunk FROM changed_rows) AS r
                GROUP BY account, chunk;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER conversation_inserted AFTER INSERT ON conversation REFERENCING NEW TABLE AS changed_rows
            FOR EACH STATEMENT EXECUTE FUNCTION parley_history_changed();
        CREATE TRIGGER conversation_updated AFTER UPDATE ON conversation REFERENCING NEW TABLE AS changed_rows
            FOR EACH STATEMENT EXECUTE FUNCTION parley_history_changed();
        CREATE TRIGGER conversation_deleted AFTER DELETE ON conversation REFERENCING OLD TABLE AS changed_rows
            FOR EACH STATEMENT EXECUTE FUNCTION parley_history_changed();
        """,
        // 1 → 2: the account (address of record) each call went through, one parleyd holding several; not `account`,
        // which is the row's owner. Null for the calls recorded before, and for calls through none.
        """
        ALTER TABLE conversation ADD COLUMN call_account TEXT;
        """,
        // 2 → 3: how a call's media was protected once negotiated (`sdes`, `dtls`); null for plain calls and for the
        // calls recorded before.
        """
        ALTER TABLE conversation ADD COLUMN encryption TEXT;
        """,
    ]

    /// Brings the database to `currentVersion` under the advisory lock and returns the version it is at; refuses one
    /// from a newer Parley, and a database whose `conversation` table is someone else's. Without `creating`, nothing
    /// is written: a database with no history, or a schema older than ``oldestReadableVersion``, is refused, and an
    /// older readable one is left at its version (the CLI never creates or migrates a history).
    static func migrate(_ connection: PostgresConnection, creating: Bool = true) throws(CallHistoryError) -> Int {
        try connection.execute("BEGIN")
        do throws(CallHistoryError) {
            _ = try connection.run("SELECT pg_advisory_xact_lock($1)", [.integer(lockKey)])
            let tables = try connection.run(
                "SELECT to_regclass('parley_schema') IS NOT NULL, to_regclass('conversation') IS NOT NULL")
            let hasSchema = tables.rows.first?[0] == "t"
            if !hasSchema, tables.rows.first?[1] == "t" { throw .notAHistory(path: connection.server) }
            if !hasSchema { try connection.execute("CREATE TABLE parley_schema (version INTEGER NOT NULL)") }
            let stored = try connection.run("SELECT version FROM parley_schema").scalar.flatMap { Int($0) }
            let version = stored ?? 0
            guard version <= currentVersion else {
                throw .newerSchema(path: connection.server, found: version, supported: currentVersion)
            }
            guard creating || version >= oldestReadableVersion else {
                throw .cannotOpen(
                    path: connection.server,
                    detail: version == 0
                        ? "it holds no call history"
                        : "schema version \(version) must be upgraded first; open it read-write once (parleyd does)")
            }
            guard creating else {
                try connection.execute("COMMIT")
                return version
            }
            for step in version..<currentVersion { try connection.execute(migrations[step]) }
            if stored == nil {
                _ = try connection.run("INSERT INTO parley_schema (version) VALUES ($1)", [.integer(Int64(currentVersion))])
            } else if version < currentVersion {
                _ = try connection.run("UPDATE parley_schema SET version = $1", [.integer(Int64(currentVersion))])
            }
            try connection.execute("COMMIT")
            return currentVersion
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The stored matching rules, or `fallback` written down as the rules of this database (the first parleyd to
    /// open a database sets them for all).
    static func normalizer(in connection: PostgresConnection, default fallback: HandleNormalizer) throws(CallHistoryError) -> HandleNormalizer {
        for (name, value) in [("country_code", fallback.defaultCountryCode), ("trunk_prefix", fallback.nationalTrunkPrefix)] {
            _ = try connection.run(
                "INSERT INTO parley_setting (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                [.text(name), .text(value)])
        }
        let rows = try connection.run("SELECT name, value FROM parley_setting WHERE name IN ('country_code', 'trunk_prefix')")
        var settings: [String: String] = [:]
        for row in rows.rows { if let name = row[0], let value = row[1] { settings[name] = value } }
        guard let countryCode = settings["country_code"], let trunkPrefix = settings["trunk_prefix"] else { return fallback }
        do {
            return try HandleNormalizer(defaultCountryCode: countryCode, nationalTrunkPrefix: trunkPrefix)
        } catch {
            throw .corruptDatabase(path: connection.server, detail: "stored matching rules are invalid: \(error)")
        }
    }
}
