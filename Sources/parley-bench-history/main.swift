import CallHistory
import ConversationKit
import Foundation
import PostgresHistory

// parley-bench-history: what the SQLite call history costs at a million records. Single thread. See BENCHMARKS.md.
//
//   phase 1  bulk insert: 1,000,000 generated records (HistoryGenerator) through insert(contentsOf:), 1,000 per
//            transaction, into a fresh database in a temporary directory (durability .full)
//   phase 2  the cost at each call end: 2,000 more records through insert(_:), one durable transaction each
//   phase 3  2,000 runs each of (a) the handle query in another written form, (b) the missed-calls query,
//            half unread only, (c) recents(limit: 50), (d) count of unread missed calls; every answer checked
//   phase 4  baseline in the same run: the stock sqlite3 shell loading the same rows from generated INSERTs
//
// The last two lines are `inserts_per_second: N` (phase 1) and `query_p99_ms: X` (worst p99 of a, b, c).
// PARLEY_BENCH_RECORDS scales phase 1 (default 1000000); PARLEY_BENCH_KEEP_DATABASE=1 keeps the temporary
// directory (for EXPLAIN QUERY PLAN) and prints where it is.
//
// With PARLEY_BENCH_POSTGRES=CONNINFO (Scripts/bench-cluster) phases 1–3 run twice on the same records, first on the
// SQLite store, then on the PostgreSQL store in that database (a fresh account), and phase 4 is replaced by the
// comparison: the last lines are `postgres_inserts_per_second`, `sqlite_inserts_per_second`,
// `postgres/sqlite inserts` (the ratio in this run) and `postgres_query_p99_ms`. Phase 2 then also measures group
// commits of 50 records (`insertReturningRecords`, what parleyd's history writer does at ~2,000 calls/s).

