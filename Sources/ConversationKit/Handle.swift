import Foundation

/// A way to reach a person: a phone number, an email address or a generic value such as a SIP URI.
///
/// Equality and hashing are field-wise (kind, value, display name), as for any value. To ask whether two
/// handles reach the same person use ``HandleNormalizer`` (via ``Handle/matches(_:using:)``), which compares
/// normalised values and ignores the display name.
public struct Handle: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The kind of identifier a handle carries; raw values match CallKit's `CXHandle.HandleType`.
    public enum Kind: Int, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
        /// Any other identifier (a SIP URI, a user name); matched exactly.
        case generic = 1
        /// A telephone number; matched by its E.164-style normalised digits.
        case phoneNumber = 2
        /// An email address; matched case-insensitively after trimming.
        case emailAddress = 3

        /// The name used in JSON and on the command line.
        public var description: String {
            switch self {
            case .generic: "generic"
            case .phoneNumber: "phoneNumber"
            case .emailAddress: "emailAddress"
            }
        }

        /// Parses a kind from its name (`generic`, `phoneNumber`/`phone`, `emailAddress`/`email`).
        public init?(name: String) {
            switch name.lowercased() {
            case "generic": self = .generic
            case "phonenumber", "phone", "tel": self = .phoneNumber
            case "emailaddress", "email": self = .emailAddress
            default: return nil
            }
        }
    }

    /// What kind of identifier `value` is.
    public var kind: Kind
    /// The raw identifier as given (what redial uses).
    public var value: String
    /// The name to show when no contact matches; `value` when none was given.
    public var displayName: String

    /// Creates a handle; a nil `displayName` shows `value`.
    public init(kind: Kind, value: String, displayName: String? = nil) {
        self.kind = kind
        self.value = value
        self.displayName = displayName ?? value
    }

    /// `kind:value` (and the display name when it differs), for logs.
    public var description: String {
        displayName == value ? "\(kind):\(value)" : "\(kind):\(value) (\(displayName))"
    }

    /// Whether two handles reach the same person under `normalizer`'s rules; display names never count.
    public func matches(_ other: Handle, using normalizer: HandleNormalizer) -> Bool {
        guard let mine = normalizer.normalize(self), let theirs = normalizer.normalize(other) else {
            return false
        }
        return mine == theirs
    }

    private enum CodingKeys: String, CodingKey { case kind, value, displayName }

    /// Decodes `{"kind": "phoneNumber", "value": "...", "displayName": "..."}`; kind may be a name or CallKit's raw value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let kind: Kind
        if let name = try? container.decode(String.self, forKey: .kind) {
            guard let parsed = Kind(name: name) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .kind, in: container,
                    debugDescription: "unknown handle kind '\(name)' (expected generic, phoneNumber or emailAddress)")
            }
            kind = parsed
        } else {
            let raw = try container.decode(Int.self, forKey: .kind)
            guard let parsed = Kind(rawValue: raw) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .kind, in: container, debugDescription: "unknown handle kind \(raw) (expected 1, 2 or 3)")
            }
            kind = parsed
        }
        self.init(
            kind: kind,
            value: try container.decode(String.self, forKey: .value),
            displayName: try container.decodeIfPresent(String.self, forKey: .displayName))
    }

    /// Encodes the kind by name.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind.description, forKey: .kind)
        try container.encode(value, forKey: .value)
        try container.encode(displayName, forKey: .displayName)
    }
}
