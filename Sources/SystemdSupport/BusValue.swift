/// A D-Bus value, as a service's methods take and give them and its properties hold them: the basic types Parley's
/// interfaces use, arrays and structures. Signatures follow the D-Bus specification (`s`, `o`, `b`, `u`, `as`,
/// `a(ssx)`…).
public enum BusValue: Sendable, Hashable, CustomStringConvertible {
    /// `s`
    case string(String)
    /// `y`
    case byte(UInt8)
    /// `o`: an object path such as `/org/parley/Parley/Call/1`.
    case objectPath(String)
    /// `b`
    case bool(Bool)
    /// `u`
    case uint32(UInt32)
    /// `i`
    case int32(Int32)
    /// `x`
    case int64(Int64)
    /// `t`
    case uint64(UInt64)
    /// `d`
    case double(Double)
    /// `h`: a file descriptor passed over the bus. One read from a message is a duplicate its reader owns (and
    /// closes); one appended is duplicated by sd-bus and stays the caller's.
    case unixFD(Int32)
    /// `a…`: the elements' signature (so an empty array still has a type), then the elements.
    indirect case array(elementSignature: String, [BusValue])
    /// `(…)`: the fields in order.
    indirect case structure([BusValue])
    /// `v`: a value that carries its own signature (the values of an `a{sv}` dictionary).
    indirect case variant(BusValue)
    /// `{…}`: one entry of a dictionary (an array of them): a basic key and its value.
    indirect case dictEntry(BusValue, BusValue)

    /// The value's D-Bus signature.
    public var signature: String {
        switch self {
        case .string: "s"
        case .byte: "y"
        case .objectPath: "o"
        case .bool: "b"
        case .uint32: "u"
        case .int32: "i"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .unixFD: "h"
        case .array(let element, _): "a" + element
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        case .dictEntry(let key, let value): "{" + key.signature + value.signature + "}"
        }
    }

    /// A string-keyed dictionary of variants (`a{sv}`), its entries sorted by key: what hints and options are.
    public static func variants(_ entries: [String: BusValue]) -> BusValue {
        .array(elementSignature: "{sv}", entries.sorted { $0.key < $1.key }.map { .dictEntry(.string($0.key), .variant($0.value)) })
    }

    /// An array of strings (`as`).
    public static func strings(_ values: [String]) -> BusValue { .array(elementSignature: "s", values.map(BusValue.string)) }

    /// The text of a `s` or `o` value, else nil.
    public var text: String? {
        switch self {
        case .string(let value), .objectPath(let value): value
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .string(let value): value.debugDescription
        case .byte(let value): "\(value)"
        case .objectPath(let value): value
        case .bool(let value): "\(value)"
        case .uint32(let value): "\(value)"
        case .int32(let value): "\(value)"
        case .int64(let value): "\(value)"
        case .uint64(let value): "\(value)"
        case .double(let value): "\(value)"
        case .unixFD(let value): "fd \(value)"
        case .array(_, let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .structure(let fields): "(" + fields.map(\.description).joined(separator: ", ") + ")"
        case .variant(let value): "<" + value.description + ">"
        case .dictEntry(let key, let value): key.description + ": " + value.description
        }
    }
}

/// A D-Bus error: its name (`org.freedesktop.DBus.Error.UnknownObject`, `org.parley.Parley.Error.InvalidURI`…) and
/// a message for people.
public struct BusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error's D-Bus name.
    public let name: String
    /// What went wrong, for people.
    public let message: String

    /// An error named `name`, saying `message`.
    public init(_ name: String, _ message: String) {
        self.name = name
        self.message = message
    }

    /// `org.freedesktop.DBus.Error.UnknownObject`: the object is not there (a call that ended).
    public static func unknownObject(_ message: String) -> BusError {
        BusError("org.freedesktop.DBus.Error.UnknownObject", message)
    }

    /// `org.freedesktop.DBus.Error.InvalidArgs`.
    public static func invalidArguments(_ message: String) -> BusError {
        BusError("org.freedesktop.DBus.Error.InvalidArgs", message)
    }

    /// `org.freedesktop.DBus.Error.Failed`.
    public static func failed(_ message: String) -> BusError { BusError("org.freedesktop.DBus.Error.Failed", message) }

    public var description: String { "\(name): \(message)" }
}
