/// One `name[=value]` parameter of a URI (`;transport=tcp`, `?Route=…`) or a header (`;tag=…`, `;branch=…`).
///
/// URI parameters and headers hold unescaped text (the writer escapes it); header parameters hold the value as
/// written, so a quoted-string keeps its quotes (`+sip.instance="<urn:…>"`).
public struct SIPParameter: Sendable, Hashable {
    /// The name as written.
    public var name: String
    /// The value, or nil for a flag parameter such as `;lr` or `;rport`. An empty value is stored as nil: the wire
    /// cannot tell `;x=` from `;x` apart in every grammar Parley reads, so neither does the value.
    public var value: String?

    /// A parameter; an empty `value` becomes nil.
    public init(name: String, value: String? = nil) {
        self.name = name
        self.value = value?.isEmpty == true ? nil : value
    }
}

/// An ordered list of parameters with case-insensitive lookup by name (RFC 3261 compares parameter names
/// case-insensitively). Order and duplicates are kept as received.
public struct SIPParameters: Sendable, Hashable, RandomAccessCollection, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    /// The parameters in order.
    public private(set) var elements: [SIPParameter]

    /// A list of `elements`.
    public init(_ elements: [SIPParameter] = []) {
        self.elements = elements
    }

    /// A list from `[SIPParameter(…), …]`.
    public init(arrayLiteral elements: SIPParameter...) {
        self.elements = elements
    }

    /// A list from `["transport": "tcp", "lr": nil]`, in the literal's order.
    public init(dictionaryLiteral elements: (String, String?)...) {
        self.elements = elements.map { SIPParameter(name: $0.0, value: $0.1) }
    }

    /// The index of the first parameter.
    public var startIndex: Int { elements.startIndex }
    /// One past the index of the last parameter.
    public var endIndex: Int { elements.endIndex }
    /// The parameter at `position`.
    public subscript(position: Int) -> SIPParameter { elements[position] }

    /// The value of the first parameter called `name` (any case); nil if it is absent or has no value.
    public subscript(name: String) -> String? {
        first(named: name)?.value
    }

    /// The first parameter called `name` (any case).
    public func first(named name: String) -> SIPParameter? {
        elements.first { $0.name.caseInsensitiveEquals(name) }
    }

    /// Whether a parameter called `name` (any case) is present, with or without a value.
    public func contains(_ name: String) -> Bool {
        first(named: name) != nil
    }

    /// Sets the first parameter called `name` to `value` and removes later ones, or appends it if absent.
    public mutating func set(_ name: String, _ value: String?) {
        let parameter = SIPParameter(name: name, value: value)
        guard let index = elements.firstIndex(where: { $0.name.caseInsensitiveEquals(name) }) else {
            elements.append(parameter)
            return
        }
        elements[index] = parameter
        var position = index + 1
        while position < elements.count {
            if elements[position].name.caseInsensitiveEquals(name) {
                elements.remove(at: position)
            } else {
                position += 1
            }
        }
    }

    /// Appends a parameter, even if one of that name exists.
    public mutating func append(_ parameter: SIPParameter) {
        elements.append(parameter)
    }

    /// Removes every parameter called `name` (any case).
    public mutating func remove(_ name: String) {
        elements.removeAll { $0.name.caseInsensitiveEquals(name) }
    }
}

extension String {
    /// Calls `body` with the string's UTF-8 bytes in place. `withUTF8` is mutating, so calling it on a copy costs a
    /// retain and a release per call; native and small strings lend their bytes without one.
    @inline(__always)
    func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }

    /// ASCII case-insensitive equality (SIP names are ASCII tokens).
    func caseInsensitiveEquals(_ other: String) -> Bool {
        withUTF8Bytes { left in
            other.withUTF8Bytes { right in
                guard left.count == right.count else { return false }
                for index in 0..<left.count where left[index] != right[index] {
                    guard String.lowercased(left[index]) == String.lowercased(right[index]) else { return false }
                }
                return true
            }
        }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    /// ASCII lowercase, leaving other bytes alone (no locale, no Unicode tables); the string itself when it has no
    /// uppercase letter.
    var asciiLowercased: String {
        withUTF8Bytes { bytes in
            guard bytes.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return self }
            return String(unsafeUninitializedCapacity: bytes.count) { buffer in
                for index in 0..<bytes.count { buffer[index] = String.lowercased(bytes[index]) }
                return bytes.count
            }
        }
    }
}
