import Foundation

/// A node's group sessions as one pure machine (Apple's `GroupSession` and `GroupSessionMessenger`, over the SIP
/// dialogs of its conversations): it decides what goes on which leg and what the frontend hears, and returns it as
/// ``GroupEffect``s; the driver sends the MESSAGEs, runs the timers and feeds the answers back. The clock is the
/// `now` each input carries (uptime).
///
/// ```
///   frontend ──activate / join / leave / end / send──▶ ┌──────────────┐ ──transmit (one per leg in flight)──▶ legs
///   legs ──MESSAGE received / answered / failed──────▶ │GroupMessenger│ ──deliver, sendFinished, offered…──▶ frontend
///   engine ──legChanged / legEnded────────────────────▶ └──────────────┘ ──resumeLater, endConversation──▶ driver
/// ```
/// The host of a session (who activated it, or who merged the calls) is its sequencer: it stamps every accepted
/// message with the session's next `seq` and forwards it on every other member's leg, so every member sees one
/// order (FIFO per sender included). Each leg carries one MESSAGE at a time (pipelined in-dialog requests over UDP
/// can arrive out of order, and a lower CSeq is refused with 500: RFC 3261 §12.2.2).
public struct GroupMessenger: Sendable {
    /// What the engine says about one live conversation.
    public struct Leg: Sendable, Hashable {
        public var uuid: UUID
        /// The peer's name as the others see it.
        public var name: String
        public var format: GroupLegFormat
        /// Whether its transport is a stream (TCP, TLS): the larger size limit.
        public var isStream: Bool
        /// The conversation group it is merged into, if any.
        public var group: UUID?
        /// Whether the call is up (joined or paused): only such a conversation carries a session.
        public var isConnected: Bool

        /// A leg.
        public init(uuid: UUID, name: String, format: GroupLegFormat, isStream: Bool, group: UUID?, isConnected: Bool) {
            self.uuid = uuid
            self.name = name
            self.format = format
            self.isStream = isStream
            self.group = group
            self.isConnected = isConnected
        }
    }

    /// The numbers it keeps to.
    public let limits: GroupLimits
    /// This side's name in sessions it hosts or joins.
    public let localName: String
    var legs: [UUID: Leg] = [:]
    var queues: [UUID: LegQueue] = [:]
    var sessions: [String: Session] = [:]
    /// Conversations whose peer asked us to wait for longer than ``GroupLimits/maxUnavailable``: out of every
    /// session for the rest of the call.
    var unresponsive: Set<UUID> = []
    var nextToken: UInt64 = 1
    var nextSendID: UInt64 = 1

    /// An empty messenger.
    public init(localName: String, limits: GroupLimits = GroupLimits()) {
        self.localName = localName
        self.limits = limits
    }

    // MARK: What the driver may read

    /// Every session that is not over, oldest first.
    public var sessionInfos: [GroupSessionInfo] {
        sessions.values.sorted { $0.created < $1.created }.map { info($0) }
    }

    /// One session.
    public func session(_ id: String) -> GroupSessionInfo? { sessions[id].map { info($0) } }

    /// The session a conversation carries (hosted on it or its group, or joined through it), if any.
    public func session(on conversation: UUID) -> GroupSessionInfo? {
        sessionID(carriedBy: conversation).flatMap { sessions[$0] }.map { info($0) }
    }

    /// Whether the machine knows a conversation (it was connected once and has not ended).
    public func isKnown(_ conversation: UUID) -> Bool { legs[conversation] != nil }

    /// Whether a conversation may activate a session (Apple's `GroupStateObserver.isEligibleForGroupSession`).
    public func isEligible(_ conversation: UUID) -> Bool { legs[conversation]?.isConnected == true }

    /// Messages waiting or in flight on a leg (for status and tests).
    public func queued(on leg: UUID) -> Int { queues[leg].map { $0.waitingCount + ($0.inFlight == nil ? 0 : 1) } ?? 0 }

    // MARK: Conversations

    /// A conversation was reported or changed (state, group, transport).
    public mutating func legChanged(_ leg: Leg, now: Duration) -> [GroupEffect] {
        var leg = leg
        // A peer that refused our JSON (415) reads text for the rest of the call.
        if legs[leg.uuid]?.format == .text { leg.format = .text }
        let previous = legs.updateValue(leg, forKey: leg.uuid)
        if previous == leg { return [] }
        var effects: [GroupEffect] = []
        if !leg.isConnected, previous?.isConnected == true {
            // An ended or dropped call: what it carried is over for it.
            return legGone(leg.uuid, now: now)
        }
        if previous?.format != leg.format, previous != nil { effects.append(.log("\(leg.uuid): the peer reads \(leg.format.rawValue)")) }
        return effects + refreshMembership(now: now)
    }

    /// A conversation ended (it left): everything it carried is over for it.
    public mutating func legEnded(_ conversation: UUID, now: Duration) -> [GroupEffect] {
        let effects = legGone(conversation, now: now)
        legs[conversation] = nil
        queues[conversation] = nil
        unresponsive.remove(conversation)
        return effects
    }

