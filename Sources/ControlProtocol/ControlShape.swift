import Foundation
import GroupActivities

/// What a member of a protocol object holds: the reference's words for it (``phrase``), and what the drift test
/// checks every encoded value against (``problems(with:at:)``).
///
/// The words follow one small grammar, which a frontend may parse from docs/control-api.md:
///
/// ```
/// type    = base [" or null"] [": " word {", " word} [" or " word]]
/// base    = "a string" | "an integer" | "a number" | "a boolean" | "a timestamp" | "any JSON value"
///         | NOUN                      (an object documented under Shapes: "a handle", "a conversation" …)
///         | "an array of " PLURAL     ("strings", "integers", "handles" …)
///         | "an object of " PLURAL " by name"
/// word    = "`" text "`"              (the only values a string may take)
/// ```
public indirect enum ControlType: Sendable {
    /// A JSON string.
    case string
    /// A JSON string that is one of these words.
    case oneOf([String])
    /// A JSON number without a fraction.
    case integer
    /// Any JSON number.
    case number
    /// `true` or `false`.
    case boolean
    /// An ISO 8601 UTC timestamp with milliseconds (`2026-11-29T17:02:03.123Z`).
    case timestamp
    /// Anything JSON can hold.
    case json
    /// An object documented as its own shape.
    case object(any ControlShape.Type)
    /// An array whose elements are all of one type.
    case array(ControlType)
    /// An object whose members, of any names, are all of one type.
    case dictionary(ControlType)
    /// The type, or `null`.
    case nullable(ControlType)

    /// The reference's words for it.
    public var phrase: String {
        switch self {
        case .nullable(let inner): inner.base(plural: false) + " or null" + inner.wordList
        case .string, .oneOf, .integer, .number, .boolean, .timestamp, .json, .object, .array, .dictionary:
            base(plural: false) + wordList
        }
    }

    /// The words a string may be, after a colon (empty for free strings).
    private var wordList: String {
        switch self {
        case .oneOf(let words): ": " + Self.list(words)
        case .array(let element): element.wordList
        case .nullable(let inner): inner.wordList
        case .string, .integer, .number, .boolean, .timestamp, .json, .object, .dictionary: ""
        }
    }

    private func base(plural: Bool) -> String {
        switch self {
        case .string, .oneOf: plural ? "strings" : "a string"
        case .integer: plural ? "integers" : "an integer"
        case .number: plural ? "numbers" : "a number"
        case .boolean: plural ? "booleans" : "a boolean"
        case .timestamp: plural ? "timestamps" : "a timestamp"
        case .json: plural ? "JSON values" : "any JSON value"
        case .object(let shape): plural ? shape.noun.plural : shape.noun.singular
        case .array(let element): plural ? "arrays of \(element.base(plural: true))" : "an array of \(element.base(plural: true))"
        case .dictionary(let value): plural ? "objects of \(value.base(plural: true)) by name" : "an object of \(value.base(plural: true)) by name"
        case .nullable(let inner): inner.base(plural: plural) + " or null"
        }
    }

    /// `` `a`, `b` or `c` ``.
    static func list(_ words: [String]) -> String {
        let quoted = words.map { "`\($0)`" }
        guard quoted.count > 1 else { return quoted.joined() }
        return quoted.dropLast().joined(separator: ", ") + " or " + quoted[quoted.count - 1]
    }

    /// The shapes this type names, at any depth.
    public var shapes: [any ControlShape.Type] {
        switch self {
        case .object(let shape): [shape]
        case .array(let inner), .dictionary(let inner), .nullable(let inner): inner.shapes
        case .string, .oneOf, .integer, .number, .boolean, .timestamp, .json: []
        }
    }

    /// What is wrong with `value` as this type, at `path`; empty when it conforms.
    public func problems(with value: JSONValue, at path: String) -> [String] {
        switch (self, value) {
        case (.nullable, .null), (.json, _), (.string, .string), (.integer, .integer), (.number, .integer),
            (.number, .number), (.boolean, .bool):
            return []
        case (.nullable(let inner), _):
            return inner.problems(with: value, at: path)
        case (.oneOf(let words), .string(let word)):
            return words.contains(word) ? [] : ["\(path): \(word.debugDescription) is not one of \(words)"]
        case (.timestamp, .string(let text)):
            return ControlTime.isWireTimestamp(text) ? [] : ["\(path): \(text.debugDescription) is not a timestamp with milliseconds"]
        case (.object(let shape), .object(let members)):
            return shape.problems(with: members, at: path)
        case (.array(let element), .array(let items)):
            return items.enumerated().flatMap { element.problems(with: $1, at: "\(path)[\($0)]") }
        case (.dictionary(let member), .object(let members)):
            return members.sorted { $0.key < $1.key }.flatMap { member.problems(with: $1, at: "\(path).\($0)") }
        case (.string, _), (.oneOf, _), (.integer, _), (.number, _), (.boolean, _), (.timestamp, _), (.object, _),
            (.array, _), (.dictionary, _):
            return ["\(path): \(String(decoding: value.encoded, as: UTF8.self)) is not \(base(plural: false))"]
        }
    }
}