let environment = ProcessInfo.processInfo.environment
let postgres = environment["PARLEY_BENCH_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 }
let recordCount = Int(environment["PARLEY_BENCH_RECORDS"] ?? "") ?? 1_000_000
let keepDatabase = environment["PARLEY_BENCH_KEEP_DATABASE"] == "1"
let batchSize = 1_000
let durableInserts = 2_000
let queryRuns = 2_000
let warmUpRuns = 20
let pageLimit = 50
let seed: UInt64 = 0x5041_524C_4559_0001  // "PARLEY" 1

func progress(_ line: String) {
    FileHandle.standardError.write(Data("bench-history: \(line)\n".utf8))
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// CPU time of this thread (user + system): wall time minus time spent preempted or waiting.
func threadCPUTime() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

func require(_ condition: Bool, _ message: @autoclosure () -> String) throws {
    if !condition { throw BenchFailure("check failed: \(message())") }
}

func rate(_ count: Int, _ nanoseconds: UInt64) -> Double { Double(count) / (Double(nanoseconds) / 1e9) }

func format(_ value: Double) -> String { String(format: "%.0f", value) }

func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
}

/// Bytes this process has passed to write(2) and pwrite(2) so far (/proc/self/io `wchar`).
func bytesWritten() -> Int {
    guard let io = try? String(contentsOfFile: "/proc/self/io", encoding: .utf8) else { return 0 }
    for line in io.split(separator: "\n") where line.hasPrefix("wchar:") {
        return Int(line.dropFirst("wchar:".count).trimmingCharacters(in: .whitespaces)) ?? 0
    }
    return 0
}

/// Latencies of one measured operation, in nanoseconds: wall clock (what counts) and the thread's CPU time
/// (to tell a slow answer from a preempted one on a shared machine).
struct Latencies {
    private(set) var samples: [UInt64] = []
    private(set) var cpuSamples: [UInt64] = []

    mutating func measure<T>(_ body: () throws -> T) rethrows -> T {
        let cpuStart = threadCPUTime()
        let start = now()
        let result = try body()
        samples.append(now() - start)
        cpuSamples.append(threadCPUTime() - cpuStart)
        return result
    }

    /// Nearest-rank percentile, in milliseconds.
    static func percentile(_ fraction: Double, of samples: [UInt64]) -> Double {
        let sorted = samples.sorted()
        let rank = Swift.max(1, Int((fraction * Double(sorted.count)).rounded(.up)))
        return Double(sorted[rank - 1]) / 1e6
    }

    var p50: Double { Self.percentile(0.50, of: samples) }
    var p99: Double { Self.percentile(0.99, of: samples) }
    var max: Double { Self.percentile(1.0, of: samples) }
    var cpuP99: Double { Self.percentile(0.99, of: cpuSamples) }

    var summary: String {
        String(format: "p50 %.3f ms  p99 %.3f ms  max %.3f ms  (on-CPU p99 %.3f ms)", p50, p99, max, cpuP99)
    }
}

/// What phases 1–3 measured on one store.
struct StoreFigures {
    let insertsPerSecond: Double
    let queryP99: Double
    let bulkHandleRows: Int
}

/// Phases 1–3 on `store` (named `name` in progress lines), with `generator`'s records; the baseline's SQL is written
/// to `script` alongside (untimed), and `databasePath` is the SQLite file whose size is reported.
func exercise(
    _ store: any CallHistoryStore, name: String, generator: inout HistoryGenerator, script: BaselineScript?,
    databasePath: String?, groupCommit: Bool
) throws -> StoreFigures {
    // Phase 1: bulk insert, 1,000 records per transaction; the baseline's SQL is written alongside, untimed.
    var insertNanoseconds: UInt64 = 0
    var firstTenth: UInt64 = 0, lastTenth: UInt64 = 0
    let tenth = max(batchSize, recordCount / 10)
    var batch: [CallRecord] = []
    batch.reserveCapacity(batchSize)
    let writtenBefore = bytesWritten()
    progress("\(name) phase 1: inserting \(recordCount) records, \(batchSize) per transaction")
    while generator.generated < recordCount {
        batch.removeAll(keepingCapacity: true)
        while batch.count < batchSize, generator.generated < recordCount { batch.append(generator.next()) }
        let start = now()
        let added = try store.insert(contentsOf: batch)
        let elapsed = now() - start
        try require(added == batch.count, "insert(contentsOf:) added \(added) of \(batch.count)")
        insertNanoseconds += elapsed
        if generator.generated <= tenth { firstTenth += elapsed }
        if generator.generated > recordCount - tenth { lastTenth += elapsed }
        if let script { for record in batch { try script.append(record) } }
        if generator.generated % 100_000 == 0 {
            progress("\(name) phase 1: \(generator.generated) records, \(format(rate(generator.generated, insertNanoseconds)))/s so far")
        }
    }
    try script?.finish()
    // What SQLite wrote (WAL frames and checkpoints), without the baseline's SQL file written alongside.
    let storeBytes = bytesWritten() - writtenBefore - (script.map { fileSize($0.path) } ?? 0)
    let bulkHandleRows = generator.handleRows
    let insertsPerSecond = rate(recordCount, insertNanoseconds)
    let missedCount = try store.count(.missed())
    try require(missedCount == generator.missed, "count(.missed()) = \(missedCount), generated \(generator.missed)")
    print("phase 1: bulk insert: \(recordCount) records (\(bulkHandleRows) remote handles) in \(recordCount / batchSize) transactions of \(batchSize): \(String(format: "%.1f", Double(insertNanoseconds) / 1e9)) s = \(format(insertsPerSecond)) records/s")
    print("         first \(tenth): \(format(rate(tenth, firstTenth)))/s, last \(tenth): \(format(rate(tenth, lastTenth)))/s; \(generator.missed) missed (\(String(format: "%.1f", Double(generator.missed) * 100 / Double(recordCount))) %), \(generator.unreadMissed) unread, \(generator.multiParty) with 2–3 remote handles, \(generator.grouped) in groups")
    if let databasePath {
        print("         SQLite wrote \(storeBytes / 1_048_576) MiB (\(storeBytes / recordCount) bytes per record) for a \(fileSize(databasePath) / 1_048_576) MiB database")
    }

    // Phase 2: what parleyd pays at each call end: one record, one durable transaction.
    progress("\(name) phase 2: \(durableInserts) single durable inserts")
    var single = Latencies()
    for _ in 0..<durableInserts {
        let record = generator.next()
        let stored = try single.measure { try store.insert(record) }
        try require(stored.id > 0 && stored.uuid == record.uuid, "insert(_:) did not store \(record.uuid)")
    }
    print("phase 2: single durable inserts (insert(_:), one transaction each) at \(recordCount) records: \(durableInserts) records: \(single.summary)")
    if let databasePath {
        print("         database \(fileSize(databasePath) / 1_048_576) MiB + WAL \(fileSize(databasePath + "-wal") / 1_048_576) MiB")
    }
    var groupCommits = Latencies()
    if groupCommit {
        // What parleyd's history writer does at ~2,000 calls/s: a batch of the calls that ended meanwhile.
        for _ in 0..<(durableInserts / 50) {
            let batch = (0..<50).map { _ in generator.next() }
            let stored = try groupCommits.measure { try store.insertReturningRecords(batch) }
            try require(stored.map(\.uuid) == batch.map(\.uuid) && stored.allSatisfy { $0.id > 0 }, "a group commit did not store its batch")
        }
        print("         group commits of 50 (insertReturningRecords): \(durableInserts / 50) batches: \(groupCommits.summary) = \(format(50 / (groupCommits.p50 / 1000))) records/s at p50")
    }
    let total = recordCount + durableInserts + (groupCommit ? durableInserts : 0)
    try require(try store.count(HistoryQuery()) == total, "the store does not hold \(total) records")

    // Phase 3: queries at that size.
    var handleCases: [(person: Int, handle: Handle)] = []
    for run in 0..<(queryRuns + warmUpRuns) {
        let person = generator.drawPerson(weighted: run % 2 == 0)  // half as calls draw people, half uniform
        handleCases.append((person, generator.queryHandle(for: person)))
    }
    let differentForm = handleCases.filter { generator.people[$0.person].kind != .generic }.count
    var handleLatencies = Latencies(), handleReturned = 0
    progress("\(name) phase 3a: \(queryRuns) handle queries")
    for (run, item) in handleCases.enumerated() {
        let query = HistoryQuery(handle: item.handle, limit: pageLimit)
        let page = run < warmUpRuns ? try store.query(query) : try handleLatencies.measure { try store.query(query) }
        let person = generator.people[item.person]
        let expected = min(pageLimit, generator.recordsPerPerson[item.person])
        try require(page.records.count == expected, "handle query for \(item.handle) returned \(page.records.count), expected \(expected)")
        try require(
            page.records.allSatisfy { record in
                record.remoteHandles.contains { $0.handle.kind == person.kind && $0.normalizedValue == person.normalized }
            }, "handle query for \(item.handle) returned a record of someone else")
        try require(isNewestFirst(page.records), "handle query results are not newest first")
        if run >= warmUpRuns { handleReturned += page.records.count }
    }

    var missedLatencies = Latencies()
    progress("\(name) phase 3b: \(queryRuns) missed-calls queries")
    for run in 0..<(queryRuns + warmUpRuns) {
        let unreadOnly = run % 2 == 1
        let query = HistoryQuery.missed(unreadOnly: unreadOnly, limit: pageLimit)
        let page = run < warmUpRuns ? try store.query(query) : try missedLatencies.measure { try store.query(query) }
        let expected = min(pageLimit, unreadOnly ? generator.unreadMissed : generator.missed)
        try require(page.records.count == expected, "missed query returned \(page.records.count), expected \(expected)")
        try require(page.records.allSatisfy { $0.status == .missed && (!unreadOnly || !$0.isRead) }, "missed query returned another status")
        try require(page.records.first?.uuid == (unreadOnly ? generator.newestUnreadMissed : generator.newestMissed), "missed query does not start with the newest")
        try require(isNewestFirst(page.records), "missed query results are not newest first")
    }

    var recentsLatencies = Latencies()
    progress("\(name) phase 3c: \(queryRuns) recents")
    for run in 0..<(queryRuns + warmUpRuns) {
        let entries = run < warmUpRuns ? try store.recents(limit: pageLimit) : try recentsLatencies.measure { try store.recents(limit: pageLimit) }
        try require(entries.count == pageLimit, "recents returned \(entries.count) lines, expected \(pageLimit)")
        try require(entries[0].latest.uuid == generator.newest, "recents does not start with the newest record")
        try require(isNewestFirst(entries.flatMap(\.records)), "recents lines are not newest first")
    }

    var countLatencies = Latencies()
    progress("\(name) phase 3d: \(queryRuns) counts")
    for run in 0..<(queryRuns + warmUpRuns) {
        let query = HistoryQuery.missed(unreadOnly: true)
        let count = run < warmUpRuns ? try store.count(query) : try countLatencies.measure { try store.count(query) }
        try require(count == generator.unreadMissed, "count of unread missed = \(count), expected \(generator.unreadMissed)")
    }
    print("phase 3: queries at \(total) records, \(queryRuns) runs each (after \(warmUpRuns) unmeasured), every answer checked:")
    print("         (a) handle, limit 50:          \(handleLatencies.summary)  (\(differentForm) of \(queryRuns + warmUpRuns) in another written form; \(String(format: "%.1f", Double(handleReturned) / Double(queryRuns))) records per answer)")
    print("         (b) missed, limit 50:          \(missedLatencies.summary)  (half unread only)")
    print("         (c) recents(limit: 50):        \(recentsLatencies.summary)")
    print("         (d) count(missed, unread):     \(countLatencies.summary)  (= \(generator.unreadMissed))")
    return StoreFigures(
        insertsPerSecond: insertsPerSecond, queryP99: max(handleLatencies.p99, missedLatencies.p99, recentsLatencies.p99),
        bulkHandleRows: bulkHandleRows)
}

/// Newest first by (start time, id), as every query promises.
func isNewestFirst(_ records: [CallRecord]) -> Bool {
    zip(records, records.dropFirst()).allSatisfy { ($0.startedAt, $0.id) > ($1.startedAt, $1.id) }
}

func run() throws {
    let normalizer = HandleNormalizer.northAmerica
    let shell = postgres == nil ? try SQLiteShell.locate() : ""
    let folder = FileManager.default.temporaryDirectory
        .appendingPathComponent("parley-bench-history-\(ProcessInfo.processInfo.processIdentifier)").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer {
        if keepDatabase {
            progress("kept \(folder) (history.sqlite, baseline.sqlite, baseline.sql)")
        } else {
            try? FileManager.default.removeItem(atPath: folder)
        }
    }
    let databasePath = folder + "/history.sqlite"

    var populationRandom = SplitMix64(seed: seed)
    let people = Population.make(count: 2_000, normalizer: normalizer, random: &populationRandom)
    func freshGenerator() -> HistoryGenerator {
        HistoryGenerator(people: people, normalizer: normalizer, plannedRecords: recordCount, seed: seed &+ 1)
    }
    var generator = freshGenerator()
    let kinds = Dictionary(grouping: people, by: \.kind).mapValues(\.count)
    print("history: \(recordCount) records over 2 years, \(people.count) remote handles (\(kinds[.phoneNumber] ?? 0) phone numbers in 2–4 written forms, \(kinds[.emailAddress] ?? 0) emails, \(kinds[.generic] ?? 0) SIP URIs), Zipf(1): the top one has \(String(format: "%.1f", generator.topShare * 100)) % of calls")

    let store = try SQLiteCallHistory(path: databasePath, normalizer: normalizer, durability: .full)
    let script = postgres == nil ? try BaselineScript(path: folder + "/baseline.sql") : nil
    print("== SQLite store (\(databasePath), durability .full)")
    let sqlite = try exercise(
        store, name: "sqlite", generator: &generator, script: script, databasePath: databasePath, groupCommit: postgres != nil)
    if let postgres {
        let account = "sip:bench-\(UUID().uuidString.prefix(8).lowercased())@127.0.0.1"
        let shared = try PostgresCallHistory(connection: postgres, account: account, normalizer: normalizer)
        print("== PostgreSQL store (\(shared.server), account \(account), \(PostgresCallHistory.batchSize) records per pipelined transaction)")
        var again = freshGenerator()
        let server = try exercise(shared, name: "postgresql", generator: &again, script: nil, databasePath: nil, groupCommit: true)
        print("postgres_inserts_per_second: \(format(server.insertsPerSecond))")
        print("sqlite_inserts_per_second: \(format(sqlite.insertsPerSecond))")
        print(String(format: "postgres/sqlite inserts: %.2f", server.insertsPerSecond / sqlite.insertsPerSecond))
        print(String(format: "sqlite_query_p99_ms: %.3f", sqlite.queryP99))
        print(String(format: "postgres_query_p99_ms: %.3f", server.queryP99))
        return
    }
    guard let script else { return }
    let bulkHandleRows = sqlite.bulkHandleRows
    let insertsPerSecond = sqlite.insertsPerSecond

    // Phase 4: the baseline, same run, same rows.
    progress("phase 4: baseline: sqlite3 shell loading \(fileSize(script.path) / 1_048_576) MiB of INSERT statements")
    let baselinePath = folder + "/baseline.sqlite"
    let baselineStart = now()
    try SQLiteShell.run(shell, database: baselinePath, input: script.path)
    let baselineNanoseconds = now() - baselineStart
    let counts = try SQLiteShell.run(
        shell, database: baselinePath,
        arguments: ["SELECT (SELECT count(*) FROM conversation) || ' ' || (SELECT count(*) FROM remote_handle)"])
    try require(counts == "\(recordCount) \(bulkHandleRows)", "baseline database holds \(counts), expected \(recordCount) \(bulkHandleRows)")
    let baselineRate = rate(recordCount, baselineNanoseconds)
    print("baseline: sqlite3 \(try SQLiteShell.version(shell)) shell (same libsqlite3) reading generated SQL: the same \(recordCount) conversations + \(bulkHandleRows) handle rows, one INSERT per row, into two plain tables (no secondary indexes, no duplicate check), one transaction, WAL + synchronous=FULL; writing the SQL is not timed")
    print("baseline sqlite3 shell: \(format(baselineRate)) rows/s (conversation rows with their handle rows, \(String(format: "%.1f", Double(baselineNanoseconds) / 1e9)) s)")
    print(String(format: "parley/baseline: %.2f", insertsPerSecond / baselineRate))
    print("inserts_per_second: \(format(insertsPerSecond))")
    print(String(format: "query_p99_ms: %.3f", sqlite.queryP99))
}

do {
    try run()
} catch {
    FileHandle.standardError.write(Data("bench-history: \(error)\n".utf8))
    exit(1)
}
