import Foundation

/// The verdict libosip2 does not give: after framing, every rule below must hold or the message is refused with a
/// `SIPParseError` naming the first problem found. In order:
///
/// 1. Start line. Request-Line = `Method SP Request-URI SP SIP-Version`, single spaces, nothing after the version
///    (RFC 4475 lwsstart and trws: the "either" cases are refused). The method is a token; the version is `SIP/2.0`
///    (any other well-formed version: 505, badvers). The Request-URI is not in `<>` (ltgtruri), has no whitespace
///    (lwsruri), parses, and as a SIP URI carries no `?headers` (escruri: refused, RFC 3261 §19.1.5 forbids them in a
///    Request-URI). Status-Line = `SIP/2.0 SP 3DIGIT SP Reason-Phrase` with the code 100–699 (bigcode); the SP after
///    the code may be missing when the phrase is empty.
/// 2. Via, From, To, Call-ID and CSeq are present (insuf); From, To, Call-ID, CSeq, Max-Forwards, Content-Length and
///    Content-Type appear at most once (multi01, mcl01). Max-Forwards may be absent (inv2543, RFC 2543 style).
/// 3. libosip2's `osip_message_parse` accepts the other header fields (Accept, Allow, Authorization, …); if not, the
///    first field it refuses on its own is named. The fields of rule 4 go through libosip2's per-header parsers
///    instead (parsing them in both would do the work twice).
/// 4. Each Via, From, To, Contact, Route and Record-Route value parses with a valid host and port; Call-ID is
///    `word["@"word]`; CSeq is a number below 2^31 and a method token (scalar02, scalarlg); Max-Forwards is 0–255;
///    Content-Type parses. Other headers (Date, Expires, Retry-After, …) are carried as text, not judged (baddate).
/// 5. Content-Length, if present, is a non-negative decimal no larger than the body received (ncl, clerr); the body is
///    that many octets and the rest is ignored (dblreq). Without it the body is the rest of the datagram.
/// 6. A request's CSeq method equals its method (mismatch01, mismatch02).
enum MessageValidation {
    /// Headers every request and response must carry (RFC 3261 §8.1.1), in the order reasons list them.
    static let requiredHeaders = ["Via", "From", "To", "Call-ID", "CSeq"]
    /// Headers that may appear only once (RFC 3261 §7.3.1: they are not comma-separated lists).
    static let singleHeaders = ["From", "To", "Call-ID", "CSeq", "Max-Forwards", "Content-Length", "Content-Type"]

    /// The keys counted for rule 2: the required headers first (in their order), then the other single ones — via, from,
    /// to, call-id, cseq, max-forwards, content-length, content-type: `ReadFields` counts them in these slots.
    private static let countedKeys: [String] = {
        var keys = requiredHeaders.map(\.asciiLowercased)
        for name in singleHeaders where !keys.contains(name.asciiLowercased) { keys.append(name.asciiLowercased) }
        return keys
    }()
    private static let singleKeys: Set<String> = Set(singleHeaders.map(\.asciiLowercased))

    private enum StartLine {
        case request(SIPMethod, SIPURI)
        case response(Int, String)
    }

    /// Applies the rules to a framed message.
    static func validate(_ framed: FramedMessage, memo: SIPParseMemo? = nil) throws(SIPParseError) -> SIPMessage {
        let isRequest = !framed.looksLikeResponse
        let headers = SIPHeaders(framed.fields)
        func failure(_ kind: SIPParseError.Kind, _ reason: String) -> SIPParseError {
            SIPParseError(kind, reason: reason, isRequest: isRequest, headers: headers)
        }

        let startLine = isRequest
            ? try requestLine(framed.startLine, memo, failure) : try statusLine(framed.startLine, failure)

        // One pass picks out the fields rules 2, 4 and 5 read, and counts them (in countedKeys' slots: the assertion,
        // checked in debug builds and so by the tests, keeps the two in step).
        assert(countedKeys == ["via", "from", "to", "call-id", "cseq", "max-forwards", "content-length", "content-type"])
        let read = ReadFields(framed.fields)
        let counts = read.counts
        if counts[requiredHeaders.indices].contains(0) {
            let missing = requiredHeaders.indices.filter { counts[$0] == 0 }.map { requiredHeaders[$0] }
            throw failure(.missingHeaders(missing), "Missing header(s): \(missing.joined(separator: ", "))")
        }
        for (slot, key) in countedKeys.enumerated() where counts[slot] > 1 && singleKeys.contains(key) {
            let name = SIPHeaders.canonicalName(key)
            throw failure(.duplicateHeader(name: name), "Multiple \(name) headers")
        }

        guard OSIPMessageGate.accepts(framed) else {
            guard let field = OSIPMessageGate.firstRefusedField(framed.fields) else {
                throw failure(.malformedHeaderLine, "Malformed header section")
            }
            let name = SIPHeaders.canonicalName(field.name)
            throw failure(.malformedHeader(name: name), "Malformed \(name) header")
        }

        let (parsed, contentLength) = try readValues(read, memo, failure)

        var bodyLength = framed.bodyCount
        if let value = contentLength {
            guard let declared = SIPSyntax.decimal(value, limit: Int(Int32.max)) else {
                throw failure(.invalidContentLength, "Invalid Content-Length")
            }
            guard declared <= framed.bodyCount else {
                throw failure(
                    .contentLengthExceedsBody(declared: declared, received: framed.bodyCount),
                    "Content-Length larger than body")
            }
            bodyLength = declared
        }
        let body = Data(framed.bytes[framed.bodyStart..<(framed.bodyStart + bodyLength)])
        var checked = headers
        checked.normalizeContentLength(bodyCount: bodyLength)
        checked.parsed = parsed

        switch startLine {
        case .request(let method, let uri):
            guard parsed.cseq.method == method else {
                throw failure(.cseqMethodMismatch, "CSeq method does not match request method")
            }
            return .request(SIPRequest(method: method, uri: uri, headers: checked, body: body))
        case .response(let code, let reason):
            return .response(SIPResponse(statusCode: code, reasonPhrase: reason, headers: checked, body: body))
        }
    }

