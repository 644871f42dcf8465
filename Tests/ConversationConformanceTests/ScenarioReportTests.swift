import ConversationConformance
import ConversationKit
import Foundation
import Testing

/// Parses `json` (a test fixture that must be valid) and runs it.
func run(_ json: String) throws -> ScenarioReport {
    ScenarioRunner().run(try Scenario.parse(Data(json.utf8), source: "test.json"))
}

@Suite("Reports")
struct ScenarioReportTests {
    @Test("a passing scenario renders one line per step and the result")
    func passingRendering() throws {
        let report = try run(
            """
            {"name": "ring", "steps": [
              {"reportIncoming": {"conversation": "A"}, "expect": {"states": {"A": "ringing"}, "callbacks": ["changed A ringing"]}},
              {"perform": [{"action": "join", "conversation": "A"}], "expect": {"actions": {"join-A": "running"}}},
              {"fulfill": "join-A", "expect": {"states": {"A": "joined"}}}
            ]}
            """)
        #expect(report.passed)
        #expect(report.scenarioName == "ring")
        #expect(report.steps.map(\.summary) == ["reportIncoming A", "perform join(A) as join-A", "fulfill join-A"])
        #expect(
            report.rendered() == """
                scenario: ring
                  ✓ 1 reportIncoming A
                  ✓ 2 perform join(A) as join-A
                  ✓ 3 fulfill join-A
                  result: passed (3 steps)

                """)
    }

    @Test("a wrong state expectation fails with the exact diff line")
    func wrongState() throws {
        let report = try run(
            """
            {"name": "wrong", "steps": [
              {"reportIncoming": {"conversation": "A"}},
              {"event": {"conversation": "A", "type": "startedConnecting"}, "expect": {"states": {"A": "joined"}}}
            ]}
            """)
        #expect(!report.passed)
        #expect(report.steps[0].passed)
        #expect(report.steps[1].failures == ["state of A: expected joined, got joining"])
        let rendered = report.rendered()
        #expect(rendered.contains("  ✗ 2 event startedConnecting(A)\n      state of A: expected joined, got joining\n"))
        #expect(rendered.hasSuffix("  result: FAILED (1 of 2 steps)\n"))
    }

    @Test("an unexpected error, a missing error and a wrong error are each reported")
    func errorExpectations() throws {
        let report = try run(
            """
            {"name": "errors", "steps": [
              {"reportIncoming": {"conversation": "A"}},
              {"perform": [{"action": "pause", "conversation": "A", "isPaused": true}]},
              {"perform": [{"action": "join", "conversation": "A"}], "expect": {"error": "illegalTransition"}},
              {"event": {"conversation": "B", "type": "connected"}, "expect": {"error": "conversationEnded"}}
            ]}
            """)
        #expect(report.failedSteps.map(\.index) == [2, 3, 4])
        let unexpected = try #require(report.steps[1].failures.first)
        #expect(unexpected.hasPrefix("step threw illegalTransition: illegal transition: perform(pause) is not allowed in ringing"))
        #expect(unexpected.hasSuffix(", expected no error"))
        #expect(report.steps[2].failures == ["step succeeded, expected error illegalTransition"])
        let wrong = try #require(report.steps[3].failures.first)
        #expect(wrong.hasPrefix("step threw unknownConversation: "))
        #expect(wrong.hasSuffix(", expected error conversationEnded"))
    }

    @Test("callbacks, actions, counts, groups, mute and ended reasons produce diffs")
    func otherDiffs() throws {
        let report = try run(
            """
            {"name": "diffs", "steps": [
              {"reportIncoming": {"conversation": "A"}, "expect": {"callbacks": ["changed A ringing", "activate A"]}},
              {"perform": [{"action": "join", "conversation": "A"}],
               "expect": {"actions": {"join-A": "complete"}, "pendingActions": 0, "conversations": 2}},
              {"fail": "join-A", "reason": "busy here",
               "expect": {"actions": {"join-A": "failed:busy"}, "endedReasons": {"A": "declined"}, "muted": {"A": true},
                          "groups": [["A", "B"]]}},
              {"fulfill": "join-A"}
            ]}
            """)
        #expect(report.steps[0].failures == ["callbacks: expected [changed A ringing, activate A], got [changed A ringing]"])
        #expect(
            report.steps[1].failures == [
                "action join-A: expected complete, got running", "conversations: expected 2, got 1",
                "pendingActions: expected 0, got 1",
            ])
        #expect(
            report.steps[2].failures == [
                "ended reason of A: expected declined, got failed", "action join-A: expected failed:busy, got failed:busy here",
                "muted of A: expected true, got false", "groups: expected [[A, B]], got []",
            ])
        #expect(report.steps[3].failures == ["fulfill join-A did not count (the action is failed:busy here), expected it to count"])
    }

    @Test("a failing step does not stop the run")
    func keepsGoing() throws {
        let report = try run(
            """
            {"name": "keeps going", "steps": [
              {"reportIncoming": {"conversation": "A"}, "expect": {"states": {"A": "joined"}}},
              {"event": {"conversation": "A", "type": "connected"}, "expect": {"states": {"A": "joined"}}}
            ]}
            """)
        #expect(report.failedSteps.map(\.index) == [1])
    }

    @Test("a name that is a uuid string is used as the conversation's uuid")
    func uuidNames() throws {
        let report = try run(
            """
            {"name": "uuid", "steps": [
              {"reportIncoming": {"conversation": "6F9619FF-8B86-D011-B42D-00C04FC964FF"},
               "expect": {"callbacks": ["changed 6F9619FF-8B86-D011-B42D-00C04FC964FF ringing"]}},
              {"reportIncoming": {"conversation": "A"}, "expect": {"conversations": 2}}
            ]}
            """)
        #expect(report.passed, "\(report.rendered())")
    }

    @Test("a scenario built in code with a configuration the manager refuses reports it as step 0")
    func refusedConfiguration() {
        var configuration = ConversationManager.Configuration()
        configuration.defaultActionTimeout = 0
        let scenario = Scenario(name: "bad", configuration: configuration, steps: [ScenarioStep(operation: .invalidate)])
        let report = ScenarioRunner().run(scenario)
        #expect(!report.passed)
        #expect(report.steps.first?.index == 0)
        #expect(report.rendered().contains("the manager refused the configuration"))
    }
}
