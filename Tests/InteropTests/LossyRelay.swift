import Foundation
import Glibc

/// A seeded UDP relay between two SIP endpoints on loopback that drops, duplicates and reorders a share of the
/// datagrams. Each side talks to a port of the relay's; the relay writes its own ports over the other side's in each
/// datagram (`:PORT` in headers: Via, Contact, From, To), so requests inside the dialog come back through it too.
///
///   A ──▶ :near ──(faults, ":A"→":far")──▶ B        B ──▶ :far ──(faults, ":B"→":near")──▶ A
final class LossyRelay: @unchecked Sendable {
    // @unchecked Sendable: the sockets and counters are used by the relay's one thread; `stop` only flips a flag.
    /// The port A sends to (A calls B at it).
    let nearPort: UInt16
    /// The port B sends to.
    let farPort: UInt16
    private let near: Int32, far: Int32
    private let portA: UInt16, portB: UInt16
    private let stopped = Locked(false)
    private let counts = Locked((forwarded: 0, dropped: 0, duplicated: 0, reordered: 0))
    private var random: UInt64
    let faultRate: Double
    /// Rewrites each datagram from A after the ports (a man in the middle of the signalling; nil: none).
    private let tamper: (@Sendable (String) -> String)?

    /// A relay; `tamper` rewrites what A sends (e.g. an SDP fingerprint) after the ports are rewritten.
    init(
        between portA: UInt16, and portB: UInt16, faultRate: Double, seed: UInt64,
        tamper: (@Sendable (String) -> String)? = nil
    ) throws {
        self.portA = portA
        self.portB = portB
        self.faultRate = faultRate
        self.tamper = tamper
        random = seed
        (near, nearPort) = try Self.bind()
        (far, farPort) = try Self.bind()
        Thread.detachNewThread { [self] in run() }
    }

    /// What the relay did so far.
    var statistics: (forwarded: Int, dropped: Int, duplicated: Int, reordered: Int) { counts.withLock { $0 } }

    func stop() {
        stopped.withLock { $0 = true }
    }

    private static func bind() throws -> (Int32, UInt16) {
        for _ in 0..<50 {
            let port = Interop.freePort()
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = loopback(port)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound == 0 { return (fd, port) }
            close(fd)
        }
        throw InteropError("the relay found no free port")
    }

    private static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func chance() -> Double {
        random = random &* 6364136223846793005 &+ 1442695040888963407
        return Double(random >> 11) / Double(1 << 53)
    }

    private func run() {
        var held: [(Int32, [UInt8], UInt16)] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !stopped.withLock({ $0 }) {
            var fds = [pollfd(fd: near, events: Int16(POLLIN), revents: 0), pollfd(fd: far, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, 50) > 0 else { continue }
            for (index, entry) in fds.enumerated() where entry.revents & Int16(POLLIN) != 0 {
                let count = recv(entry.fd, &buffer, buffer.count, 0)
                guard count > 0 else { continue }
                let fromA = index == 0
                let text = String(decoding: buffer[..<count], as: UTF8.self)
                let rewritten = fromA
                    ? (tamper ?? { $0 })(text.replacingOccurrences(of: ":\(portA)", with: ":\(farPort)"))
                    : text.replacingOccurrences(of: ":\(portB)", with: ":\(nearPort)")
                let bytes = Array(rewritten.utf8)
                // Out through the other side's socket, so each end sees the relay's port facing it.
                let (out, to) = fromA ? (far, portB) : (near, portA)
                if chance() < faultRate {
                    counts.withLock { $0.dropped += 1 }
                    continue
                }
                if chance() < faultRate {
                    counts.withLock { $0.reordered += 1 }
                    held.append((out, bytes, to))
                    continue
                }
                if chance() < faultRate {
                    counts.withLock { $0.duplicated += 1 }
                    send(bytes, from: out, to: to)
                }
                send(bytes, from: out, to: to)
                counts.withLock { $0.forwarded += 1 }
                for (heldOut, heldBytes, heldTo) in held { send(heldBytes, from: heldOut, to: heldTo) }
                held.removeAll()
            }
        }
        close(near)
        close(far)
    }

    private func send(_ bytes: [UInt8], from fd: Int32, to port: UInt16) {
        var address = Self.loopback(port)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    deinit { stop() }
}