/// How the reference names a shape: "a handle" / "handles".
public struct ControlNoun: Sendable {
    /// With its article: `a handle`.
    public let singular: String
    /// Several: `handles`.
    public let plural: String

    /// A noun.
    public init(_ singular: String, plural: String) {
        self.singular = singular
        self.plural = plural
    }

    /// The table's title: `A handle`.
    public var title: String { singular.prefix(1).uppercased() + singular.dropFirst() }
}

/// An object the control API sends, documented member by member: its table in docs/control-api.md is generated from
/// ``fields``, and a test encodes every one of its ``examples`` and fails when a member is missing from the table,
/// documented but not sent, or of another type than the table says.
public protocol ControlShape: Encodable, Sendable {
    /// How the reference names it (only shapes other members refer to need a real one).
    static var noun: ControlNoun { get }
    /// Every member, in the order the reference lists them.
    static var fields: [ControlField] { get }
    /// Values to check the table against: between them, every nullable member once null and once not.
    static var examples: [Self] { get }
    /// Members with no value are left out instead of written as `null` (error details only).
    static var omitsAbsentMembers: Bool { get }
    /// What the reference says before the table, if anything.
    static var note: String? { get }
}

extension ControlShape {
    /// Members are always present.
    public static var omitsAbsentMembers: Bool { false }
    /// Nothing beyond the table.
    public static var note: String? { nil }

    /// What is wrong with `object` as this shape, at `path`; empty when it conforms.
    public static func problems(with object: [String: JSONValue], at path: String) -> [String] {
        var found: [String] = []
        let documented = Dictionary(fields.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for key in object.keys.sorted() where documented[key] == nil {
            found.append("\(path).\(key) is sent but not documented")
        }
        for field in fields {
            guard let type = field.valueType else {
                found.append("\(path).\(field.name) has no typed description")
                continue
            }
            guard let value = object[field.name] else {
                if !omitsAbsentMembers { found.append("\(path).\(field.name) is documented but not sent") }
                continue
            }
            found += type.problems(with: value, at: "\(path).\(field.name)")
        }
        return found
    }

    /// What is wrong with each example as encoded, or with the table itself (a nullable member never null, or never
    /// set, across the examples).
    public static func driftProblems() -> [String] {
        var found: [String] = []
        var seenNull = Set<String>()
        var seenValue = Set<String>()
        for (index, example) in examples.enumerated() {
            let data = ControlJSON.encode(example)
            guard case .object(let object)? = try? ControlJSON.decoder.decode(JSONValue.self, from: data) else {
                found.append("\(noun.singular) example \(index) is not a JSON object")
                continue
            }
            found += problems(with: object, at: "\(noun.singular)#\(index)")
            for (key, value) in object {
                if case .null = value { seenNull.insert(key) } else { seenValue.insert(key) }
            }
        }
        for field in fields {
            if case .nullable = field.valueType, !seenNull.contains(field.name), !omitsAbsentMembers {
                found.append("\(noun.singular).\(field.name): no example shows it null")
            }
            if !seenValue.contains(field.name) { found.append("\(noun.singular).\(field.name): no example sets it") }
        }
        return found
    }
}

extension ControlField {
    /// A member of a shape: its words come from `type`, which the drift test checks values against.
    public init(_ name: String, _ type: ControlType, optional: Bool = false, _ summary: String) {
        self.init(name, type.phrase, optional: optional, summary)
        valueType = type
    }
}

extension ControlTime {
    /// `2026-11-29T17:02:03.123Z` exactly: UTC, milliseconds.
    public static func isWireTimestamp(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 24, bytes[23] == UInt8(ascii: "Z"), bytes[19] == UInt8(ascii: "."),
            bytes[10] == UInt8(ascii: "T")
        else { return false }
        return date(text) != nil
    }
}
