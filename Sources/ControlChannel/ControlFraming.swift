import Foundation
import ParleyIO

/// What a frame of a control connection means to the server core, once the framing has dealt with its own protocol
/// (WebSocket pings, fragments and closing handshake; nothing for lines).
enum ControlInbound {
    /// One complete message from the client (a line, a text message): the hello, or a request.
    case message(Data)
    /// The framing answered something of its own (a pong, the upgrade's 101): send these bytes, nothing else.
    case reply(Data)
    /// The WebSocket upgrade was accepted (the 101 is in the bytes): send them; messages can flow now.
    case upgraded(Data)
    /// The framing ends the connection: send `lastWords` (a close frame, an HTTP refusal) and close, flushing.
    case close(lastWords: Data, reason: String)
    /// A message over the size limit: the client is told (with the core's error) and the connection closed.
    case tooLarge(closing: Data?)
    /// Nothing to do (a pong, a fragment of a message still to come).
    case nothing
}

/// How control messages travel on one kind of connection: the codec that frames the byte stream, the per-connection
/// state of the framing's own protocol, and how a message, a refusal and a farewell are written. The two framings
/// are ``LineFraming`` (newline-delimited JSON on the Unix socket) and ``WebSocketFraming`` (RFC 6455 text messages):
/// the hello, token check, client cap and every other rule of the control API live once, in ``ControlServerCore``.
protocol ControlFraming: Sendable {
    /// Frames the byte stream.
    associatedtype Codec: StreamCodec
    /// What the framing remembers about one connection.
    associatedtype Session

    /// The codec of a new connection.
    func makeCodec() -> Codec
    /// The session of a new connection.
    func makeSession() -> Session
    /// Whether the connection can carry messages (a WebSocket only once upgraded).
    func carriesMessages(_ session: Session) -> Bool
    /// What one frame means.
    func interpret(_ frame: Codec.Frame, session: inout Session) -> ControlInbound
    /// What a framing failure means.
    func interpret(_ failure: Codec.Failure, session: Session) -> ControlInbound
    /// The bytes carrying one message to the client.
    func encode(_ message: Data) -> Data
    /// The last words of a refused connection: `message` (an error line) and, for a WebSocket, a close frame with
    /// `closeCode` — or, before the upgrade, an HTTP refusal.
    func refusal(_ message: Data, reason: String, closeCode: WebSocketCloseCode, session: Session) -> Data
    /// What a connection is offered when the server closes it (a WebSocket's close frame with `code`).
    func farewell(_ code: WebSocketCloseCode, reason: String, session: Session) -> Data?
    /// What the client's unit of sending is called in errors: "a line", "a message".
    var unitName: String { get }
}

/// Newline-delimited JSON lines (the Unix socket).
struct LineFraming: ControlFraming {
    let maxLineBytes: Int

    func makeCodec() -> LineDecoder { LineDecoder(maximumLength: maxLineBytes) }
    func makeSession() {}
    func carriesMessages(_ session: Void) -> Bool { true }

    func interpret(_ frame: Data, session: inout Void) -> ControlInbound { .message(frame) }

    func interpret(_ failure: LineTooLarge, session: Void) -> ControlInbound { .tooLarge(closing: nil) }

    func encode(_ message: Data) -> Data { message + Data([0x0A]) }

    func refusal(_ message: Data, reason: String, closeCode: WebSocketCloseCode, session: Void) -> Data {
        encode(message)
    }

    func farewell(_ code: WebSocketCloseCode, reason: String, session: Void) -> Data? { nil }

    var unitName: String { "a line" }
}

/// A line over the limit: the stream cannot be followed any further.
struct LineTooLarge: Error, CustomStringConvertible {
    var description: String { "a line over the limit" }
}

extension LineDecoder: StreamCodec {
    mutating func decode() -> Result<Data, LineTooLarge>? {
        switch next() {
        case nil: nil
        case .line(let line): .success(line)
        case .tooLarge: .failure(LineTooLarge())
        }
    }
}
