import Foundation
import Glibc
import ParleyIO

/// A UDP socket: a listener, or the ephemeral socket used to send to a family no listener serves. Reads datagrams and
/// hands each one, whole, to the transport. Loop-confined.
final class DatagramSocket: LoopFDHandler {
    /// The address it is bound to (port 0 resolved).
    let local: ListenAddress
    let family: Int32
    let fd: Int32
    private unowned let core: TransportCore
    /// The same core, for the loop's shutdown: the core may be gone by then (a transport dropped without `close`).
    private weak var owner: TransportCore?
    private var token: UInt64 = 0
    private(set) var isClosed = false
    /// The kernel's running count of datagrams dropped on this socket (SO_RXQ_OVFL), as last seen.
    private var lastDropCount: UInt32 = 0
    /// The last sender and its text form: consecutive datagrams from one peer skip inet_ntop.
    private var lastSender: (address: sockaddr_storage, peer: SIPPeerAddress)?
    /// Where `recvmmsg` puts the datagrams, their senders and ancillary data; allocated once.
    private let batch: DatagramReceiveBatch
    /// Room for the ancillary data: SO_RXQ_OVFL's UInt32 and SO_TIMESTAMPNS's timespec, each behind a cmsghdr.
    private static let controlSize = 128
    /// The most datagrams one `recvmmsg` reads.
    static let batchCapacity = 16
    /// Room for any UDP payload (65,507 bytes over IPv4, 65,527 over IPv6), whatever `maxMessageBytes` allows
    /// a stream: a larger limit must not multiply the batch's memory.
    static let largestDatagram = 65_536

    init(core: TransportCore, fd: Int32, local: ListenAddress, family: Int32) throws(TransportError) {
        self.core = core
        owner = core
        self.fd = fd
        self.local = local
        self.family = family
        batch = DatagramReceiveBatch(
            capacity: Self.batchCapacity, datagramSize: Self.largestDatagram, controlSize: Self.controlSize)
        Socket.reportDatagramErrors(fd, ipv6: family == AF_INET6)
        token = try TransportError.catching { () throws(IOError) in
            try core.loop.register(fd, interest: LoopInterest.readable, handler: self)
        }
    }

    func handle(events: UInt32) {
        if events & LoopInterest.error != 0 { takeErrors() }
        readDatagrams()
    }

    /// The errors queued for datagrams we sent (ICMP port or host unreachable), at most 64 a turn: each fails
    /// what waits on its destination at once (the transport user's transactions), instead of after their timers.
    private func takeErrors() {
        for _ in 0..<64 where !isClosed {
            guard let error = Socket.takeDatagramError(fd) else { return }
            guard let peer = error.destination?.peerAddress else { continue }
            core.reportSendFailure(SIPDestination(kind: .udp, address: peer), .unreachable(peer, code: error.code))
        }
    }

    func loopWillShutDown() {
        guard !isClosed else { return }
        isClosed = true
        owner?.flushDatagrams()
        Glibc.close(fd)
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        core.loop.deregister(token)
        core.flushDatagrams()
        Glibc.close(fd)
    }

    /// Sends one datagram; returns errno on failure.
    func send(_ bytes: Data, to address: SocketAddress) -> Int32? {
        switch bytes.withUnsafeBytes({ Socket.sendDatagram(fd, $0, to: address) }) {
        case .success(let sent):
            core.countSent(sent)
            return nil
        case .failure(let error):
            return error.code
        }
    }

    /// Reads until the queue is empty (a `recvmmsg` that comes back short of the batch, or EAGAIN), at most 256
    /// datagrams a turn (epoll is level-triggered: the rest come next turn).
    private func readDatagrams() {
        for _ in 0..<(256 / Self.batchCapacity) where !isClosed {
            let count: Int
            switch batch.receive(from: fd) {
            case .success(let received):
                count = received
            case .failure(let error):
                // EAGAIN: drained. Anything else (an ICMP error queued by an earlier send) is not this read's fault:
                // the error queue says which datagram drew it.
                if error.code == EAGAIN || error.code == EWOULDBLOCK { return }
                takeErrors()
                continue
            }
            for slot in 0..<count where !isClosed { handle(batch[slot]) }
            if count < Self.batchCapacity { return }
        }
    }

