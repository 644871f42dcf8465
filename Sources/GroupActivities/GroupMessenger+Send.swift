import Foundation

/// Sending: the frontend's `send`, and the host's stamping and forwarding of every accepted message.
extension GroupMessenger {
    /// Sends a message of `type` (the app's name for it: 1–64 bytes of letters, digits, `.`, `-`, `_`) with `data`
    /// to some or all of the session's other active participants. Returns its id; ``GroupEffect/sendFinished(_:)``
    /// with that id says how it went (at once for an unreliable one). `keep` asks the host to replay it to members
    /// who join later (its journal is bounded: the newest are kept); only a reliable message to everyone is kept.
    public mutating func send(
        _ data: JSONValue, type: String, to recipients: GroupRecipients = .all, mode: GroupDeliveryMode = .reliable,
        keep: Bool = false, in sessionID: String, now: Duration
    ) -> Result<UInt64, GroupSendError>.WithEffects {
        guard var session = sessions[sessionID] else { return .init(.failure(.unknownSession(sessionID)), []) }
        // Out of the dictionary while it changes, so that its pending messages and buckets are not copied.
        sessions[sessionID] = nil
        defer { sessions[sessionID] = session }
        guard session.state == .joined else { return .init(.failure(.notJoined), []) }
        let size = type.utf8.count + data.encoded.count
        if let problem = Self.check(type: type, size: size, limit: maxMessageBytes(session)) {
            return .init(.failure(problem), [])
        }
        var targets: [String] = []
        switch recipients {
        case .all:
            targets = session.active.keys.filter { $0 != session.local.id }.sorted()
        case .only(let ids):
            for id in ids.sorted() where id != session.local.id {
                guard session.active[id] != nil else { return .init(.failure(.unknownParticipant(id)), []) }
                targets.append(id)
            }
        }
        let legsCrossed: [UUID]
        switch session.role {
        case .host: legsCrossed = session.members.filter { targets.contains($0.value.participant.id) }.map(\.key)
        case .member(let hostLeg, _): legsCrossed = [hostLeg]
        }
        for leg in legsCrossed where (queues[leg]?.queuedBytes ?? 0) + size > limits.maxQueuedBytesPerLeg {
            return .init(.failure(.throttled(retryAfter: .milliseconds(100))), [])
        }
        if let wait = session.throttle(session.local.id, limits: limits, now: now) {
            return .init(.failure(.throttled(retryAfter: wait)), [])
        }
        let id = newSendID()
        switch session.role {
        case .host:
            let (_, effects) = stamp(
                in: &session, source: session.local, origin: .local(id), targets: targets, type: type, data: data,
                mode: mode, keep: keep && recipients == .all)
            return .init(.success(id), effects)
        case .member(let hostLeg, _):
            var wire = GroupWire(.message, session: sessionID)
            wire.id = id
            wire.to = recipients == .all ? nil : targets
            wire.mode = mode.rawValue
            wire.type = type
            wire.keep = keep ? true : nil
            wire.data = data
            var effects: [GroupEffect] = []
            if mode == .reliable {
                session.awaitingReceipts.insert(id)
            } else {
                effects.append(.sendFinished(GroupSendReport(
                    id: id, session: sessionID, seq: nil, deliveredTo: [], failed: [], unsupported: [], error: nil)))
            }
            effects = enqueue(.init(session: sessionID, purpose: .upstream(id: id), wire: wire, text: nil), on: hostLeg)
                + effects
            return .init(.success(id), effects)
        }
    }

    /// Why a message of `type` whose type and data take `size` bytes cannot go in a session taking `limit`, if it cannot.
    static func check(type: String, size: Int, limit: Int) -> GroupSendError? {
        guard (1...64).contains(type.utf8.count),
            type.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2E || $0 == 0x2D || $0 == 0x5F })
        else { return .invalidMessage("a message type has 1–64 letters, digits, '.', '-' or '_'") }
        guard size <= limit else { return .messageTooLarge(size: size, limit: limit) }
        return nil
    }

    /// The host stamps a message (a reliable one takes the session's next `seq`) and forwards it to `targets`
    /// (participant ids; its own id means the local frontend). Returns the seq.
    mutating func stamp(
        in session: inout Session, source: GroupParticipant, origin: Session.Origin?, targets: [String], type: String,
        data: JSONValue, mode: GroupDeliveryMode, keep: Bool
    ) -> (UInt64?, [GroupEffect]) {
        let seq: UInt64? = mode == .reliable ? session.nextSeq : nil
        if mode == .reliable { session.nextSeq += 1 }
        var wire = GroupWire(.message, session: session.id)
        wire.seq = seq
        wire.source = source.id
        wire.mode = mode.rawValue
        wire.type = type
        wire.data = data
        let text = type == "text" ? "[\(source.name)] \(Self.text(of: data))" : nil
        var pending = Session.Pending(origin: origin ?? .nobody, waiting: [:])
        let body = wire.encoded()
        var effects: [GroupEffect] = []
        let legOf = Dictionary(session.members.map { ($0.value.participant.id, $0.key) }, uniquingKeysWith: { a, _ in a })
        for target in targets {
            if target == session.local.id {
                effects.append(.deliver(GroupDelivery(
                    session: session.id, seq: seq ?? 0, source: source, type: type, data: data, mode: mode)))
                pending.deliveredTo.append(target)
                continue
            }
            guard let leg = legOf[target], session.members[leg]?.joined == true else { continue }
            if legs[leg]?.format == .text, text == nil {
                pending.unsupported.append(target)
                continue
            }
            let purpose: LegQueue.Purpose = seq.map { .forward(seq: $0) } ?? .control
            let outgoing = LegQueue.Outgoing(session: session.id, purpose: purpose, wire: wire, text: text, body: body)
            guard hasRoom(for: outgoing.bytes, on: leg) || queues[leg]?.replaces(outgoing) == true else {
                // A member that cannot keep up: this message fails for it alone.
                pending.failed.append(target)
                effects.append(.log("\(leg): message \(seq.map(String.init) ?? "-") not queued: the leg is full"))
                continue
            }
            effects += enqueue(outgoing, on: leg)
            if seq != nil { pending.waiting[leg] = target }
        }
        if let seq {
            if keep { remember(wire, in: &session) }  // (unreliable ones are never kept: they have no seq)
            session.pending[seq] = pending
            effects += settleIfDone(seq, in: &session)
        } else if case .local(let id) = origin {
            effects.append(.sendFinished(GroupSendReport(
                id: id, session: session.id, seq: nil, deliveredTo: pending.deliveredTo, failed: [],
                unsupported: pending.unsupported.sorted(), error: nil)))
        }
        return (seq, effects)
    }

    /// Keeps a `keep` message in the host's journal (the newest within its bounds).
    private func remember(_ wire: GroupWire, in session: inout Session) {
        var kept = wire
        kept.keep = true
        session.journal.append(kept)
        session.journalBytes += kept.encoded().count
        while session.journal.count > limits.journalMessages || session.journalBytes > limits.journalBytes {
            session.journalBytes -= session.journal.removeFirst().encoded().count
        }
    }

    /// The text of a `text` message: its data as a string, or the object's `text` member.
    static func text(of data: JSONValue) -> String {
        data.stringValue ?? data["text"]?.stringValue ?? String(decoding: data.encoded, as: UTF8.self)
    }
}
