import ConversationConformance
import ConversationKit
import Foundation
import Testing

/// The scenario files shipped in Examples/conformance, found relative to this source file.
enum ExampleFiles {
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // ConversationConformanceTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("Examples")
        .appendingPathComponent("conformance")

    static let names: [String] =
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
        .filter { $0.hasSuffix(".json") }
        .sorted()
}

@Suite("Example scenarios")
struct ExampleScenarioTests {
    @Test("the examples folder holds the documented scenarios")
    func requiredExamplesExist() {
        let required = [
            "incoming-answered", "incoming-declined", "incoming-missed", "outgoing-answered", "outgoing-unanswered",
            "outgoing-failed", "start-timeout", "hold-resume", "remote-end", "local-end", "merge-of-three", "unmerge",
            "transfer", "invalidate", "illegal-transitions", "fulfill-once",
        ]
        let present = Set(ExampleFiles.names.map { String($0.dropLast(".json".count)) })
        for name in required {
            #expect(present.contains(name), "missing Examples/conformance/\(name).json")
        }
    }

    @Test("every example scenario passes", arguments: ExampleFiles.names)
    func examplePasses(_ file: String) throws {
        let scenario = try Scenario.load(contentsOf: ExampleFiles.folder.appendingPathComponent(file))
        let report = ScenarioRunner().run(scenario)
        let passed = report.passed
        #expect(passed, "\(file):\n\(report.rendered())")
        #expect(report.steps.count == scenario.steps.count)
        #expect(report.steps.map(\.index) == Array(1...scenario.steps.count))
    }

    @Test("every example also decodes through JSONDecoder", arguments: ExampleFiles.names)
    func exampleDecodes(_ file: String) throws {
        let data = try Data(contentsOf: ExampleFiles.folder.appendingPathComponent(file))
        let decoder = JSONDecoder()
        decoder.userInfo[Scenario.sourceUserInfoKey] = file
        let scenario = try decoder.decode(Scenario.self, from: data)
        let report = ScenarioRunner().run(scenario)
        let passed = report.passed
        #expect(passed, "\(report.rendered())")
    }
}
