/// What the engine has counted since it started.
public struct EngineStatistics: Sendable, Hashable {
    /// SIP messages received from the transports.
    public var messagesReceived = 0
    /// Messages that did not parse (dropped or answered 400).
    public var malformedMessages = 0
    /// Retransmitted requests absorbed by their transactions.
    public var retransmissionsAbsorbed = 0
    /// Incoming INVITEs that became conversations.
    public var incomingCalls = 0
    /// Outgoing INVITEs sent for Start actions.
    public var outgoingCalls = 0
    /// New INVITEs refused with 503 because the live calls were at the limit.
    public var callsRefusedOverLimit = 0
    /// New INVITEs refused with 503 because the media layer carried all the calls with audio it may, or its threads
    /// lagged behind the calls' audio.
    public var callsRefusedOverMediaLimit = 0
    /// In-dialog MESSAGE and INFO requests refused: a body over 16 KiB (413), or over the call's budget (503).
    public var inDialogRequestsRefused = 0
    /// New INVITEs refused with 403 because the caller policy does not admit the caller.
    public var callersRefused = 0
    /// New INVITEs refused with 503 because their source had the most calls ringing one source may.
    public var callsRefusedPerSource = 0
    /// New requests refused with 503 because their source sent more than `maxRequestsPerSource` in a second (each
    /// began a ban).
    public var requestsRefusedPerSource = 0
    /// New requests dropped unanswered because their source was banned.
    public var requestsDropped = 0
    /// Sources banned now.
    public var sourcesBanned = 0
    /// Calls with a live SIP side now.
    public var liveCalls = 0
    /// Live SIP transactions now.
    public var liveTransactions = 0
    /// Requests we sent that are still waiting for their final response (client transactions).
    public var pendingRequests = 0
    /// New out-of-dialog requests answered 503 by overload control.
    public var requestsShed = 0
    /// New out-of-dialog requests dropped unread by overload control (UDP).
    public var requestsShedDropped = 0
    /// ACKs for those 503s (sent without keeping state), absorbed unread.
    public var refusalACKsAbsorbed = 0
    /// New-looking requests overload control picked to shed but took: retransmitted INVITEs of calls in progress.
    public var retransmissionsSpared = 0
    /// Messages dropped because the parse thread's queue was full (`EngineConfiguration.parsesOnThread`).
    public var parseQueueDrops = 0
    /// Whether overload control is shedding now.
    public var overloaded = false
    /// How busy the engine's thread was in the last window, in percent (0 without overload control).
    public var loadBusyPercent = 0
    /// The share of new out-of-dialog requests shed now, in percent.
    public var loadShedPercent = 0
    /// How late the last load probe fired, in milliseconds (the event loop's lag).
    public var loopLagMilliseconds = 0
    /// The longest a UDP datagram read in the last window had waited in the receive queue, in milliseconds (the
    /// backlog overload control looks for; 0 without overload control).
    public var queueWaitMilliseconds = 0
    /// Calls with audio carried now (0 when the node carries none itself).
    public var callsWithAudio = 0
    /// The last second's worst lag of a call's audio behind real time, in milliseconds (the media load check).
    public var mediaLagMilliseconds = 0
}
