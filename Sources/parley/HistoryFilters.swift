import CallHistory
import CommandLineSupport
import ConversationKit
import Foundation

/// The filter options shared by `parley history list` and `parley history count`, turned into a ``HistoryQuery``.
enum HistoryFilters {
    /// The options' help lines.
    static let help = """
          --handle VALUE       calls with this person: a phone number, email address or SIP URI, matched by
                               normalised value (415-555-0100 finds +1 (415) 555-0100)
          --kind KIND          the handle's kind: phoneNumber, emailAddress or generic (default: guessed
                               from the value: an address with @ is an email, a URI with : generic)
          --direction DIR      incoming or outgoing
          --status LIST        comma-separated statuses: connected, missed, declined, blocked, busy, cancelled,
                               failed, answeredElsewhere, declinedElsewhere
          --since DATE         started at or after DATE
          --until DATE         started before DATE
          --name TEXT          a display name containing TEXT
          --unread             only records not yet marked read
        DATE is \(DateArgument.forms).
        """

    /// Takes the filter options out of `arguments`.
    static func take(from arguments: inout Arguments, now: Date = Date()) throws(UsageError) -> HistoryQuery {
        var query = HistoryQuery()
        let value = try arguments.option("--handle")
        let kind = try arguments.option("--kind", as: "phoneNumber, emailAddress or generic", Handle.Kind.init(name:))
        if let value {
            // Whether the value is usable is for the store to say: it matches by the database's own rules.
            query.handle = Handle(kind: kind ?? guessKind(value), value: value)
        } else if kind != nil {
            throw UsageError("--kind only goes with --handle")
        }
        query.direction = try arguments.option(
            "--direction", as: "incoming or outgoing", { Conversation.Direction(rawValue: $0.lowercased()) })
        if let list = try arguments.option("--status") {
            query.statuses = try statuses(list)
        }
        query.startedFrom = try arguments.option("--since").map { text throws(UsageError) in
            try DateArgument.parse(text, for: "--since", now: now)
        }
        query.startedBefore = try arguments.option("--until").map { text throws(UsageError) in
            try DateArgument.parse(text, for: "--until", now: now)
        }
        if let from = query.startedFrom, let before = query.startedBefore, from >= before {
            throw UsageError("--since (\(HistoryRendering.when(from))) must be before --until (\(HistoryRendering.when(before)))")
        }
        if let name = try arguments.option("--name") {
            guard !name.isEmpty else { throw UsageError("--name needs some text") }
            query.displayNameContains = name
        }
        query.unreadOnly = arguments.flag("--unread")
        return query
    }

    /// A handle kind from the look of the value: `tel:…` and anything made of digits, `+`, `*`, `#` and
    /// separators is a phone number, `mailto:…` and `a@b` an email address, everything else (`sip:…`, names)
    /// generic. `--kind` overrides the guess.
    static func guessKind(_ value: String) -> Handle.Kind {
        let lowered = value.lowercased()
        if lowered.hasPrefix("tel:") { return .phoneNumber }
        if lowered.hasPrefix("mailto:") { return .emailAddress }
        if value.contains(":") { return .generic }
        if value.contains("@") { return .emailAddress }
        let phoneCharacters = Set("0123456789+*#()-. /")
        return !value.isEmpty && value.allSatisfy(phoneCharacters.contains) ? .phoneNumber : .generic
    }

    /// Parses `missed,declined` (names are case-insensitive; duplicates are fine).
    static func statuses(_ list: String) throws(UsageError) -> Set<CallStatus> {
        var result: Set<CallStatus> = []
        for name in list.split(separator: ",", omittingEmptySubsequences: false) {
            let name = name.trimmingCharacters(in: .whitespaces)
            guard let status = CallStatus.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
                throw UsageError(
                    "--status: unknown status '\(name)' (known: \(CallStatus.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            result.insert(status)
        }
        return result
    }

    /// `--limit N` within 1…1000, or `defaultValue`.
    static func limit(from arguments: inout Arguments, default defaultValue: Int) throws(UsageError) -> Int {
        guard let text = try arguments.option("--limit") else { return defaultValue }
        guard let limit = Int(text), (1...1000).contains(limit) else {
            throw UsageError("--limit expects a whole number from 1 to 1000, got '\(text)'")
        }
        return limit
    }

    /// `--cursor C` as printed at the end of a page.
    static func cursor(from arguments: inout Arguments) throws(UsageError) -> HistoryCursor? {
        guard let text = try arguments.option("--cursor") else { return nil }
        guard let cursor = HistoryCursor(text) else {
            throw UsageError("--cursor: '\(text)' is not a paging cursor (pass the value a previous page printed)")
        }
        return cursor
    }

    /// The record ids among `positionals` (positive integers), or a usage error naming the bad one.
    static func ids(_ positionals: [String]) throws(UsageError) -> [Int64] {
        var ids: [Int64] = []
        for text in positionals {
            guard let id = Int64(text), id > 0 else {
                throw UsageError("'\(text)' is not a record id (ids are positive whole numbers, as 'parley history' shows)")
            }
            ids.append(id)
        }
        return ids
    }
}
