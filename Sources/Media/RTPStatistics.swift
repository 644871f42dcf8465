import CGStreamer

/// A call's RTP figures (RFC 3550 §6.4): from rtpbin's session what we sent and received, the jitter, and what the
/// peer's last receiver report said about our stream; the peer's lost packets from ``RTPLossCounter``.
public struct RTPStatistics: Sendable, Hashable {
    /// The codec of the stream measured.
    public var codec: AudioCodec
    /// RTP packets we sent.
    public var packetsSent: Int
    /// RTP packets we received (every source the peer used, on hold too).
    public var packetsReceived: Int
    /// Packets of the peer's stream that never arrived while both sides sent (``RTPLossCounter``: a hold is not
    /// loss); never negative.
    public var packetsLost: Int
    /// Packets of the peer's stream expected while both sides sent: what ``packetsLost`` is a share of.
    public var packetsExpected: Int
    /// Packets that reached the call's ports and were dropped before the RTP session: from anyone but the peer's
    /// accepted source, failing SRTP's authentication, replayed, or not decryptable yet (before DTLS completes).
    public var packetsDropped = 0
    /// The interarrival jitter of what we receive, in milliseconds (the worst source's).
    public var jitterMilliseconds: Double
    /// The peer's last receiver report about our stream, if one came.
    public var peerReport: PeerReport?

    /// What the peer said about our stream (RTCP receiver report block).
    public struct PeerReport: Sendable, Hashable {
        /// Our packets it never got (its RFC 3550 cumulative count, which duplicates and rtpbin's probation can make
        /// negative: read as 0).
        public var packetsLost: Int
        /// The fraction of our packets lost since its previous report (0–1).
        public var fractionLost: Double
        /// The jitter it measured, in milliseconds.
        public var jitterMilliseconds: Double
        /// The round trip from its report (RFC 3550 §6.4.1's LSR/DLSR), in milliseconds; nil until it echoes one of
        /// our sender reports.
        public var roundTripMilliseconds: Double?
    }

    /// The figures of the C side and the loss counted from the arrivals, for a stream of `codec` (its clock rate
    /// turns jitter into time).
    init(_ raw: ParleyRTPStats, loss: RTPLossCounter, codec: AudioCodec) {
        self.codec = codec
        let perMillisecond = Double(codec.clockRate) / 1_000
        packetsSent = Int(raw.packets_sent)
        packetsReceived = Int(raw.packets_received)
        packetsLost = loss.lost
        packetsExpected = loss.expected
        jitterMilliseconds = Double(raw.jitter) / perMillisecond
        peerReport =
            raw.have_report == 0
            ? nil
            : PeerReport(
                packetsLost: max(0, Int(raw.peer_packets_lost)), fractionLost: Double(raw.peer_fraction_lost) / 256,
                jitterMilliseconds: Double(raw.peer_jitter) / perMillisecond,
                roundTripMilliseconds: raw.round_trip == 0 ? nil : Double(raw.round_trip) * 1_000 / 65_536)
    }
}
