import Foundation

/// A handle reduced to the canonical form used for matching: same kind and same normalised value means
/// "reaches the same person". Produced by ``HandleNormalizer/normalize(_:)``; never carries a display name.
public struct NormalizedHandle: Sendable, Hashable, CustomStringConvertible {
    /// The kind of the handle this came from; handles of different kinds never match.
    public let kind: Handle.Kind
    /// The canonical value: `+<digits>` (or a `*`/`#` service code) for phone numbers, a lowercased
    /// address for email, the exact value for generic handles.
    public let value: String

    /// Creates a normalised handle from an already canonical value (no checking is done).
    public init(kind: Handle.Kind, value: String) {
        self.kind = kind
        self.value = value
    }

    /// `kind:value`, for logs.
    public var description: String { "\(kind):\(value)" }
}

/// The rules that decide whether two handles reach the same person.
///
/// - Phone numbers become E.164-style `+<country code><national number>`: a leading `tel:` and any
///   `;parameters` are dropped, keypad letters become digits, separators (whitespace `-` `.` `(` `)` `/`)
///   are removed, a leading `+` or `00` marks an international number, otherwise one national trunk prefix
///   is stripped and the default country code is prepended. Numbers containing `*` or `#` are service codes
///   and are kept as they are (no country code). Any other character makes the number unusable.
/// - Email addresses lose a leading `mailto:` and surrounding whitespace and are lowercased; they must
///   contain exactly one `@` with something on both sides.
/// - Generic values are compared exactly.
///
/// A handle whose value cannot be normalised (``normalize(_:)`` returns nil) matches nothing, not even itself.
public struct HandleNormalizer: Sendable, Hashable {
    /// Why a normaliser configuration was rejected.
    public enum ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The country code was not 1–3 ASCII digits without a leading zero.
        case invalidCountryCode(String)
        /// The national trunk prefix was not empty or 1–3 ASCII digits.
        case invalidTrunkPrefix(String)

