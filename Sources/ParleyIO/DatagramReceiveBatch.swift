internal import CLinux
import Glibc

/// Reads many datagrams from one UDP socket with one system call (`recvmmsg`): a slot per datagram — its bytes, its
/// sender and its ancillary data — allocated once. At the call rates Parley takes, a loop turn finds a few datagrams
/// waiting; one `recvmsg` each, and one more to learn the queue is empty, cost a system call per datagram where one
/// `recvmmsg` that comes back short of `capacity` reads them all and says the queue is empty too. One thread uses it
/// at a time; what a slot holds is valid until the next `receive`.
///
/// ```
///  receive(fd) ─ recvmmsg(capacity slots, MSG_DONTWAIT) ─► count ─► slot 0 … count-1: bytes, truncated?, sender,
///                                                                                      ancillary data
///                 count < capacity: the queue was drained │ -1: errno (EAGAIN: nothing waiting)
/// ```
package final class DatagramReceiveBatch {
    /// One received datagram, read in place.
    package struct Received {
        /// Its bytes (cut at the slot's size when `truncated`).
        package let bytes: UnsafeRawBufferPointer
        /// Whether it was larger than the slot (MSG_TRUNC).
        package let truncated: Bool
        /// Where it came from: a `sockaddr_storage`.
        package let sender: UnsafeRawPointer
        /// Its ancillary data (control messages).
        package let control: UnsafeRawBufferPointer
    }

    private let headers: UnsafeMutablePointer<clinux_mmsghdr>
    private let vectors: UnsafeMutablePointer<iovec>
    private let senders: UnsafeMutablePointer<sockaddr_storage>
    private let controls: UnsafeMutableRawPointer
    private let buffers: UnsafeMutableRawPointer
    /// The most datagrams one `receive` reads.
    package let capacity: Int
    /// The largest datagram a slot holds whole.
    package let datagramSize: Int
    private let controlSize: Int

    /// Room for `capacity` datagrams of up to `datagramSize` bytes, each with `controlSize` bytes of ancillary data.
    package init(capacity: Int, datagramSize: Int, controlSize: Int) {
        precondition(capacity > 0 && datagramSize > 0 && controlSize >= 0, "a batch has room for at least one datagram")
        self.capacity = capacity
        self.datagramSize = datagramSize
        self.controlSize = (controlSize + 7) & ~7  // each slot's control buffer aligned like a cmsghdr
        headers = .allocate(capacity: capacity)
        vectors = .allocate(capacity: capacity)
        senders = .allocate(capacity: capacity)
        controls = .allocate(byteCount: max(1, capacity * self.controlSize), alignment: 8)
        buffers = .allocate(byteCount: capacity * datagramSize, alignment: 16)
        // Where each slot's bytes, sender and control data go never changes; `receive` resets only the lengths.
        for slot in 0..<capacity {
            vectors[slot] = iovec(iov_base: buffers + slot * datagramSize, iov_len: datagramSize)
            var header = msghdr()
            header.msg_name = UnsafeMutableRawPointer(senders + slot)
            header.msg_iov = vectors + slot
            header.msg_iovlen = 1
            header.msg_control = self.controlSize > 0 ? controls + slot * self.controlSize : nil
            headers[slot] = clinux_mmsghdr(msg_hdr: header, msg_len: 0)
        }
    }

    deinit {
        headers.deallocate()
        vectors.deallocate()
        senders.deallocate()
        controls.deallocate()
        buffers.deallocate()
    }

    /// Reads what is waiting on `fd` without blocking, at most `capacity` datagrams: their count (at least one), or
    /// errno (EAGAIN or EWOULDBLOCK when nothing waits).
    package func receive(from fd: Int32) -> Result<Int, IOError> {
        for slot in 0..<capacity {
            // The kernel shortens these to what it wrote.
            headers[slot].msg_hdr.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
            headers[slot].msg_hdr.msg_controllen = controlSize
        }
        let count = clinux_recvmmsg(fd, headers, UInt32(capacity), Int32(MSG_DONTWAIT))
        guard count > 0 else { return .failure(IOError("recvmmsg", code: count < 0 ? errno : EAGAIN)) }
        return .success(Int(count))
    }

    /// The datagram in `slot` (below the count the last `receive` returned).
    package subscript(slot: Int) -> Received {
        precondition(slot >= 0 && slot < capacity, "a slot of the batch")
        let header = headers[slot].msg_hdr
        let length = min(Int(headers[slot].msg_len), datagramSize)
        return Received(
            bytes: UnsafeRawBufferPointer(start: buffers + slot * datagramSize, count: length),
            truncated: header.msg_flags & Int32(MSG_TRUNC) != 0,
            sender: UnsafeRawPointer(senders + slot),
            control: UnsafeRawBufferPointer(start: header.msg_control, count: Int(header.msg_controllen)))
    }
}

extension Socket {
    /// Has the kernel queue ICMP errors (port or host unreachable) of a UDP socket's datagrams for
    /// ``takeDatagramError(_:)``: an unconnected socket is told nothing of them otherwise.
    package static func reportDatagramErrors(_ fd: Int32, ipv6: Bool) {
        _ = clinux_enable_icmp_errors(fd, ipv6 ? 1 : 0)
    }

    /// One error queued for a UDP socket's datagrams (``reportDatagramErrors(_:ipv6:)``), nil when none is.
    package static func takeDatagramError(_ fd: Int32) -> DatagramError? {
        var storage = sockaddr_storage()
        var code: Int32 = 0, fromICMP: Int32 = 0
        guard clinux_take_socket_error(fd, &storage, &code, &fromICMP) == 1 else { return nil }
        return DatagramError(destination: SocketAddress(storage), code: code, fromICMP: fromICMP != 0)
    }
}

/// An error the kernel reported for a datagram a UDP socket sent: an ICMP port or host unreachable, mostly.
package struct DatagramError: Sendable {
    /// Where the datagram went (nil when the kernel did not say).
    package var destination: SocketAddress?
    /// The error: ECONNREFUSED for a port nobody listens on, EHOSTUNREACH, ENETUNREACH…
    package var code: Int32
    /// Whether an ICMP message reported it (else the local stack did).
    package var fromICMP: Bool
}
