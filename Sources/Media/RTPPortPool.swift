import Foundation
import Glibc
import ParleyIO

/// The local RTP/RTCP port pairs of media sessions: an even RTP port and the odd one after it, bound when reserved
/// (so a port another program holds is skipped, not found out when media starts) and closed when released.
///
/// ```
///   reserve() ──► next even port in the range whose pair binds ──► Reservation(port, rtp fd, rtcp fd)
///   release(port) ──► both sockets closed, the pair free again
/// ```
/// Not thread-safe: one engine loop owns it.
public final class RTPPortPool {
    /// One reserved pair: the RTP port and the bound sockets (handed to GStreamer as duplicates).
    public struct Reservation: Sendable, Hashable {
        /// The RTP port (even); RTCP is `port + 1`.
        public let port: Int
        let rtp: Int32
        let rtcp: Int32
    }

    /// The address the sockets bind to.
    public let host: String
    /// The ports used, first to last (RTP ports are the even ones).
    public let range: ClosedRange<Int>
    private var reserved: [Int: Reservation] = [:]
    private var next: Int

    /// A pool on `host` over `range` (at least one pair); the error says what is wrong with them.
    public init(host: String, range: ClosedRange<Int>) throws(MediaError) {
        guard IPAddress(host) != nil else { throw MediaError("the media address must be a numeric IP address, not \(host)") }
        let first = range.lowerBound + range.lowerBound % 2
        guard range.lowerBound >= 1024, range.upperBound <= 65_535, first + 1 <= range.upperBound else {
            throw MediaError("the RTP port range must lie within 1024–65535 and hold an even port and the one after it, not \(range)")
        }
        self.host = host
        self.range = range
        next = first
    }

    deinit {
        for reservation in reserved.values {
            close(reservation.rtp)
            close(reservation.rtcp)
        }
    }

    /// How many pairs are reserved now.
    public var count: Int { reserved.count }

    /// Reserves the next free pair, or nil when every pair of the range is taken (here or by another program).
    public func reserve() -> Reservation? {
        let first = range.lowerBound + range.lowerBound % 2
        let pairs = (range.upperBound - first + 1) / 2
        guard let ip = IPAddress(host) else { return nil }
        for _ in 0..<pairs {
            let port = next
            next = next + 2 + 1 > range.upperBound ? first : next + 2
            guard reserved[port] == nil else { continue }
            guard let rtp = try? Socket.bound(ip.socketAddress(port: UInt16(port)), stream: false) else { continue }
            guard let rtcp = try? Socket.bound(ip.socketAddress(port: UInt16(port + 1)), stream: false) else {
                close(rtp)
                continue
            }
            let reservation = Reservation(port: port, rtp: rtp, rtcp: rtcp)
            reserved[port] = reservation
            return reservation
        }
        return nil
    }

    /// Frees a pair (its sockets are closed; GStreamer's duplicates close with their pipeline).
    public func release(_ port: Int) {
        guard let reservation = reserved.removeValue(forKey: port) else { return }
        close(reservation.rtp)
        close(reservation.rtcp)
    }
}
