/// One header field: the name as written (`Call-ID`, `i`, `cseq`) and its value with line folding undone and leading
/// and trailing whitespace removed.
public struct SIPHeaderField: Sendable, Hashable {
    /// The name as written on the wire (compact forms stay compact).
    public let name: String
    /// The value: one line, no surrounding whitespace.
    public let value: String
    /// Lowercased full name: what lookups compare (compact forms expanded).
    let key: String

    /// A field. `name` must be an RFC 3261 token (a programming error otherwise: this traps). CR and LF in `value`
    /// become spaces, so no value can smuggle in a header line, and surrounding whitespace is removed.
    public init(name: String, value: String) {
        precondition(SIPSyntax.isToken(name), "SIP header name must be a token: \(name.debugDescription)")
        self.init(validatedName: name, value: SIPHeaderField.sanitized(value))
    }

    /// A field from the parser, whose name and value are already checked and unfolded.
    init(validatedName name: String, value: String) {
        self.name = name
        self.value = value
        self.key = SIPHeaders.key(for: name)
    }

    private static func sanitized(_ value: String) -> String {
        var text = value
        if !SIPSyntax.allBytes(text, { $0 != 0x0D && $0 != 0x0A }) {
            text = String(text.map { $0 == "\r" || $0 == "\n" || $0 == "\r\n" ? " " : $0 })
        }
        return String(SIPSyntax.trimmed(Substring(text)))
    }
}

