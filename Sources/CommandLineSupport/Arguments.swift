/// A command line being taken apart: flags (`--json`), options with values (`--limit 5`, `--limit=5`) and
/// positional arguments, with a clear error for anything left over. Hand-written because outside Swift
/// packages cannot be fetched.
public struct Arguments: Sendable {
    private var remaining: [String]
    private var positionalOnly: [String] = []

    /// Wraps the arguments after the command name. Everything after `--` is positional.
    public init(_ arguments: [String]) {
        if let separator = arguments.firstIndex(of: "--") {
            remaining = Array(arguments[..<separator])
            positionalOnly = Array(arguments[(separator + 1)...])
        } else {
            remaining = arguments
        }
    }

    /// Whether `--name` (or one of its aliases) is present; removes it.
    public mutating func flag(_ names: String...) -> Bool {
        var found = false
        remaining.removeAll { argument in
            let hit = names.contains(argument)
            found = found || hit
            return hit
        }
        return found
    }

    /// The value of `--name VALUE` or `--name=VALUE`; removes it. The last occurrence wins.
    public mutating func option(_ name: String) throws(UsageError) -> String? {
        var value: String?
        var index = 0
        while index < remaining.count {
            let argument = remaining[index]
            if argument == name {
                guard index + 1 < remaining.count else { throw UsageError("\(name) needs a value") }
                value = remaining[index + 1]
                remaining.removeSubrange(index...(index + 1))
            } else if argument.hasPrefix(name + "=") {
                value = String(argument.dropFirst(name.count + 1))
                remaining.remove(at: index)
            } else {
                index += 1
            }
        }
        return value
    }

    /// The two values of `--name FIRST SECOND` (as `--websocket-tls CERT KEY`); removes them. The last occurrence wins.
    public mutating func optionPair(_ name: String) throws(UsageError) -> (String, String)? {
        var value: (String, String)?
        var index = 0
        while index < remaining.count {
            guard remaining[index] == name else {
                index += 1
                continue
            }
            guard index + 2 < remaining.count, !remaining[index + 1].hasPrefix("--"), !remaining[index + 2].hasPrefix("--") else {
                throw UsageError("\(name) needs two values")
            }
            value = (remaining[index + 1], remaining[index + 2])
            remaining.removeSubrange(index...(index + 2))
        }
        return value
    }

    /// Every value of a repeatable option (`--listen A --listen B`), in order; removes them.
    public mutating func options(_ name: String) throws(UsageError) -> [String] {
        var values: [String] = []
        var index = 0
        while index < remaining.count {
            let argument = remaining[index]
            if argument == name {
                guard index + 1 < remaining.count else { throw UsageError("\(name) needs a value") }
                values.append(remaining[index + 1])
                remaining.removeSubrange(index...(index + 1))
            } else if argument.hasPrefix(name + "=") {
                values.append(String(argument.dropFirst(name.count + 1)))
                remaining.remove(at: index)
            } else {
                index += 1
            }
        }
        return values
    }

    /// An option parsed by `transform`; a value it rejects is a usage error naming the option.
    /// The value of `name`, an integer in `range` (else a usage error: "NAME expects WHAT"), or nil when absent.
    public mutating func option(_ name: String, as what: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        try option(name, as: what) { Int($0).flatMap { range.contains($0) ? $0 : nil } }
    }

    public mutating func option<T>(_ name: String, as what: String, _ transform: (String) -> T?) throws(UsageError) -> T? {
        guard let text = try option(name) else { return nil }
        guard let value = transform(text) else { throw UsageError("\(name) expects \(what), got '\(text)'") }
        return value
    }

    /// The positional arguments; any argument left that starts with `-` is an unknown option.
    public mutating func positionals() throws(UsageError) -> [String] {
        if let unknown = remaining.first(where: { $0.hasPrefix("-") && $0 != "-" }) {
            throw UsageError("unknown option \(unknown)")
        }
        defer { remaining = []; positionalOnly = [] }
        return remaining + positionalOnly
    }

    /// Throws if anything is left (an unknown option or an unexpected argument).
    public func finish() throws(UsageError) {
        if let extra = (remaining + positionalOnly).first {
            throw UsageError(extra.hasPrefix("-") ? "unknown option \(extra)" : "unexpected argument '\(extra)'")
        }
    }
}

/// A mistake in how a command was called; reported with exit code 64.
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// Wraps a message.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// The exit codes every Parley command uses.
public enum ExitCode: Int32, Sendable {
    /// Success.
    case ok = 0
    /// The command ran and failed (a scenario failed, a file could not be read).
    case failure = 1
    /// The command was called wrongly (sysexits' EX_USAGE).
    case usage = 64
}
