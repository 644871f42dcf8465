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
        if let parsed { return parsed.topVia }
        return self["Via"].flatMap { SIPSyntax.splitValues($0).first.flatMap(OSIPHeaderReader.via) }
    }

    /// The From value.
    public var from: SIPAddress? { parsed?.from ?? self["From"].flatMap(OSIPHeaderReader.address) }

    /// The To value.
    public var to: SIPAddress? { parsed?.to ?? self["To"].flatMap(OSIPHeaderReader.address) }

    /// The From tag: `from?.tag`, read in place from the kept values (no copy of the whole address).
    public var fromTag: String? {
        if let parsed { return parsed.from.tag }
        return from?.tag
    }

    /// The To tag: `to?.tag`, read in place from the kept values (no copy of the whole address).
    public var toTag: String? {
        if let parsed { return parsed.to.tag }
        return to?.tag
    }

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

    /// The same fields without the values kept from parsing: the views then parse the text again (tests compare
    /// the two; a message kept only to be serialised again is smaller without them).
    func droppingParsedValues() -> SIPHeaders {
        var copy = self
        copy.parsed = nil
        return copy
    }
}

/// The typed values of a validated header section: read once by the validator, shared by every copy of the headers
/// while the edits leave them true. Typed fields appended afterwards (a response's Contact and Content-Type) are kept
/// as text and read only when their view is asked for, so building a response parses nothing. Immutable, hence
/// Sendable.
final class ParsedHeaders: Sendable {
    private let validatedVias: [SIPVia]
    let from: SIPAddress
    let to: SIPAddress
    let callID: String
    let cseq: SIPCSeq
    private let validatedMaxForwards: Int?
    private let validatedContentType: SIPContentType?
    private let validatedContacts: [SIPAddress]
    private let validatedRoutes: [SIPAddress]
    private let validatedRecordRoutes: [SIPAddress]
    /// Via, Contact, Route, Record-Route, Max-Forwards and Content-Type fields appended after validation, in order.
    private let appended: [SIPHeaderField]

    /// The keys of the fields these values are read from (Content-Length is read from its text each time).
    static let typedKeys: Set<String> = [
        "via", "from", "to", "call-id", "cseq", "max-forwards", "content-type", "contact", "route", "record-route",
    ]

    init(
        vias: [SIPVia], from: SIPAddress, to: SIPAddress, callID: String, cseq: SIPCSeq, maxForwards: Int?,
        contentType: SIPContentType?, contacts: [SIPAddress], routes: [SIPAddress], recordRoutes: [SIPAddress],
        appended: [SIPHeaderField] = []
    ) {
        self.validatedVias = vias
        self.from = from
        self.to = to
        self.callID = callID
        self.cseq = cseq
        self.validatedMaxForwards = maxForwards
        self.validatedContentType = contentType
        self.validatedContacts = contacts
        self.validatedRoutes = routes
        self.validatedRecordRoutes = recordRoutes
        self.appended = appended
    }

    /// Every Via, the validated ones first.
    var vias: [SIPVia] {
        validatedVias + appendedValues("via").compactMap(OSIPHeaderReader.via)
    }

    /// The first Via.
    var topVia: SIPVia? {
        validatedVias.first ?? appendedValues("via").first.flatMap(OSIPHeaderReader.via)
    }

    /// Max-Forwards: the validated field's, else the first appended one's.
    var maxForwards: Int? {
        if let validatedMaxForwards { return validatedMaxForwards }
        return appended.first { $0.key == "max-forwards" }.flatMap { SIPSyntax.decimal($0.value, limit: 255) }
    }

    /// Content-Type: the validated field's, else the first appended one's.
    var contentType: SIPContentType? {
        if let validatedContentType { return validatedContentType }
        return appended.first { $0.key == "content-type" }.flatMap { OSIPHeaderReader.contentType($0.value) }
    }

    /// Every Contact address (the REGISTER wildcard skipped).
    var contacts: [SIPAddress] { validatedContacts + appendedAddresses("contact") }
    /// Every Route address.
    var routes: [SIPAddress] { validatedRoutes + appendedAddresses("route") }
    /// Every Record-Route address.
    var recordRoutes: [SIPAddress] { validatedRecordRoutes + appendedAddresses("record-route") }

    private func appendedValues(_ key: String) -> [Substring] {
        appended.filter { $0.key == key }.flatMap { SIPSyntax.splitValues($0.value) }
    }

    private func appendedAddresses(_ key: String) -> [SIPAddress] {
        appendedValues(key).compactMap { $0 == "*" ? nil : OSIPHeaderReader.address($0) }
    }

    /// These values with one field more, appended after the others: what the typed views of the longer header list
    /// read. A list field or a first Max-Forwards or Content-Type is kept as text for its view to read; a second From,
    /// To, Call-ID, CSeq, Max-Forwards or Content-Type changes nothing (the views read the first).
    func adding(_ field: SIPHeaderField) -> ParsedHeaders {
        switch field.key {
        case "via", "contact", "route", "record-route", "max-forwards", "content-type":
            return ParsedHeaders(
                vias: validatedVias, from: from, to: to, callID: callID, cseq: cseq, maxForwards: validatedMaxForwards,
                contentType: validatedContentType, contacts: validatedContacts, routes: validatedRoutes,
                recordRoutes: validatedRecordRoutes, appended: appended + [field])
        default:
            return self
        }
    }

    /// The values of a response's skeleton copied from its request (`SIPResponse.answering`): the same Vias, From,
    /// Call-ID and CSeq, To with `toTag` when one was added, Record-Route when copied, and nothing else. Only for
    /// the values a validator produced (nothing appended).
    func answering(toTag: String?, copyingRecordRoute: Bool) -> ParsedHeaders? {
        guard appended.isEmpty else { return nil }
        var to = to
        if let toTag { to.tag = toTag }
        return ParsedHeaders(
            vias: validatedVias, from: from, to: to, callID: callID, cseq: cseq, maxForwards: nil, contentType: nil,
            contacts: [], routes: [], recordRoutes: copyingRecordRoute ? validatedRecordRoutes : [])
    }
}
