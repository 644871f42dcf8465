import Foundation

/// What a WebSocket frame carries (RFC 6455 §5.2); the reserved opcodes are not listed and are a protocol error.
public enum WebSocketOpcode: UInt8, Sendable, Hashable, CaseIterable {
    /// A further fragment of the message a `text` or `binary` frame without FIN began.
    case continuation = 0x0
    /// UTF-8 text (a whole message, or its first fragment).
    case text = 0x1
    /// Binary data (a whole message, or its first fragment).
    case binary = 0x2
    /// The closing handshake: an optional status code and reason.
    case close = 0x8
    /// A keep-alive probe, answered with a pong carrying the same payload.
    case ping = 0x9
    /// The answer to a ping (or an unsolicited heartbeat).
    case pong = 0xA

    /// Whether this is a control frame (close, ping, pong): never fragmented, at most 125 bytes of payload.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// One WebSocket frame, its payload already unmasked.
public struct WebSocketFrame: Sendable, Hashable {
    /// Whether this is the last frame of its message (always true for control frames).
    public var isFinal: Bool
    /// What the frame carries.
    public var opcode: WebSocketOpcode
    /// The application data (unmasked).
    public var payload: Data

    /// A frame; `isFinal` defaults to a whole message.
    public init(_ opcode: WebSocketOpcode, _ payload: Data, isFinal: Bool = true) {
        self.isFinal = isFinal
        self.opcode = opcode
        self.payload = payload
    }
}

/// The status codes of a close frame this endpoint sends (RFC 6455 §7.4.1).
public enum WebSocketCloseCode: UInt16, Sendable, Hashable, CaseIterable {
    /// 1000: the purpose of the connection is fulfilled.
    case normal = 1000
    /// 1001: the server is going away (stopping).
    case goingAway = 1001
    /// 1002: the peer broke the protocol (an unmasked frame, a reserved bit or opcode, bad fragmentation…).
    case protocolError = 1002
    /// 1003: a data type this endpoint does not accept (binary frames).
    case unsupportedData = 1003
    /// 1007: a text message (or close reason) that is not valid UTF-8.
    case invalidPayload = 1007
    /// 1008: the connection broke a policy (no hello, a wrong token).
    case policyViolation = 1008
    /// 1009: a message over the size limit.
    case messageTooBig = 1009
    /// 1013: try again later (the server serves as many clients as it may).
    case tryAgainLater = 1013
}

/// Why a byte stream is not a valid sequence of client frames. Each maps to the close code to answer with.
public enum WebSocketFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// RSV1–3 set, and no extension was negotiated.
    case reservedBitsSet
    /// An opcode RFC 6455 reserves.
    case reservedOpcode(UInt8)
    /// A client frame without a mask (or a server frame with one, when the decoder reads a server's frames).
    case wrongMasking(expectedMasked: Bool)
    /// A close, ping or pong that is fragmented or carries more than 125 bytes.
    case invalidControlFrame
    /// A 64-bit length with its most significant bit set.
    case invalidLength
    /// A frame whose payload is longer than the limit.
    case tooLarge(length: UInt64, limit: Int)

    /// The close code this fault is answered with.
    public var closeCode: WebSocketCloseCode {
        switch self {
        case .reservedBitsSet, .reservedOpcode, .wrongMasking, .invalidControlFrame, .invalidLength: .protocolError
        case .tooLarge: .messageTooBig
        }
    }

    /// For people (and the close frame's reason).
    public var description: String {
        switch self {
        case .reservedBitsSet: "reserved bits set without an extension"
        case .reservedOpcode(let code): "reserved opcode \(code)"
        case .wrongMasking(let expectedMasked): expectedMasked ? "client frames must be masked" : "server frames must not be masked"
        case .invalidControlFrame: "a control frame is fragmented or longer than 125 bytes"
        case .invalidLength: "a 64-bit payload length has its top bit set"
        case .tooLarge(let length, let limit): "a frame of \(length) bytes is over the limit of \(limit)"
        }
    }
}

/// Reads WebSocket frames from a byte stream fed in pieces of any size (RFC 6455 §5.2). Pure: no I/O.
///
/// A payload longer than `maxPayloadBytes` is an error as soon as its header is read, so a peer cannot make us
/// buffer without bound. After an error the decoder stays failed: the stream cannot be followed any further.
public struct WebSocketFrameDecoder: Sendable {
    /// The longest payload of one frame.
    public let maxPayloadBytes: Int
    /// Whether frames must be masked (a server reading a client) or must not be (a client reading a server).
    public let expectsMasked: Bool
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already consumed.
    private var start = 0
    private var failure: WebSocketFrameError?

