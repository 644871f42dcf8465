import Foundation
import ParleyIO

/// What arrives on a server's WebSocket connection: first the opening handshake's request head, then frames.
enum WebSocketInbound {
    /// The HTTP/1.1 request head, up to and including its blank line.
    case requestHead([UInt8])
    /// A frame (after the upgrade).
    case frame(WebSocketFrame)
}

/// Why a server's WebSocket byte stream cannot be followed.
enum WebSocketStreamFailure: Error, CustomStringConvertible {
    /// The request head passed ``WebSocketHandshake/maxRequestHeadBytes`` without its blank line.
    case headTooLarge
    /// A frame broke RFC 6455.
    case frame(WebSocketFrameError)

    var description: String {
        switch self {
        case .headTooLarge: "the request head is over \(WebSocketHandshake.maxRequestHeadBytes) bytes"
        case .frame(let error): error.description
        }
    }
}

/// The server side of a WebSocket byte stream: the request head, then client frames. Pure.
struct WebSocketServerCodec: StreamCodec {
    private var head: [UInt8] = []
    private var upgraded = false
    private var decoder: WebSocketFrameDecoder

    init(maxMessageBytes: Int) {
        // Control frames need 125 bytes whatever the message limit; messages are checked on their own.
        decoder = WebSocketFrameDecoder(maxPayloadBytes: max(maxMessageBytes, 125))
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        if upgraded { decoder.feed(bytes) } else { head.append(contentsOf: bytes) }
    }

    mutating func decode() -> Result<WebSocketInbound, WebSocketStreamFailure>? {
        guard upgraded else {
            guard let end = WebSocketHandshake.headEnd(in: head) else {
                return head.count > WebSocketHandshake.maxRequestHeadBytes ? .failure(.headTooLarge) : nil
            }
            guard end <= WebSocketHandshake.maxRequestHeadBytes else { return .failure(.headTooLarge) }
            // What follows the head (the client may pipeline its first frames) belongs to the frames.
            upgraded = true
            decoder.feed(head[end...])
            let request = Array(head[..<end])
            head = []
            return .success(.requestHead(request))
        }
        switch decoder.next() {
        case nil: return nil
        case .success(let frame): return .success(.frame(frame))
        case .failure(let error): return .failure(.frame(error))
        }
    }
}

/// RFC 6455 text messages on loopback TCP (browser frontends): the opening handshake with its Origin check, then
/// one control message per text message; pings answered, fragments joined, the closing handshake echoed, binary
/// messages (1003), invalid UTF-8 (1007) and protocol faults (1002) closed.
struct WebSocketFraming: ControlFraming {
    /// What a connection remembers.
    struct Session {
        /// The 101 went out: frames flow.
        var upgraded = false
        /// A text message begun by a frame without FIN.
        var fragments: [UInt8]?
    }

    let maxMessageBytes: Int
    var allowedOrigins: Set<String>
    /// The pages served beside the socket, if any, and the `Host` values they are served under.
    var site: WebSite? = nil
    var pageHosts: Set<String> = []
    /// Whether the connections are TLS: pages name `https://` and `wss://`.
    var secure = false

    func makeCodec() -> WebSocketServerCodec { WebSocketServerCodec(maxMessageBytes: maxMessageBytes) }
    func makeSession() -> Session { Session() }
    func carriesMessages(_ session: Session) -> Bool { session.upgraded }

    func interpret(_ frame: WebSocketInbound, session: inout Session) -> ControlInbound {
        switch frame {
        case .requestHead(let head):
            switch WebSocketHandshake.answer(
                head, allowedOrigins: allowedOrigins, site: site, pageHosts: pageHosts, secure: secure) {
            case .refuse(let status, let reason, let response):
                return .close(lastWords: response, reason: "handshake refused with \(status): \(reason)")
            case .serve(let status, let response):
                return .close(lastWords: response, reason: "a page request answered with \(status)")
            case .accept(let response):
                session.upgraded = true
                return .upgraded(response)
            }
        case .frame(let frame):
            return interpret(frame, session: &session)
        }
    }

