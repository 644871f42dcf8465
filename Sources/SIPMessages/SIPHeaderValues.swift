/// One Via value (RFC 3261 §20.42): the transport and sent-by of one hop, and its parameters.
public struct SIPVia: Sendable, Hashable {
    /// The transport in uppercase: "UDP", "TCP", "TLS", "SCTP", "WS", or any other token.
    public var transport: String
    /// The sent-by host (IPv6 without brackets).
    public var host: String
    /// The sent-by port, if written.
    public var port: Int?
    /// The parameters in order (`branch`, `received`, `rport`, `maddr`, `ttl`, extensions).
    public var parameters: SIPParameters

    /// A Via value; `branch` goes first among the parameters when given.
    public init(transport: String, host: String, port: Int? = nil, branch: String? = nil, parameters: SIPParameters = []) {
        self.transport = transport.uppercased()
        self.host = host
        self.port = port
        self.parameters = parameters
        if let branch { self.parameters.set("branch", branch) }
    }

    /// RFC 3261 §8.1.1.7: branches that start with this cookie are unique per transaction.
    public static let magicCookie = "z9hG4bK"

    /// The `branch` parameter.
    public var branch: String? {
        get { parameters["branch"] }
        set { newValue.map { parameters.set("branch", $0) } ?? parameters.remove("branch") }
    }

    /// Whether the branch carries the RFC 3261 magic cookie (else RFC 2543 transaction matching applies).
    public var hasRFC3261Branch: Bool { branch?.hasPrefix(Self.magicCookie) ?? false }

    /// The `received` parameter (RFC 3261 §18.2.1).
    public var received: String? {
        get { parameters["received"] }
        set { newValue.map { parameters.set("received", $0) } ?? parameters.remove("received") }
    }

    /// Whether an `rport` parameter is present, with or without a value (RFC 3581).
    public var requestsRPort: Bool { parameters.contains("rport") }

    /// The value of `rport` once a server filled it in; nil when absent or empty.
    public var rport: Int? { parameters["rport"].flatMap { SIPSyntax.port($0) } }

    /// The value as written: `SIP/2.0/UDP host:port;branch=…`.
    public var headerValue: String {
        var text = "SIP/2.0/\(transport) \(SIPSyntax.hostForWriting(host))"
        if let port { text += ":\(port)" }
        return text + SIPHeaderWriter.parameters(parameters)
    }

    /// Parley's checks on top of libosip2's: transport a token, a valid host and port, well-formed parameters.
    var isWellFormed: Bool {
        SIPSyntax.isToken(transport) && SIPSyntax.isHost(host) && SIPHeaderWriter.areWellFormed(parameters)
    }
}

/// A name-addr or addr-spec with header parameters: the value of From, To, Contact, Route and Record-Route.
public struct SIPAddress: Sendable, Hashable {
    /// The parts, shared by copies until one changes (`SharedValue`: a copy costs one reference count, where the URI,
    /// display name and parameters cost one each).
    private var parts: SharedValue<Parts>

    private struct Parts: Hashable, Sendable {
        var displayName: String?
        var uri: SIPURI
        var parameters: SIPParameters
    }

    /// The display name without its quotes and escapes; nil when absent.
    public var displayName: String? {
        get { parts.value.displayName }
        set { parts.value.displayName = newValue }
    }
    /// The URI.
    public var uri: SIPURI {
        get { parts.value.uri }
        _modify { yield &parts.value.uri }
    }
    /// The header parameters (`tag`, `expires`, `q`, …) in order; parameters inside `<…>` belong to the URI instead.
    public var parameters: SIPParameters {
        get { parts.value.parameters }
        _modify { yield &parts.value.parameters }
    }

    /// An address.
    public init(displayName: String? = nil, uri: SIPURI, parameters: SIPParameters = []) {
        parts = SharedValue(
            Parts(displayName: displayName?.isEmpty == true ? nil : displayName, uri: uri, parameters: parameters))
    }

    /// The `tag` parameter (From and To).
    public var tag: String? {
        get { parameters["tag"] }
        set { newValue.map { parameters.set("tag", $0) } ?? parameters.remove("tag") }
    }

    /// The value as written, always in name-addr form: `"Display" <uri>;params`.
    public var headerValue: String {
        var text = ""
        if let displayName { text += SIPSyntax.quoted(displayName) + " " }
        text += "<\(uri)>"
        return text + SIPHeaderWriter.parameters(parameters)
    }

    /// Parley's checks on top of libosip2's: a well-formed URI and parameters.
    var isWellFormed: Bool {
        uri.isWellFormed && SIPHeaderWriter.areWellFormed(parameters)
    }
}

extension SIPAddress: CustomDebugStringConvertible {
    /// The parts, as a plain struct of them would print (the box they are shared in is not worth printing).
    public var debugDescription: String {
        "SIPAddress(displayName: \(displayName.debugDescription), uri: \(uri), parameters: \(parameters.elements))"
    }
}

/// The CSeq value (RFC 3261 §20.16): a sequence number below 2^31 and the method it counts.
public struct SIPCSeq: Sendable, Hashable {
    /// The sequence number (0 ... 2^31 - 1).
    public var number: UInt32
    /// The method.
    public var method: SIPMethod

    /// A CSeq; `number` must be below 2^31 (RFC 3261 §8.1.1.5), a programming error otherwise.
    public init(number: UInt32, method: SIPMethod) {
        precondition(number <= SIPCSeq.maximumNumber, "CSeq numbers are below 2^31")
        self.number = number
        self.method = method
    }

    /// The largest sequence number allowed: 2^31 - 1.
    public static let maximumNumber: UInt32 = 0x7FFF_FFFF

    /// The value as written: `314159 INVITE`.
    public var headerValue: String { "\(number) \(method.token)" }
}

/// A Content-Type value (RFC 3261 §20.15): type, subtype and parameters.
public struct SIPContentType: Sendable, Hashable {
    /// The type in lowercase ("application").
    public var type: String
    /// The subtype in lowercase ("sdp").
    public var subtype: String
    /// The parameters (`charset`, `boundary`, …) in order.
    public var parameters: SIPParameters

    /// A content type; type and subtype are lowercased.
    public init(type: String, subtype: String, parameters: SIPParameters = []) {
        self.type = type.asciiLowercased
        self.subtype = subtype.asciiLowercased
        self.parameters = parameters
    }

    /// application/sdp.
    public static let sdp = SIPContentType(type: "application", subtype: "sdp")

    /// "type/subtype".
    public var mediaType: String { "\(type)/\(subtype)" }

    /// The value as written: `application/sdp;charset=utf-8`.
    public var headerValue: String { mediaType + SIPHeaderWriter.parameters(parameters) }
}

/// Writing of header parameters, shared by the value types.
enum SIPHeaderWriter {
    /// `;name=value;flag` for each parameter.
    static func parameters(_ parameters: SIPParameters) -> String {
        var text = ""
        for parameter in parameters {
            text += ";" + parameter.name
            if let value = parameter.value { text += "=" + value }
        }
        return text
    }

    /// Names are tokens; values are quoted-strings or token characters (plus `:[]` for addresses).
    static func areWellFormed(_ parameters: SIPParameters) -> Bool {
        parameters.allSatisfy { parameter in
            SIPSyntax.isToken(parameter.name) && (parameter.value.map(SIPSyntax.isParameterValue) ?? true)
        }
    }
}