    /// A decoder for frames of at most `maxPayloadBytes`; `expectsMasked` is true on the server side.
    public init(maxPayloadBytes: Int, expectsMasked: Bool = true) {
        precondition(maxPayloadBytes >= 125, "a frame limit must hold a control frame")
        self.maxPayloadBytes = maxPayloadBytes
        self.expectsMasked = expectsMasked
    }

    /// Bytes fed and not yet handed out as frames.
    public var bufferedByteCount: Int { buffer.count - start }

    /// Adds received bytes.
    public mutating func feed(_ bytes: some Collection<UInt8>) {
        guard failure == nil else { return }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame, the error that stops the stream, or nil when more bytes are needed.
    public mutating func next() -> Result<WebSocketFrame, WebSocketFrameError>? {
        if let failure { return .failure(failure) }
        switch parse() {
        case nil:
            compact()
            return nil
        case .success(let frame):
            return .success(frame)
        case .failure(let error):
            failure = error
            buffer = []
            start = 0
            return .failure(error)
        }
    }

    private mutating func parse() -> Result<WebSocketFrame, WebSocketFrameError>? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        let first = buffer[start], second = buffer[start + 1]
        guard first & 0x70 == 0 else { return .failure(.reservedBitsSet) }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else { return .failure(.reservedOpcode(first & 0x0F)) }
        let isFinal = first & 0x80 != 0
        let masked = second & 0x80 != 0
        guard masked == expectsMasked else { return .failure(.wrongMasking(expectedMasked: expectsMasked)) }
        var headerLength = 2
        var length = UInt64(second & 0x7F)
        if opcode.isControl, !isFinal || length > 125 { return .failure(.invalidControlFrame) }
        if length == 126 {
            guard available >= 4 else { return nil }
            length = UInt64(buffer[start + 2]) << 8 | UInt64(buffer[start + 3])
            headerLength = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            length = buffer[(start + 2)..<(start + 10)].reduce(0) { $0 << 8 | UInt64($1) }
            guard length & (1 << 63) == 0 else { return .failure(.invalidLength) }
            headerLength = 10
        }
        guard length <= UInt64(maxPayloadBytes) else { return .failure(.tooLarge(length: length, limit: maxPayloadBytes)) }
        let maskLength = masked ? 4 : 0
        let total = headerLength + maskLength + Int(length)
        guard available >= total else { return nil }
        let payloadStart = start + headerLength + maskLength
        var payload = Array(buffer[payloadStart..<(start + total)])
        if masked {
            let key = buffer[(start + headerLength)..<payloadStart].map { $0 }
            for index in payload.indices { payload[index] ^= key[index & 3] }
        }
        start += total
        return .success(WebSocketFrame(opcode, Data(payload), isFinal: isFinal))
    }

    private mutating func compact() {
        guard start > 0 else { return }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 65_536 * 2)
            start = 0
        } else if start * 2 >= buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
    }
}

/// Writes WebSocket frames (RFC 6455 §5.2). Pure: no I/O.
public enum WebSocketFrameEncoder {
    /// The bytes of `frame`: unmasked (as a server sends) when `maskingKey` is nil, else masked with it (as a client
    /// must send). The shortest length encoding is used.
    public static func encode(_ frame: WebSocketFrame, maskingKey: [UInt8]? = nil) -> Data {
        precondition(maskingKey == nil || maskingKey?.count == 4, "a masking key is 4 bytes")
        precondition(!frame.opcode.isControl || (frame.isFinal && frame.payload.count <= 125), "an invalid control frame")
        var bytes = [UInt8]()
        bytes.reserveCapacity(frame.payload.count + 14)
        bytes.append((frame.isFinal ? 0x80 : 0) | frame.opcode.rawValue)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        let length = frame.payload.count
        if length < 126 {
            bytes.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            bytes.append(maskBit | 126)
            bytes.append(UInt8(length >> 8))
            bytes.append(UInt8(length & 0xFF))
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((UInt64(length) >> UInt64(shift)) & 0xFF)) }
        }
        if let maskingKey {
            bytes.append(contentsOf: maskingKey)
            for (index, byte) in frame.payload.enumerated() { bytes.append(byte ^ maskingKey[index & 3]) }
        } else {
            bytes.append(contentsOf: frame.payload)
        }
        return Data(bytes)
    }

    /// A text frame holding `message`.
    public static func text(_ message: Data) -> Data { encode(WebSocketFrame(.text, message)) }

    /// A close frame with `code` and `reason` (cut to fit the 125-byte control frame limit on a character boundary).
    public static func close(_ code: WebSocketCloseCode, reason: String) -> Data {
        var payload = Data([UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)])
        var text = Substring(reason)
        while text.utf8.count > 123 { text = text.dropLast() }
        payload.append(contentsOf: text.utf8)
        return encode(WebSocketFrame(.close, payload))
    }
}