    private static func requestLine(
        _ line: String, _ memo: SIPParseMemo?, _ failure: (SIPParseError.Kind, String) -> SIPParseError
    ) throws(SIPParseError) -> StartLine {
        // Exactly two single spaces, with something between and around them.
        let utf8 = line.utf8
        guard let first = utf8.firstIndex(of: 0x20), let second = utf8[utf8.index(after: first)...].firstIndex(of: 0x20),
            !utf8[utf8.index(after: second)...].contains(0x20), first != utf8.startIndex,
            utf8.index(after: first) != second, utf8.index(after: second) != utf8.endIndex
        else { throw failure(.malformedStartLine, "Malformed Request-Line") }
        let method = line[..<first]
        guard SIPSyntax.isToken(method) else { throw failure(.malformedStartLine, "Malformed method") }
        try checkVersion(line[line.index(after: second)...], failure)
        let uriText = String(line[line.index(after: first)..<second])
        guard !uriText.hasPrefix("<") else {
            throw failure(.invalidRequestURI, "Request-URI enclosed in angle brackets")
        }
        let parsedURI: SIPURI?
        if let memo { parsedURI = memo.uri(uriText) { SIPURI($0) } } else { parsedURI = SIPURI(uriText) }
        guard let uri = parsedURI else { throw failure(.invalidRequestURI, "Malformed Request-URI") }
        guard uri.headers.isEmpty else { throw failure(.invalidRequestURI, "Request-URI with URI headers") }
        return .request(SIPMethod(String(method)), uri)
    }

    private static func statusLine(
        _ line: String, _ failure: (SIPParseError.Kind, String) -> SIPParseError
    ) throws(SIPParseError) -> StartLine {
        guard let space = line.firstIndex(of: " ") else { throw failure(.malformedStartLine, "Malformed Status-Line") }
        try checkVersion(line[..<space], failure)
        let rest = line[line.index(after: space)...]
        let code = rest.prefix { $0 != " " }
        guard code.utf8.count == 3, let value = SIPSyntax.decimal(code, limit: 999), (100...699).contains(value) else {
            throw failure(.invalidStatusCode, "Invalid status code")
        }
        let afterCode = rest[code.endIndex...]
        let reason = afterCode.isEmpty ? "" : String(afterCode.dropFirst())
        return .response(value, reason)
    }

    /// SIP-Version = "SIP" "/" 1*DIGIT "." 1*DIGIT ("SIP" in any case); only 2.0 is supported.
    private static func checkVersion(
        _ text: Substring, _ failure: (SIPParseError.Kind, String) -> SIPParseError
    ) throws(SIPParseError) {
        if text.utf8.elementsEqual("SIP/2.0".utf8) { return }  // nearly every message
        let upper = text.uppercased()
        guard upper.hasPrefix("SIP/") else { throw failure(.malformedStartLine, "Malformed SIP version") }
        let numbers = upper.dropFirst(4).split(separator: ".", omittingEmptySubsequences: false)
        guard numbers.count == 2, numbers.allSatisfy({ SIPSyntax.decimal($0, limit: Int.max / 10) != nil }) else {
            throw failure(.malformedStartLine, "Malformed SIP version")
        }
        guard upper == "SIP/2.0" else { throw failure(.unsupportedVersion, "SIP Version Not Supported") }
    }

