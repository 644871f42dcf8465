import CommandLineSupport
import ConversationConformance
import ConversationKit
import Foundation
import ParleyEngine

/// `parley conformance FILE…` runs scenario files; `parley conformance --table` prints the transition table.
enum ConformanceCommand {
    static let help = """
        usage: parley conformance [--quiet] FILE...
               parley conformance --table [--effects | --call-leg]

        Runs conformance scenario files (JSON; the format is in Examples/conformance/README.md) against the conversation engine and
        reports each step as passed (✓) or failed (✗) with a diff. Exits 1 if any step fails, 64 on usage
        errors; a malformed file is reported with the JSON path of the problem and counts as a failure.

          --quiet     print only failing scenarios and the summary
          --table     print the lifecycle transition table (Markdown), generated from the engine
          --effects   with --table: list every accepted transition with its effects instead
          --call-leg  with --table: the call-leg machine's table instead (the SIP side of a conversation)
        """

    static func run(_ raw: [String]) throws -> ExitCode {
        var arguments = Arguments(raw)
        if arguments.flag("-h", "--help") {
            print(help)
            return .ok
        }
        let table = arguments.flag("--table")
        let effects = arguments.flag("--effects")
        let callLeg = arguments.flag("--call-leg")
        let quiet = arguments.flag("--quiet", "-q")
        let files = try arguments.positionals()
        if table {
            guard files.isEmpty else { throw UsageError("--table takes no files") }
            guard !(effects && callLeg) else { throw UsageError("--effects and --call-leg are two different tables") }
            let text = callLeg ? CallLegTable.markdown() : effects ? TransitionTable.effectsListing() : TransitionTable.markdown()
            print(text, terminator: "")
            return .ok
        }
        if effects || callLeg { throw UsageError("\(effects ? "--effects" : "--call-leg") only goes with --table") }
        guard !files.isEmpty else { throw UsageError("name at least one scenario file") }

        var passed = 0, failed = 0
        let runner = ScenarioRunner()
        for file in files {
            let scenario: Scenario
            do {
                scenario = try Scenario.load(contentsOf: URL(fileURLWithPath: file))
            } catch {
                print("✗ \(error)")
                failed += 1
                continue
            }
            let report = runner.run(scenario)
            if report.passed { passed += 1 } else { failed += 1 }
            if !quiet || !report.passed { print(report.rendered()) }
        }
        print("scenarios: \(passed) passed, \(failed) failed")
        return failed == 0 ? .ok : .failure
    }
}
