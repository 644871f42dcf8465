import Foundation
import Glibc

/// Bytes waiting for a stream socket, in order, bounded: each chunk may carry a tag (what the bytes are for, such as
/// the SIP message's destination) so that what never left can be reported as a send failure. The one byte queue of
/// every stream channel in Parley.
package struct ByteQueue<Tag> {
    private struct Chunk {
        let bytes: Data
        /// Bytes of `bytes` already written.
        var offset: Int
        let tag: Tag?
    }

    /// The most bytes the queue holds; ``append(_:tag:)`` refuses what would go over it.
    package let limit: Int
    private var chunks: [Chunk] = []
    /// The first chunk still in use (chunks before it are written and dropped lazily).
    private var head = 0
    /// Bytes not yet written.
    package private(set) var byteCount = 0

    /// An empty queue holding at most `limit` bytes.
    package init(limit: Int) {
        precondition(limit > 0, "a byte queue must hold something")
        self.limit = limit
    }

    /// Whether every byte has been written.
    package var isEmpty: Bool { byteCount == 0 }

    /// Queues `bytes`; false (and nothing queued) when they would take the queue over its limit.
    @discardableResult
    package mutating func append(_ bytes: Data, tag: Tag? = nil) -> Bool {
        guard !bytes.isEmpty else { return true }
        guard bytes.count <= limit - byteCount else { return false }
        chunks.append(Chunk(bytes: bytes, offset: 0, tag: tag))
        byteCount += bytes.count
        return true
    }

    /// Chunks one `sendmsg` gathers at most (IOV_MAX is 1,024; a loop turn rarely queues more than this for one
    /// socket).
    package static var chunksPerWrite: Int { 64 }

    /// Writes what the socket takes without blocking, up to ``chunksPerWrite`` chunks per system call; returns the
    /// bytes written and the errno that stopped it, if one other than EAGAIN did.
    package mutating func write(to fd: Int32) -> (written: Int, error: Int32?) {
        var written = 0
        while head < chunks.count {
            let end = min(chunks.count, head + Self.chunksPerWrite)
            let result = withUnsafeTemporaryAllocation(of: iovec.self, capacity: end - head) { vectors in
                gather(from: head, to: end, into: vectors, fd: fd)
            }
            if result < 0 {
                let code = errno
                if code == EINTR { continue }
                compact()
                return (written, code == EAGAIN || code == EWOULDBLOCK ? nil : code)
            }
            written += result
            consume(result)
            if head < end { break }  // the socket took less than was offered: it is full for now
        }
        compact()
        return (written, nil)
    }

    /// Points `vectors` at chunks `index..<end` (each chunk's bytes pinned while the calls nest) and sends them in
    /// one `sendmsg`.
    private func gather(
        from index: Int, to end: Int, into vectors: UnsafeMutableBufferPointer<iovec>, fd: Int32
    ) -> Int {
        guard index < end else {
            var message = msghdr()
            message.msg_iov = vectors.baseAddress
            message.msg_iovlen = end - head
            return sendmsg(fd, &message, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        let chunk = chunks[index]
        return chunk.bytes.withUnsafeBytes { raw in
            vectors[index - head] = iovec(
                iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress! + chunk.offset),
                iov_len: raw.count - chunk.offset)
            return gather(from: index + 1, to: end, into: vectors, fd: fd)
        }
    }

    /// Drops `count` written bytes from the front.
    private mutating func consume(_ count: Int) {
        var left = count
        byteCount -= count
        while left > 0 {
            let remaining = chunks[head].bytes.count - chunks[head].offset
            if left >= remaining {
                left -= remaining
                head += 1
            } else {
                chunks[head].offset += left
                left = 0
            }
        }
    }

    /// Empties the queue, returning the tags of the chunks not (fully) written.
    package mutating func removeAll() -> [Tag] {
        let unsent = chunks[head...].compactMap(\.tag)
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
