import Foundation

extension Conversation {
    /// Where a conversation is in its lifecycle. `left` is terminal.
    ///
    /// ```
    ///            report incoming                     startedConnecting        connected
    ///  (new) ───────────────────────▶ ringing ───────────────────▶ joining ──────────────▶ joined ◀──┐
    ///    │ Start performed               ▲                                                   │ Pause │ Resume
    ///    ▼          Start fulfilled      │                                                   ▼       │
    ///   idle ────────────────────────────┘                                                 paused ───┘
    ///   any live state ── End performed ──▶ leaving ── End fulfilled ──▶ left
    ///   any live state ── ended(reason) / Start·Join·End failed or timed out ──────────────▶ left
    /// ```
    /// The full table, generated from ``ConversationLifecycle``, is in docs/lifecycle.md.
    public enum State: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
        /// Known to the manager but not active yet: an outgoing conversation whose Start has not run.
        case idle
        /// The remote side is being alerted (outgoing) or the local side is (incoming).
        case ringing
        /// Answered; the session (media) is being set up.
        case joining
        /// Media is live.
        case joined
        /// On hold: media paused, may resume.
        case paused
        /// A local End is in progress; media is being torn down.
        case leaving
        /// Over. Terminal: the conversation leaves `conversations`.
        case left

        /// The state's name.
        public var description: String { rawValue }

        /// Whether the conversation is still live (anything but `left`).
        public var isLive: Bool { self != .left }

        /// Whether media is (being) set up in this state: joining, joined or paused.
        public var hasMedia: Bool {
            switch self {
            case .joining, .joined, .paused: true
            case .idle, .ringing, .leaving, .left: false
            }
        }
    }

    /// Why a conversation ended.
    ///
    /// The first five are LiveCommunicationKit's. Parley adds what a SIP softphone must tell apart; the SIP
    /// backend maps responses and requests onto them like this:
    ///
    /// | reason | meaning | SIP (outgoing) | SIP (incoming) | history status |
    /// |---|---|---|---|---|
    /// | failed | error servicing the conversation | 4xx/5xx/6xx other than below, transport error, Start/Join/End failed or timed out | malformed/unusable INVITE, media failure | failed |
    /// | remoteEnded | the remote side hung up after connecting | BYE received | BYE received | connected |
    /// | unanswered | never answered before a ring timeout | 408, 480, our own ring timeout | our ring timeout (we send 480) | missed (in) / cancelled (out) |
    /// | joinedElsewhere | another device of the user answered | — | CANCEL with `Reason: SIP;cause=200` | answered elsewhere |
    /// | declinedElsewhere | another device of the user declined | — | CANCEL with `Reason: SIP;cause=603` | declined elsewhere |
    /// | declined | the remote side refused the conversation | 603 Decline, 607 | — | declined |
    /// | busy | the remote side is busy | 486 Busy Here, 600 Busy Everywhere | — | busy |
    /// | cancelled | the caller withdrew it before it was answered | — | CANCEL (no Reason), or a cancel push | missed |
    /// | mediaTimeout | the peer's media stopped arriving (no RTP or RTCP for the media timeout, the call not held) | we sent BYE | we sent BYE | connected |
    /// | sessionExpired | the RFC 4028 session timer ran out: no session refresh arrived in time | we sent BYE | we sent BYE | connected |
    /// | mediaSecurityFailed | the media could not be secured: the peer's DTLS certificate is not the one its SDP's fingerprint names, or the DTLS handshake did not complete in time | we sent BYE | we sent BYE | connected |
    /// | iceFailed | ICE found no path for the media: every connectivity check failed, none succeeded in time, or the peer stopped granting consent (RFC 7675) | we sent BYE | we sent BYE | connected |
    /// | localEnded | the local member ended it (a fulfilled End action) | we sent CANCEL/BYE | we sent 486/603/BYE | cancelled (out, unconnected) / declined (in, unconnected) / connected |
    /// | crashed | the node stopped (killed, crashed, the machine lost power) while the conversation was live | — | — | failed (out, unconnected) / missed (in, unconnected) / connected |
    ///
    /// `localEnded` is never reported as an event: LiveCommunicationKit expresses a local hang-up by fulfilling
    /// the End action, and the manager records it here so frontends and history can tell. `crashed` is never reported
    /// either: no live conversation ends so; only the history record a node writes at its next start for a call it had
    /// journaled as live carries it.
    public enum EndedReason: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
        /// An error prevented servicing the conversation.
        case failed
        /// The remote side ended a connected conversation.
        case remoteEnded
        /// Nobody answered before the ring timeout.
        case unanswered
        /// Another device of the same user answered.
        case joinedElsewhere
        /// Another device of the same user declined.
        case declinedElsewhere
        /// The remote side declined (SIP 603).
        case declined
        /// The remote side was busy (SIP 486/600).
        case busy
        /// The caller withdrew the conversation before it was answered (SIP CANCEL).
        case cancelled
        /// The local member handed the remote party over to someone else (a transfer the target answered): the
        /// call is over for us.
        case transferred
        /// Not answered here: forwarded elsewhere (SIP 302) when nobody answered in time.
        case forwarded
        /// The local member ended it through an End action. Only the manager sets this.
        case localEnded
        /// The peer's media stopped arriving for the media timeout while it should have been sending (a peer that
        /// crashed or lost its network): Parley sent BYE.
        case mediaTimeout
        /// The RFC 4028 session timer ran out: the refresher's refresh (re-INVITE) did not come in time, or ours kept
        /// failing: Parley sent BYE.
        case sessionExpired
        /// The call's media could not be secured (DTLS-SRTP): the peer presented another certificate than the
        /// fingerprint of its SDP names (someone on the path, or a broken peer), or the handshake did not complete in
        /// time. No audio flowed; Parley sent BYE.
        case mediaSecurityFailed
        /// ICE found no path for the call's media (RFC 8445): every connectivity check failed or none succeeded in
        /// time, or the peer stopped granting consent (RFC 7675). No audio could flow; Parley sent BYE.
        case iceFailed
        /// The node stopped without ending the conversation (killed, crashed, or the machine went down): its history
        /// record was written at the node's next start, from the journal of live calls. Never a live conversation's.
        case crashed

        /// The reason's name.
        public var description: String { rawValue }
    }
}
