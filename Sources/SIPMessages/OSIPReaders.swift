internal import COSIP

/// URIs through `osip_uri_t`: libosip2 splits them, Parley checks what it let through (it takes `a b` as a host and
/// any scheme beginning with "sip" as SIP) and copies them into `SIPURI`.
enum OSIPURIReader {
    /// Copies a parsed URI; nil if it fails Parley's checks.
    static func copy(_ uri: UnsafeMutablePointer<osip_uri_t>, from input: OSIPInput) -> SIPURI? {
        guard let scheme = input.text(uri.pointee.scheme)?.asciiLowercased, SIPSyntax.isScheme(scheme) else { return nil }
        if let opaque = input.text(uri.pointee.string) {
            guard scheme != "sip", scheme != "sips" else { return nil }
            let result = SIPURI(scheme: scheme, opaquePart: opaque)
            return result.isWellFormed ? result : nil
        }
        guard scheme == "sip" || scheme == "sips", let host = input.text(uri.pointee.host) else { return nil }
        var port: Int?
        if let text = input.text(uri.pointee.port) {
            guard let value = SIPSyntax.port(text) else { return nil }
            port = value
        }
        let result = SIPURI(
            scheme: scheme, user: input.unescapedText(uri.pointee.username),
            password: input.unescapedText(uri.pointee.password), host: host, port: port,
            parameters: OSIPList.parameters(cosip_uri_params(uri), from: input, unescape: true),
            headers: OSIPList.parameters(cosip_uri_headers(uri), from: input, unescape: true))
        return result.isWellFormed ? result : nil
    }

    /// A URI on its own (the Request-URI, or `SIPURI(_:)`): no whitespace, controls or `<>"` anywhere; a scheme by
    /// RFC 3986. SIP URIs are split by `osip_uri_parse`; other schemes stay opaque (libosip2 refuses schemes with "."
    /// or digits, such as `soap.beep`, which RFC 3261 allows as absoluteURI).
    static func parseStandalone(_ text: String) -> SIPURI? {
        guard SIPURI.isOpaqueText(text), let colon = text.firstIndex(of: ":") else { return nil }
        let scheme = String(text[..<colon]).asciiLowercased
        guard SIPSyntax.isScheme(scheme) else { return nil }
        guard scheme == "sip" || scheme == "sips" else {
            let opaque = text[text.index(after: colon)...]
            return SIPURI.isOpaqueText(opaque) ? SIPURI(scheme: scheme, opaquePart: String(opaque)) : nil
        }
        cosip_initialize()
        let input = OSIPInput(text, protectingPercent: true)
        var pointer: UnsafeMutablePointer<osip_uri_t>?
        guard osip_uri_init(&pointer) == 0, let uri = pointer else { return nil }
        defer { osip_uri_free(uri) }
        guard input.withCString({ osip_uri_parse(uri, $0) }) == 0 else { return nil }
        return copy(uri, from: input)
    }
}

/// Header values through libosip2's per-header parsers, with Parley's checks on what they let through.
enum OSIPHeaderReader {
    /// One Via value (already split at commas).
    static func via(_ value: some StringProtocol) -> SIPVia? {
        cosip_initialize()
        let input = OSIPInput(String(value))
        var pointer: UnsafeMutablePointer<osip_via_t>?
        guard osip_via_init(&pointer) == 0, let via = pointer else { return nil }
        defer { osip_via_free(via) }
        guard input.withCString({ osip_via_parse(via, $0) }) == 0 else { return nil }
        guard input.text(via.pointee.version) == "2.0", let transport = input.text(via.pointee.protocol),
            let host = input.text(via.pointee.host)
        else { return nil }
        var port: Int?
        if let text = input.text(via.pointee.port) {
            guard let value = SIPSyntax.port(text) else { return nil }
            port = value
        }
        let result = SIPVia(
            transport: transport, host: host, port: port,
            parameters: OSIPList.parameters(cosip_via_params(via), from: input, unescape: false))
        return result.isWellFormed ? result : nil
    }

