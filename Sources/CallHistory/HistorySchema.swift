import ConversationKit
import Foundation

/// The call history's schema and its migrations. `PRAGMA user_version` holds the version; each migration
/// moves the database one version up inside a transaction, so a crash mid-migration leaves the old version.
enum HistorySchema {
    /// The version this code writes.
    static let currentVersion = 7
    /// The oldest version a read-only store can read: every record read selects the audio figures of version 5. A
    /// read-only store never migrates, so on an older file it reads the account (version 6, ``accountsVersion``) and
    /// the encryption (version 7, ``encryptionVersion``) as NULL instead: a CLI newer than the parleyd that writes
    /// the file still reads it.
    static let oldestReadableVersion = 5
    /// The first version whose records keep the account a call went through.
    static let accountsVersion = 6
    /// The first version whose records keep how a call's media was protected.
    static let encryptionVersion = 7
    /// `PRAGMA application_id` of a Parley call history ("PRLY"): a SQLite file without it is not ours.
    static let applicationID: Int32 = 0x5052_4C59

    /// Migration `n` takes a database from version `n` to `n + 1`.
    static let migrations: [String] = [
        // 0 → 1: conversations and their remote handles.
        """
        CREATE TABLE conversation (
            id INTEGER PRIMARY KEY,
            uuid TEXT NOT NULL UNIQUE,
            direction TEXT NOT NULL CHECK (direction IN ('incoming', 'outgoing')),
            status TEXT NOT NULL,
            ended_reason TEXT NOT NULL,
            started_at REAL NOT NULL,
            connected_at REAL,
            ended_at REAL NOT NULL,
            is_video INTEGER NOT NULL DEFAULT 0,
            is_read INTEGER NOT NULL DEFAULT 0,
            local_kind INTEGER,
            local_value TEXT,
            local_display TEXT
        );
        CREATE TABLE remote_handle (
            conversation_id INTEGER NOT NULL REFERENCES conversation (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            kind INTEGER NOT NULL,
            value TEXT NOT NULL,
            normalized TEXT,
            display_name TEXT NOT NULL,
            PRIMARY KEY (conversation_id, position)
        ) WITHOUT ROWID;
        CREATE INDEX conversation_by_start ON conversation (started_at DESC, id DESC);
        CREATE INDEX remote_handle_by_value ON remote_handle (kind, normalized);
        PRAGMA application_id = 1347570777;
        """,
        // 1 → 2: merged groups, SIP Call-IDs, and indexes for the status and handle queries. The handle index
        // carries the start time (copied from the conversation) so "calls with this person, newest first"
        // reads one index range.
        """
        ALTER TABLE conversation ADD COLUMN group_uuid TEXT;
        ALTER TABLE conversation ADD COLUMN call_id TEXT;
        ALTER TABLE remote_handle ADD COLUMN started_at REAL NOT NULL DEFAULT 0;
        UPDATE remote_handle SET started_at =
            (SELECT started_at FROM conversation WHERE conversation.id = remote_handle.conversation_id);
        DROP INDEX remote_handle_by_value;
        CREATE INDEX remote_handle_by_value ON remote_handle (kind, normalized, started_at DESC, conversation_id DESC);
        CREATE INDEX conversation_by_status ON conversation (status, started_at DESC, id DESC);
        CREATE INDEX conversation_unread ON conversation (status) WHERE is_read = 0;
        CREATE INDEX conversation_by_group ON conversation (group_uuid) WHERE group_uuid IS NOT NULL;
        """,
        // 2 → 3: settings kept with the data; the handle-matching rules (country code, trunk prefix) live here
        // so every process that opens the file normalises the way its records were normalised.
        """
        CREATE TABLE setting (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        """,
        // 3 → 4: an end-time index (clearing old history), and unread indexes that keep newest-first order, so "unread missed calls" is one index range even
        // when the few unread calls are old (the v2 index forced a walk over every missed call).
        """
        DROP INDEX conversation_unread;
        CREATE INDEX conversation_unread_by_status ON conversation (status, started_at DESC, id DESC) WHERE is_read = 0;
        CREATE INDEX conversation_unread_by_start ON conversation (started_at DESC, id DESC) WHERE is_read = 0;
        CREATE INDEX conversation_by_end ON conversation (ended_at);
        """,
        // 4 → 5: a call's audio figures as they ended (CallQuality as JSON; null for calls without audio).
        """
        ALTER TABLE conversation ADD COLUMN quality TEXT;
        """,
        // 5 → 6: the account (address of record) a call went through, with several accounts in one parleyd; null for
        // the calls recorded before, and for calls through none.
        """
        ALTER TABLE conversation ADD COLUMN account TEXT;
        """,
        // 6 → 7: how a call's media was protected once negotiated (`sdes`, `dtls`); null for plain calls and for the
        // calls recorded before.
        """
        ALTER TABLE conversation ADD COLUMN encryption TEXT;
        """,
    ]

