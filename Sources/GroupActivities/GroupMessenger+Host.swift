import Foundation

/// The host's side: activating a session, keeping its members in step with the conversations, stamping and
/// forwarding messages, and accounting their answers.
extension GroupMessenger {
    /// Activates `activity` on a connected conversation (and its group, once merged): this side hosts the session
    /// and has joined it; the peers are offered it. A session the conversation carried before is replaced.
    public mutating func activate(
        _ activity: GroupActivity, on conversation: UUID, sessionID newID: String, localID: String, now: Duration
    ) -> Result<GroupSessionInfo, GroupSendError>.WithEffects {
        if let problem = activity.problem { return .init(.failure(.invalidMessage(problem)), []) }
        guard isEligible(conversation) else { return .init(.failure(.notJoined), []) }
        guard sessions.count < limits.maxSessions || sessionID(carriedBy: conversation) != nil else {
            return .init(.failure(.throttled(retryAfter: .seconds(1))), [])
        }
        var effects: [GroupEffect] = []
        for other in conversationsInScope(of: conversation) {
            if let previous = sessionID(carriedBy: other) { effects += replace(previous) }
        }
        let local = GroupParticipant(id: localID, name: localName)
        let session = Session(
            id: newID, activity: activity, role: .host(anchor: conversation), state: .joined, local: local,
            active: [local.id: local], created: now)
        sessions[newID] = session
        effects.append(.sessionChanged(info(session)))
        effects += refreshMembership(now: now)
        return .init(.success(info(sessions[newID]!)), effects)
    }

    /// Ends a session this side hosts, for everyone; a member's `end` is a `leave`.
    public mutating func end(_ sessionID: String, now: Duration) -> [GroupEffect] {
        guard let session = sessions[sessionID] else { return [] }
        guard case .host = session.role else { return leave(sessionID, now: now) }
        return close(sessionID, .ended)
    }

    /// Closes a session here: what still waits for it on every leg is dropped, the peers that can still hear it are
    /// told (the host tells each Parley member `active: false`; a joined member tells the host it leaves), and it is
    /// invalidated. The notices go after whatever is in flight on their leg.
    mutating func close(_ sessionID: String, _ reason: GroupSessionEndReason) -> [GroupEffect] {
        guard var session = sessions[sessionID] else { return [] }
        for leg in queues.keys { queues[leg]?.drop(session: sessionID) }
        var effects: [GroupEffect] = []
        switch session.role {
        case .host:
            for leg in session.members.keys.sorted() where legs[leg]?.isConnected == true && legs[leg]?.format == .json {
                effects += enqueue(.init(session: sessionID, purpose: .control, wire: ended(session), text: nil), on: leg)
            }
        case .member(let hostLeg, _):
            if session.state == .joined, reason != .ended, legs[hostLeg]?.isConnected == true {
                effects += enqueue(.init(session: sessionID, purpose: .control, wire: GroupWire(.leave, session: sessionID), text: nil), on: hostLeg)
            }
        }
        return effects + invalidate(&session, reason)
    }

    /// The roster that tells a member the session is over for it.
    func ended(_ session: Session) -> GroupWire {
        var wire = GroupWire(.session, session: session.id)
        wire.activity = session.activity
        wire.host = session.local.id
        wire.active = false
        return wire
    }

    /// The conversations a session activated on `conversation` spans: its group's, or itself.
    func conversationsInScope(of conversation: UUID) -> [UUID] {
        guard let group = legs[conversation]?.group else { return [conversation] }
        return legs.values.filter { $0.group == group && $0.isConnected }.map(\.uuid).sorted()
    }

    /// A session that is replaced by a new one on the same conversations.
    mutating func replace(_ sessionID: String) -> [GroupEffect] { close(sessionID, .replaced) }

