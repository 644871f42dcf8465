import ConversationKit
import Foundation

/// A conformance scenario: a named list of steps run against a fresh ``ConversationManager`` on a
/// ``ManualClock``, each with what must hold afterwards. Written as JSON:
///
/// ```json
/// {
///   "name": "incoming conversation answered",
///   "configuration": {"maximumConversationGroups": 2},
///   "steps": [
///     {"reportIncoming": {"conversation": "A", "members": [{"kind": "phoneNumber", "value": "+14155550100"}]},
///      "expect": {"states": {"A": "ringing"}}},
///     {"perform": [{"action": "join", "conversation": "A"}], "expect": {"actions": {"join-A": "running"}}}
///   ]
/// }
/// ```
///
/// Parsing is strict: unknown keys, unknown names (states, capabilities, handle kinds, error codes) and
/// references to action ids not defined by an earlier step are ``ScenarioError``s naming the JSON path.
public struct Scenario: Sendable, Decodable {
    /// The scenario's name, shown in reports.
    public var name: String
    /// What the scenario demonstrates, if the file says.
    public var description: String?
    /// The manager's configuration (the file's optional `"configuration"` object; defaults otherwise).
    public var configuration: ConversationManager.Configuration
    /// The steps, in order.
    public var steps: [ScenarioStep]

    /// The keys a scenario object may hold.
    public static let keys = ["name", "description", "configuration", "steps"]

    /// Creates a scenario in code.
    public init(
        name: String, description: String? = nil,
        configuration: ConversationManager.Configuration = ConversationManager.Configuration(),
        steps: [ScenarioStep]
    ) {
        self.name = name
        self.description = description
        self.configuration = configuration
        self.steps = steps
    }

    /// The `userInfo` key under which a `JSONDecoder` may carry the source name used in errors.
    public static var sourceUserInfoKey: CodingUserInfoKey { CodingUserInfoKey(rawValue: "ConversationConformance.source")! }

    /// Decodes a scenario through any `Decoder`; scenario errors are ``ScenarioError``s. ``parse(_:source:)`` does
    /// the same and also turns JSON syntax errors into ``ScenarioError``s naming the source.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        let source = decoder.userInfo[Self.sourceUserInfoKey] as? String ?? "scenario"
        self = try ScenarioParser.scenario(from: Node(value: value, path: .root, source: source))
    }
}

extension Scenario {
    /// Reads and parses a scenario file; errors name the file by `url.relativePath`.
    public static func load(contentsOf url: URL) throws(ScenarioError) -> Scenario {
        let source = url.isFileURL ? url.relativePath : url.absoluteString
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            let reason = (error as NSError).localizedDescription
            throw ScenarioError(source: source, path: "", message: "cannot read the file: \(reason)")
        }
        return try parse(data, source: source)
    }

    /// Parses a scenario from JSON text with Foundation's `JSONDecoder`; `source` names it in errors (usually the
    /// file path). A syntax error names its line and column.
    /// Duplicate keys are not rejected: `JSONDecoder` keeps one of the values.
    public static func parse(_ data: Data, source: String) throws(ScenarioError) -> Scenario {
        let whitespace: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
        guard !data.allSatisfy(whitespace.contains) else {
            throw ScenarioError(source: source, path: "", message: "not valid JSON: the document is empty")
        }
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw invalidJSON(error, data: data, source: source)
        }
        return try ScenarioParser.scenario(from: Node(value: value, path: .root, source: source))
    }

    /// `not valid JSON: Invalid value at line 3, column 14`, from JSONSerialization's account of the syntax
    /// error, or whatever the decoder said when that has none.
    private static func invalidJSON(_ error: any Error, data: Data, source: String) -> ScenarioError {
        if let problem = JSONSyntax.problem(in: data) {
            return ScenarioError(source: source, path: "", message: "not valid JSON: \(problem)")
        }
        guard case .dataCorrupted(let context) = error as? DecodingError else {
            return ScenarioError(source: source, path: "", message: "not valid JSON: \(error)")
        }
        var message = "not valid JSON: \(context.debugDescription)"
        if let underlying = context.underlyingError { message += " (\(underlying))" }
        return ScenarioError(source: source, path: "", message: message)
    }
}
