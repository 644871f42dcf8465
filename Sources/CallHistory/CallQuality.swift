import Foundation

/// A call's audio figures (RFC 3550 receiver statistics of its RTP): as they stand during the call, and as they
/// ended, kept with its record. Figures from the peer's RTCP receiver reports are nil until one arrives.
public struct CallQuality: Sendable, Hashable, Codable {
    /// The codec's encoding name (`PCMU`, `PCMA`).
    public var codec: String
    /// RTP packets we sent.
    public var packetsSent: Int
    /// RTP packets we received.
    public var packetsReceived: Int
    /// Packets of the peer's stream that never arrived.
    public var packetsLost: Int
    /// The interarrival jitter of what we received, in milliseconds.
    public var jitterMs: Double
    /// Our packets the peer reported lost (its last receiver report).
    public var peerPacketsLost: Int?
    /// The jitter the peer measured on our stream, in milliseconds.
    public var peerJitterMs: Double?
    /// The round trip from the peer's receiver report, in milliseconds.
    public var roundTripMs: Double?

    /// Figures.
    public init(
        codec: String, packetsSent: Int, packetsReceived: Int, packetsLost: Int, jitterMs: Double,
        peerPacketsLost: Int? = nil, peerJitterMs: Double? = nil, roundTripMs: Double? = nil
    ) {
        self.codec = codec
        self.packetsSent = packetsSent
        self.packetsReceived = packetsReceived
        self.packetsLost = packetsLost
        self.jitterMs = jitterMs
        self.peerPacketsLost = peerPacketsLost
        self.peerJitterMs = peerJitterMs
        self.roundTripMs = roundTripMs
    }

    /// The share of the peer's packets that never arrived (0 when none were expected).
    public var lossFraction: Double {
        let expected = packetsReceived + max(packetsLost, 0)
        return expected == 0 ? 0 : Double(max(packetsLost, 0)) / Double(expected)
    }
}