    private func interpret(_ frame: WebSocketFrame, session: inout Session) -> ControlInbound {
        switch frame.opcode {
        case .text:
            guard session.fragments == nil else { return closing(.protocolError, "a new message inside a fragmented one") }
            if frame.isFinal { return deliver(Array(frame.payload)) }
            session.fragments = Array(frame.payload)
            return frame.payload.count > maxMessageBytes ? tooLarge : .nothing
        case .continuation:
            guard var message = session.fragments else { return closing(.protocolError, "a continuation frame outside a message") }
            session.fragments = nil
            message.append(contentsOf: frame.payload)
            guard message.count <= maxMessageBytes else { return tooLarge }
            guard frame.isFinal else {
                session.fragments = message
                return .nothing
            }
            return deliver(message)
        case .binary:
            return closing(.unsupportedData, "binary messages are not accepted")
        case .ping:
            return .reply(WebSocketFrameEncoder.encode(WebSocketFrame(.pong, frame.payload)))
        case .pong:
            return .nothing
        case .close:
            return closeReceived(frame.payload)
        }
    }

    func interpret(_ failure: WebSocketStreamFailure, session: Session) -> ControlInbound {
        switch failure {
        case .headTooLarge:
            guard case .refuse(let status, let reason, let response) = WebSocketHandshake.headTooLarge else {
                preconditionFailure("headTooLarge is a refusal")
            }
            return .close(lastWords: response, reason: "handshake refused with \(status): \(reason)")
        case .frame(let error):
            let closeFrame = WebSocketFrameEncoder.close(error.closeCode, reason: error.description)
            if case .tooLarge = error { return .tooLarge(closing: closeFrame) }
            return .close(lastWords: closeFrame, reason: error.description)
        }
    }

    func encode(_ message: Data) -> Data { WebSocketFrameEncoder.text(message) }

    func refusal(_ message: Data, reason: String, closeCode: WebSocketCloseCode, session: Session) -> Data {
        guard session.upgraded else {
            guard case .refuse(_, _, let response) = WebSocketHandshake.timedOut else {
                preconditionFailure("timedOut is a refusal")
            }
            return response
        }
        return WebSocketFrameEncoder.text(message) + WebSocketFrameEncoder.close(closeCode, reason: reason)
    }

    func farewell(_ code: WebSocketCloseCode, reason: String, session: Session) -> Data? {
        session.upgraded ? WebSocketFrameEncoder.close(code, reason: reason) : nil
    }

    var unitName: String { "a message" }

    private var tooLarge: ControlInbound { .tooLarge(closing: WebSocketFrameEncoder.close(.messageTooBig, reason: "message too big")) }

    private func closing(_ code: WebSocketCloseCode, _ reason: String) -> ControlInbound {
        .close(lastWords: WebSocketFrameEncoder.close(code, reason: reason), reason: reason)
    }

    private func deliver(_ message: [UInt8]) -> ControlInbound {
        guard message.count <= maxMessageBytes else { return tooLarge }
        guard String(validating: message, as: UTF8.self) != nil else {
            return closing(.invalidPayload, "a text message is not valid UTF-8")
        }
        return .message(Data(message))
    }

    /// Answers the client's close frame (RFC 6455 §5.5.1): echo its code, then close the connection.
    private func closeReceived(_ payload: Data) -> ControlInbound {
        guard !payload.isEmpty else {
            return .close(lastWords: WebSocketFrameEncoder.encode(WebSocketFrame(.close, Data())), reason: "the client closed the WebSocket")
        }
        guard payload.count >= 2 else { return closing(.protocolError, "a close frame with a 1-byte body") }
        let code = UInt16(payload[payload.startIndex]) << 8 | UInt16(payload[payload.startIndex + 1])
        // §7.4: 1000–1003, 1007–1011 and 1012–1014 are defined for the wire, 3000–4999 are for applications.
        guard (1000...1003).contains(code) || (1007...1014).contains(code) || (3000...4999).contains(code) else {
            return closing(.protocolError, "close code \(code) may not be sent")
        }
        guard String(validating: payload.dropFirst(2), as: UTF8.self) != nil else {
            return closing(.invalidPayload, "a close reason is not valid UTF-8")
        }
        return .close(
            lastWords: WebSocketFrameEncoder.encode(WebSocketFrame(.close, payload.prefix(2))),
            reason: "the client closed the WebSocket with \(code)")
    }
}
