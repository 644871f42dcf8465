import Foundation

/// The answers to our MESSAGEs: the next one goes after a final response; a wait, a downgrade to text or a dead
/// dialog is decided here.
///
/// ```
///  2xx ──▶ delivered to that member; next
///  415 ──▶ the peer reads text: a text message goes again as text/plain, another type is "unsupported"; next
///  5xx with Retry-After (503, or 500 for a CSeq out of order) ──▶ the leg pauses, the same message goes again;
///      a peer that has asked us to wait for longer than maxUnavailable, answer after answer ──▶ out of the session
///  481, 408, no answer, transport failure ──▶ the dialog is dead: the member leaves, its conversation ends
///  any other refusal ──▶ failed for that member; next
/// ```
extension GroupMessenger {
    /// How often one message goes again after a wait before it fails.
    static let maxAttempts = 5
    /// The longest wait a Retry-After gets.
    static let longestWait = Duration.seconds(60)

    /// A final (or provisional) response to transmission `token` on `leg`.
    public mutating func answered(
        leg: UUID, token: UInt64, status: Int, retryAfter: Duration?, now: Duration
    ) -> [GroupEffect] {
        guard status >= 200, let inFlight = queues[leg]?.inFlight, inFlight.token == token else { return [] }
        queues[leg]?.inFlight = nil
        let outgoing = inFlight.outgoing
        let unavailable = (500..<600).contains(status) && (retryAfter != nil || status == 503)
        if !unavailable { queues[leg]?.unavailableSince = nil }
        switch status {
        case 200..<300:
            return delivered(outgoing, on: leg) + pump(leg)
        case 415:
            return downgrade(leg, outgoing: outgoing) + pump(leg)
        case 481, 408:
            return dialogDead(leg, status: status, now: now)
        case 500..<600 where unavailable:
            // Answer after answer: two of them further apart than the longest wait (60 s) are no run.
            let running = queues[leg]?.lastAskedToWait.map { now - $0 <= Self.longestWait + .seconds(5) } ?? false
            let since = running ? (queues[leg]?.unavailableSince ?? now) : now
            queues[leg]?.unavailableSince = since
            queues[leg]?.lastAskedToWait = now
            if now - since >= limits.maxUnavailable {
                return undelivered(outgoing, on: leg, error: nil) + unresponsive(leg, since: since, now: now)
            }
            guard outgoing.attempts + 1 < Self.maxAttempts else {
                return undelivered(outgoing, on: leg, error: nil) + pump(leg)
            }
            let wait = min(retryAfter ?? .seconds(1), Self.longestWait)
            queues[leg]?.pausedUntil = now + wait
            queues[leg]?.putBack(outgoing.retried())
            return [.log("\(leg): \(status); the leg waits \(wait)"), .resumeLater(leg: leg, after: wait)]
        case 413:
            return undelivered(outgoing, on: leg, error: .messageTooLarge(size: outgoing.bytes, limit: 0)) + pump(leg)
        default:
            return undelivered(outgoing, on: leg, error: nil) + pump(leg)
        }
    }

    /// Transmission `token` on `leg` got no final response in time, or could not be sent.
    public mutating func failed(leg: UUID, token: UInt64, now: Duration) -> [GroupEffect] {
        guard let inFlight = queues[leg]?.inFlight, inFlight.token == token else { return [] }
        return dialogDead(leg, status: 408, now: now)
    }

    /// A leg's wait is over: its queue goes on.
    public mutating func resume(leg: UUID, now: Duration) -> [GroupEffect] {
        guard let until = queues[leg]?.pausedUntil, until <= now else { return [] }
        queues[leg]?.pausedUntil = nil
        return pump(leg)
    }

    private mutating func dialogDead(_ leg: UUID, status: Int, now: Duration) -> [GroupEffect] {
        [.log("\(leg): the dialog is dead (\(status)); the member leaves")]
            + legGoneForGood(leg, now: now) + [.endConversation(leg: leg, status: status)]
    }

