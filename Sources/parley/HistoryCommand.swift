import CallHistory
import CommandLineSupport
import ConversationKit
import Foundation
import ParleyNode

/// `parley history [ACTION]`: lists, counts, shows, marks and deletes recorded conversations; `parley redial ID`.
/// Every action opens an existing database and never creates one.
enum HistoryCommand {
    /// The actions, by the name typed after `parley history`.
    enum Action: String, CaseIterable {
        case list, count, recents, show, markRead = "mark-read", delete, clear, check, redial

        /// The action's help text.
        var help: String {
            switch self {
            case .list: HistoryHelp.list
            case .count: HistoryHelp.count
            case .recents: HistoryHelp.recents
            case .show: HistoryHelp.show
            case .markRead: HistoryHelp.markRead
            case .delete: HistoryHelp.delete
            case .clear: HistoryHelp.clear
            case .check: HistoryHelp.check
            case .redial: HistoryHelp.redial(as: "history redial")
            }
        }

        /// Whether the action takes record ids (so `-3` is a bad id rather than an unknown option).
        var takesIDs: Bool { [.show, .markRead, .delete, .redial].contains(self) }
    }

    static func run(_ raw: [String]) throws -> ExitCode {
        guard let first = raw.first else { return try run(.list, [], invocation: []) }
        if first == "help" {
            print(HistoryHelp.overview)
            return .ok
        }
        if let action = Action(rawValue: first) {
            return try run(action, Array(raw.dropFirst()), invocation: [first])
        }
        guard first.hasPrefix("-") else {
            throw UsageError("unknown action '\(first)' (actions: \(Action.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        return try run(.list, raw, invocation: [])
    }

    /// `parley redial ID`: the same as `parley history redial ID`.
    static func redial(_ raw: [String]) throws -> ExitCode {
        try run(.redial, raw, invocation: [])
    }

    private static func run(_ action: Action, _ raw: [String], invocation: [String]) throws -> ExitCode {
        var arguments = Arguments(raw)
        if action.takesIDs, let bad = raw.first(where: { $0.count > 1 && $0.hasPrefix("-") && $0.dropFirst().allSatisfy(\.isNumber) }) {
            _ = try HistoryFilters.ids([bad])
        }
        let location = try HistoryLocation.take(from: &arguments)
        switch action {
        case .list: return try list(&arguments, location, rerun: invocation + raw)
        case .count:
            let query = try HistoryFilters.take(from: &arguments)
            let json = arguments.flag("--json")
            try finish(&arguments)
            let store = try location.open()
            let count = try asUsage { () throws(CallHistoryError) in try store.count(query) }
            print(json ? try jsonObject(["count": count]) : String(count))
            return .ok
        case .recents: return try recents(&arguments, location)
        case .show: return try show(&arguments, location)
        case .markRead: return try markRead(&arguments, location)
        case .delete:
            let json = arguments.flag("--json")
            let id = try oneID(&arguments)
            try location.open(writable: true).delete(id: id)
            print(json ? try jsonObject(["deleted": [id]]) : "deleted record \(id)")
            return .ok
        case .clear: return try clear(&arguments, location)
        case .check: return try check(&arguments, location)
        case .redial: return try redial(&arguments, location)
        }
    }

    // MARK: Actions

    /// Runs a store call, reporting a query the store refuses (a handle its matching rules cannot use, a limit
    /// out of range) as a usage error.
    private static func asUsage<T>(_ body: () throws(CallHistoryError) -> T) throws -> T {
        do {
            return try body()
        } catch .invalidQuery(let problem) {
            throw UsageError(problem)
        }
    }

    private static func list(_ arguments: inout Arguments, _ location: HistoryLocation, rerun: [String]) throws -> ExitCode {
        var query = try HistoryFilters.take(from: &arguments)
        query.limit = try HistoryFilters.limit(from: &arguments, default: 50)
        query.cursor = try HistoryFilters.cursor(from: &arguments)
        let json = arguments.flag("--json")
        try finish(&arguments)
        let store = try location.open()
        let page = try asUsage { () throws(CallHistoryError) in try ShownPage.fetch(query, from: store) }
        if json {
            print(try HistoryRendering.json(HistoryPageJSON(page: page)))
        } else {
            print(HistoryRendering.table(page) { cursor in nextPageCommand(rerun, cursor: cursor) })
        }
        return .ok
    }

    private static func recents(_ arguments: inout Arguments, _ location: HistoryLocation) throws -> ExitCode {
        let limit = try HistoryFilters.limit(from: &arguments, default: 20)
        let json = arguments.flag("--json")
        try finish(&arguments)
        let entries = try location.open().recents(limit: limit)
        print(json ? try HistoryRendering.json(entries.map(RecentsEntryJSON.init)) : HistoryRendering.recents(entries))
        return .ok
    }

    private static func show(_ arguments: inout Arguments, _ location: HistoryLocation) throws -> ExitCode {
        let json = arguments.flag("--json")
        let id = try oneID(&arguments)
        let record = try location.open().record(id: id)
        print(json ? try HistoryRendering.json(record) : HistoryRendering.detail(record))
        return .ok
    }

    private static func markRead(_ arguments: inout Arguments, _ location: HistoryLocation) throws -> ExitCode {
        let all = arguments.flag("--all")
        let json = arguments.flag("--json")
        let ids = try HistoryFilters.ids(try positionals(&arguments))
        switch (all, ids.isEmpty) {
        case (true, false): throw UsageError("give record ids or --all, not both")
        case (false, true): throw UsageError("name the records to mark read (ids), or --all")
        case (true, true):
            let changed = try location.open(writable: true).markAllRead()
            print(json ? try jsonObject(["changed": changed]) : "marked \(records(changed)) read")
        case (false, false):
            let changed = try location.open(writable: true).markRead(ids: ids)
            print(
                json
                    ? try jsonObject(["changed": changed])
                    : "marked \(records(changed)) read" + (changed < Set(ids).count ? " (the others already were)" : ""))
        }
        return .ok
    }

    private static func clear(_ arguments: inout Arguments, _ location: HistoryLocation) throws -> ExitCode {
        guard let text = try arguments.option("--before") else {
            throw UsageError("clear needs --before DATE (\(DateArgument.forms))")
        }
        let date = try DateArgument.parse(text, for: "--before")
        let json = arguments.flag("--json")
        try finish(&arguments)
        let deleted = try location.open(writable: true).deleteAll(endedBefore: date)
        print(json ? try jsonObject(["deleted": deleted]) : "deleted \(records(deleted)) that ended before \(HistoryRendering.when(date))")
        return .ok
    }

    private static func check(_ arguments: inout Arguments, _ location: HistoryLocation) throws -> ExitCode {
        let json = arguments.flag("--json")
        try finish(&arguments)
        let store = try location.open()
        let problems = try store.check()
        let (place, schemaVersion) = try HistoryLocation.describe(store)
        if json {
            print(try jsonObject([
                "ok": problems.isEmpty, "problems": problems, "schemaVersion": schemaVersion,
                "records": try store.count(HistoryQuery()),
            ]))
            return problems.isEmpty ? .ok : .failure
        }
        guard problems.isEmpty else {
            print("\(place): \(problems.count) problem\(problems.count == 1 ? "" : "s") found:")
            for problem in problems { print("  \(problem)") }
            return .failure
        }
        let total = try store.count(HistoryQuery())
        print("ok: \(place) is sound (schema version \(schemaVersion), \(records(total)))")
        return .ok
    }

    private static func redial(_ arguments: inout Arguments, _ location: HistoryLocation) throws -> ExitCode {
        let json = arguments.flag("--json")
        let dryRun = arguments.flag("--dry-run")
        let id = try oneID(&arguments)
        if !dryRun {
            guard location.account == nil else {
                throw ControlCommandError(
                    "a shared history names no parleyd to dial through, so nothing was dialled: give the data directory of "
                        + "a parleyd that uses it ('parley redial \(id) --data-dir DIR'), or add --dry-run to only show the call.")
            }
            // The parleyd running on this data directory dials, through its control API (it reads the record).
            let dataDirectory = (location.path as NSString).deletingLastPathComponent
            let directory = ["--db", "--data-dir"].contains(location.source)
                ? DataDirectory.resolve(dataDirectory).control : DataDirectory.resolve().controlForClients
            return try ControlCommands.redial(id, directory: directory, json: json)
        }
        let record = try location.open().record(id: id)
        guard !record.remoteHandles.isEmpty else {
            printError("parley redial: record \(id) has no remote party to call")
            return .failure
        }
        let action = record.redialAction()
        if json, case .start(let handles, let isVideo) = action.kind {
            let encoded = try JSONSerialization.jsonObject(with: JSONEncoder().encode(handles))
            print(try jsonObject(["record": id, "action": ["kind": "start", "handles": encoded, "isVideo": isVideo]]))
            return .ok
        }
        print("record \(id): \(record.direction) \(record.status) with \(HistoryRendering.who(record))")
        print("would perform: \(action.kindDescription)")
        if case .start(let handles, let isVideo) = action.kind {
            for handle in handles { print("  handle  \(handle.kind) \(handle.value)" + (handle.displayName == handle.value ? "" : " (\(handle.displayName))")) }
            print("  video   \(isVideo ? "yes" : "no")")
        }
        print("Nothing was dialled (--dry-run).")
        return .ok
    }

    // MARK: Helpers

    /// A small JSON object with sorted keys, for `--json` on actions that return a number or a list.
    static func jsonObject(_ object: [String: Any]) throws -> String {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    /// "1 record", "3 records".
    static func records(_ count: Int) -> String { "\(count) record\(count == 1 ? "" : "s")" }

    /// The remaining positional arguments; an action name among them means it was not typed first.
    private static func positionals(_ arguments: inout Arguments) throws(UsageError) -> [String] {
        let extra = try arguments.positionals()
        if let misplaced = extra.first(where: { Action(rawValue: $0) != nil }) {
            throw UsageError("'\(misplaced)' is an action: it goes right after 'history' (parley history \(misplaced) …)")
        }
        return extra
    }

    /// Throws if anything is left over.
    private static func finish(_ arguments: inout Arguments) throws(UsageError) {
        if let extra = try positionals(&arguments).first { throw UsageError("unexpected argument '\(extra)'") }
    }

    /// Exactly one record id.
    private static func oneID(_ arguments: inout Arguments) throws(UsageError) -> Int64 {
        let ids = try HistoryFilters.ids(try positionals(&arguments))
        guard ids.count == 1 else {
            throw UsageError(ids.isEmpty ? "name the record (its id, as 'parley history' shows)" : "name exactly one record id")
        }
        return ids[0]
    }

    /// `parley history ARGS… --cursor C`: the command that shows the page after this one.
    static func nextPageCommand(_ arguments: [String], cursor: HistoryCursor) -> String {
        var kept: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--cursor" {
                index += 2
                continue
            }
            if !argument.hasPrefix("--cursor=") { kept.append(argument) }
            index += 1
        }
        return (["parley", "history"] + kept + ["--cursor", cursor.description]).map(shellQuoted).joined(separator: " ")
    }

    /// `text` as one shell word.
    static func shellQuoted(_ text: String) -> String {
        let safe = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-_./=:,@+%"))
        if !text.isEmpty, text.unicodeScalars.allSatisfy({ safe.contains($0) && $0.isASCII }) { return text }
        return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
