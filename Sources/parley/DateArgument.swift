import CommandLineSupport
import Foundation

/// A point in time given on the command line: ISO-8601 (`2026-11-29T14:00:00Z`, `2026-11-29T15:00:00+01:00`,
/// fractional seconds allowed), a plain date (`2026-11-29`, midnight local time), or a time relative to now
/// (`-30m`, `-2h`, `-3d`, `-1w`).
enum DateArgument {
    /// The accepted forms, for help texts and error messages.
    static let forms = "ISO-8601 (2026-11-29T14:00:00Z), a date (2026-11-29, local midnight) or a time ago (-30m, -2h, -3d, -1w)"

    /// Parses `text` for `option`; anything else is a usage error that shows the accepted forms.
    static func parse(_ text: String, for option: String, now: Date = Date()) throws(UsageError) -> Date {
        guard let date = date(from: text, now: now) else {
            throw UsageError("\(option) expects \(forms); got '\(text)'")
        }
        return date
    }

    /// The date `text` stands for, or nil.
    static func date(from text: String, now: Date = Date()) -> Date? {
        let text = text.trimmingCharacters(in: .whitespaces)
        if let ago = relative(text) { return now.addingTimeInterval(-ago) }
        if let day = plainDate(text) { return day }
        for options: ISO8601DateFormatter.Options in [[.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// Seconds in `-N[m|h|d|w]`, or nil.
    private static func relative(_ text: String) -> TimeInterval? {
        guard text.hasPrefix("-"), let unit = text.last else { return nil }
        let digits = text.dropFirst().dropLast()
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let amount = Int(digits), amount <= 100_000 else {
            return nil
        }
        let seconds: TimeInterval
        switch unit {
        case "m": seconds = 60
        case "h": seconds = 3_600
        case "d": seconds = 86_400
        case "w": seconds = 604_800
        default: return nil
        }
        return TimeInterval(amount) * seconds
    }

    /// Local midnight of `YYYY-MM-DD`, or nil (also for dates that do not exist, such as 2026-02-30).
    private static func plainDate(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2])
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        let components = DateComponents(year: year, month: month, day: day)
        guard components.isValidDate(in: calendar), let date = calendar.date(from: components) else { return nil }
        return date
    }
}
