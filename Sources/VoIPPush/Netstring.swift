import Foundation

/// Why a byte stream is not a sequence of netstrings (`LENGTH:BYTES,`, D. J. Bernstein's format, which Kamailio's
/// evapi module uses with `netstring_format 1`). The stream is out of step afterwards: close the connection.
public enum NetstringError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The length prefix holds something other than decimal digits before its colon.
    case badLength(String)
    /// The length has a leading zero (`01:a,`), which the format forbids.
    case leadingZero
    /// The length is over the limit (or has more digits than any allowed length).
    case tooLong(length: Int, limit: Int)
    /// The byte after the payload is not the closing comma.
    case missingComma(found: UInt8)

    /// For logs.
    public var description: String {
        switch self {
        case .badLength(let text): "netstring length is not a decimal number: \(text.debugDescription)"
        case .leadingZero: "netstring length has a leading zero"
        case .tooLong(let length, let limit): "netstring of \(length) bytes is over the \(limit)-byte limit"
        case .missingComma(let byte): "netstring does not end with a comma (found byte \(byte))"
        }
    }
}

/// Splits a byte stream into netstring payloads whatever the byte boundaries of what arrives: feed it bytes as
/// they come, then take payloads until it has no whole one left. Pure: no I/O.
///
/// After a ``NetstringError`` the decoder stays failed (every later ``next()`` throws the same error): nothing
/// after a bad length can be trusted.
public struct NetstringDecoder: Sendable {
    /// The largest payload accepted, in bytes.
    public let maximumLength: Int
    private var buffer: [UInt8] = []
    private var head = 0
    private var failure: NetstringError?

    /// A decoder accepting payloads of up to `maximumLength` bytes (64 KiB by default).
    public init(maximumLength: Int = 65_536) {
        precondition(maximumLength >= 0, "netstring limit out of range")
        self.maximumLength = maximumLength
    }

    /// Bytes received and not yet returned as payloads.
    public var bufferedByteCount: Int { buffer.count - head }

    /// Appends received bytes.
    public mutating func feed(_ bytes: some Sequence<UInt8>) {
        guard failure == nil else { return }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole payload, or nil when more bytes are needed. Throws as soon as the length prefix is bad (a
    /// length over the limit is refused without waiting for its payload).
    public mutating func next() throws(NetstringError) -> Data? {
        if let failure { throw failure }
        do {
            guard let payload = try parse() else { return nil }
            if head > 4096 && head * 2 > buffer.count {
                buffer.removeFirst(head)
                head = 0
            }
            return payload
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func parse() throws(NetstringError) -> Data? {
        let digitLimit = String(maximumLength).count
        var index = head
        var length = 0
        while index < buffer.count, buffer[index] != UInt8(ascii: ":") {
            let byte = buffer[index]
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else {
                throw .badLength(String(decoding: buffer[head...index].prefix(16), as: UTF8.self))
            }
            if index > head && buffer[head] == UInt8(ascii: "0") { throw .leadingZero }
            guard index - head < digitLimit else { throw .tooLong(length: length * 10 + Int(byte - 48), limit: maximumLength) }
            length = length * 10 + Int(byte - UInt8(ascii: "0"))
            index += 1
        }
        if length > maximumLength { throw .tooLong(length: length, limit: maximumLength) }
        guard index < buffer.count else { return nil }  // the colon has not arrived yet
        guard index > head else { throw .badLength("") }
        let start = index + 1
        guard buffer.count >= start + length + 1 else { return nil }
        let end = start + length
        guard buffer[end] == UInt8(ascii: ",") else { throw .missingComma(found: buffer[end]) }
        head = end + 1
        return Data(buffer[start..<end])
    }
}
