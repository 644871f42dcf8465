import Foundation
import Glibc

/// Bytes waiting for a stream socket, in order, each chunk remembering the message it carries (nil for keep-alive
/// pongs and TLS records of our own) so that what never left can be reported as a send failure.
struct WriteQueue {
    private struct Chunk {
        let bytes: Data
        /// Bytes of `bytes` already written.
        var offset: Int
        let destination: SIPDestination?
    }

    private var chunks: [Chunk] = []
    /// The first chunk still in use (chunks before it are written and dropped lazily).
    private var head = 0
    /// Bytes not yet written.
    private(set) var byteCount = 0

    var isEmpty: Bool { byteCount == 0 }

    mutating func append(_ bytes: Data, destination: SIPDestination?) {
        guard !bytes.isEmpty else { return }
        chunks.append(Chunk(bytes: bytes, offset: 0, destination: destination))
        byteCount += bytes.count
    }

    /// Writes what the socket takes without blocking; returns the bytes written and the errno that stopped it, if
    /// one other than EAGAIN did.
    mutating func write(to fd: Int32) -> (written: Int, error: Int32?) {
        var written = 0
        while head < chunks.count {
            let chunk = chunks[head]
            let result = chunk.bytes.withUnsafeBytes { raw in
                send(fd, raw.baseAddress! + chunk.offset, raw.count - chunk.offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if result < 0 {
                let code = errno
                if code == EINTR { continue }
                compact()
                return (written, code == EAGAIN || code == EWOULDBLOCK ? nil : code)
            }
            written += result
            byteCount -= result
            if chunk.offset + result == chunk.bytes.count {
                head += 1
            } else {
                chunks[head].offset += result
            }
        }
        compact()
        return (written, nil)
    }

    /// Empties the queue, returning the destinations of the messages not (fully) written.
    mutating func removeAll() -> [SIPDestination] {
        let unsent = chunks[head...].compactMap(\.destination)
        chunks = []
        head = 0
        byteCount = 0
        return unsent
    }

    private mutating func compact() {
        if head == chunks.count {
            chunks.removeAll(keepingCapacity: chunks.capacity <= 64)
            head = 0
        } else if head >= 32, head * 2 >= chunks.count {
            chunks.removeFirst(head)
            head = 0
        }
    }
}
