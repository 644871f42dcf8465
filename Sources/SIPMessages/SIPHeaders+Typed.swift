/// Typed views of the headers Parley reads, parsed through libosip2's per-header parsers with Parley's checks.
///
/// A message returned by `SIPMessage.parse` carries these values from its validation, so reading them is free and
/// its Via, From, To, Call-ID and CSeq are never nil or empty; every Contact, Route and Record-Route value parses.
/// Headers built or edited by hand are parsed on each read; there a value that does not parse reads as nil (or is left
/// out of a list).
extension SIPHeaders {
    /// Every Via value in order (fields holding several comma-separated values are split); the first is the top one.
    public var vias: [SIPVia] {
        parsed?.vias ?? values("Via").flatMap(SIPSyntax.splitValues).compactMap(OSIPHeaderReader.via)
    }

    /// The top (first) Via value: the hop a response goes back to.
    public var topVia: SIPVia? {
        if let parsed { return parsed.vias.first }
        return self["Via"].flatMap { SIPSyntax.splitValues($0).first.flatMap(OSIPHeaderReader.via) }
    }

    /// The From value.
    public var from: SIPAddress? { parsed?.from ?? self["From"].flatMap(OSIPHeaderReader.address) }

    /// The To value.
    public var to: SIPAddress? { parsed?.to ?? self["To"].flatMap(OSIPHeaderReader.address) }

    /// The Call-ID, when it is `word["@"word]`.
    public var callID: String? { parsed?.callID ?? self["Call-ID"].flatMap { SIPSyntax.isCallID($0) ? $0 : nil } }

    /// The CSeq value.
    public var cseq: SIPCSeq? { parsed?.cseq ?? self["CSeq"].flatMap(OSIPHeaderReader.cseq) }

    /// Max-Forwards, when it is a number from 0 to 255.
    public var maxForwards: Int? {
        if let parsed { return parsed.maxForwards }
        return self["Max-Forwards"].flatMap { SIPSyntax.decimal($0, limit: 255) }
    }

    /// Content-Length, when it is a non-negative number (messages keep it equal to their body's size).
    public var contentLength: Int? { self["Content-Length"].flatMap { SIPSyntax.decimal($0, limit: Int(Int32.max)) } }

    /// The Content-Type value.
    public var contentType: SIPContentType? {
        if let parsed { return parsed.contentType }
        return self["Content-Type"].flatMap(OSIPHeaderReader.contentType)
    }

    /// Every Contact address in order; the wildcard `*` of a REGISTER is not an address (see `isContactWildcard`).
    public var contacts: [SIPAddress] { parsed?.contacts ?? addresses("Contact") }

    /// Whether Contact is the REGISTER wildcard `*` (RFC 3261 §10.2.2).
    public var isContactWildcard: Bool { values("Contact").contains("*") }

    /// Every Route address in order.
    public var routes: [SIPAddress] { parsed?.routes ?? addresses("Route") }

    /// Every Record-Route address in order.
    public var recordRoutes: [SIPAddress] { parsed?.recordRoutes ?? addresses("Record-Route") }

    /// The addresses in every field called `name`, split at commas (unparsable values left out, `*` skipped).
    public func addresses(_ name: String) -> [SIPAddress] {
        values(name).flatMap(SIPSyntax.splitValues).compactMap { $0 == "*" ? nil : OSIPHeaderReader.address($0) }
    }

    /// The same fields without the values kept from parsing (for tests: the views then parse the text again).
    func droppingParsedValues() -> SIPHeaders {
        var copy = self
        copy.parsed = nil
        return copy
    }
}

/// The typed values of a validated header section: read once by the validator, shared by every copy of the headers
/// until the fields change. Immutable, hence Sendable.
final class ParsedHeaders: Sendable {
    let vias: [SIPVia]
    let from: SIPAddress
    let to: SIPAddress
    let callID: String
    let cseq: SIPCSeq
    let maxForwards: Int?
    let contentType: SIPContentType?
    let contacts: [SIPAddress]
    let routes: [SIPAddress]
    let recordRoutes: [SIPAddress]

    init(
        vias: [SIPVia], from: SIPAddress, to: SIPAddress, callID: String, cseq: SIPCSeq, maxForwards: Int?,
        contentType: SIPContentType?, contacts: [SIPAddress], routes: [SIPAddress], recordRoutes: [SIPAddress]
    ) {
        self.vias = vias
        self.from = from
        self.to = to
        self.callID = callID
        self.cseq = cseq
        self.maxForwards = maxForwards
        self.contentType = contentType
        self.contacts = contacts
        self.routes = routes
        self.recordRoutes = recordRoutes
    }
}
