import Foundation
import Glibc
import Testing

@testable import ParleyIO

@Suite("The byte queue: gathered writes")
struct ByteQueueTests {
    /// A connected pair of stream sockets: the first non-blocking with a small send buffer, so writes come back short.
    private static func socketPair() throws -> (writer: Int32, reader: Int32) {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        var size: Int32 = 4096
        setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    private static func readAvailable(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { return bytes }
            bytes += buffer[0..<count]
        }
    }

    /// Chunks of 1 to 300 bytes, each filled with its own number (mod 256), so a chunk out of place shows.
    private static func chunks(_ count: Int) -> [Data] {
        (0..<count).map { index in Data(repeating: UInt8(truncatingIfNeeded: index), count: 1 + (index * 37) % 300) }
    }

    @Test("more chunks than one write gathers leave whole and in order, through writes the socket cut short")
    func ordered() throws {
        let (writer, reader) = try Self.socketPair()
        defer { close(writer); close(reader) }
        let chunks = Self.chunks(3 * ByteQueue<Int>.chunksPerWrite + 5)
        var queue = ByteQueue<Int>(limit: 1 << 20)
        for (index, chunk) in chunks.enumerated() { queue.append(chunk, tag: index) }
        #expect(queue.byteCount == chunks.joined().count)
        var received: [UInt8] = []
        var writes = 0
        while !queue.isEmpty, writes < 1_000 {
            let (written, error) = queue.write(to: writer)
            #expect(error == nil)
            #expect(written > 0, "the reader emptied the socket, so it takes more")
            writes += 1
            received += Self.readAvailable(reader)
        }
        #expect(received == Array(chunks.joined()))
        #expect(writes > 1, "a 4 KiB send buffer takes the \(chunks.joined().count) bytes in several writes")
        #expect(queue.byteCount == 0)
        let unsent = queue.removeAll()
        #expect(unsent.isEmpty)
    }

    @Test("after a short write, exactly the chunks not written whole are reported unsent")
    func unsentTags() throws {
        let (writer, reader) = try Self.socketPair()
        defer { close(writer); close(reader) }
        let chunks = Self.chunks(2 * ByteQueue<Int>.chunksPerWrite)
        var queue = ByteQueue<Int>(limit: 1 << 20)
        for (index, chunk) in chunks.enumerated() { queue.append(chunk, tag: index) }
        let total = queue.byteCount
        let (written, error) = queue.write(to: writer)  // nobody reads: the socket fills
        #expect(error == nil)
        #expect(written > 0 && written < total)
        #expect(queue.byteCount == total - written)
        var sent = 0
        let whole = chunks.prefix { chunk in
            sent += chunk.count
            return sent <= written
        }.count
        let unsent = queue.removeAll()
        #expect(unsent == Array(whole..<chunks.count))
        #expect(Self.readAvailable(reader) == Array(chunks.joined().prefix(written)))
    }
}
