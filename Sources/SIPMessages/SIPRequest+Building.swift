import Foundation

extension SIPRequest {
    /// A request with the headers RFC 3261 §8.1.1 requires, in the usual order: Via, Max-Forwards, To, From, Call-ID,
    /// CSeq, Contact, then `headers`, Content-Type (when a type is given) and Content-Length.
    ///
    /// `callID` must be `word["@"word]` and `cseq` below 2^31 (programming errors otherwise: they trap).
    public init(
        method: SIPMethod, uri: SIPURI, via: SIPVia, from: SIPAddress, to: SIPAddress, callID: String, cseq: UInt32,
        maxForwards: Int = 70, contact: SIPAddress? = nil, headers extra: SIPHeaders = [:],
        contentType: SIPContentType? = nil, body: Data = Data()
    ) {
        precondition(SIPSyntax.isCallID(callID), "Call-ID must be word[@word]: \(callID.debugDescription)")
        precondition((0...255).contains(maxForwards), "Max-Forwards runs from 0 to 255")
        var headers = SIPHeaders()
        headers.append("Via", via.headerValue)
        headers.append("Max-Forwards", String(maxForwards))
        headers.append("To", to.headerValue)
        headers.append("From", from.headerValue)
        headers.append("Call-ID", callID)
        headers.append("CSeq", SIPCSeq(number: cseq, method: method).headerValue)
        if let contact { headers.append("Contact", contact.headerValue) }
        for field in extra { headers.append(field) }
        if let contentType { headers.set("Content-Type", contentType.headerValue) }
        self.init(method: method, uri: uri, headers: headers, body: body)
    }

    /// A response to this request (RFC 3261 §8.2.6): every Via in order, From, To, Call-ID and CSeq copied as written,
    /// Timestamp too for a 100; `toTag` added to To unless it already has a tag (or the status is 100); then `headers`,
    /// Content-Type (when a type is given) and Content-Length. The reason phrase defaults to the standard one.
    /// Record-Route is not copied: a UAS copies it only into responses that establish a dialog (RFC 3261 §12.1.1),
    /// which the dialog layer knows; pass `copyingRecordRoute: true` there.
    public func makeResponse(
        statusCode: Int, reasonPhrase: String? = nil, toTag: String? = nil, copyingRecordRoute: Bool = false,
        headers extra: SIPHeaders = [:], contentType: SIPContentType? = nil, body: Data = Data()
    ) -> SIPResponse {
        SIPResponse(
            statusCode: statusCode, reasonPhrase: reasonPhrase,
            answering: answeringFields(statusCode: statusCode, toTag: toTag, copyingRecordRoute: copyingRecordRoute),
            headers: extra, contentType: contentType, body: body)
    }

    /// The fields ``makeResponse(statusCode:reasonPhrase:toTag:copyingRecordRoute:headers:contentType:body:)`` copies
    /// from this request, for building several responses from one copy (a 180 and the 200 after it): the same for
    /// every status but 100.
    public func answeringFields(statusCode: Int, toTag: String?, copyingRecordRoute: Bool) -> SIPHeaders {
        SIPResponse.answeringFields(
            headers: headers, statusCode: statusCode, toTag: toTag, copyingRecordRoute: copyingRecordRoute)
    }

    /// RFC 3261 §8.2.2.1: a user agent server refuses a Request-URI scheme it does not handle with 416. Throws an
    /// error whose `suggestedResponse` is `.unsupportedURIScheme` (RFC 4475 unkscm and novelsc parse, then get this).
    /// `supported` defaults to sip and sips.
    public func checkURIScheme(supported: Set<String>? = nil) throws(SIPParseError) {
        // The default compared directly: a set literal here was built (and its strings hashed) for every request.
        if let supported {
            guard !supported.contains(uri.scheme) else { return }
        } else {
            guard uri.scheme != "sip" && uri.scheme != "sips" else { return }
        }
        throw SIPParseError(.unsupportedURIScheme, reason: "Unsupported URI Scheme", isRequest: true, headers: headers)
    }
}

extension SIPResponse {
    /// A response made of the fields it copies from its request (`SIPRequest.answeringFields`), then `headers`,
    /// Content-Type (when a type is given) and Content-Length. The reason phrase defaults to the standard one.
    public init(
        statusCode: Int, reasonPhrase: String? = nil, answering copied: SIPHeaders, headers extra: SIPHeaders = [:],
        contentType: SIPContentType? = nil, body: Data = Data()
    ) {
        var fields = copied
        for field in extra { fields.append(field) }
        if let contentType { fields.set("Content-Type", contentType.headerValue) }
        // One initialiser: Content-Length is written once, for the final body.
        self.init(
            statusCode: statusCode, reasonPhrase: reasonPhrase ?? Self.standardReasonPhrase(for: statusCode),
            headers: fields, body: body)
    }

