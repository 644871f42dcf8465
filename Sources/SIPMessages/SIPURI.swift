/// A URI as SIP carries it: a `sip:`/`sips:` URI with its parts (RFC 3261 §19.1), or any other scheme kept as an
/// opaque text (`tel:+1-555…`, `mailto:…`, `soap.beep://…`).
///
/// For SIP URIs `user`, `password`, parameters and headers hold the *unescaped* text (`%61lice` reads as `alice`,
/// `%00` as a NUL character); the writer escapes them again. The host of an IPv6 address has no brackets. For other
/// schemes `opaquePart` holds everything after the colon exactly as written and the SIP parts are empty.
/// Equality is structural (these parts), not the RFC 3261 §19.1.4 comparison rules.
public struct SIPURI: Sendable, Hashable, CustomStringConvertible {
    /// The parts, shared by copies until one changes (`SharedValue`: a copy costs one reference count instead of one
    /// per string and list).
    private var parts: SharedValue<Parts>

    private struct Parts: Hashable, Sendable {
        var scheme: String
        var user: String?
        var password: String?
        var host: String
        var port: Int?
        var parameters: SIPParameters
        var headers: SIPParameters
        var opaquePart: String?
    }

    /// The scheme in lowercase: "sip", "sips", "tel", ….
    public var scheme: String {
        get { parts.value.scheme }
        set { parts.value.scheme = newValue }
    }
    /// The user part, unescaped; nil when absent (an empty user is written as absent).
    public var user: String? {
        get { parts.value.user }
        set { parts.value.user = newValue }
    }
    /// The password, unescaped (deprecated by RFC 3261, kept so that nothing is lost).
    public var password: String? {
        get { parts.value.password }
        set { parts.value.password = newValue }
    }
    /// The host: a name, an IPv4 address or an IPv6 address without brackets. Empty for opaque URIs.
    public var host: String {
        get { parts.value.host }
        set { parts.value.host = newValue }
    }
    /// The port, if written.
    public var port: Int? {
        get { parts.value.port }
        set { parts.value.port = newValue }
    }
    /// The URI parameters (`;transport=tcp;lr`), unescaped, in order.
    public var parameters: SIPParameters {
        get { parts.value.parameters }
        _modify { yield &parts.value.parameters }
    }
    /// The URI headers (`?Route=%3Csip:…%3E`), unescaped, in order.
    public var headers: SIPParameters {
        get { parts.value.headers }
        _modify { yield &parts.value.headers }
    }
    /// For a scheme other than sip/sips: everything after "scheme:", as written. Nil for SIP URIs.
    public var opaquePart: String? {
        get { parts.value.opaquePart }
        set { parts.value.opaquePart = newValue }
    }

    /// A `sip:` or `sips:` URI.
    public init(
        scheme: String = "sip", user: String? = nil, password: String? = nil, host: String, port: Int? = nil,
        parameters: SIPParameters = [], headers: SIPParameters = []
    ) {
        parts = SharedValue(
            Parts(
                scheme: scheme.asciiLowercased, user: user?.isEmpty == true ? nil : user, password: password, host: host,
                port: port, parameters: parameters, headers: headers, opaquePart: nil))
    }

    /// A URI of another scheme, kept as text (`SIPURI(scheme: "tel", opaquePart: "+1-212-555-0101")`).
    public init(scheme: String, opaquePart: String) {
        parts = SharedValue(
            Parts(
                scheme: scheme.asciiLowercased, user: nil, password: nil, host: "", port: nil, parameters: [], headers: [],
                opaquePart: opaquePart))
    }

    /// Parses a URI written on its own (not inside `<…>`): SIP URIs through libosip2 plus Parley's host and port checks,
    /// other schemes by RFC 3986 scheme syntax. Nil if it does not parse, or holds whitespace, `<`, `>` or `"`.
    public init?(_ text: String) {
        guard let uri = OSIPURIReader.parseStandalone(text) else { return nil }
        self = uri
    }

    /// Whether this is a `sip:` or `sips:` URI (one with parts rather than an opaque text).
    public var isSIP: Bool { opaquePart == nil }

    /// The `transport` parameter, if any.
    public var transport: String? { parameters["transport"] }

    /// The URI as written on the wire, escaped where RFC 3261 §25.1 requires.
    public var description: String {
        if let opaquePart { return "\(scheme):\(opaquePart)" }
        var text = scheme + ":"
        if let user, !user.isEmpty {
            text += SIPSyntax.percentEncoded(user, for: .user)
            if let password {
                text += ":" + SIPSyntax.percentEncoded(password, for: .password)
            }
            text += "@"
        }
        text += SIPSyntax.hostForWriting(host)
        if let port { text += ":\(port)" }
        for parameter in parameters {
            text += ";" + SIPSyntax.percentEncoded(parameter.name, for: .parameter)
            if let value = parameter.value { text += "=" + SIPSyntax.percentEncoded(value, for: .parameter) }
        }
        for (index, header) in headers.enumerated() {
            text += index == 0 ? "?" : "&"
            text += SIPSyntax.percentEncoded(header.name, for: .header) + "="
            text += SIPSyntax.percentEncoded(header.value ?? "", for: .header)
        }
        return text
    }

    /// Whether the parts are ones Parley can write and read back: a valid host and scheme, and for opaque URIs a text
    /// without whitespace or `<>"`.
    var isWellFormed: Bool {
        guard SIPSyntax.isScheme(scheme) else { return false }
        if let opaquePart { return SIPURI.isOpaqueText(opaquePart) }
        guard scheme == "sip" || scheme == "sips", SIPSyntax.isHost(host) else { return false }
        if let port, !(0...65_535).contains(port) { return false }
        return parameters.allSatisfy { !$0.name.isEmpty } && headers.allSatisfy { !$0.name.isEmpty }
    }

    /// An opaque part is non-empty and carries no whitespace, control characters, `<`, `>` or `"`.
    static func isOpaqueText(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && SIPSyntax.allBytes(text) { $0 > 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "<") && $0 != UInt8(ascii: ">") && $0 != UInt8(ascii: "\"") }
    }
}