        /// A message naming the rejected value and what was expected.
        public var description: String {
            switch self {
            case .invalidCountryCode(let code):
                "invalid country code '\(code)': expected 1–3 ASCII digits not starting with 0, without '+' (e.g. \"1\" or \"44\")"
            case .invalidTrunkPrefix(let prefix):
                "invalid national trunk prefix '\(prefix)': expected 1–3 ASCII digits (e.g. \"0\"), or \"\" for none"
            }
        }
    }

    /// The country calling code (digits only, e.g. `"1"`, `"44"`) given to numbers written without one.
    public let defaultCountryCode: String
    /// The national trunk prefix (e.g. `"0"` in the UK, `"1"` in North America) stripped once from national
    /// numbers before the country code is prepended; empty when the numbering plan has none.
    public let nationalTrunkPrefix: String

    /// The North American Numbering Plan: country code `1`, trunk prefix `1`.
    public static let northAmerica = HandleNormalizer(checkedCountryCode: "1", trunkPrefix: "1")

    /// Creates a normaliser for a numbering plan.
    ///
    /// - Parameters:
    ///   - defaultCountryCode: 1–3 ASCII digits, not starting with `0`, without `+`.
    ///   - nationalTrunkPrefix: 1–3 ASCII digits, `""` for none, or nil for the usual one: `"1"` when the
    ///     country code is `"1"` (NANP), `"0"` otherwise.
    /// - Throws: ``ConfigurationError`` naming the invalid value.
    public init(defaultCountryCode: String = "1", nationalTrunkPrefix: String? = nil) throws(ConfigurationError) {
        guard (1...3).contains(defaultCountryCode.count), defaultCountryCode.allSatisfy(Self.isASCIIDigit),
            defaultCountryCode.first != "0"
        else { throw .invalidCountryCode(defaultCountryCode) }
        let trunk = nationalTrunkPrefix ?? (defaultCountryCode == "1" ? "1" : "0")
        guard trunk.count <= 3, trunk.allSatisfy(Self.isASCIIDigit) else { throw .invalidTrunkPrefix(trunk) }
        self.init(checkedCountryCode: defaultCountryCode, trunkPrefix: trunk)
    }

    private init(checkedCountryCode: String, trunkPrefix: String) {
        defaultCountryCode = checkedCountryCode
        nationalTrunkPrefix = trunkPrefix
    }

    /// The canonical form of `handle` (its display name is ignored), or nil when it can never match anything,
    /// e.g. a phone number without digits or with invalid characters, a malformed or empty email address,
    /// or an empty generic value.
    ///
    /// A SIP URI whose user part is a telephone number (`sip:+14155550100@host`, with or without `;user=phone`) is
    /// that phone number, whatever the handle's kind says: callers arrive as SIP URIs, contacts list numbers.
    public func normalize(_ handle: Handle) -> NormalizedHandle? {
        if handle.kind == .generic, let number = Self.telephoneUser(inSIPURI: handle.value) {
            return normalizedPhoneNumber(number).map { NormalizedHandle(kind: .phoneNumber, value: $0) }
        }
        return normalizedValue(kind: handle.kind, value: handle.value).map { NormalizedHandle(kind: handle.kind, value: $0) }
    }

    /// The canonical value for a handle of `kind` written as `value`, or nil when it can never match anything.
    public func normalizedValue(kind: Handle.Kind, value: String) -> String? {
        switch kind {
        case .generic: value.isEmpty ? nil : value
        case .phoneNumber: normalizedPhoneNumber(Self.telephoneUser(inSIPURI: value) ?? value)
        case .emailAddress: Self.normalizedEmailAddress(value)
        }
    }

    /// The user part of `sip:USER@host…` or `sips:…` when it is a telephone number: `;user=phone` says so, or
    /// it is at least three digits with an optional leading `+` and visual separators (`-`, `.`, `(`, `)`).
    public static func telephoneUser(inSIPURI value: String) -> String? {
        let text = value.trimmingCharacters(in: .whitespaces)
        let lowered = text.lowercased()
        guard lowered.hasPrefix("sip:") || lowered.hasPrefix("sips:"), let at = text.firstIndex(of: "@") else { return nil }
        guard let colon = text.firstIndex(of: ":"), colon < at else { return nil }
        let bareUser = String(text[text.index(after: colon)..<at].prefix { $0 != ";" })
        guard !bareUser.isEmpty else { return nil }
        if lowered.contains(";user=phone") { return bareUser }
        return looksLikeTelephoneNumber(bareUser) ? bareUser : nil
    }

    /// At least three ASCII digits, an optional leading `+`, and only `separators` besides.
    public static func looksLikeTelephoneNumber(_ text: String, separators: String = "-.()") -> Bool {
        var digits = 0
        for (index, character) in text.enumerated() {
            if isASCIIDigit(character) {
                digits += 1
            } else if character == "+" && index == 0 {
                continue
            } else if !separators.contains(character) {
                return false
            }
        }
        return digits >= 3
    }

    // MARK: - Phone numbers

    private func normalizedPhoneNumber(_ raw: String) -> String? {
        var text = Self.droppingPrefix("tel:", from: Substring(raw.trimmingCharacters(in: .whitespacesAndNewlines)))
        if let semicolon = text.firstIndex(of: ";") { text = text[..<semicolon] }

        var international = false
        var body = ""  // ASCII digits, '*' and '#'
        var hasDigit = false
        for character in text {
            if Self.isASCIIDigit(character) {
                body.append(character)
                hasDigit = true
            } else if let digit = Self.keypadDigit(character) {
                body.append(digit)
                hasDigit = true
            } else if character == "*" || character == "#" {
                body.append(character)
            } else if character == "+" {
                // Only one '+', and only before the number itself.
                guard !international, body.isEmpty else { return nil }
                international = true
            } else if character.isWhitespace || "-.()/".contains(character) {
                continue
            } else {
                return nil
            }
        }
        guard hasDigit else { return nil }

        if body.contains("*") || body.contains("#") {
            return (international ? "+" : "") + body  // service code: dialled as is
        }
        if international { return "+" + body }
        if body.hasPrefix("00") {
            let rest = body.dropFirst(2)
            return rest.isEmpty ? nil : "+" + rest
        }
        var national = Substring(body)
        if !nationalTrunkPrefix.isEmpty, national.hasPrefix(nationalTrunkPrefix) {
            national = national.dropFirst(nationalTrunkPrefix.count)
            if national.isEmpty { return nil }  // only a trunk prefix: no number at all
        }
        return "+" + defaultCountryCode + national
    }

    static func isASCIIDigit(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return (48...57).contains(ascii)
    }

    /// The ITU E.161 keypad digit for an ASCII letter (ABC=2 … WXYZ=9), case-insensitively.
    private static func keypadDigit(_ character: Character) -> Character? {
        guard var ascii = character.asciiValue else { return nil }
        if (97...122).contains(ascii) { ascii -= 32 }
        guard (65...90).contains(ascii) else { return nil }
        let keypad: [Character] = Array("22233344455566677778889999")
        return keypad[Int(ascii - 65)]
    }

    // MARK: - Email addresses

    private static func normalizedEmailAddress(_ raw: String) -> String? {
        let trimmed = Substring(raw.trimmingCharacters(in: .whitespacesAndNewlines))
        let address = droppingPrefix("mailto:", from: trimmed)
            .trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        return address
    }

    /// `text` without a leading ASCII `prefix` compared case-insensitively.
    private static func droppingPrefix(_ prefix: String, from text: Substring) -> Substring {
        let head = text.prefix(prefix.count)
        guard head.count == prefix.count, head.lowercased() == prefix else { return text }
        return text.dropFirst(prefix.count)
    }
}
