import ParleyIO
import Foundation
import Glibc

/// What a byte stream held next.
enum StreamFrame: Equatable {
    /// One whole SIP message: header section and exactly Content-Length body bytes.
    case message(Data)
    /// A keep-alive ping (CRLFCRLF between messages, RFC 5626 §3.5.1): answer with a pong (CRLF).
    case ping
}

/// Why a byte stream cannot be framed; the connection must close (RFC 3261 §18.3: Content-Length is mandatory on
/// streams, so nothing after the fault can be trusted to start a message).
enum StreamFramingError: Error, Equatable {
    /// A header section without Content-Length (nor its compact form "l").
    case missingContentLength
    /// A Content-Length that is not a decimal number (negative, empty, junk), or two that disagree.
    case invalidContentLength
    /// The message would be longer than the limit (header section alone, or with its declared body).
    case oversize
}

/// Cuts a TCP or TLS byte stream into SIP messages by Content-Length (RFC 3261 §18.3). Pure: bytes in, frames out.
///
/// Feed it with `append`, then call `next()` until it returns nil. Between messages, CRLFs are skipped; a double
/// CRLF is reported as a ping. A single CRLF followed by nothing yet is held back until the next byte decides
/// whether it is a pong (skipped) or half of a ping. After an error the framer stays failed.
struct StreamFramer {
    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A

    /// Largest message accepted (header section plus body).
    let maxMessageBytes: Int
    private var buffer: [UInt8] = []
    /// The first byte not yet consumed.
    private var start = 0
    /// Where the search for the end of the header section resumes (bytes before it were searched already).
    private var searchFrom = 0
    /// The end of the current message, once its header section has been read.
    private var messageEnd: Int?
    /// The error that stopped the framer, if any.
    private(set) var failure: StreamFramingError?

    init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// Bytes received and not yet handed out (a partial message, or a held-back CRLF).
    var bufferedCount: Int { buffer.count - start }

