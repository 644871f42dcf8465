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
    /// Packets of the peer's stream that never arrived while both sides sent (a hold is not loss). Records written
    /// before that rule may hold rtpbin's count for the whole call, negative on a clean one: read it as
    /// ``lostPackets``.
    public var packetsLost: Int
    /// Packets of the peer's stream expected while both sides sent, what the loss is a share of; nil in records
    /// written before it was kept.
    public var packetsExpected: Int?
    /// Packets that reached the call's ports and were dropped before its RTP session (a stranger's, failing SRTP's
    /// authentication, replayed); nil in records written before it was kept.
    public var packetsDropped: Int?
    /// The interarrival jitter of what we received, in milliseconds.
    public var jitterMs: Double
    /// Our packets the peer reported lost (its last receiver report; read it as ``peerLostPackets``).
    public var peerPacketsLost: Int?
    /// The jitter the peer measured on our stream, in milliseconds.
    public var peerJitterMs: Double?
    /// The round trip from the peer's receiver report, in milliseconds.
    public var roundTripMs: Double?
    /// With ICE, the kind of our candidate the RTP went between (`host`, `srflx`, `prflx`, `relay`); nil without ICE
    /// (and in records written before it was kept).
    public var iceLocalType: String?
    /// With ICE, the kind of the peer's candidate.
    public var iceRemoteType: String?
    /// The call's video figures, when it had video (nil without, and in records written before video was carried).
    public var video: VideoQuality?

    /// Figures.
    public init(
        codec: String, packetsSent: Int, packetsReceived: Int, packetsLost: Int, packetsExpected: Int? = nil,
        jitterMs: Double, peerPacketsLost: Int? = nil, peerJitterMs: Double? = nil, roundTripMs: Double? = nil,
        packetsDropped: Int? = nil
    ) {
        self.packetsDropped = packetsDropped
        self.codec = codec
        self.packetsSent = packetsSent
        self.packetsReceived = packetsReceived
        self.packetsLost = packetsLost
        self.packetsExpected = packetsExpected
        self.jitterMs = jitterMs
        self.peerPacketsLost = peerPacketsLost
        self.peerJitterMs = peerJitterMs
        self.roundTripMs = roundTripMs
    }

    /// The peer's packets that never arrived, never negative: RFC 3550's "expected − received" goes below zero
    /// with duplicates (and rtpbin's probation made a clean call −1), and that is no loss.
    public var lostPackets: Int { max(0, packetsLost) }

    /// Our packets the peer reported lost, never negative (its count is RFC 3550's, as above).
    public var peerLostPackets: Int? { peerPacketsLost.map { max(0, $0) } }

    /// The share of the peer's packets expected while both sides sent that never arrived (0 when none were
    /// expected); for older records, of those received or lost.
    public var lossFraction: Double {
        let expected = packetsExpected ?? packetsReceived + lostPackets
        return expected <= 0 ? 0 : min(1, Double(lostPackets) / Double(expected))
    }
}