    /// The fields rule 4 reads, picked out in one pass over the message's fields (a lookup per name would scan them
    /// a dozen times). Single fields were counted (rule 2), so each holds the only such field, if any.
    private struct ReadFields {
        /// How many fields of each of `countedKeys` there are, in that order.
        var counts = [Int](repeating: 0, count: 8)
        var vias: [String] = []
        var from: String?
        var to: String?
        var callID: String?
        var cseq: String?
        var maxForwards: String?
        var contentType: String?
        var contentLength: String?
        var contacts: [String] = []
        var routes: [String] = []
        var recordRoutes: [String] = []

        /// Counts a field of `countedKeys[slot]`; true for the first one.
        private mutating func counted(_ slot: Int) -> Bool {
            counts[slot] += 1
            return counts[slot] == 1
        }

        init(_ fields: [SIPHeaderField]) {
            for field in fields {
                // By length first: most fields are then told apart by one comparison.
                let key = field.key
                switch key.utf8.count {
                // The first of each single field is kept; rule 2 refuses a second one before anything reads it.
                case 2: if key == "to", counted(2) { to = field.value }
                case 3:
                    if key == "via" {
                        counts[0] += 1
                        vias.append(field.value)
                    }
                case 4:
                    if key == "from" {
                        if counted(1) { from = field.value }
                    } else if key == "cseq" {
                        if counted(4) { cseq = field.value }
                    }
                case 5: if key == "route" { routes.append(field.value) }
                case 7:
                    if key == "call-id" {
                        if counted(3) { callID = field.value }
                    } else if key == "contact" {
                        contacts.append(field.value)
                    }
                case 12:
                    if key == "content-type" {
                        if counted(7) { contentType = field.value }
                    } else if key == "max-forwards" {
                        if counted(5) { maxForwards = field.value }
                    } else if key == "record-route" {
                        recordRoutes.append(field.value)
                    }
                case 14: if key == "content-length", counted(6) { contentLength = field.value }
                default: break
                }
            }
        }
    }

    /// Rule 4: the values Parley reads must parse; they are kept with the headers. Also returns the Content-Length
    /// text, for rule 5.
    private static func readValues(
        _ read: ReadFields, _ memo: SIPParseMemo?, _ failure: (SIPParseError.Kind, String) -> SIPParseError
    ) throws(SIPParseError) -> (ParsedHeaders, contentLength: String?) {
        func address(_ text: String) -> SIPAddress? {
            guard let memo else { return OSIPHeaderReader.address(text) }
            return memo.address(text) { OSIPHeaderReader.address($0) }
        }
        func malformed(_ name: String) -> SIPParseError { failure(.malformedHeader(name: name), "Malformed \(name) header") }
        var vias: [SIPVia] = []
        vias.reserveCapacity(read.vias.count)
        for field in read.vias {
            for value in SIPSyntax.splitValues(field) {
                guard let via = OSIPHeaderReader.via(value) else { throw malformed("Via") }
                vias.append(via)
            }
        }
        // Presence was checked (rule 2).
        guard let from = read.from.flatMap(address) else { throw malformed("From") }
        guard let to = read.to.flatMap(address) else { throw malformed("To") }
        guard let callID = read.callID, SIPSyntax.isCallID(callID) else { throw malformed("Call-ID") }
        guard let cseq = read.cseq.flatMap(OSIPHeaderReader.cseq) else {
            throw failure(.invalidCSeq, "Malformed CSeq header")
        }
        var maxForwards: Int?
        if let value = read.maxForwards {
            guard let number = SIPSyntax.decimal(value, limit: 255) else {
                throw failure(.invalidMaxForwards, "Invalid Max-Forwards")
            }
            maxForwards = number
        }
        var contentType: SIPContentType?
        if let value = read.contentType {
            guard let type = OSIPHeaderReader.contentType(value) else { throw malformed("Content-Type") }
            contentType = type
        }
        func addresses(_ fields: [String], _ name: String) throws(SIPParseError) -> [SIPAddress] {
            var addresses: [SIPAddress] = []
            for field in fields {
                for value in SIPSyntax.splitValues(field) where !(name == "Contact" && value == "*") {
                    guard let parsed = address(String(value)) else { throw malformed(name) }
                    addresses.append(parsed)
                }
            }
            return addresses
        }
        let parsed = ParsedHeaders(
            vias: vias, from: from, to: to, callID: callID, cseq: cseq, maxForwards: maxForwards,
            contentType: contentType, contacts: try addresses(read.contacts, "Contact"),
            routes: try addresses(read.routes, "Route"), recordRoutes: try addresses(read.recordRoutes, "Record-Route"))
        return (parsed, read.contentLength)
    }
}