    /// A peer that kept asking us to wait: out of every session for the rest of its call (a member leaves the roster;
    /// a session we joined through it is over for us), everything queued for it dropped. Its call goes on.
    private mutating func unresponsive(_ leg: UUID, since: Duration, now: Duration) -> [GroupEffect] {
        unresponsive.insert(leg)
        queues[leg]?.removeAllWaiting()
        queues[leg]?.pausedUntil = nil
        var effects: [GroupEffect] = [.log("\(leg): the peer has asked us to wait since \(now - since) ago; it leaves the session")]
        for id in sessions.keys.sorted() {
            guard case .member(let hostLeg, _) = sessions[id]?.role, hostLeg == leg else { continue }
            effects += close(id, .conversationEnded)
        }
        return effects + refreshMembership(now: now)
    }

    private mutating func legGoneForGood(_ leg: UUID, now: Duration) -> [GroupEffect] {
        queues[leg] = nil
        return legEnded(leg, now: now)
    }

    /// A 2xx: the member has the message.
    private mutating func delivered(_ outgoing: LegQueue.Outgoing, on leg: UUID) -> [GroupEffect] {
        guard case .forward(let seq) = outgoing.purpose, sessions[outgoing.session]?.pending[seq]?.waiting[leg] != nil,
            var session = sessions.removeValue(forKey: outgoing.session)
        else { return [] }
        // Changed out of the dictionary and in place: copies of the pending messages would cost each answer.
        defer { sessions[session.id] = session }
        if let id = session.pending[seq]?.waiting.removeValue(forKey: leg) { session.pending[seq]?.deliveredTo.append(id) }
        return settleIfDone(seq, in: &session)
    }

    /// A refusal that is not the dialog's end: the message did not reach that member (or the host).
    private mutating func undelivered(_ outgoing: LegQueue.Outgoing, on leg: UUID, error: GroupSendError?, unsupported: Bool = false) -> [GroupEffect] {
        guard var session = sessions[outgoing.session] else { return [] }
        switch outgoing.purpose {
        case .forward(let seq):
            guard var pending = session.pending[seq], let id = pending.waiting.removeValue(forKey: leg) else { return [] }
            if unsupported { pending.unsupported.append(id) } else { pending.failed.append(id) }
            session.pending[seq] = pending
            let effects = settleIfDone(seq, in: &session)
            sessions[session.id] = session
            return effects
        case .upstream(let id):
            guard session.awaitingReceipts.remove(id) != nil else { return [] }
            sessions[session.id] = session
            let host = session.hostID
            return [.sendFinished(GroupSendReport(
                id: id, session: session.id, seq: nil, deliveredTo: [], failed: unsupported ? [] : [host],
                unsupported: unsupported ? [host] : [], error: error))]
        case .control:
            return []
        }
    }

    /// A 415: the peer reads only text from now on.
    private mutating func downgrade(_ leg: UUID, outgoing: LegQueue.Outgoing) -> [GroupEffect] {
        var effects: [GroupEffect] = []
        if var info = legs[leg], info.format != .text {
            info.format = .text
            legs[leg] = info
            effects.append(.log("\(leg): the peer does not read \(GroupWire.contentType); it gets text from now on"))
        }
        if outgoing.text != nil {
            queues[leg]?.putBack(outgoing)
            return effects
        }
        // A plain softphone offered a session is a member at once (it cannot join); one that was sent a message of
        // another type than text cannot take it.
        if var session = sessions[outgoing.session], var member = session.members[leg], !member.joined {
            member.joined = true
            session.members[leg] = member
            session.active[member.participant.id] = member.participant
            sessions[session.id] = session
            queues[leg]?.drop(session: session.id)
            effects += announceRoster(session.id, added: [member.participant], removed: [])
        }
        return effects + undelivered(outgoing, on: leg, error: nil, unsupported: true)
    }
}

extension LegQueue.Outgoing {
    /// The same message, one attempt more.
    func retried() -> LegQueue.Outgoing {
        var copy = self
        copy.attempts += 1
        return copy
    }
}