    /// Hands one received datagram to the transport, or counts it dropped (empty, cut short, or too large).
    private func handle(_ datagram: DatagramReceiveBatch.Received) {
        let waited = readAncillaryData(datagram.control)
        let count = datagram.bytes.count
        core.countDatagram(received: count)
        guard count > 0, !datagram.truncated, count <= core.limits.maxMessageBytes else {
            core.countDatagramDropped(oversize: count > 0)
            return
        }
        if count <= 4, datagram.bytes.allSatisfy({ $0 == 0x0D || $0 == 0x0A }) {
            // A NAT keep-alive (CRLF or CRLFCRLF, as softphones send toward their registrar): nothing to parse.
            core.countDatagramKeepAlive()
            return
        }
        guard let peer = peerAddress(datagram.sender.load(as: sockaddr_storage.self)) else { return }
        core.deliver(InboundSIPMessage(
            bytes: Data(datagram.bytes), kind: .udp, source: peer, connection: nil, local: local, waited: waited))
    }

    private func peerAddress(_ sender: sockaddr_storage) -> SIPPeerAddress? {
        if let last = lastSender, Self.sameAddress(last.address, sender) { return last.peer }
        guard let address = SocketAddress(sender) else { return nil }
        let peer = address.peerAddress
        lastSender = (sender, peer)
        return peer
    }

    private static func sameAddress(_ left: sockaddr_storage, _ right: sockaddr_storage) -> Bool {
        var left = left, right = right
        let length = left.ss_family == sa_family_t(AF_INET) ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size
        return left.ss_family == right.ss_family && memcmp(&left, &right, length) == 0
    }

    /// Reads the ancillary data of one datagram: adds the kernel's new receive-buffer drops (the SO_RXQ_OVFL counter,
    /// sent only once it is non-zero) and returns how long the datagram waited in the receive queue (from its
    /// SO_TIMESTAMPNS arrival time, wall clock like the timestamp; nil without one or when the clock stepped back).
    private func readAncillaryData(_ control: UnsafeRawBufferPointer) -> Duration? {
        let headerSize = MemoryLayout<cmsghdr>.size
        let length = control.count
        var offset = 0
        var waited: Duration?
        while offset + headerSize <= length {
            let message = control.loadUnaligned(fromByteOffset: offset, as: cmsghdr.self)
            let messageLength = Int(message.cmsg_len)
            guard messageLength >= headerSize, offset + messageLength <= length else { break }
            let data = offset + headerSize
            if message.cmsg_level == SOL_SOCKET {
                if message.cmsg_type == SO_RXQ_OVFL, messageLength >= headerSize + MemoryLayout<UInt32>.size {
                    let count = control.loadUnaligned(fromByteOffset: data, as: UInt32.self)
                    core.countReceiveBufferDrops(Int(count &- lastDropCount))
                    lastDropCount = count
                } else if message.cmsg_type == SO_TIMESTAMPNS, messageLength >= headerSize + MemoryLayout<timespec>.size {
                    waited = Self.age(of: control.loadUnaligned(fromByteOffset: data, as: timespec.self))
                }
            }
            let alignment = MemoryLayout<Int>.size  // CMSG_ALIGN: control messages are aligned to a long
            offset += (messageLength + alignment - 1) & ~(alignment - 1)
        }
        return waited
    }

    /// How long ago a wall-clock arrival time was; nil when it lies in the future (the clock stepped back).
    private static func age(of arrival: timespec) -> Duration? {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanoseconds = (Int64(now.tv_sec) - Int64(arrival.tv_sec)) * 1_000_000_000
            + Int64(now.tv_nsec) - Int64(arrival.tv_nsec)
        return nanoseconds >= 0 ? .nanoseconds(nanoseconds) : nil
    }
}