    /// One name-addr or addr-spec value with header parameters (From, To, one Contact or Route value).
    ///
    /// A plain SIP URI (no `%`) is read by `osip_from_parse` with the rest. Any other URI is cut out and parsed like a
    /// Request-URI (percent escapes protected, absolute URIs whose scheme libosip2 refuses — `soap.beep:` — kept
    /// opaque), and `osip_from_parse` reads the display name and parameters around a placeholder URI.
    static func address(_ value: some StringProtocol) -> SIPAddress? {
        var text = String(value)
        let shape: (uri: Range<Int>, isPlainSIP: Bool)? = text.withUTF8 { bytes in
            guard let range = AddressShape.uriBytes(bytes) else { return nil }
            let uri = UnsafeBufferPointer(rebasing: bytes[range])
            let isPlainSIP =
                !uri.contains(UInt8(ascii: "%")) && (hasPrefixIgnoringCase(uri, "sip:") || hasPrefixIgnoringCase(uri, "sips:"))
            return (range, isPlainSIP)
        }
        guard let shape else { return nil }
        var separateURI: SIPURI?
        var outline = text
        if !shape.isPlainSIP {
            let utf8 = Array(text.utf8)
            let uriText = String(decoding: utf8[shape.uri], as: UTF8.self)
            guard let uri = OSIPURIReader.parseStandalone(uriText) else { return nil }
            separateURI = uri
            outline = String(decoding: utf8[..<shape.uri.lowerBound], as: UTF8.self) + placeholderURI
                + String(decoding: utf8[shape.uri.upperBound...], as: UTF8.self)
        }
        cosip_initialize()
        let input = OSIPInput(outline)
        var pointer: UnsafeMutablePointer<osip_from_t>?
        guard osip_from_init(&pointer) == 0, let address = pointer else { return nil }
        defer { osip_from_free(address) }
        guard input.withCString({ osip_from_parse(address, $0) }) == 0, let url = address.pointee.url else { return nil }
        let uri: SIPURI
        if let separateURI {
            guard input.text(url.pointee.host) == placeholderHost, cosip_list_size(cosip_uri_params(url)) == 0 else {
                return nil
            }
            uri = separateURI
        } else {
            guard let copied = OSIPURIReader.copy(url, from: input) else { return nil }
            uri = copied
        }
        var displayName: String?
        if let raw = input.text(address.pointee.displayname) {
            guard let name = AddressShape.displayName(raw) else { return nil }
            displayName = name
        }
        let result = SIPAddress(
            displayName: displayName, uri: uri,
            parameters: OSIPList.parameters(cosip_from_params(address), from: input, unescape: false))
        return result.isWellFormed ? result : nil
    }

    private static func hasPrefixIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ prefix: StaticString) -> Bool {
        guard bytes.count >= prefix.utf8CodeUnitCount else { return false }
        return zip(bytes, UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
            .allSatisfy { ($0 | 0x20) == $1 || $0 == $1 }
    }

    private static let placeholderHost = "uri.invalid"
    private static let placeholderURI = "sip:" + placeholderHost

    /// A CSeq value: a number below 2^31 (leading zeros allowed) and a method token.
    static func cseq(_ value: some StringProtocol) -> SIPCSeq? {
        cosip_initialize()
        let input = OSIPInput(String(value))
        var pointer: UnsafeMutablePointer<osip_cseq_t>?
        guard osip_cseq_init(&pointer) == 0, let cseq = pointer else { return nil }
        defer { osip_cseq_free(cseq) }
        guard input.withCString({ osip_cseq_parse(cseq, $0) }) == 0, let numberText = input.text(cseq.pointee.number),
            let method = input.text(cseq.pointee.method), SIPSyntax.isToken(method),
            let number = SIPSyntax.decimal(numberText, limit: Int(SIPCSeq.maximumNumber))
        else { return nil }
        return SIPCSeq(number: UInt32(number), method: SIPMethod(method))
    }

    /// A Content-Type value: type/subtype tokens and parameters.
    static func contentType(_ value: some StringProtocol) -> SIPContentType? {
        cosip_initialize()
        let input = OSIPInput(String(value))
        var pointer: UnsafeMutablePointer<osip_content_type_t>?
        guard osip_content_type_init(&pointer) == 0, let type = pointer else { return nil }
        defer { osip_content_type_free(type) }
        guard input.withCString({ osip_content_type_parse(type, $0) }) == 0, let major = input.text(type.pointee.type),
            let minor = input.text(type.pointee.subtype), SIPSyntax.isToken(major), SIPSyntax.isToken(minor)
        else { return nil }
        let parameters = OSIPList.parameters(cosip_content_type_params(type), from: input, unescape: false)
        guard SIPHeaderWriter.areWellFormed(parameters) else { return nil }
        return SIPContentType(type: major, subtype: minor, parameters: parameters)
    }
}

