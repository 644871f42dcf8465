import Foundation

/// A JSON document as the scenario parser sees it, decoded by Foundation's `JSONDecoder`. Object members come
/// back sorted by key, so whatever is reported first (an unknown key, say) does not depend on hashing.
enum JSONValue: Sendable, Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    /// Decodes any JSON value. `Bool` is tried before numbers so `true` never becomes 1. Only a type mismatch
    /// moves on to the next kind: a value the decoder finds malformed (a bad number or escape, which
    /// `JSONDecoder` only notices when the value is read) is rethrown, not reported as the wrong type.
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
            return
        }
        if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
            return
        }
        do {
            self = .number(try container.decode(Double.self))
            return
        } catch DecodingError.typeMismatch {}
        do {
            self = .string(try container.decode(String.self))
            return
        } catch DecodingError.typeMismatch {}
        if var elements = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !elements.isAtEnd { items.append(try elements.decode(JSONValue.self)) }
            self = .array(items)
            return
        }
        let members = try decoder.container(keyedBy: AnyCodingKey.self)
        var object: [(key: String, value: JSONValue)] = []
        for key in members.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
            object.append((key: key.stringValue, value: try members.decode(JSONValue.self, forKey: key)))
        }
        self = .object(object)
    }

    /// "a string", "an object"…: what the value is, for error messages.
    var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Where a value sits in the document: `steps[3].perform[0].action`. Indices are 0-based, as in JSONPath.
struct JSONPath: Sendable, CustomStringConvertible {
    enum Component: Sendable {
        case key(String)
        case index(Int)
    }

    private(set) var components: [Component] = []

    static let root = JSONPath()

    /// The path of a member of the object at this path.
    func appending(_ key: String) -> JSONPath {
        var copy = self
        copy.components.append(.key(key))
        return copy
    }

    /// The path of an element of the array at this path.
    func appending(_ index: Int) -> JSONPath {
        var copy = self
        copy.components.append(.index(index))
        return copy
    }

    /// Dotted keys, bracketed indices; keys that are not plain identifiers are quoted: `expect.states["my call"]`.
    var description: String {
        var text = ""
        for component in components {
            switch component {
            case .index(let index):
                text += "[\(index)]"
            case .key(let key):
                let plain = !key.isEmpty && key.unicodeScalars.allSatisfy {
                    CharacterSet.alphanumerics.contains($0) || $0 == "_" || $0 == "-"
                }
                if plain {
                    text += text.isEmpty ? key : "." + key
                } else {
                    let escaped = key.replacingOccurrences(of: "\\", with: "\\\\")
                        .replacingOccurrences(of: "\"", with: "\\\"")
                    text += "[\"\(escaped)\"]"
                }
            }
        }
        return text
    }
}

/// A coding key for any object member: the scenario format checks keys itself, so the decoder accepts them all.
struct AnyCodingKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