    /// Brings every hosted session's members in line with the conversations: the group of any member (the anchor
    /// first), else the anchor alone while it is connected.
    mutating func refreshMembership(now: Duration) -> [GroupEffect] {
        var effects: [GroupEffect] = []
        for id in sessions.keys.sorted() {
            guard var session = sessions[id], case .host(let anchor) = session.role else { continue }
            let current = [anchor] + session.members.keys.sorted()
            let legs = self.legs
            let group = current.lazy.compactMap { legs[$0]?.isConnected == true ? legs[$0]?.group : nil }.first
            var wanted: Set<UUID>
            if let group {
                wanted = Set(legs.values.filter { $0.group == group && $0.isConnected }.map(\.uuid))
            } else {
                wanted = Set(current.filter { legs[$0]?.isConnected == true }.prefix(1))
            }
            // A peer that kept asking us to wait is out for the rest of its call (GroupMessenger+Answers).
            wanted.subtract(unresponsive)
            guard !wanted.isEmpty else {
                // Every call it spanned is over: so is the session.
                effects += close(id, .conversationEnded)
                continue
            }
            if let newAnchor = wanted.contains(anchor) ? anchor : wanted.min() { session.role = .host(anchor: newAnchor) }
            // A conversation carrying another session joins this one only by a new activation.
            wanted = wanted.filter { leg in sessionID(carriedBy: leg).map { $0 == id } ?? true }
            var changed = false
            var added: [GroupParticipant] = [], removed: [GroupParticipant] = []
            for leg in session.members.keys.sorted() where !wanted.contains(leg) {
                if let member = session.members[leg], member.joined { removed.append(member.participant) }
                effects += dropMember(leg, from: &session)
                // Unmerged, its call still up: a Parley member hears that the session is over for it.
                if legs[leg]?.isConnected == true, legs[leg]?.format == .json, !unresponsive.contains(leg) {
                    effects += enqueue(.init(session: id, purpose: .control, wire: ended(session), text: nil), on: leg)
                }
                changed = true
            }
            for leg in wanted.sorted() where session.members[leg] == nil {
                guard let info = legs[leg] else { continue }
                let participant = GroupParticipant(id: leg.uuidString.lowercased(), name: info.name)
                let joined = info.format == .text
                session.members[leg] = Session.Member(participant: participant, joined: joined)
                if joined {
                    session.active[participant.id] = participant
                    added.append(participant)
                }
                changed = true
            }
            sessions[id] = session
            if changed { effects += announceRoster(id, added: added, removed: removed) }
        }
        return effects
    }

    /// The roster as one member is told it.
    func roster(_ session: Session, for leg: UUID) -> GroupWire {
        var wire = GroupWire(.session, session: session.id)
        wire.activity = session.activity
        wire.host = session.local.id
        wire.you = session.members[leg]?.participant.id
        wire.participants = session.active.values.sorted()
        wire.active = true
        return wire
    }

    /// Tells every Parley member the roster, and the frontend who came and went.
    mutating func announceRoster(_ sessionID: String, added: [GroupParticipant], removed: [GroupParticipant]) -> [GroupEffect] {
        guard let session = sessions[sessionID] else { return [] }
        var effects: [GroupEffect] = []
        for leg in session.members.keys.sorted() where legs[leg]?.format == .json {
            effects += enqueue(.init(session: sessionID, purpose: .control, wire: roster(session, for: leg), text: nil), on: leg)
        }
        if !added.isEmpty || !removed.isEmpty {
            effects.append(.participantsChanged(
                session: sessionID, added: added.sorted(), removed: removed.sorted(), active: session.active.values.sorted()))
        }
        return effects
    }

    /// A member's conversation left the session: it is no longer active, and nothing still owed to it is waited for.
    mutating func removeMember(_ leg: UUID, from session: inout Session, now: Duration) -> [GroupEffect] {
        guard let member = session.members[leg] else { return [] }
        let effects = dropMember(leg, from: &session)
        sessions[session.id] = session
        return effects + announceRoster(session.id, added: [], removed: member.joined ? [member.participant] : [])
    }

    /// Takes a member out, failing the stamped messages still waiting for it.
    mutating func dropMember(_ leg: UUID, from session: inout Session) -> [GroupEffect] {
        guard let member = session.members.removeValue(forKey: leg) else { return [] }
        session.active[member.participant.id] = nil
        queues[leg]?.drop(session: session.id)
        var effects: [GroupEffect] = []
        for seq in session.pending.keys.sorted() {
            guard var pending = session.pending[seq] else { continue }
            if case .remote(let origin, _) = pending.origin, origin == leg { pending.origin = .nobody }
            guard let id = pending.waiting.removeValue(forKey: leg) else {
                session.pending[seq] = pending
                continue
            }
            pending.failed.append(id)
            session.pending[seq] = pending
            effects += settleIfDone(seq, in: &session)
        }
        return effects
    }

    /// A stamped message that reached every leg it waits on: its sender hears how it went.
    mutating func settleIfDone(_ seq: UInt64, in session: inout Session) -> [GroupEffect] {
        guard let pending = session.pending[seq], pending.isDone else { return [] }
        session.pending[seq] = nil
        switch pending.origin {
        case .local(let id):
            return [.sendFinished(pending.report(id: id, session: session.id, seq: seq))]
        case .nobody:
            return []
        case .remote(let leg, let id):
            guard session.members[leg] != nil else { return [] }
            var receipt = GroupWire(.receipt, session: session.id)
            receipt.id = id
            receipt.seq = seq
            receipt.deliveredTo = pending.deliveredTo.sorted()
            receipt.failed = pending.failed.sorted()
            receipt.unsupported = pending.unsupported.sorted()
            return enqueue(.init(session: session.id, purpose: .control, wire: receipt, text: nil), on: leg)
        }
    }
}

extension Result {
    /// A result with the effects that came with it.
    public struct WithEffects {
        public let result: Result
        public let effects: [GroupEffect]

        public init(_ result: Result, _ effects: [GroupEffect]) {
            self.result = result
            self.effects = effects
        }
    }
}
