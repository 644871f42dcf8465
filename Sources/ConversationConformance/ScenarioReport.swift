import Foundation

/// The outcome of running one ``Scenario``: one ``StepReport`` per step, in order.
public struct ScenarioReport: Sendable {
    /// The scenario's name.
    public let scenarioName: String
    /// One report per step, in order.
    public let steps: [StepReport]

    /// Creates a report.
    public init(scenarioName: String, steps: [StepReport]) {
        self.scenarioName = scenarioName
        self.steps = steps
    }

    /// Whether every step passed.
    public var passed: Bool { steps.allSatisfy(\.passed) }

    /// The steps that failed.
    public var failedSteps: [StepReport] { steps.filter { !$0.passed } }

    /// The report as text, one line per step with failures indented below it:
    ///
    /// ```
    /// scenario: incoming conversation answered
    ///   ✓ 1 reportIncoming A
    ///   ✗ 2 event connected(A)
    ///       state of A: expected joined, got ringing
    ///   result: FAILED (1 of 2 steps)
    /// ```
    public func rendered() -> String {
        var lines = ["scenario: \(scenarioName)"]
        for step in steps {
            lines.append("  \(step.passed ? "✓" : "✗") \(step.index) \(step.summary)")
            for failure in step.failures {
                lines.append(contentsOf: failure.split(separator: "\n", omittingEmptySubsequences: false).map { "      \($0)" })
            }
        }
        let failed = failedSteps.count
        lines.append(
            failed == 0
                ? "  result: passed (\(steps.count) step\(steps.count == 1 ? "" : "s"))"
                : "  result: FAILED (\(failed) of \(steps.count) step\(steps.count == 1 ? "" : "s"))")
        return lines.joined(separator: "\n") + "\n"
    }
}

/// The outcome of one step: what it did and every expectation it missed.
public struct StepReport: Sendable {
    /// The step's position, 1-based (0 only for the manager's creation, when it refused the configuration).
    public let index: Int
    /// What the step did: `perform join(A) as join-A`, `fulfill join-A`, `event connected(A)`.
    public let summary: String
    /// One line per missed expectation, each a small diff: `state of A: expected joined, got ringing`.
    public let failures: [String]

    /// Creates a step report.
    public init(index: Int, summary: String, failures: [String]) {
        self.index = index
        self.summary = summary
        self.failures = failures
    }

    /// Whether the step met all its expectations.
    public var passed: Bool { failures.isEmpty }
}
