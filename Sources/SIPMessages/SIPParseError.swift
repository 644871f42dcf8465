/// What an element should do about a message that `SIPMessage.parse` refused (or that a user agent server must refuse).
///
/// Requests get an error response built from the headers that could be read; responses are never answered, only dropped
/// (RFC 3261 §18.1.2). The choice follows `Tests/TestData/rfc4475/INDEX.md`.
public enum SIPSuggestedResponse: Sendable, Hashable {
    /// Answer the request with 400 Bad Request, the error's `reason` as the reason phrase.
    case badRequest
    /// Answer the request with 505 Version Not Supported (RFC 3261 §21.5.6).
    case versionNotSupported
    /// Answer the request with 416 Unsupported URI Scheme (RFC 3261 §8.2.2.1).
    case unsupportedURIScheme
    /// Send nothing: the message is a response, or too broken to answer; count it and drop it.
    case drop

    /// The status code to answer with, or nil for `.drop`.
    public var statusCode: Int? {
        switch self {
        case .badRequest: 400
        case .versionNotSupported: 505
        case .unsupportedURIScheme: 416
        case .drop: nil
        }
    }
}

/// A message that Parley refuses, as a value: the peer's fault, never a crash.
///
/// `reason` names the problem in a few ASCII words that fit a reason phrase ("Missing header(s): Call-ID, From"); it never
/// quotes the peer's bytes beyond a header name. `headers` holds the header fields that could be read (for building the
/// error response: Via, From, To, Call-ID and CSeq are copied from them), empty when framing failed first.
public struct SIPParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem, for counters and tests.
    public enum Kind: Sendable, Hashable {
        /// The input is larger than `SIPMessage.maximumSize`; not looked at.
        case oversized(size: Int)
        /// The input holds nothing but line breaks (a keep-alive) or nothing at all.
        case emptyMessage
        /// A raw NUL octet in the start line or outside a quoted-pair in the header section.
        case nulByte
        /// A CR or LF in the header section that is not part of a CRLF pair.
        case bareLineBreak
        /// The header section does not end with an empty line.
        case unterminatedHeaderSection
        /// The request line or status line does not have the RFC 3261 shape.
        case malformedStartLine
        /// The SIP version is well formed but not SIP/2.0.
        case unsupportedVersion
        /// The status code is not three digits between 100 and 699.
        case invalidStatusCode
        /// A header line is not `name: value` (and not a continuation line).
        case malformedHeaderLine
        /// The named header field's value does not parse (as libosip2 or Parley's stricter checks read it).
        case malformedHeader(name: String)
        /// Headers RFC 3261 requires in every request and response are absent (canonical names, in a fixed order).
        case missingHeaders([String])
        /// A header that may appear once appears more than once (or carries several comma-separated values).
        case duplicateHeader(name: String)
        /// Content-Length is not a non-negative decimal number.
        case invalidContentLength
        /// Content-Length promises more body than the message holds.
        case contentLengthExceedsBody(declared: Int, received: Int)
        /// CSeq is not `number method` with a number below 2^31.
        case invalidCSeq
        /// The CSeq method differs from the request method.
        case cseqMethodMismatch
        /// Max-Forwards is not a number from 0 to 255.
        case invalidMaxForwards
        /// The Request-URI does not parse (LWS, angle brackets, URI headers, bad host or port).
        case invalidRequestURI
        /// The Request-URI scheme is not one the user agent server handles (see `SIPRequest.checkURIScheme`).
        case unsupportedURIScheme
    }

    /// The kind of problem.
    public let kind: Kind
    /// A short ASCII description that fits a reason phrase.
    public let reason: String
    /// What to send back, if anything.
    public let suggestedResponse: SIPSuggestedResponse
    /// The header fields that could be read before the problem was found (empty if framing failed).
    public internal(set) var headers: SIPHeaders

    /// Makes an error; `isRequest` decides between an error response and `.drop`.
    init(_ kind: Kind, reason: String, isRequest: Bool, headers: SIPHeaders = SIPHeaders()) {
        self.kind = kind
        self.reason = reason
        self.headers = headers
        guard isRequest else {
            suggestedResponse = .drop
            return
        }
        switch kind {
        case .oversized, .emptyMessage:
            suggestedResponse = .drop
        case .unsupportedVersion:
            suggestedResponse = .versionNotSupported
        case .unsupportedURIScheme:
            suggestedResponse = .unsupportedURIScheme
        case .nulByte, .bareLineBreak, .unterminatedHeaderSection, .malformedStartLine, .invalidStatusCode,
            .malformedHeaderLine, .malformedHeader, .missingHeaders, .duplicateHeader, .invalidContentLength,
            .contentLengthExceedsBody, .invalidCSeq, .cseqMethodMismatch, .invalidMaxForwards, .invalidRequestURI:
            suggestedResponse = .badRequest
        }
    }

    /// The same error with the header fields that were read attached.
    func with(headers: SIPHeaders) -> SIPParseError {
        var copy = self
        copy.headers = headers
        return copy
    }

    /// Whether `value` starts as a Via does: `SIP/x/TRANSPORT` then a host.
    private static func isViaShaped(_ value: String) -> Bool {
        let parts = value.trimmingCharacters(in: .whitespaces).split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count >= 2 else { return false }
        let protocolParts = parts[0].split(separator: "/", omittingEmptySubsequences: false)
        return protocolParts.count == 3 && protocolParts[0].uppercased() == "SIP" && protocolParts.allSatisfy { !$0.isEmpty }
    }

    /// "400 Missing header(s): Call-ID" or "drop: …".
    public var description: String {
        if let code = suggestedResponse.statusCode { return "\(code) \(reason)" }
        return "drop: \(reason)"
    }

    /// The error response to send for a refused request: the suggested status with `reason` as its phrase, Via, From,
    /// To, Call-ID and CSeq copied from the fields that could be read, and `toTag` added to To when it has none.
    /// Nil when the suggestion is `.drop` or there is no Via to send the response along (RFC 3261 §18.2.2): none, or
    /// one that is not even shaped as `SIP/version/transport sent-by` (answering garbage would only reflect it; a
    /// wrong version, as in RFC 4475's `badvers`, still gets its 505).
    public func errorResponse(toTag: String? = nil) -> SIPResponse? {
        guard let code = suggestedResponse.statusCode, let via = headers["Via"], Self.isViaShaped(via) else { return nil }
        return SIPResponse.answering(headers: headers, statusCode: code, reasonPhrase: reason, toTag: toTag)
    }
}
