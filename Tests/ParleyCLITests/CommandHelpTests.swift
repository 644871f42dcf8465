import Foundation
import Testing

/// Every command and subcommand of `parley` has help of its own: the list comes from the CLI's command table
/// (`parley help --list`), so a command added without help — or with another command's — fails here.
@Suite("parley: every command's own --help")
struct CommandHelpTests {
    /// Every command path the CLI knows ("mute", "history count"), from its own table.
    static func commandPaths() throws -> [[String]] {
        let run = try CLI.run("help", "--list")
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        return run.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
    }

    /// The lines from `heading` ("examples:") to the next blank line.
    static func section(_ heading: [String], of help: String) -> [String] {
        let lines = help.components(separatedBy: "\n")
        guard let start = lines.firstIndex(where: { heading.contains($0) }) else { return [] }
        return Array(lines[(start + 1)...].prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty })
    }

    @Test("the list is the command table: every command of 'parley --help', and the subcommands")
    func listIsTheTable() throws {
        let paths = try Self.commandPaths()
        let listed = try CLI.run("--help").stdout.components(separatedBy: "\n")
            .drop { $0 != "commands:" }.dropFirst().prefix { !$0.isEmpty }
            .compactMap { $0.split(separator: " ").first.map(String.init) }
        #expect(!listed.isEmpty)
        #expect(paths.filter { $0.count == 1 }.map { $0[0] } == Array(listed))
        for expected in [["mute"], ["unmute"], ["redial"], ["history", "count"], ["group", "start"], ["collab", "prove"],
                         ["push", "send"], ["identity", "verify"], ["help"]] {
            #expect(paths.contains(expected), "\(expected)")
        }
    }

    @Test("parley CMD [SUB] --help: exit 0, usage naming it, what it does, its options, an example; parley help CMD [SUB] the same")
    func everyCommandHasItsOwnHelp() throws {
        let paths = try Self.commandPaths()
        #expect(paths.count >= 50, "\(paths.count) commands")
        var seen: [String: String] = [:]
        for path in paths {
            let name = "parley " + path.joined(separator: " ")
            let run = try CLI.run(path + ["--help"])
            #expect(run.status == 0, "\(name) --help exited \(run.status): \(run.stderr)")
            #expect(run.stderr.isEmpty, "\(name): \(run.stderr)")
            let help = run.stdout
            let usage = help.components(separatedBy: "\n").prefix { !$0.isEmpty }
            #expect(usage.first?.hasPrefix("usage: parley ") == true, "\(name): \(usage.first ?? "")")
            #expect(usage.contains { line in
                guard let range = line.range(of: name) else { return false }
                return range.upperBound == line.endIndex || line[range.upperBound] == " "
            }, "\(name): the usage does not name it:\n\(usage.joined(separator: "\n"))")
            // What it does: a paragraph after the usage.
            let rest = help.components(separatedBy: "\n").drop { !$0.isEmpty }.drop { $0.isEmpty }
            #expect((rest.first?.count ?? 0) > 20, "\(name): no description after the usage")
            // Its options: every option the usage shows is explained below it.
            let body = rest.joined(separator: "\n")
            for option in Set(usage.joined(separator: " ").split(separator: " ").compactMap(Self.option)) {
                #expect(body.contains("  \(option) ") || body.contains("  \(option)\n") || body.contains(" \(option) "),
                        "\(name): \(option) is in the usage but not explained")
            }
            // An example of it.
            let examples = Self.section(["example:", "examples:"], of: help)
            #expect(examples.contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix(name) }, "\(name): no example of it")
            // The same through parley help, and not another command's.
            #expect(try CLI.run(["help"] + path).stdout == help, "parley help \(path.joined(separator: " "))")
            if let other = seen[help] { Issue.record("\(name) prints the same help as \(other)") }
            seen[help] = name
        }
    }

    @Test("help for something that does not exist is a usage error")
    func unknown() throws {
        let command = try CLI.run("help", "dial")
        #expect(command.status == 64 && command.stderr.contains("unknown command 'dial'"), "\(command.stderr)")
        let subcommand = try CLI.run("help", "group", "dance")
        #expect(subcommand.status == 64 && subcommand.stderr.contains("'group' has no subcommand 'dance' (subcommands: list, start"))
        // After --, --help is an argument, not a request for help.
        let literal = try CLI.run("conformance", "--", "--help")
        #expect(literal.status == 1 && literal.stdout.contains("--help"), "\(literal.stdout)")
    }

    /// `--name` out of a usage word such as `[--limit` or `N]`; nil for other words.
    static func option(_ word: Substring) -> String? {
        let trimmed = word.trimmingCharacters(in: CharacterSet(charactersIn: "[]|()…,"))
        guard trimmed.hasPrefix("--"), trimmed.count > 2 else { return nil }
        return String(trimmed.prefix { $0 != "=" })
    }
}
