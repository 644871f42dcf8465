import Foundation

/// Why a scenario file cannot be used: which file, where in it (a JSON path such as
/// `steps[3].perform[0].action`, indices 0-based) and what is wrong.
///
/// ```
/// hold.json: steps[3]: unknown step 'fulfil' (expected one of: reportIncoming, perform, fulfill, fail, event, advanceClock, invalidate); did you mean 'fulfill'?
/// ```
public struct ScenarioError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file (or other source name) the scenario came from.
    public let source: String
    /// The JSON path of the offending value; empty when the problem concerns the whole document.
    public let path: String
    /// What is wrong, in words.
    public let message: String

    /// Creates an error for `source` at `path`.
    public init(source: String, path: String, message: String) {
        self.source = source
        self.path = path
        self.message = message
    }

    /// `FILE: PATH: MESSAGE` (or `FILE: MESSAGE` for the whole document).
    public var description: String {
        path.isEmpty ? "\(source): \(message)" : "\(source): \(path): \(message)"
    }
}

/// A value of the document with its location, and typed accessors that fail with a ``ScenarioError``.
struct Node {
    let value: JSONValue
    let path: JSONPath
    let source: String

    func error(_ message: String) -> ScenarioError {
        ScenarioError(source: source, path: path.description, message: message)
    }

    private func mismatch(_ expected: String) -> ScenarioError {
        error("expected \(expected), got \(value.kindDescription)")
    }

    func string() throws(ScenarioError) -> String {
        guard case .string(let text) = value else { throw mismatch("a string") }
        return text
    }

    /// A string that is not empty.
    func name(_ what: String = "a name") throws(ScenarioError) -> String {
        let text = try string()
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else { throw error("\(what) must not be empty") }
        return text
    }

    func bool() throws(ScenarioError) -> Bool {
        guard case .bool(let flag) = value else { throw mismatch("true or false") }
        return flag
    }

    func number() throws(ScenarioError) -> Double {
        guard case .number(let number) = value, number.isFinite else { throw mismatch("a number") }
        return number
    }

    func integer() throws(ScenarioError) -> Int {
        let number = try number()
        guard number == number.rounded(), abs(number) < 1e15 else { throw error("expected a whole number, got \(number)") }
        return Int(number)
    }

    func nonNegativeInteger() throws(ScenarioError) -> Int {
        let number = try integer()
        guard number >= 0 else { throw error("expected 0 or more, got \(number)") }
        return number
    }

    func elements() throws(ScenarioError) -> [Node] {
        guard case .array(let items) = value else { throw mismatch("an array") }
        return items.enumerated().map { Node(value: $0.element, path: path.appending($0.offset), source: source) }
    }

    /// The object's members; a key outside `allowed` is an error that names it and lists what `what` accepts.
    func object(_ what: String, allowed: [String]) throws(ScenarioError) -> ObjectNode {
        let object = try anyObject(what)
        for key in object.keys where !allowed.contains(key) {
            throw error(unknownMessage("key '\(key)' in \(what)", key: key, expected: allowed))
        }
        return object
    }

    /// The object's members, whatever their keys (maps such as `expect.states`).
    func anyObject(_ what: String) throws(ScenarioError) -> ObjectNode {
        guard case .object(let members) = value else { throw mismatch("\(what) (a JSON object)") }
        return ObjectNode(members: members, path: path, source: source)
    }
}

/// The members of a JSON object, sorted by key.
struct ObjectNode {
    let members: [(key: String, value: JSONValue)]
    let path: JSONPath
    let source: String

    var keys: [String] { members.map(\.key) }

    func error(_ message: String) -> ScenarioError {
        ScenarioError(source: source, path: path.description, message: message)
    }

    /// The member under `key`, if present (`null` counts as absent).
    func optional(_ key: String) -> Node? {
        guard let member = members.first(where: { $0.key == key }) else { return nil }
        if case .null = member.value { return nil }
        return Node(value: member.value, path: path.appending(key), source: source)
    }

    /// The member under `key`; missing is an error.
    func required(_ key: String) throws(ScenarioError) -> Node {
        guard let node = optional(key) else { throw error("missing key '\(key)'") }
        return node
    }

    /// Every member as a node, sorted by key.
    var nodes: [(key: String, node: Node)] {
        members.map { (key: $0.key, node: Node(value: $0.value, path: path.appending($0.key), source: source)) }
    }
}

/// `unknown X (expected one of: …); did you mean 'Y'?`.
func unknownMessage(_ what: String, key: String, expected: [String]) -> String {
    var message = "unknown \(what) (expected one of: \(expected.joined(separator: ", ")))"
    if let suggestion = closestMatch(to: key, in: expected) { message += "; did you mean '\(suggestion)'?" }
    return message
}

/// The candidate within a small edit distance of `word` (case-insensitive), if exactly one is closest.
func closestMatch(to word: String, in candidates: [String]) -> String? {
    let scored = candidates.map { (candidate: $0, distance: editDistance(word.lowercased(), $0.lowercased())) }
    guard let best = scored.min(by: { $0.distance < $1.distance }),
        best.distance <= max(1, min(3, word.count / 3)),
        scored.filter({ $0.distance == best.distance }).count == 1
    else { return nil }
    return best.candidate
}

private func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    guard !a.isEmpty else { return b.count }
    guard !b.isEmpty else { return a.count }
    var previous = Array(0...b.count)
    for i in 1...a.count {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
        }
        previous = current
    }
    return previous[b.count]
}
