import Foundation
import ParleyIO

/// The push channel's stream framing: every frame is a 4-byte big-endian length followed by that many bytes of
/// UTF-8 JSON. A frame may be empty (length 0: the codec then rejects it as JSON, but the stream stays in step);
/// a length above the limit (64 KiB by default) means the peer is broken or not speaking this protocol at all
/// (`GET / HTTP/1.1` reads as a 1.2 GB length), so the stream cannot be trusted any further.
public enum PushFraming {
    /// The largest frame body, in bytes, either side accepts by default: 64 KiB.
    public static let defaultMaximumLength = 65_536
    /// The length prefix: 4 bytes, big-endian.
    public static let headerLength = 4
}

/// Why a byte stream cannot be split into frames. The stream is out of step afterwards: close the connection.
public enum FrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A frame announced a body longer than the limit.
    case tooLarge(length: Int, limit: Int)

    /// For logs and error replies.
    public var description: String {
        switch self {
        case .tooLarge(let length, let limit): "frame of \(length) bytes is over the \(limit)-byte limit"
        }
    }
}

/// Splits a byte stream into frame bodies, whatever the byte boundaries of what arrives: feed it bytes as they
/// come, then take frames until it has no whole one left.
///
/// After a ``FrameError`` the decoder stays failed (every later ``nextFrame()`` throws the same error) because
/// nothing after a bad length can be trusted.
public struct FrameDecoder: Sendable {
    /// The largest frame body accepted.
    public let maximumLength: Int
    private var buffer: [UInt8] = []
    /// The first byte of `buffer` not yet consumed.
    private var head = 0
    private var failure: FrameError?

    /// A decoder accepting bodies of up to `maximumLength` bytes (64 KiB by default).
    public init(maximumLength: Int = PushFraming.defaultMaximumLength) {
        precondition(maximumLength >= 0 && maximumLength <= Int(UInt32.max), "frame limit out of range")
        self.maximumLength = maximumLength
    }

    /// Bytes received and not yet returned as frames (including a partial header or body).
    public var bufferedByteCount: Int { buffer.count - head }

    /// Whether an error has put the decoder out of step for good.
    public var hasFailed: Bool { failure != nil }

    /// Appends received bytes.
    public mutating func feed(_ bytes: some Sequence<UInt8>) {
        guard failure == nil else { return }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame body, or nil when more bytes are needed. Throws as soon as a header announces a body
    /// over the limit (without waiting for that body).
    public mutating func nextFrame() throws(FrameError) -> Data? {
        if let failure { throw failure }
        guard buffer.count - head >= PushFraming.headerLength else {
            compact()
            return nil
        }
        let length = buffer[head..<(head + PushFraming.headerLength)].reduce(0) { ($0 << 8) | Int($1) }
        guard length <= maximumLength else {
            let error = FrameError.tooLarge(length: length, limit: maximumLength)
            failure = error
            buffer = []
            head = 0
            throw error
        }
        let start = head + PushFraming.headerLength
        guard buffer.count - start >= length else {
            compact()
            return nil
        }
        let body = Data(buffer[start..<(start + length)])
        head = start + length
        return body
    }

    /// Feeds `bytes` and returns every whole frame now available, in order.
    public mutating func frames(after bytes: some Sequence<UInt8>) throws(FrameError) -> [Data] {
        feed(bytes)
        var frames: [Data] = []
        while let frame = try nextFrame() { frames.append(frame) }
        return frames
    }

    /// Drops consumed bytes once they are worth moving the rest for.
    private mutating func compact() {
        if head == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 2 * PushFraming.defaultMaximumLength)
            head = 0
        } else if head >= 4096, head * 2 >= buffer.count {
            buffer.removeFirst(head)
            head = 0
        }
    }
}

/// Puts the length prefix in front of frame bodies.
public struct FrameEncoder: Sendable {
    /// The largest frame body this encoder writes.
    public let maximumLength: Int

    /// An encoder refusing bodies over `maximumLength` bytes (64 KiB by default).
    public init(maximumLength: Int = PushFraming.defaultMaximumLength) {
        precondition(maximumLength >= 0 && maximumLength <= Int(UInt32.max), "frame limit out of range")
        self.maximumLength = maximumLength
    }

    /// `body` with its 4-byte big-endian length in front.
    public func frame(_ body: Data) throws(FrameError) -> Data {
        guard body.count <= maximumLength else { throw .tooLarge(length: body.count, limit: maximumLength) }
        var framed = Data(capacity: PushFraming.headerLength + body.count)
        let length = UInt32(body.count)
        framed.append(contentsOf: [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)])
        framed.append(body)
        return framed
    }

    /// The framed JSON of `message` (see ``PushCodec``).
    public func frame(_ message: PushMessage) throws(FrameError) -> Data {
        try frame(PushCodec.encode(message))
    }
}

extension FrameDecoder: StreamCodec {
    package mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        buffer.append(contentsOf: bytes)
    }

    package mutating func decode() -> Result<Data, FrameError>? {
        do throws(FrameError) {
            return try nextFrame().map { .success($0) }
        } catch {
            return .failure(error)
        }
    }
}