    /// Adds bytes received from the stream.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, !bytes.isEmpty else { return }
        buffer.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
    }

    /// Adds bytes received from the stream.
    mutating func append(_ bytes: some Sequence<UInt8>) {
        guard failure == nil else { return }
        buffer.append(contentsOf: bytes)
    }

    /// The next frame, nil when more bytes are needed; throws (now and on every later call) when the stream is broken.
    mutating func next() throws(StreamFramingError) -> StreamFrame? {
        if let failure { throw failure }
        do {
            let frame = try nextFrame()
            compact()
            return frame
        } catch {
            failure = error
            buffer = []
            start = 0
            throw error
        }
    }

    private mutating func nextFrame() throws(StreamFramingError) -> StreamFrame? {
        if messageEnd == nil {
            if try skipKeepAlives() { return .ping }
            guard buffer.count > start, try readHeaderSection() else { return nil }
        }
        guard let end = messageEnd, buffer.count >= end else { return nil }
        let message = Data(buffer[start..<end])
        start = end
        searchFrom = end
        messageEnd = nil
        return .message(message)
    }

    /// Skips CRLFs before a message; returns true after consuming a ping (CRLFCRLF). A CRLF is held back while the
    /// bytes after it are unknown, and a lone CR while the byte after it is unknown.
    private mutating func skipKeepAlives() throws(StreamFramingError) -> Bool {
        while buffer.count > start, buffer[start] == Self.cr {
            let available = buffer.count - start
            guard available >= 2 else { return false }
            guard buffer[start + 1] == Self.lf else { return false }  // CR junk: the header rules will judge it
            if available >= 4, buffer[start + 2] == Self.cr, buffer[start + 3] == Self.lf {
                start += 4
                searchFrom = start
                return true
            }
            if available == 2 || (available == 3 && buffer[start + 2] == Self.cr) { return false }
            start += 2  // a lone CRLF: a pong, or a stray line end; skipped
            searchFrom = start
        }
        return false
    }

    /// Looks for the end of the header section and reads Content-Length; returns whether `messageEnd` is now known.
    private mutating func readHeaderSection() throws(StreamFramingError) -> Bool {
        let from = max(searchFrom, start)
        guard let headerEnd = Self.findEmptyLine(in: buffer, from: from) else {
            if buffer.count - start > maxMessageBytes { throw .oversize }
            searchFrom = max(start, buffer.count - 3)
            return false
        }
        let sectionLength = headerEnd + 4 - start
        guard sectionLength <= maxMessageBytes else { throw .oversize }
        let bodyLength = try contentLength(headerLines: start..<headerEnd)
        guard bodyLength <= maxMessageBytes - sectionLength else { throw .oversize }
        messageEnd = headerEnd + 4 + bodyLength
        return true
    }

    /// The index of the CRLFCRLF that ends the header section, searching from `from`.
    private static func findEmptyLine(in buffer: [UInt8], from: Int) -> Int? {
        guard buffer.count - from >= 4 else { return nil }
        return buffer.withUnsafeBufferPointer { bytes -> Int? in
            var index = from
            let last = bytes.count - 4
            while index <= last {
                // Step by the byte under the window's last position: LF means the window may end here.
                let fourth = bytes[index + 3]
                if fourth != lf {
                    index += fourth == cr ? 1 : 4
                    continue
                }
                if bytes[index] == cr, bytes[index + 1] == lf, bytes[index + 2] == cr { return index }
                index += 2
            }
            return nil
        }
    }

    /// The Content-Length of the header section in `range` (start line excluded, folded lines joined).
    private func contentLength(headerLines range: Range<Int>) throws(StreamFramingError) -> Int {
        var found: Int?
        var lineStart = range.lowerBound
        // The value bytes of the Content-Length field being read, if the current field is one.
        var pendingValue: [UInt8]?
        var isStartLine = true
        while lineStart <= range.upperBound {
            var lineEnd = lineStart
            while lineEnd < range.upperBound, !(buffer[lineEnd] == Self.cr && buffer[lineEnd + 1] == Self.lf) { lineEnd += 1 }
            let line = buffer[lineStart..<lineEnd]
            lineStart = lineEnd + 2
            if isStartLine {
                isStartLine = false
                continue
            }
            if let first = line.first, first == 0x20 || first == 0x09 {
                pendingValue?.append(0x20)
                pendingValue?.append(contentsOf: line)
                continue
            }
            if let value = pendingValue {
                found = try Self.merge(found, try parse(value))
                pendingValue = nil
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            if Self.isContentLengthName(line[line.startIndex..<colon]) {
                pendingValue = Array(line[(colon + 1)...])
            }
        }
        if let value = pendingValue { found = try Self.merge(found, try parse(value)) }
        guard let found else { throw .missingContentLength }
        return found
    }

    private static func merge(_ previous: Int?, _ value: Int) throws(StreamFramingError) -> Int {
        if let previous, previous != value { throw .invalidContentLength }
        return value
    }

    /// "Content-Length" or "l", any case, with optional whitespace before the colon.
    private static func isContentLengthName(_ name: ArraySlice<UInt8>) -> Bool {
        var name = name
        while let last = name.last, last == 0x20 || last == 0x09 { name = name.dropLast() }
        if name.count == 1 { return name.first! | 0x20 == UInt8(ascii: "l") }
        let expected = "content-length".utf8
        return name.count == expected.count && zip(name, expected).allSatisfy { $0 | 0x20 == $1 | 0x20 }
    }

    /// A decimal length; more than the limit is oversize, anything but digits (after trimming) invalid.
    private func parse(_ value: [UInt8]) throws(StreamFramingError) -> Int {
        let digits = value.drop { $0 == 0x20 || $0 == 0x09 }.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { throw .invalidContentLength }
        var result = 0
        for digit in digits {
            result = result * 10 + Int(digit - 0x30)
            if result > maxMessageBytes { throw .oversize }
        }
        return result
    }

    /// Drops consumed bytes once they are the bigger part of the buffer.
    private mutating func compact() {
        guard start > 0 else { return }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 17)
        } else if start >= 4096, start * 2 >= buffer.count {
            buffer.removeFirst(start)
        } else {
            return
        }
        searchFrom = max(0, searchFrom - start)
        if let end = messageEnd { messageEnd = end - start }
        start = 0
    }
}
