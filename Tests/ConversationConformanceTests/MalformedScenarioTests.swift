import ConversationConformance
import Foundation
import Testing

/// A malformed scenario and the error it must produce.
struct MalformedCase: Sendable, CustomTestStringConvertible {
    let label: String
    let json: String
    /// The JSON path the error must name ("" for the whole document).
    let path: String
    /// Text the message must contain.
    let problem: String

    var testDescription: String { label }
}

/// `{"name": "x", "steps": [STEPS]}`.
private func steps(_ steps: String) -> String { #"{"name": "x", "steps": ["# + steps + "]}" }

private let incoming = #"{"reportIncoming": {"conversation": "A"}}"#

let malformedCases: [MalformedCase] = [
    // Syntax errors name the line and column (from JSONSerialization's character offset).
    MalformedCase(
        label: "not JSON", json: "{\"name\": \"x\",\n \"steps\": [}", path: "",
        problem: "not valid JSON: Invalid value at line 2, column 12"),
    MalformedCase(label: "missing value", json: #"{"a": }"#, path: "", problem: "not valid JSON: Invalid value at line 1, column 7"),
    MalformedCase(label: "truncated file", json: #"{"name": "x", "steps": [{"invalidate": tr"#, path: "", problem: "not valid JSON"),
    MalformedCase(label: "text after the document", json: #"{"name": "x"} x"#, path: "", problem: "not valid JSON"),
    MalformedCase(label: "empty file", json: "", path: "", problem: "not valid JSON: the document is empty"),
    MalformedCase(label: "whitespace only", json: " \n\t", path: "", problem: "not valid JSON: the document is empty"),
    // Malformed numbers and string escapes are syntax errors too, with their position.
    MalformedCase(
        label: "malformed number", json: steps(#"{"advanceClock": 01}"#), path: "",
        problem: "not valid JSON: Number with leading zero at line 1, column"),
    MalformedCase(
        label: "invalid escape", json: steps(#"{"fulfill": "a\qb"}"#), path: "",
        problem: "not valid JSON: Invalid escape sequence at line 1, column"),
    MalformedCase(
        label: "true is not a number", json: steps(#"{"advanceClock": true}"#), path: "steps[0].advanceClock",
        problem: "expected a number, got a boolean"),
    MalformedCase(
        label: "1 is not true", json: steps(#"{"invalidate": 1}"#), path: "steps[0].invalidate",
        problem: "expected true or false, got a number"),
    MalformedCase(label: "top level is an array", json: "[]", path: "", problem: "expected a scenario (a JSON object), got an array"),
    MalformedCase(label: "missing name", json: #"{"steps": [{"invalidate": true}]}"#, path: "", problem: "missing key 'name'"),
    MalformedCase(label: "missing steps", json: #"{"name": "x"}"#, path: "", problem: "missing key 'steps'"),
    MalformedCase(label: "no steps", json: #"{"name": "x", "steps": []}"#, path: "steps", problem: "at least one step"),
    MalformedCase(
        label: "unknown top-level key", json: #"{"name": "x", "step": []}"#, path: "",
        problem: "unknown key 'step' in a scenario (expected one of: name, description, configuration, steps); did you mean 'steps'?"),
    MalformedCase(
        label: "unknown step", json: steps(incoming + #", {"fulfil": "join-A"}"#), path: "steps[1]",
        problem:
            "unknown step 'fulfil' (expected one of: reportIncoming, perform, fulfill, fail, event, advanceClock, invalidate)"),
    MalformedCase(
        label: "two operations in one step", json: steps(#"{"perform": [], "invalidate": true}"#), path: "steps[0]",
        problem: "a step holds exactly one operation, found 2: perform, invalidate"),
    MalformedCase(
        label: "no operation", json: steps(#"{"expect": {}}"#), path: "steps[0]", problem: "the step has no operation"),
    MalformedCase(
        label: "unknown expect key", json: steps(#"{"invalidate": true, "expect": {"stats": {}}}"#), path: "steps[0].expect",
        problem: "unknown key 'stats' in expect (expected one of: error, states,"),
    MalformedCase(
        label: "unknown key next to an operation", json: steps(#"{"invalidate": true, "expct": {}}"#), path: "steps[0]",
        problem: "unknown key 'expct' in a invalidate step (expected one of: invalidate, expect, comment); did you mean 'expect'?"),
    MalformedCase(
        label: "unknown action", json: steps(incoming + #", {"perform": [{"action": "jion", "conversation": "A"}]}"#),
        path: "steps[1].perform[0].action", problem: "unknown action 'jion' (expected one of: start, join, end,"),
    MalformedCase(
        label: "key of another action", json: steps(#"{"perform": [{"action": "pause", "conversation": "A", "isMuted": true}]}"#),
        path: "steps[0].perform[0]", problem: "unknown key 'isMuted' in a pause action"),
    MalformedCase(
        label: "missing conversation", json: steps(#"{"perform": [{"action": "join"}]}"#), path: "steps[0].perform[0]",
        problem: "missing key 'conversation'"),
    MalformedCase(
        label: "unknown state name", json: steps(incoming.dropLast() + #", "expect": {"states": {"A": "rining"}}}"#),
        path: "steps[0].expect.states.A",
        problem: "unknown state 'rining' (expected one of: idle, ringing, joining, joined, paused, leaving, left, none)"),
    MalformedCase(
        label: "bad capability name",
        json: steps(#"{"reportIncoming": {"conversation": "A", "capabilities": ["pausing", "pause"]}}"#),
        path: "steps[0].reportIncoming.capabilities[1]", problem: "unknown capability 'pause'"),
    MalformedCase(
        label: "bad handle kind",
        json: steps(#"{"reportIncoming": {"conversation": "A", "members": [{"kind": "sip", "value": "x"}]}}"#),
        path: "steps[0].reportIncoming.members[0].kind", problem: "unknown handle kind 'sip'"),
    MalformedCase(
        label: "negative advanceClock", json: steps(#"{"advanceClock": -5}"#), path: "steps[0].advanceClock",
        problem: "the clock only moves forward: expected 0 or more seconds, got -5"),
    MalformedCase(
        label: "advanceClock is not a number", json: steps(#"{"advanceClock": "5"}"#), path: "steps[0].advanceClock",
        problem: "expected a number, got a string"),
    MalformedCase(
        label: "undefined action id", json: steps(incoming + #", {"fulfill": "join-A"}"#), path: "steps[1].fulfill",
        problem: "no action with id 'join-A' is defined before this point"),
    MalformedCase(
        label: "undefined action id in expect",
        json: steps(#"{"perform": [{"action": "join", "conversation": "A"}], "expect": {"error": "unknownConversation", "actions": {"join-B": "idle"}}}"#),
        path: "steps[0].expect.actions.join-B", problem: "no action with id 'join-B' is defined before this point (defined: join-A); did you mean 'join-A'?"),
    MalformedCase(
        label: "undefined sameUUIDAs", json: steps(#"{"perform": [{"action": "join", "conversation": "A", "sameUUIDAs": "x"}]}"#),
        path: "steps[0].perform[0].sameUUIDAs", problem: "no action with id 'x'"),
    MalformedCase(
        label: "duplicate action id",
        json: steps(incoming + #", {"perform": [{"action": "join", "conversation": "A"}]}, {"perform": [{"action": "join", "conversation": "A"}]}"#),
        path: "steps[2].perform[0]", problem: "the default action id 'join-A' is already used by steps[1].perform[0]"),
    MalformedCase(
        label: "error expected from a step that cannot throw",
        json: steps(#"{"advanceClock": 1, "expect": {"error": "illegalTransition"}}"#), path: "steps[0].expect.error",
        problem: "a advanceClock step never throws"),
    MalformedCase(
        label: "unknown error code", json: steps(incoming.dropLast() + #", "expect": {"error": "illegalTransitions"}}"#),
        path: "steps[0].expect.error", problem: "unknown error code 'illegalTransitions'"),
    MalformedCase(
        label: "unknown callback", json: steps(incoming.dropLast() + #", "expect": {"callbacks": ["chanegd A ringing"]}}"#),
        path: "steps[0].expect.callbacks[0]", problem: "unknown callback 'chanegd A ringing'"),
    MalformedCase(
        label: "unknown action state",
        json: steps(#"{"perform": [{"action": "end", "conversation": "A"}], "expect": {"error": "unknownConversation", "actions": {"end-A": "done"}}}"#),
        path: "steps[0].expect.actions.end-A", problem: "unknown action state 'done'"),
    MalformedCase(
        label: "unknown configuration key", json: #"{"name": "x", "configuration": {"maxGroups": 1}, "steps": [{"invalidate": true}]}"#,
        path: "configuration", problem: "unknown key 'maxGroups' in the configuration"),
    MalformedCase(
        label: "configuration the manager refuses",
        json: #"{"name": "x", "configuration": {"defaultActionTimeout": 0}, "steps": [{"invalidate": true}]}"#,
        path: "configuration", problem: "defaultActionTimeout must be a positive number of seconds"),
    MalformedCase(
        label: "unknown event type", json: steps(#"{"event": {"conversation": "A", "type": "answered"}}"#),
        path: "steps[0].event.type", problem: "unknown event type 'answered'"),
    MalformedCase(
        label: "ended without a reason", json: steps(#"{"event": {"conversation": "A", "type": "ended"}}"#),
        path: "steps[0].event", problem: "an ended event needs a 'reason'"),
    MalformedCase(
        label: "reason on a fulfill step", json: steps(incoming + #", {"perform": [{"action": "join", "conversation": "A"}]}, {"fulfill": "join-A", "reason": "x"}"#),
        path: "steps[2]", problem: "'reason' belongs to a fail step"),
    MalformedCase(
        label: "invalidate false", json: steps(#"{"invalidate": false}"#), path: "steps[0].invalidate",
        problem: "'invalidate' takes true"),
    MalformedCase(
        label: "two unknown keys: the first in key order is reported", json: #"{"name": "x", "zz": 1, "aa": 2, "steps": []}"#,
        path: "", problem: "unknown key 'aa' in a scenario"),
]

@Suite("Malformed scenarios")
struct MalformedScenarioTests {
    @Test("each malformed scenario names the JSON path and the problem", arguments: malformedCases)
    func malformed(_ example: MalformedCase) {
        do {
            let scenario = try Scenario.parse(Data(example.json.utf8), source: "bad.json")
            Issue.record("parsed without error: \(scenario.name)")
        } catch {
            #expect(error.source == "bad.json")
            #expect(error.path == example.path, "\(error)")
            #expect(error.message.contains(example.problem), "\(error)")
            let prefix = example.path.isEmpty ? "bad.json: " : "bad.json: \(example.path): "
            #expect(error.description.hasPrefix(prefix), "\(error)")
            #expect(error.description.contains(example.problem))
        }
    }

    @Test("duplicate keys are not rejected: JSONDecoder keeps one of the values")
    func duplicateKeys() throws {
        let json = #"{"name": "x", "name": "x", "steps": [{"invalidate": true}]}"#
        #expect(try Scenario.parse(Data(json.utf8), source: "dup.json").name == "x")
    }

    @Test("an unreadable file is an error naming the file")
    func missingFile() {
        let url = URL(fileURLWithPath: "/nonexistent/parley/missing.json")
        #expect {
            _ = try Scenario.load(contentsOf: url)
        } throws: { error in
            let error = error as? ScenarioError
            return error?.source == "/nonexistent/parley/missing.json" && error?.message.contains("cannot read") == true
        }
    }

    @Test("the Decodable route reports scenario errors too")
    func decodableErrors() {
        let decoder = JSONDecoder()
        decoder.userInfo[Scenario.sourceUserInfoKey] = "decoded.json"
        #expect {
            _ = try decoder.decode(Scenario.self, from: Data(steps(#"{"fulfil": "x"}"#).utf8))
        } throws: { error in
            (error as? ScenarioError)?.description.hasPrefix("decoded.json: steps[0]: unknown step 'fulfil'") == true
        }
    }
}
