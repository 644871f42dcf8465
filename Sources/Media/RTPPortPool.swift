import Foundation
import Glibc
import ParleyIO

/// The local RTP/RTCP port pairs of media sessions: an even RTP port and the odd one after it, bound when reserved
/// (so a port another program holds is skipped, not found out when media starts), taken at random from the range
/// (a stranger cannot guess the next call's port), and quarantined when released: the pair stays bound, so nobody
/// else takes it, and goes back only once nothing has arrived on it for ``quarantine`` (a previous peer still
/// sending there is never heard by the next call).
///
/// ```
///   reserve() ──► a random free even port whose pair binds ──► Reservation(port, rtp fd, rtcp fd)
///   release(port) ──► quarantined (still bound; what arrives is drained and restarts its quiet time)
///        ├── quiet for `quarantine` (looked at when reserving) ──► both sockets closed, the pair free again
///        └── no free pair left, released at least `quarantine` ago ──► the oldest given out even if not quiet
///            (someone spraying the range must not starve new calls; the receive gate drops the stale stream)
///   lend(port) ──► reserved, its sockets closed for someone else to bind the pair (a call's ICE agent)
///        ├── reclaim(port) ──► reserved, bound again (the agent is gone: the call goes on as plain RTP)
///        └── release(port) ──► quarantined, bound again when it can be (else it just waits out its quarantine)
/// ```
/// Not thread-safe: one engine loop owns it.
public final class RTPPortPool {
    /// One reserved pair: the RTP port and the bound sockets (handed to GStreamer as duplicates; -1 while lent).
    public struct Reservation: Sendable, Hashable {
        /// The RTP port (even); RTCP is `port + 1`.
        public let port: Int
        let rtp: Int32
        let rtcp: Int32

        /// Whether its sockets are closed for someone else to bind the pair (``RTPPortPool/lend(_:)``).
        public var isLent: Bool { rtp < 0 }
    }

    /// The address the sockets bind to.
    public let host: String
    /// The ports used, first to last (RTP ports are the even ones).
    public let range: ClosedRange<Int>
    /// How long a released pair must be quiet before it is given out again.
    public let quarantine: Duration
    private let now: () -> ContinuousClock.Instant
    private var reserved: [Int: Reservation] = [:]
    /// Released pairs: their sockets, when each was released, and since when it has heard nothing new.
    private var quarantined: [Quarantined] = []
    /// Their ports, for the random tries to skip.
    private var quarantinedPorts: Set<Int> = []
    /// Where the random ports come from.
    private var random = SystemRandomNumberGenerator()

    /// A released pair in quarantine.
    private struct Quarantined {
        let reservation: Reservation
        let released: ContinuousClock.Instant
        var quietSince: ContinuousClock.Instant
    }

    /// A pool on `host` over `range` (at least one pair); the error says what is wrong with them. Released pairs
    /// wait `quarantine` of quiet on the clock `now` (tests inject theirs).
    public init(
        host: String, range: ClosedRange<Int>, quarantine: Duration = .seconds(60),
        now: @escaping () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) throws(MediaError) {
        guard IPAddress(host) != nil else { throw MediaError("the media address must be a numeric IP address, not \(host)") }
        let first = range.lowerBound + range.lowerBound % 2
        guard range.lowerBound >= 1024, range.upperBound <= 65_535, first + 1 <= range.upperBound else {
            throw MediaError("the RTP port range must lie within 1024–65535 and hold an even port and the one after it, not \(range)")
        }
        self.host = host
        self.range = range
        self.quarantine = quarantine
        self.now = now
    }

    deinit {
        for reservation in Array(reserved.values) + quarantined.map(\.reservation) { Self.close(reservation) }
    }

    /// How many pairs the range holds.
    public var pairs: Int { (range.upperBound - (range.lowerBound + range.lowerBound % 2) + 1) / 2 }

    /// How many pairs are reserved now.
    public var count: Int { reserved.count }
    /// How many released pairs wait in quarantine.
    public var quarantinedCount: Int { quarantined.count }