/// The header fields of a message in their original order, looked up case-insensitively with compact forms
/// understood: `headers["i"]`, `headers["call-id"]` and `headers["Call-ID"]` find the same field.
///
/// Equality and hashing compare the fields only. A parsed message also carries the typed values it was validated
/// with (`SIPHeaders+Typed.swift`), so reading them costs nothing, and so does a response built from it
/// (`SIPResponse.answering`). Edits keep them true: a field Parley does not type changes nothing, an appended typed
/// field is kept as text until its view is read, and any other change to a typed field drops them (the typed views then parse
/// the text again).
public struct SIPHeaders: Sendable, Hashable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    /// The fields in order.
    public private(set) var fields: [SIPHeaderField]

    /// The typed values read from exactly these fields during validation, if this came from the parser.
    var parsed: ParsedHeaders?

    /// Headers made of `fields`, in that order.
    public init(_ fields: [SIPHeaderField] = []) {
        self.fields = fields
    }

    /// Fields are what headers are: the typed values are derived from them.
    public static func == (lhs: SIPHeaders, rhs: SIPHeaders) -> Bool { lhs.fields == rhs.fields }

    /// Hashes the fields.
    public func hash(into hasher: inout Hasher) { hasher.combine(fields) }

    /// Headers from `["Via": "SIP/2.0/UDP …", "Max-Forwards": "70"]`, in the literal's order (names may repeat).
    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { SIPHeaderField(name: $0.0, value: $0.1) }
    }

    /// The index of the first field.
    public var startIndex: Int { fields.startIndex }
    /// One past the index of the last field.
    public var endIndex: Int { fields.endIndex }
    /// The field at `position`.
    public subscript(position: Int) -> SIPHeaderField { fields[position] }

    /// The value of the first field called `name` (any case, compact or full form); nil if there is none.
    public subscript(name: String) -> String? {
        let query = Query(name)
        return fields.first { query.matches($0) }?.value
    }

    /// The values of every field called `name`, in order, each as written (a field holding "a, b" stays one value).
    public func values(_ name: String) -> [String] {
        let query = Query(name)
        return fields.compactMap { query.matches($0) ? $0.value : nil }
    }

    /// How many fields are called `name`.
    public func count(of name: String) -> Int {
        let query = Query(name)
        return fields.reduce(0) { $0 + (query.matches($1) ? 1 : 0) }
    }

    /// Whether a field called `name` is present.
    public func contains(_ name: String) -> Bool {
        let query = Query(name)
        return fields.contains { query.matches($0) }
    }

    /// Appends a field.
    public mutating func append(_ name: String, _ value: String) {
        append(SIPHeaderField(name: name, value: value))
    }

    /// Appends a field.
    public mutating func append(_ field: SIPHeaderField) {
        fields.append(field)
        parsed = parsed?.adding(field)
    }

    /// Inserts a field at `index` (0 puts it first, as a proxy does with its Via).
    public mutating func insert(_ name: String, _ value: String, at index: Int) {
        let field = SIPHeaderField(name: name, value: value)
        fields.insert(field, at: index)
        if ParsedHeaders.typedKeys.contains(field.key) { parsed = nil }
    }

    /// Replaces the first field called `name` with one holding `value` (keeping its place) and removes the others;
    /// appends the field when there is none.
    public mutating func set(_ name: String, _ value: String) {
        let field = SIPHeaderField(name: name, value: value)
        guard let index = fields.firstIndex(where: { $0.key == field.key }) else {
            append(field)
            return
        }
        if ParsedHeaders.typedKeys.contains(field.key) { parsed = nil }
        var updated = fields
        updated[index] = field
        if updated[(index + 1)...].contains(where: { $0.key == field.key }) {
            updated = updated.enumerated().filter { $0.offset <= index || $0.element.key != field.key }.map(\.element)
        }
        fields = updated
    }

    /// Removes every field called `name`.
    public mutating func removeAll(_ name: String) {
        let query = Query(name)
        fields.removeAll { query.matches($0) }
        if ParsedHeaders.typedKeys.contains(query.key) { parsed = nil }
    }

    /// Keeps exactly one Content-Length field equal to `bodyCount`: an existing single field with that value is left as
    /// written (compact form, position); otherwise the fields are replaced by one at the first one's place, or appended.
    mutating func normalizeContentLength(bodyCount: Int) {
        let key = "content-length"
        let expected = String(bodyCount)
        var first: Int?
        var count = 0
        for (index, field) in fields.enumerated() where field.key == key {
            if first == nil { first = index }
            count += 1
        }
        if count == 1, let first, fields[first].value == expected { return }
        let field = SIPHeaderField(validatedName: "Content-Length", value: expected)
        guard let first else {
            fields.append(field)
            return
        }
        fields.removeAll { $0.key == key }
        fields.insert(field, at: first)
    }

    // MARK: Names

    /// A name to look up: its key computed once (short names stay inline strings, so no allocation), then compared.
    struct Query {
        /// The key looked for.
        let key: String

        init(_ name: String) {
            self.key = SIPHeaders.key(for: name)
        }

        /// Whether `field` is called this name.
        func matches(_ field: SIPHeaderField) -> Bool {
            field.key == key
        }
    }

    /// The lowercased full name for `name`: compact forms expanded (RFC 3261 §7.3.3 and the IANA registry).
    static func key(for name: String) -> String {
        if name.utf8.count == 1, let full = compactKey(name.utf8.first!) { return full }
        return name.asciiLowercased
    }

    /// The lowercased full name a single-letter compact form stands for.
    static func compactKey(_ letter: UInt8) -> String? {
        switch letter | 0x20 {
        case UInt8(ascii: "a"): "accept-contact"
        case UInt8(ascii: "b"): "referred-by"
        case UInt8(ascii: "c"): "content-type"
        case UInt8(ascii: "d"): "request-disposition"
        case UInt8(ascii: "e"): "content-encoding"
        case UInt8(ascii: "f"): "from"
        case UInt8(ascii: "i"): "call-id"
        case UInt8(ascii: "j"): "reject-contact"
        case UInt8(ascii: "k"): "supported"
        case UInt8(ascii: "l"): "content-length"
        case UInt8(ascii: "m"): "contact"
        case UInt8(ascii: "n"): "identity-info"
        case UInt8(ascii: "o"): "event"
        case UInt8(ascii: "r"): "refer-to"
        case UInt8(ascii: "s"): "subject"
        case UInt8(ascii: "t"): "to"
        case UInt8(ascii: "u"): "allow-events"
        case UInt8(ascii: "v"): "via"
        case UInt8(ascii: "x"): "session-expires"
        case UInt8(ascii: "y"): "identity"
        default: nil
        }
    }

    /// The usual spelling of a header name: compact forms expanded ("i" → "Call-ID"), known names in their RFC
    /// capitalisation ("cseq" → "CSeq"), others as given.
    public static func canonicalName(_ name: String) -> String {
        let key = key(for: name)
        return knownNames[key] ?? name
    }

    /// Single-letter compact forms and the headers they stand for.
    public static let compactForms: [String: String] = [
        "a": "Accept-Contact", "b": "Referred-By", "c": "Content-Type", "d": "Request-Disposition",
        "e": "Content-Encoding", "f": "From", "i": "Call-ID", "j": "Reject-Contact", "k": "Supported",
        "l": "Content-Length", "m": "Contact", "n": "Identity-Info", "o": "Event", "r": "Refer-To", "s": "Subject",
        "t": "To", "u": "Allow-Events", "v": "Via", "x": "Session-Expires", "y": "Identity",
    ]

    private static let knownNames: [String: String] = {
        var names = Dictionary(uniqueKeysWithValues: compactForms.values.map { ($0.asciiLowercased, $0) })
        for name in [
            "CSeq", "Max-Forwards", "Route", "Record-Route", "WWW-Authenticate", "Proxy-Authenticate",
            "Authorization", "Proxy-Authorization", "Allow", "Accept", "Require", "Proxy-Require", "Unsupported",
            "Expires", "User-Agent", "Server", "Timestamp", "Date", "Min-Expires", "Retry-After", "Warning",
        ] {
            names[name.asciiLowercased] = name
        }
        return names
    }()
}
