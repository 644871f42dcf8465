import Foundation
import Testing

/// Options named to people — in messages, help, the README, docs, scripts and tests — exist: each `--option` written after
/// `parleyd` or `parley` is one that program's parser takes, and a message of the daemon's modules names only
/// parleyd's options. The option tables are the programs' own help (`parleyd --help`, every `parley … --help`), and
/// every option the parsers take must be in that help.
@Suite("Options named in messages, help and docs exist")
struct OptionMentionTests {
    /// parleyd options that are accepted but deliberately not listed in its help.
    static let unlistedParleydOptions: Set<String> = [
        "--tls-verify",  // the old opt-in to verification, the default now; docs/robustness.md says it is still accepted
    ]

    /// `--name` words in `text`.
    static func options(in text: Substring) -> [(option: String, range: Range<String.Index>)] {
        text.matches(of: /--[a-z][a-z0-9-]*/).map { (String($0.output), $0.range) }
    }

    /// The long options `parleyd --help` lists.
    static func parleydOptions() throws -> Set<String> {
        let help = try CLI.run(["--help"], binary: "parleyd")
        #expect(help.status == 0)
        return Set(options(in: help.stdout[...]).map(\.option))
    }

    /// The long options every `parley` command's help lists.
    static func parleyOptions() throws -> Set<String> {
        var all: Set<String> = ["--help", "--version"]
        for path in try CommandHelpTests.commandPaths() {
            all.formUnion(options(in: try CLI.run(path + ["--help"]).stdout[...]).map(\.option))
        }
        return all
    }

    /// The long options the Swift files of `module` take from command lines (`flag("--x")`, `option("--x", …)`).
    static func parsed(in module: String) throws -> Set<String> {
        var found: Set<String> = []
        let directory = CLI.packageRoot.appending(path: "Sources/\(module)")
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: directory.appending(path: file), encoding: .utf8)
            for call in text.matches(of: /(?:flag|option|options)\(\s*((?:"-[-a-z0-9]+"(?:,\s*)?)+)/) {
                found.formUnion(call.output.1.matches(of: /"(--[a-z0-9-]+)"/).map { String($0.output.1) })
            }
        }
        return found
    }

    /// Every file below `directory` (relative to the package root) whose name ends with one of `suffixes`.
    static func files(_ directory: String, _ suffixes: [String]) -> [URL] {
        let root = CLI.packageRoot.appending(path: directory)
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        return walker.compactMap { $0 as? URL }.filter { url in suffixes.contains { url.lastPathComponent.hasSuffix($0) } }
    }

    /// The problems in one file: options written after `parleyd`/`parley` that program does not take, and (with
    /// `bare`) any other option not in `bare`.
    static func problems(in url: URL, parleyd: Set<String>, parley: Set<String>, bare: Set<String>?) throws -> [String] {
        // Shell and Markdown continuation lines are read as one line.
        let text = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "\\\n", with: " ")
        let name = url.path.replacingOccurrences(of: CLI.packageRoot.path + "/", with: "")
        var found: [String] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var claimed: [Range<String.Index>] = []
            // A command: the program at the start of a line, after a path's / or an opening ` ( ", then its words up
            // to the end of the clause.
            for command in line.matches(of: /(?:^\s*|[`\/("])(parleyd|parley)"?((?: +[^\s`|;&#"\\]+)+)/) {
                let program = String(command.output.1)
                var end = command.range.upperBound
                for word in command.output.2.split(separator: " ") {
                    if let last = word.last, "),.:;".contains(last) {
                        end = word.endIndex
                        break
                    }
                }
                let words = line[command.range.lowerBound..<end]
                let known = program == "parleyd" ? parleyd : parley
                for (option, _) in options(in: words) where !known.contains(option) {
                    found.append("\(name):\(number + 1): \(program) has no option \(option): \(line.trimmingCharacters(in: .whitespaces))")
                }
                claimed.append(words.startIndex..<words.endIndex)
            }
            guard let bare else { continue }
            for (option, range) in options(in: line) where !bare.contains(option) {
                if claimed.contains(where: { $0.contains(range.lowerBound) }) { continue }
                found.append("\(name):\(number + 1): no program takes \(option): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        return found
    }

    @Test("every option the parsers take is in its program's help")
    func parsersMatchHelp() throws {
        let parleyd = try Self.parleydOptions().union(Self.unlistedParleydOptions)
        let parley = try Self.parleyOptions()
        for option in try Self.parsed(in: "parleyd").union(Self.parsed(in: "ParleyNode")) {
            #expect(parleyd.contains(option), "parleyd takes \(option) but its --help does not list it")
        }
        for option in try Self.parsed(in: "parley") {
            #expect(parley.contains(option), "parley takes \(option) but no command's --help lists it")
        }
        #expect(parleyd.contains("--register") && !parleyd.contains("--registrar"))
    }

    @Test("options named in Sources, the README, docs, Examples, Scripts and Tests exist")
    func mentionsExist() throws {
        let parleyd = try Self.parleydOptions().union(Self.unlistedParleydOptions)
        let parley = try Self.parleyOptions()
        var problems: [String] = []
        let sources = CLI.packageRoot.appending(path: "Sources")
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted() {
            // The benchmarks' own options are theirs; C wrappers hold no messages.
            if module.hasPrefix("parley-bench") || FileManager.default.fileExists(atPath: sources.appending(path: "\(module)/module.modulemap").path) {
                continue
            }
            // A message of the daemon's modules names parleyd's options; the CLI's may name either program's.
            let bare = ["parley", "CommandLineSupport"].contains(module) ? parleyd.union(parley) : parleyd
            for file in Self.files("Sources/\(module)", [".swift"]) {
                problems += try Self.problems(in: file, parleyd: parleyd, parley: parley, bare: bare)
            }
        }
        let documents = [CLI.packageRoot.appending(path: "README.md"), CLI.packageRoot.appending(path: "BENCHMARKS.md")]
            + Self.files("docs", [".md"]) + Self.files("Examples", [".md"]) + Self.files("Scripts", [""])
            + Self.files("Tests", [".swift", ".py", ".md"])
        #expect(documents.count > 20)
        for file in documents {
            problems += try Self.problems(in: file, parleyd: parleyd, parley: parley, bare: nil)
        }
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test("the check finds a wrong option: parleyd --registrar, in a message and in a command line")
    func catchesWrongOptions() throws {
        let parleyd: Set<String> = ["--register", "--phone-domain", "--listen"]
        let file = try CLI.temporaryFile(
            """
            let message = "no phone domain (start parleyd with --phone-domain or --registrar)."
            .build/debug/parleyd --listen udp://127.0.0.1:5070 \\
                --registrar sip:127.0.0.1
            prose (parleyd may be late), at most --drain.
            """, suffix: ".swift")
        defer { try? FileManager.default.removeItem(at: file) }
        let found = try Self.problems(in: file, parleyd: parleyd, parley: [], bare: parleyd)
        #expect(found.count == 3, "\(found)")
        #expect(found.filter { $0.contains("--registrar") }.count == 2)
        #expect(found.contains { $0.contains("no program takes --drain") })
    }
}
