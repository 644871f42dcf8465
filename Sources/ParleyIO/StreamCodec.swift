/// How a byte stream is cut into frames: newline-delimited JSON lines (the control API), length-prefixed frames (the
/// push channel), WebSocket frames, SIP messages framed by Content-Length. Pure: bytes in, frames out; a
/// ``StreamChannel`` feeds it what it reads and hands every frame to its delegate.
///
/// After a failure the codec stays failed (every later ``decode()`` returns it again): nothing after a framing
/// fault can be trusted to start a frame, so the channel stops reading frames from it.
package protocol StreamCodec {
    /// One unit of what arrives: a line, a frame body, a SIP message.
    associatedtype Frame
    /// Why the stream cannot be followed any further.
    associatedtype Failure: Error

    /// Adds bytes read from the stream.
    mutating func feed(_ bytes: UnsafeRawBufferPointer)

    /// The next complete frame, the failure that stops the stream, or nil when more bytes are needed.
    mutating func decode() -> Result<Frame, Failure>?
}