/// The header fields Parley does not read itself through `osip_message_parse`: libosip2's verdict on the ones it parses
/// (Authorization, WWW-Authenticate, Accept, Allow, Call-Info, …). It is lenient there, but it is the library's word.
/// Via, From, To, Call-ID, CSeq, Max-Forwards, Content-Type, Content-Length, Contact, Route and Record-Route go
/// through libosip2's per-header parsers in `MessageValidation` instead (parsing them in both would do the work twice).
enum OSIPMessageGate {
    /// The other fields libosip2 parses into typed values (the names its parser configuration maps to an
    /// `osip_message_set_*` setter, as keys). Every other field it only stores as a name and a text, a step that
    /// cannot refuse a value framing let through (`GateTests` checks this against the library), so the gate leaves
    /// those out and is skipped when a message has none of these: most calls carry none.
    static let fieldsTypedByLibrary: Set<String> = [
        "accept", "accept-encoding", "accept-language", "alert-info", "allow", "authentication-info", "authorization",
        "call-info", "content-encoding", "error-info", "mime-version", "proxy-authenticate",
        "proxy-authentication-info", "proxy-authorization", "www-authenticate",
    ]

    /// Whether libosip2 parses a message made of a neutral start line (Parley checks the real one) and the raw lines
    /// of every field it parses into a typed value and Parley does not read itself. No body is given: Parley frames
    /// the body itself, and libosip2 never sees a body (its multipart parser is where its leaks and CVEs are).
    static func accepts(_ framed: FramedMessage) -> Bool {
        guard framed.fields.contains(where: { isTypedByLibrary($0.key) }) else { return true }
        return libraryAccepts(framed) { isTypedByLibrary($0.key) }
    }

    /// `fieldsTypedByLibrary.contains(key)`, by length first: every field of every message is asked, and nearly all
    /// are none of these (a set lookup would hash each key).
    static func isTypedByLibrary(_ key: String) -> Bool {
        switch key.utf8.count {
        case 5: key == "allow"
        case 6: key == "accept"
        case 9: key == "call-info"
        case 10: key == "alert-info" || key == "error-info"
        case 12: key == "mime-version"
        case 13: key == "authorization"
        case 15: key == "accept-encoding" || key == "accept-language"
        case 16: key == "content-encoding" || key == "www-authenticate"
        case 18: key == "proxy-authenticate"
        case 19: key == "authentication-info" || key == "proxy-authorization"
        case 25: key == "proxy-authentication-info"
        default: false
        }
    }

    /// libosip2's verdict on the fields `including` picks (with a neutral start line; tests also ask it about the
    /// fields the gate leaves out).
    static func libraryAccepts(_ framed: FramedMessage, including: (SIPHeaderField) -> Bool) -> Bool {
        var buffer = Array((framed.looksLikeResponse ? "SIP/2.0 200 OK\r\n" : "OPTIONS sip:gate.invalid SIP/2.0\r\n").utf8)
        buffer.reserveCapacity(buffer.count + framed.bodyStart)
        for (field, range) in zip(framed.fields, framed.fieldRanges) where including(field) {
            buffer.append(contentsOf: framed.bytes[range])
            buffer.append(0x0D)
            buffer.append(0x0A)
        }
        buffer.append(0x0D)
        buffer.append(0x0A)
        // A NUL can only be the escaped octet of a quoted-pair here (framing checked); "x" keeps the syntax.
        for index in buffer.indices where buffer[index] == 0 { buffer[index] = UInt8(ascii: "x") }
        cosip_initialize()
        var pointer: UnsafeMutablePointer<osip_message_t>?
        guard osip_message_init(&pointer) == 0, let message = pointer else { return false }
        defer { osip_message_free(message) }
        let result = buffer.withUnsafeBytes { raw in
            osip_message_parse(message, raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count)
        }
        return result == 0
    }

    /// After `accepts` said no: the first field libosip2 refuses on its own, to name it in the reason phrase.
    static func firstRefusedField(_ fields: [SIPHeaderField]) -> SIPHeaderField? {
        cosip_initialize()
        var pointer: UnsafeMutablePointer<osip_message_t>?
        guard osip_message_init(&pointer) == 0, let message = pointer else { return nil }
        defer { osip_message_free(message) }
        for field in fields where isTypedByLibrary(field.key) {
            let input = OSIPInput(field.value)
            var name = Array(field.name.utf8CString)
            let status = input.withCString { value in
                name.withUnsafeMutableBufferPointer { nameBuffer in
                    // libosip2 lowercases the name and splits the value in place: give it copies it may write to.
                    guard let copy = strdup(value) else { return -1 as Int32 }
                    defer { free(copy) }
                    return osip_message_set_multiple_header(message, nameBuffer.baseAddress!, field.value.isEmpty ? nil : copy)
                }
            }
            if status != 0 { return field }
        }
        return nil
    }
}
