import Foundation
import ParleyTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// An eavesdropper on the loopback interface: a raw AF_PACKET socket (root, as the namespace tests need) that keeps
/// the UDP payloads sent to one port while it runs, and reads them as RTP carrying µ-law, as someone on the path
/// would try to.
final class LoopbackCapture: @unchecked Sendable {
    // @unchecked Sendable: `payloads` is written by the capture thread until `stop` joins it, then only read.
    private let fd: Int32
    private let port: UInt16
    private let sourcePort: UInt16
    private let stopped = Locked(false)
    private let done = DispatchSemaphore(value: 0)
    private var payloads: [[UInt8]] = []

    /// Starts capturing what UDP `sourcePort` sends to UDP `port` on 127.0.0.1 (one call's stream: another test's
    /// stale stream to a port this call took over is not this call's).
    init(port: UInt16, from sourcePort: UInt16) throws {
        self.port = port
        self.sourcePort = sourcePort
        // SOCK_DGRAM: the link header is taken off, each read is one IP packet. ETH_P_IP = 0x0800.
        fd = socket(AF_PACKET, Int32(SOCK_DGRAM.rawValue), Int32(UInt16(0x0800).bigEndian))
        guard fd >= 0 else { throw InteropError("a raw capture socket needs root (CAP_NET_RAW): errno \(errno)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        Thread.detachNewThread { [self] in
            self.run()
            self.done.signal()
        }
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        // sockaddr_ll: its packet type (offset 10) tells our own outgoing copy (4) from the one received.
        var address = [UInt8](repeating: 0, count: 32)
        while !stopped.withLock({ $0 }) {
            var length = socklen_t(address.count)
            let count = address.withUnsafeMutableBytes { raw in
                recvfrom(fd, &buffer, buffer.count, 0, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
            }
            guard count > 28, address[10] != 4 else { continue }
            let packet = buffer[0..<count]
            let headerLength = Int(packet[0] & 0x0F) * 4
            guard packet[0] >> 4 == 4, packet[9] == 17, count > headerLength + 8 else { continue }  // IPv4, UDP
            let source = UInt16(packet[headerLength]) << 8 | UInt16(packet[headerLength + 1])
            let destination = UInt16(packet[headerLength + 2]) << 8 | UInt16(packet[headerLength + 3])
            guard destination == port, source == sourcePort else { continue }
            payloads.append(Array(packet[(headerLength + 8)...]))
        }
    }

    /// Stops capturing; returns the datagrams captured.
    @discardableResult
    func stop() -> Int {
        stopped.withLock { $0 = true }
        done.wait()
        close(fd)
        return payloads.count
    }

    /// The datagrams captured, in order (read once ``stop()`` returned).
    var datagrams: [[UInt8]] { payloads }

    /// The captured datagrams as RTP: how many have an RTP version-2 header, and their payloads decoded as µ-law
    /// (what an eavesdropper hears).
    func heardAsPCMU() -> (rtpPackets: Int, audio: Recording) {
        var samples: [Double] = []
        var rtp = 0
        for datagram in payloads where datagram.count > 12 && datagram[0] >> 6 == 2 {
            rtp += 1
            let csrcs = Int(datagram[0] & 0x0F)
            let start = 12 + 4 * csrcs
            guard datagram.count > start else { continue }
            samples += datagram[start...].map(Self.mulaw)
        }
        return (rtp, Recording(sampleRate: 8_000, samples: samples))
    }

    /// G.711 µ-law to a sample in −1…1.
    static func mulaw(_ byte: UInt8) -> Double {
        let value = ~byte
        let sign = value & 0x80, exponent = Int((value >> 4) & 0x07), mantissa = Int(value & 0x0F)
        let magnitude = ((mantissa << 3) + 0x84) << exponent - 0x84
        return Double(sign != 0 ? -magnitude : magnitude) / 32_768
    }
}