    /// Reserves a free pair at random, or nil when every pair of the range is taken (here, in quarantine, or by
    /// another program).
    public func reserve() -> Reservation? {
        endQuarantines()
        let first = range.lowerBound + range.lowerBound % 2
        let pairs = (range.upperBound - first + 1) / 2
        // Random tries first; then every pair from a random start, so a nearly full range still finds its last pair.
        let start = Int.random(in: 0..<pairs, using: &random)
        let tries = (0..<min(pairs, 8)).map { _ in Int.random(in: 0..<pairs, using: &random) } + (0..<pairs).map { (start + $0) % pairs }
        for index in tries {
            let port = first + 2 * index
            guard reserved[port] == nil, !quarantinedPorts.contains(port), let reservation = bind(port) else { continue }
            reserved[port] = reservation
            return reservation
        }
        // Nothing free: the longest-released pair that has served its minute, quiet or not.
        let moment = now()
        guard let index = quarantined.indices.min(by: { quarantined[$0].released < quarantined[$1].released }),
            moment - quarantined[index].released >= quarantine
        else { return nil }
        var reservation = quarantined.remove(at: index).reservation
        quarantinedPorts.remove(reservation.port)
        if reservation.isLent {
            // Quarantined unbound (its borrower held it when released): bound now, or not given out.
            guard let bound = bind(reservation.port) else { return nil }
            reservation = bound
        }
        Self.drain(reservation)
        reserved[reservation.port] = reservation
        return reservation
    }

    /// Closes a reserved pair's sockets so that someone else in the process binds the same ports (a call's ICE agent,
    /// whose host candidates are then the pair the call was admitted with); it stays reserved. The lent reservation,
    /// nil for a pair not reserved.
    public func lend(_ port: Int) -> Reservation? {
        guard let reservation = reserved[port] else { return nil }
        Self.close(reservation)
        let lent = Reservation(port: port, rtp: -1, rtcp: -1)
        reserved[port] = lent
        return lent
    }

    /// Binds a lent pair again (its borrower is gone); the reservation, nil when the pair is not lent or another
    /// socket still holds a port.
    public func reclaim(_ port: Int) -> Reservation? {
        guard let reservation = reserved[port], reservation.isLent, let bound = bind(port) else { return nil }
        reserved[port] = bound
        return bound
    }

    /// The pair at `port`, both sockets bound, or nil.
    private func bind(_ port: Int) -> Reservation? {
        guard let ip = IPAddress(host), let rtp = try? Socket.bound(ip.socketAddress(port: UInt16(port)), stream: false) else {
            return nil
        }
        guard let rtcp = try? Socket.bound(ip.socketAddress(port: UInt16(port + 1)), stream: false) else {
            Glibc.close(rtp)
            return nil
        }
        return Reservation(port: port, rtp: rtp, rtcp: rtcp)
    }

    /// Releases a pair into quarantine (its sockets stay bound; GStreamer's duplicates close with their pipeline). A
    /// lent pair is bound again when its borrower let go already; else it waits out its quarantine unbound.
    public func release(_ port: Int) {
        guard var reservation = reserved.removeValue(forKey: port) else { return }
        if reservation.isLent, let bound = bind(port) { reservation = bound }
        Self.drain(reservation)
        let moment = now()
        quarantined.append(Quarantined(reservation: reservation, released: moment, quietSince: moment))
        quarantinedPorts.insert(port)
    }

    /// Frees the pairs quiet for the whole quarantine; one that heard something since it was last looked at starts
    /// its quiet time again (at the back of the line).
    private func endQuarantines() {
        let moment = now()
        var kept: [Quarantined] = []
        var heard: [Quarantined] = []
        for var entry in quarantined {
            guard moment - entry.quietSince >= quarantine else {
                kept.append(entry)
                continue
            }
            if Self.drain(entry.reservation) {
                entry.quietSince = moment
                heard.append(entry)
            } else {
                Self.close(entry.reservation)
                quarantinedPorts.remove(entry.reservation.port)
            }
        }
        quarantined = kept + heard
    }

    /// Empties both sockets' queues; whether anything was there.
    @discardableResult
    private static func drain(_ reservation: Reservation) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 2_048)
        var any = false
        for fd in [reservation.rtp, reservation.rtcp] {
            // Bounded: what is left after 256 datagrams stays queued (it only says the pair is still in use).
            var taken = 0
            while taken < 256, recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) >= 0 {
                any = true
                taken += 1
            }
        }
        return any
    }

    private static func close(_ reservation: Reservation) {
        guard !reservation.isLent else { return }
        Glibc.close(reservation.rtp)
        Glibc.close(reservation.rtcp)
    }
}

extension RTPPortPool.Reservation {
    /// A session's own duplicates of the reserved sockets (the pool closes its descriptors when the call's port is
    /// released, which may be before the session's queued work has run); nil when they cannot be made.
    func duplicated() -> (rtp: Int32, rtcp: Int32)? {
        let rtp = dup(self.rtp), rtcp = dup(self.rtcp)
        guard rtp >= 0, rtcp >= 0 else {
            if rtp >= 0 { close(rtp) }
            if rtcp >= 0 { close(rtcp) }
            return nil
        }
        return (rtp, rtcp)
    }
}