    private mutating func legGone(_ uuid: UUID, now: Duration) -> [GroupEffect] {
        var effects: [GroupEffect] = []
        if var leg = legs[uuid] {
            leg.isConnected = false
            legs[uuid] = leg
        }
        // Nothing more goes on it; a MESSAGE still in flight keeps the leg busy until its transaction ends (were the
        // call to come back, a second one must not overtake it).
        // Looked up first: most calls never carried a group message, and an in-place edit of a missing entry still
        // goes through the table's modify path.
        if queues[uuid] != nil {
            queues[uuid]?.removeAllWaiting()
            queues[uuid]?.pausedUntil = nil
        }
        for id in sessions.keys.sorted() {
            guard var session = sessions[id] else { continue }
            switch session.role {
            case .member(let hostLeg, _) where hostLeg == uuid:
                effects += close(id, .conversationEnded)
            case .member:
                continue
            case .host:
                guard session.members[uuid] != nil else { continue }
                effects += removeMember(uuid, from: &session, now: now)
                sessions[id] = session
            }
        }
        return effects + refreshMembership(now: now)
    }

    // MARK: Helpers shared by the extensions

    /// The session a conversation carries.
    func sessionID(carriedBy conversation: UUID) -> String? {
        for session in sessions.values {
            switch session.role {
            case .host(let anchor): if anchor == conversation || session.members[conversation] != nil { return session.id }
            case .member(let hostLeg, _): if hostLeg == conversation { return session.id }
            }
        }
        return nil
    }

    func info(_ session: Session) -> GroupSessionInfo {
        let conversation: UUID
        switch session.role {
        case .host(let anchor): conversation = anchor
        case .member(let hostLeg, _): conversation = hostLeg
        }
        return GroupSessionInfo(
            id: session.id, activity: session.activity, state: session.state, isHost: session.isHost,
            conversation: conversation, localParticipant: session.local,
            activeParticipants: session.active.values.sorted(), maxMessageBytes: maxMessageBytes(session))
    }

    /// The smallest limit over the legs the session's messages cross.
    func maxMessageBytes(_ session: Session) -> Int {
        let crossed: [UUID]
        switch session.role {
        case .host: crossed = Array(session.members.keys)
        case .member(let hostLeg, _): crossed = [hostLeg]
        }
        let streams = crossed.compactMap { legs[$0]?.isStream }
        if streams.isEmpty || streams.contains(false) { return limits.maxMessageBytesDatagram }
        return limits.maxMessageBytesStream
    }

    /// Whether `bytes` more fit on `leg` (its cap bounds what a slow or hostile peer can make us hold).
    func hasRoom(for bytes: Int, on leg: UUID) -> Bool {
        (queues[leg]?.queuedBytes ?? 0) + bytes <= limits.maxQueuedBytesPerLeg
    }

    /// Queues `outgoing` on `leg` and sends it if the leg is free; beyond the leg's byte cap it is dropped (a stamped
    /// message is checked by its sender first and counted as failed for that member).
    mutating func enqueue(_ outgoing: LegQueue.Outgoing, on leg: UUID) -> [GroupEffect] {
        guard hasRoom(for: outgoing.bytes, on: leg) || queues[leg]?.replaces(outgoing) == true else {
            return [.log("\(leg): \(outgoing.wire.kindName) dropped: \(limits.maxQueuedBytesPerLeg) bytes wait on the leg already")]
        }
        // In place (the dictionary's modify accessor): a copy of the queue would copy everything waiting in it.
        queues[leg, default: LegQueue()].append(outgoing)
        return pump(leg)
    }

    /// Sends the next waiting message on `leg` when none is in flight and the leg is not paused.
    mutating func pump(_ leg: UUID) -> [GroupEffect] {
        // Read through the dictionary, never into a copy: a copy would share, and so copy, what waits.
        guard queues[leg]?.inFlight == nil, queues[leg]?.pausedUntil == nil, queues[leg]?.isEmpty == false,
            let next = queues[leg]?.popFirst()
        else { return [] }
        let format = legs[leg]?.format ?? .json
        let token = nextToken
        nextToken += 1
        queues[leg]?.inFlight = LegQueue.InFlight(token: token, outgoing: next)
        return [.transmit(leg: leg, next.transmission(token: token, format: format))]
    }

    mutating func newSendID() -> UInt64 {
        defer { nextSendID += 1 }
        return nextSendID
    }

    /// Ends a session here: its state is `invalidated`, the frontend hears it, and what was waiting for it fails (the
    /// caller, ``close(_:_:)``, dropped what waited on the legs first).
    mutating func invalidate(_ session: inout Session, _ reason: GroupSessionEndReason) -> [GroupEffect] {
        session.state = .invalidated(reason)
        var effects: [GroupEffect] = [.sessionChanged(info(session))]
        for id in session.awaitingReceipts.sorted() {
            effects.append(.sendFinished(GroupSendReport(
                id: id, session: session.id, seq: nil, deliveredTo: [], failed: [session.hostID], unsupported: [],
                error: .participantLeft(session.hostID))))
        }
        for seq in session.pending.keys.sorted() {
            guard let pending = session.pending[seq], case .local(let id) = pending.origin else { continue }
            effects.append(.sendFinished(pending.report(id: id, session: session.id, seq: seq, leftover: true)))
        }
        sessions[session.id] = nil
        return effects
    }
}
