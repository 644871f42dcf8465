import Foundation

/// A SIP message (RFC 3261 §7): a request or a response.
///
/// `parse` turns untrusted bytes into a validated value or a `SIPParseError`; `serialize` writes the value back, from
/// the Swift values alone (libosip2 never re-serialises peer input). For every message `m` that `parse` returned or
/// that was built from well-formed parts, `SIPMessage.parse(m.serialize()) == m`.
public enum SIPMessage: Sendable, Hashable {
    /// A request.
    case request(SIPRequest)
    /// A response.
    case response(SIPResponse)

    /// The largest input `parse` looks at: 64 KiB (a UDP datagram cannot be larger; streams must not send more).
    public static let maximumSize = 65_536

    /// Parses and validates one message.
    ///
    /// The input is read as one datagram: a body runs for Content-Length octets and octets after it are ignored
    /// (RFC 4475 dblreq); without Content-Length the body is the rest of the input (RFC 3261 §18.3). Stream transports
    /// frame by Content-Length and hand each message over the same way. Leading CRLFs (keep-alives) are skipped.
    ///
    /// Refused: input over 64 KiB; a header section that is not CRLF-framed and ended by an empty line; NUL or other
    /// control octets outside a quoted-pair; a start line that is not exactly `Method SP Request-URI SP SIP/2.0` or
    /// `SIP/2.0 SP 3DIGIT SP Reason` (other versions: 505); a Request-URI in `<>`, with whitespace or with URI headers;
    /// a status code outside 100–699; missing Via, From, To, Call-ID or CSeq; From, To, Call-ID, CSeq, Max-Forwards,
    /// Content-Length or Content-Type more than once; a Via, From, To, Contact, Route or Record-Route value that does
    /// not parse; a CSeq number of 2^31 or more, or a CSeq method unlike the request's; Max-Forwards outside 0–255;
    /// a negative, malformed or too large Content-Length. Of RFC 4475's "either" cases only a bad Date is accepted
    /// (Parley does not read Date); lwsstart, trws, escruri, badaspec and regbadct are refused with 400.
    /// `SIPParseError.suggestedResponse` says what to send back.
    ///
    /// With a `memo`, Request-URIs and addresses seen recently are taken from it rather than parsed again (the same
    /// result; see ``SIPParseMemo``).
    public static func parse(_ bytes: Data, memo: SIPParseMemo? = nil) throws(SIPParseError) -> SIPMessage {
        guard bytes.count <= maximumSize else {
            throw SIPParseError(
                .oversized(size: bytes.count), reason: "Message larger than \(maximumSize) octets", isRequest: false)
        }
        let framed = try MessageFraming.frame(bytes)
        return try MessageValidation.validate(framed, memo: memo)
    }

    /// The message as octets: start line, header fields as stored, an empty line, the body.
    public func serialize() -> Data {
        switch self {
        case .request(let request): request.serialize()
        case .response(let response): response.serialize()
        }
    }

    /// The header fields.
    public var headers: SIPHeaders {
        switch self {
        case .request(let request): request.headers
        case .response(let response): response.headers
        }
    }

    /// The body.
    public var body: Data {
        switch self {
        case .request(let request): request.body
        case .response(let response): response.body
        }
    }

    /// The request, if this is one.
    public var request: SIPRequest? {
        if case .request(let request) = self { return request }
        return nil
    }

    /// The response, if this is one.
    public var response: SIPResponse? {
        if case .response(let response) = self { return response }
        return nil
    }
}

/// A SIP request: method, Request-URI, header fields and body.
///
/// Content-Length is managed: whenever `headers` or `body` change, exactly one Content-Length field equal to the
/// body's size remains (an existing correct one is left as written).
public struct SIPRequest: Sendable, Hashable {
    /// The method.
    public var method: SIPMethod
    /// The Request-URI.
    public var uri: SIPURI
    /// The header fields in order.
    public var headers: SIPHeaders {
        didSet { headers.normalizeContentLength(bodyCount: body.count) }
    }
    /// The body (often SDP).
    public var body: Data {
        didSet { headers.normalizeContentLength(bodyCount: body.count) }
    }

    /// A request with these parts; Content-Length is set from `body`.
    public init(method: SIPMethod, uri: SIPURI, headers: SIPHeaders, body: Data = Data()) {
        self.method = method
        self.uri = uri
        self.headers = headers
        self.body = body
        self.headers.normalizeContentLength(bodyCount: body.count)
    }

    /// The request line and headers, an empty line, the body.
    public func serialize() -> Data {
        MessageWriter.write(startLine: "\(method.token) \(uri) SIP/2.0", headers: headers, body: body)
    }
}

