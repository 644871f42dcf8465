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

    /// Decodes a scenario through any `Decoder`; errors are ``ScenarioError``s. Prefer ``parse(_:source:)``,
    /// which also reports JSON syntax errors by line and column and keeps keys in document order.
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

    /// Parses a scenario from JSON text; `source` names it in errors (usually the file path).
    public static func parse(_ data: Data, source: String) throws(ScenarioError) -> Scenario {
        let value: JSONValue
        do {
            value = try JSONParser.parse(data)
        } catch {
            throw ScenarioError(
                source: source, path: "",
                message: "not valid JSON: \(error.message) at line \(error.line), column \(error.column)")
        }
        return try ScenarioParser.scenario(from: Node(value: value, path: .root, source: source))
    }
}
