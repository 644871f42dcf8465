internal import CLinux
import Foundation
import Glibc

/// A datagram to send in a batch: its bytes and where it goes.
package protocol OutgoingDatagram {
    var bytes: Data { get }
    var address: SocketAddress { get }
}

/// Sends many datagrams from one UDP socket with few system calls (`sendmmsg`): message headers, I/O vectors,
/// addresses and a byte buffer allocated once, the datagrams copied in. One thread uses it at a time.
package final class DatagramBatch {
    private let headers: UnsafeMutablePointer<clinux_mmsghdr>
    private let vectors: UnsafeMutablePointer<iovec>
    private let addresses: UnsafeMutablePointer<sockaddr_storage>
    private let buffer: UnsafeMutableRawBufferPointer
    /// The most datagrams in one `sendmmsg`.
    package let capacity: Int

    /// Room for `capacity` datagrams per call and `bufferSize` bytes of them (a datagram larger than the buffer is
    /// sent alone, from its own bytes).
    package init(capacity: Int, bufferSize: Int) {
        precondition(capacity > 0 && bufferSize > 0, "a batch has room for at least one datagram")
        self.capacity = capacity
        headers = .allocate(capacity: capacity)
        vectors = .allocate(capacity: capacity)
        addresses = .allocate(capacity: capacity)
        buffer = .allocate(byteCount: bufferSize, alignment: 16)
    }

    deinit {
        headers.deallocate()
        vectors.deallocate()
        addresses.deallocate()
        buffer.deallocate()
    }

    /// Sends the datagrams in order from `fd` (non-blocking); returns the bytes the kernel took. Each datagram it
    /// refuses goes to `refused` with errno, and the rest are still sent.
    package func send<Datagram: OutgoingDatagram>(
        _ datagrams: ArraySlice<Datagram>, from fd: Int32, refused: (Datagram, Int32) -> Void
    ) -> Int {
        var written = 0
        var start = datagrams.startIndex
        while start < datagrams.endIndex {
            let count = fill(datagrams[start...])
            if count == 0 {
                written += sendAlone(datagrams[start], from: fd, refused: refused)
                start += 1
            } else {
                written += sendFilled(datagrams[start..<start + count], from: fd, refused: refused)
                start += count
            }
        }
        return written
    }

    /// Copies as many datagrams as fit (at most `capacity`) into the buffer and headers; returns how many.
    private func fill<Datagram: OutgoingDatagram>(_ datagrams: ArraySlice<Datagram>) -> Int {
        var used = 0
        var slot = 0
        for datagram in datagrams {
            let size = datagram.bytes.count
            guard slot < capacity, used + size <= buffer.count else { break }
            let base = buffer.baseAddress! + used
            datagram.bytes.copyBytes(to: base.assumingMemoryBound(to: UInt8.self), count: size)
            vectors[slot] = iovec(iov_base: base, iov_len: size)
            let name = UnsafeMutableRawPointer(addresses + slot)
            let length = datagram.address.withSockAddr { address, length in
                name.copyMemory(from: address, byteCount: Int(length))
                return length
            }
            var header = msghdr()
            header.msg_name = name
            header.msg_namelen = length
            header.msg_iov = vectors + slot
            header.msg_iovlen = 1
            headers[slot] = clinux_mmsghdr(msg_hdr: header, msg_len: 0)
            used += size
            slot += 1
        }
        return slot
    }

    /// `sendmmsg` over the filled slots, going on after each refused datagram (the kernel stops at the first one it
    /// refuses and reports it by failing the next call).
    private func sendFilled<Datagram: OutgoingDatagram>(
        _ datagrams: ArraySlice<Datagram>, from fd: Int32, refused: (Datagram, Int32) -> Void
    ) -> Int {
        var written = 0
        var next = 0
        while next < datagrams.count {
            let result = clinux_sendmmsg(fd, headers + next, UInt32(datagrams.count - next), Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
            if result > 0 {
                for slot in next..<next + Int(result) { written += Int(headers[slot].msg_len) }
                next += Int(result)
                continue
            }
            let code = result < 0 ? errno : EIO
            if code == EINTR { continue }
            refused(datagrams[datagrams.startIndex + next], code)
            next += 1
        }
        return written
    }

    private func sendAlone<Datagram: OutgoingDatagram>(
        _ datagram: Datagram, from fd: Int32, refused: (Datagram, Int32) -> Void
    ) -> Int {
        switch datagram.bytes.withUnsafeBytes({ Socket.sendDatagram(fd, $0, to: datagram.address) }) {
        case .success(let sent):
            return sent
        case .failure(let error):
            refused(datagram, error.code)
            return 0
        }
    }
}