/// A SIP response: status code, reason phrase, header fields and body.
///
/// Content-Length is managed as in `SIPRequest`.
public struct SIPResponse: Sendable, Hashable {
    /// The status code, 100 to 699.
    public var statusCode: Int {
        willSet { precondition((100...699).contains(newValue), "SIP status codes run from 100 to 699") }
    }
    /// The reason phrase as written (may be empty; may be any UTF-8 text without CR or LF).
    public var reasonPhrase: String
    /// The header fields in order.
    public var headers: SIPHeaders {
        didSet { headers.normalizeContentLength(bodyCount: body.count) }
    }
    /// The body.
    public var body: Data {
        didSet { headers.normalizeContentLength(bodyCount: body.count) }
    }

    /// A response; `statusCode` must be 100 to 699 (a programming error otherwise). CR and LF in the reason phrase
    /// become spaces. Content-Length is set from `body`.
    public init(statusCode: Int, reasonPhrase: String, headers: SIPHeaders, body: Data = Data()) {
        precondition((100...699).contains(statusCode), "SIP status codes run from 100 to 699")
        self.statusCode = statusCode
        self.reasonPhrase = reasonPhrase.utf8.contains { $0 == 0x0D || $0 == 0x0A }
            ? String(reasonPhrase.map { $0 == "\r" || $0 == "\n" || $0 == "\r\n" ? " " : $0 }) : reasonPhrase
        self.headers = headers
        self.body = body
        self.headers.normalizeContentLength(bodyCount: body.count)
    }

    /// This response without the typed header values a parsed or answered message carries: the same fields and
    /// bytes, for a response that is only ever serialised again (a transaction keeps its final response for
    /// retransmissions for 32 s, and the typed values are most of its memory).
    public var textOnly: SIPResponse {
        var copy = self
        copy.headers = headers.droppingParsedValues()
        return copy
    }

    /// Whether this is a provisional (1xx) response.
    public var isProvisional: Bool { statusCode < 200 }

    /// Whether this is a final success (2xx) response.
    public var isSuccess: Bool { (200..<300).contains(statusCode) }

    /// The status line and headers, an empty line, the body.
    public func serialize() -> Data {
        MessageWriter.write(startLine: "SIP/2.0 \(statusCode) \(reasonPhrase)", headers: headers, body: body)
    }
}

/// Writes messages from Swift values (never through libosip2's `*_to_str`, where its CVEs cluster).
enum MessageWriter {
    /// `startLine` CRLF, `name: value` CRLF for each field, CRLF, body. CR and LF in the start line (a reason phrase
    /// or opaque URI set by hand) become spaces; field values cannot hold them.
    static func write(startLine: String, headers: SIPHeaders, body: Data) -> Data {
        // Written as bytes straight into the Data's own buffer (this runs for every message Parley sends).
        var size = startLine.utf8.count + body.count + 4
        for field in headers { size += field.name.utf8.count + field.value.utf8.count + 4 }
        var data = Data(count: size)
        data.withUnsafeMutableBytes { raw in
            var writer = ByteWriter(raw.bindMemory(to: UInt8.self))
            for byte in startLine.utf8 { writer.put(byte == 0x0D || byte == 0x0A ? 0x20 : byte) }
            writer.putLineEnd()
            // Copied from each string's contiguous UTF-8 (a memcpy), not appended byte by byte.
            for field in headers {
                writer.put(field.name)
                writer.put(0x3A)
                writer.put(0x20)
                writer.put(field.value)
                writer.putLineEnd()
            }
            writer.putLineEnd()
            body.withUnsafeBytes { writer.put($0) }
            precondition(writer.position == size, "the message's size was counted wrong")
        }
        return data
    }
}

/// Writes bytes one after another into a buffer sized beforehand (running past its end is a programming error).
private struct ByteWriter {
    private let buffer: UnsafeMutableBufferPointer<UInt8>
    /// How many bytes are written.
    private(set) var position = 0

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        self.buffer = buffer
    }

    mutating func put(_ byte: UInt8) {
        precondition(position < buffer.count, "writing past the buffer")
        buffer[position] = byte
        position += 1
    }

    mutating func putLineEnd() {
        put(0x0D)
        put(0x0A)
    }

    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        precondition(position + bytes.count <= buffer.count, "writing past the buffer")
        (buffer.baseAddress! + position).update(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        position += bytes.count
    }

    mutating func put(_ text: String) {
        text.withUTF8Bytes { put(UnsafeRawBufferPointer($0)) }
    }
}