    /// The matching rules kept in the database, if any.
    static func storedNormalizer(in connection: SQLiteConnection) throws(CallHistoryError) -> HandleNormalizer? {
        let statement = try connection.statement("SELECT name, value FROM setting WHERE name IN ('country_code', 'trunk_prefix')")
        defer { statement.reset() }
        var settings: [String: String] = [:]
        while try statement.step() { settings[statement.text(0)] = statement.text(1) }
        guard let countryCode = settings["country_code"], let trunkPrefix = settings["trunk_prefix"] else { return nil }
        do {
            return try HandleNormalizer(defaultCountryCode: countryCode, nationalTrunkPrefix: trunkPrefix)
        } catch {
            throw .corruptDatabase(path: connection.path, detail: "stored matching rules are invalid: \(error)")
        }
    }

    /// The stored matching rules, or `fallback` written down as the rules of this database. Inside a write
    /// transaction, so two processes creating one database agree on one set of rules.
    static func normalizer(
        in connection: SQLiteConnection, default fallback: HandleNormalizer
    ) throws(CallHistoryError) -> HandleNormalizer {
        if let stored = try storedNormalizer(in: connection) { return stored }
        return try connection.transaction { () throws(CallHistoryError) in
            let insert = try connection.statement("INSERT OR IGNORE INTO setting (name, value) VALUES (?, ?)")
            for (name, value) in [("country_code", fallback.defaultCountryCode), ("trunk_prefix", fallback.nationalTrunkPrefix)] {
                insert.reset()
                insert.bind(name, at: 1)
                insert.bind(value, at: 2)
                try insert.run()
            }
            return try storedNormalizer(in: connection) ?? fallback
        }
    }

    /// Whether the file is a Parley call history (or an empty database that may become one); checked before
    /// anything is written, so a foreign SQLite file is never touched.
    /// Both reads share one snapshot: another process creating the history at the same moment must not be
    /// seen half-way (no application id yet, but tables already there).
    static func checkOwnership(_ connection: SQLiteConnection) throws(CallHistoryError) {
        try connection.read { () throws(CallHistoryError) in
            let application = Int32(truncatingIfNeeded: try connection.integer("PRAGMA application_id"))
            if application == applicationID { return }
            let objects = try connection.integer("SELECT count(*) FROM sqlite_schema")
            guard application == 0, objects == 0 else {
                throw .notAHistory(path: connection.path)
            }
        }
    }

    /// Brings the database to `currentVersion`; refuses one from a newer Parley. Each step re-reads the
    /// version inside its write transaction, so several processes opening one file migrate it once.
    static func migrate(_ connection: SQLiteConnection) throws(CallHistoryError) {
        while true {
            let done = try connection.transaction { () throws(CallHistoryError) -> Bool in
                let version = try version(of: connection)
                guard version < currentVersion else { return true }
                try connection.execute(migrations[version])
                try connection.execute("PRAGMA user_version = \(version + 1)")
                return false
            }
            if done { return }
        }
    }

    /// The schema version, checked to be one this code can work with.
    static func version(of connection: SQLiteConnection) throws(CallHistoryError) -> Int {
        let version = Int(try connection.integer("PRAGMA user_version"))
        guard version >= 0 else {
            throw .corruptDatabase(path: connection.path, detail: "negative schema version \(version)")
        }
        guard version <= currentVersion else {
            throw .newerSchema(path: connection.path, found: version, supported: currentVersion)
        }
        return version
    }
}
