import Foundation

/// The messenger's numbers (Apple documents none): sizes, the per-sender rate, the per-leg queue, the journal.
public struct GroupLimits: Sendable, Hashable {
    /// The most bytes of a message's `type` and `data` together on a leg over UDP: the whole MESSAGE body stays
    /// under 1,024 bytes (RFC 3428 §3 and RFC 3261 §18.1.1 ask for less than 1,300 bytes per datagram), the
    /// envelope taking at most 256.
    public var maxMessageBytesDatagram = 768
    /// The same over TCP or TLS: under the control API's 64 KiB line.
    public var maxMessageBytesStream = 60 * 1024
    /// Messages each sender may send per second, on average (token bucket).
    public var messagesPerSecond = 20
    /// The burst a sender may send at once.
    public var burst = 40
    /// The most bytes waiting on one leg; a send that would go over is `throttled`.
    public var maxQueuedBytesPerLeg = 256 * 1024
    /// Messages marked `keep` the host replays to a member who joins late (the newest), and their bytes.
    public var journalMessages = 64
    public var journalBytes = 256 * 1024
    /// The most sessions a node keeps at once.
    public var maxSessions = 64
    /// How long a peer may keep asking us to wait (503 or another 5xx with Retry-After, answer after answer) before
    /// it is taken out of the session: its call goes on, its messages stop.
    public var maxUnavailable = Duration.seconds(120)

    /// The defaults.
    public init() {}

    /// The size limit on a leg.
    public func maxMessageBytes(stream: Bool) -> Int { stream ? maxMessageBytesStream : maxMessageBytesDatagram }
}

/// A token bucket on an injected clock (uptime): `rate` tokens a second, at most `burst` saved.
public struct TokenBucket: Sendable, Hashable {
    private(set) var tokens: Double
    private var updated: Duration
    let rate: Double
    let burst: Double

    /// A full bucket.
    public init(rate: Int, burst: Int, now: Duration) {
        self.rate = Double(max(rate, 1))
        self.burst = Double(max(burst, 1))
        tokens = self.burst
        updated = now
    }

    /// Takes a token, or says how long until one is there.
    public mutating func take(now: Duration) -> Duration? {
        let elapsed = max(0, Self.seconds(now - updated))
        tokens = min(burst, tokens + elapsed * rate)
        updated = max(updated, now)
        guard tokens < 1 else {
            tokens -= 1
            return nil
        }
        let wait = (1 - tokens) / rate
        return .milliseconds(Int64((wait * 1000).rounded(.up)))
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
