import Foundation

/// Splits a byte stream into lines: LF ends a line, a CR just before it is dropped, empty lines are skipped.
/// A line whose content is longer than `maximumLength` bytes is an error — also before its LF arrives, so a peer
/// cannot make us buffer without bound.
struct LineDecoder {
    /// What ``next()`` found.
    enum Item: Equatable {
        /// One line, without its LF (and CR).
        case line(Data)
        /// A line over the limit: the stream cannot be followed any further.
        case tooLarge
    }

    let maximumLength: Int
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already handed out.
    private var start = 0
    /// Where the search for the next LF resumes (everything before it, from `start`, holds no LF).
    private var scanned = 0

    init(maximumLength: Int) {
        precondition(maximumLength > 0, "a line limit must be positive")
        self.maximumLength = maximumLength
    }

    /// Bytes received and not yet handed out as lines.
    var bufferedByteCount: Int { buffer.count - start }

    mutating func feed(_ bytes: some Collection<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete line, `.tooLarge`, or nil when more bytes are needed.
    mutating func next() -> Item? {
        while true {
            guard let end = buffer[scanned...].firstIndex(of: 0x0A) else {
                scanned = buffer.count
                // One more byte is allowed for the CR that may come before the LF.
                if buffer.count - start > maximumLength + 1 { return .tooLarge }
                compact()
                return nil
            }
            var contentEnd = end
            if contentEnd > start, buffer[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            let range = start..<contentEnd
            start = end + 1
            scanned = start
            if range.count > maximumLength { return .tooLarge }
            if range.isEmpty { continue }
            return .line(Data(buffer[range]))
        }
    }

    private mutating func compact() {
        guard start > 0 else { return }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 65_536 * 2)
            start = 0
            scanned = 0
        } else if start * 2 >= buffer.count {
            buffer.removeFirst(start)
            scanned -= start
            start = 0
        }
    }
}
