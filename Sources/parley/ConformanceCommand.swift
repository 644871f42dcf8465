import CommandLineSupport
import ConversationConformance
import ConversationKit
import Foundation
import ParleyEngine

/// `parley conformance FILE…` runs scenario files; `parley conformance --table` prints the transition table.
enum ConformanceCommand {
    static let help = """
        usage: parley conformance [--quiet | --json] FILE...
               parley conformance --table [--effects | --call-leg]

        Runs conformance scenario files (JSON; the format is in Examples/conformance/README.md) against the conversation engine and
        reports each step as passed (✓) or failed (✗) with a diff. Exits 1 if any step fails, 64 on usage
        errors; a malformed file is reported with the JSON path of the problem and counts as a failure.

        options:
          --quiet     print only failing scenarios and the summary
          --json      print one JSON object: passed and failed counts, and each scenario's failures
          --table     print the lifecycle transition table (Markdown), generated from the engine
          --effects   with --table: list every accepted transition with its effects instead
          --call-leg  with --table: the call-leg machine's table instead (the SIP side of a conversation)

        examples:
          parley conformance Examples/conformance/*.json
          parley conformance --table > docs/lifecycle.md
        """

    static func run(_ raw: [String]) throws -> ExitCode {
        var arguments = Arguments(raw)
        let table = arguments.flag("--table")
        let effects = arguments.flag("--effects")
        let callLeg = arguments.flag("--call-leg")
        let quiet = arguments.flag("--quiet", "-q")
        let json = arguments.flag("--json")
        let files = try arguments.positionals()
        if table {
            guard files.isEmpty else { throw UsageError("--table takes no files") }
            guard !(effects && callLeg) else { throw UsageError("--effects and --call-leg are two different tables") }
            let text = callLeg ? CallLegTable.markdown() : effects ? TransitionTable.effectsListing() : TransitionTable.markdown()
            print(text, terminator: "")
            return .ok
        }
        if json && table { throw UsageError("--json goes with scenario files, not --table") }
        if effects || callLeg { throw UsageError("\(effects ? "--effects" : "--call-leg") only goes with --table") }
        guard !files.isEmpty else { throw UsageError("name at least one scenario file") }

        var passed = 0, failed = 0
        var results: [ScenarioResult] = []
        let runner = ScenarioRunner()
        for file in files {
            let scenario: Scenario
            do {
                scenario = try Scenario.load(contentsOf: URL(fileURLWithPath: file))
            } catch {
                if !json { print("✗ \(error)") }
                results.append(ScenarioResult(file: file, scenario: nil, passed: false, failures: ["\(error)"]))
                failed += 1
                continue
            }
            let report = runner.run(scenario)
            if report.passed { passed += 1 } else { failed += 1 }
            results.append(ScenarioResult(
                file: file, scenario: report.scenarioName, passed: report.passed,
                failures: report.failedSteps.flatMap { step in step.failures.map { "step \(step.index): \($0)" } }))
            if !json, !quiet || !report.passed { print(report.rendered()) }
        }
        if json {
            print(try jsonLine(ConformanceResult(passed: passed, failed: failed, scenarios: results)))
        } else {
            print("scenarios: \(passed) passed, \(failed) failed")
        }
        return failed == 0 ? .ok : .failure
    }
}

/// `parley conformance --json`: the whole run as one object.
struct ConformanceResult: Encodable {
    let passed: Int
    let failed: Int
    let scenarios: [ScenarioResult]
}

/// One scenario file's outcome.
struct ScenarioResult: Encodable {
    let file: String
    let scenario: String?
    let passed: Bool
    let failures: [String]
}

/// One Encodable value as a line of JSON (keys sorted).
func jsonLine(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}