    /// The response skeleton for a request with these headers (also used for parse-error responses, whose header
    /// fields may be incomplete: what is missing is not invented).
    static func answering(
        headers: SIPHeaders, statusCode: Int, reasonPhrase: String, toTag: String?, copyingRecordRoute: Bool = false
    ) -> SIPResponse {
        SIPResponse(
            statusCode: statusCode, reasonPhrase: reasonPhrase,
            headers: answeringFields(
                headers: headers, statusCode: statusCode, toTag: toTag, copyingRecordRoute: copyingRecordRoute))
    }

    /// The header fields of ``answering(headers:statusCode:reasonPhrase:toTag:copyingRecordRoute:)``'s response.
    static func answeringFields(
        headers: SIPHeaders, statusCode: Int, toTag: String?, copyingRecordRoute: Bool
    ) -> SIPHeaders {
        // One pass picks out what is copied (this runs for every response Parley sends): the Vias (straight into the
        // copy) and Record-Routes in order, the first From, To, Call-ID, CSeq and Timestamp.
        var copied: [SIPHeaderField] = []
        copied.reserveCapacity(headers.count)
        var recordRoutes: [SIPHeaderField] = []
        var from: SIPHeaderField?, to: SIPHeaderField?, callID: SIPHeaderField?, cseq: SIPHeaderField?
        var timestamp: SIPHeaderField?
        for field in headers {
            switch field.key {
            case "via": copied.append(field)
            case "record-route": if copyingRecordRoute { recordRoutes.append(field) }
            case "from": if from == nil { from = field }
            case "to": if to == nil { to = field }
            case "call-id": if callID == nil { callID = field }
            case "cseq": if cseq == nil { cseq = field }
            case "timestamp": if statusCode == 100, timestamp == nil { timestamp = field }
            default: break
            }
        }
        var addedTag: String?
        if var field = to, statusCode != 100, let toTag {
            precondition(SIPSyntax.isToken(toTag), "A To tag is a token: \(toTag.debugDescription)")
            if let address = headers.to, address.tag == nil {
                field = SIPHeaderField(validatedName: field.name, value: field.value + ";tag=" + toTag)
                addedTag = toTag
                to = field
            }
        }
        copied += recordRoutes
        if let from { copied.append(from) }
        if let to { copied.append(to) }
        if let callID { copied.append(callID) }
        if let cseq { copied.append(cseq) }
        if let timestamp { copied.append(timestamp) }
        var fields = SIPHeaders(copied)
        // The request's typed values hold for the copies (a validated request has every one of these fields).
        fields.parsed = headers.parsed?.answering(toTag: addedTag, copyingRecordRoute: copyingRecordRoute)
        return fields
    }

    /// The reason phrase RFC 3261 §21 (and later RFCs) give `code`; "Unknown" for codes without one.
    public static func standardReasonPhrase(for code: Int) -> String {
        standardPhrases[code] ?? "Unknown"
    }

    private static let standardPhrases: [Int: String] = [
        100: "Trying", 180: "Ringing", 181: "Call Is Being Forwarded", 182: "Queued", 183: "Session Progress",
        200: "OK", 202: "Accepted", 300: "Multiple Choices", 301: "Moved Permanently", 302: "Moved Temporarily",
        305: "Use Proxy", 380: "Alternative Service", 400: "Bad Request", 401: "Unauthorized", 402: "Payment Required",
        403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable",
        407: "Proxy Authentication Required", 408: "Request Timeout", 410: "Gone", 413: "Request Entity Too Large",
        414: "Request-URI Too Long", 415: "Unsupported Media Type", 416: "Unsupported URI Scheme", 420: "Bad Extension",
        421: "Extension Required", 423: "Interval Too Brief", 480: "Temporarily Unavailable",
        481: "Call/Transaction Does Not Exist", 482: "Loop Detected", 483: "Too Many Hops", 484: "Address Incomplete",
        485: "Ambiguous", 486: "Busy Here", 487: "Request Terminated", 488: "Not Acceptable Here", 491: "Request Pending",
        493: "Undecipherable", 500: "Server Internal Error", 501: "Not Implemented", 502: "Bad Gateway",
        503: "Service Unavailable", 504: "Server Time-out", 505: "Version Not Supported", 513: "Message Too Large",
        555: "Push Notification Service Not Supported", 600: "Busy Everywhere", 603: "Decline",
        604: "Does Not Exist Anywhere", 606: "Not Acceptable",
    ]
}
