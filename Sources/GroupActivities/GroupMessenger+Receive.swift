import Foundation

/// What arrives on a leg: a Parley peer's JSON body, or a plain softphone's text. Each returns the status of the
/// SIP answer: 200, 400 (an unusable body), 403 (not a member of that session), 415 (a type we do not read).
extension GroupMessenger {
    /// A MESSAGE body received on a conversation's leg (in its dialog, or out of dialog from its peer's address).
    /// 413 is a softphone's text over the session's limit, 503 (answer it with Retry-After) a peer over its rate.
    public mutating func receive(
        _ body: Data, contentType: String, on leg: UUID, now: Duration
    ) -> (status: Int, effects: [GroupEffect]) {
        guard legs[leg]?.isConnected == true else { return (403, []) }
        let mediaType = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        switch mediaType {
        case "text/plain":
            return receiveText(Self.chatLine(body), on: leg, now: now)
        case GroupWire.contentType:
            switch GroupWire.decode(body) {
            case .failure(let problem): return (400, [.log("refused a group message on \(leg): \(problem)")])
            case .success(let wire): return receive(wire, on: leg, now: now)
            }
        default:
            return (415, [])
        }
    }

    /// A plain softphone's line of chat: its body without the CRLF (or LF) it ends with (softphones and sipp add one).
    public static func chatLine(_ body: Data) -> String {
        let text = String(decoding: body, as: UTF8.self)
        return String(text.reversed().drop { $0.isNewline }.reversed())
    }

    /// The media types a leg takes (the `Accept` of a 415).
    public static let acceptedTypes = "\(GroupWire.contentType), text/plain"

    private mutating func receiveText(_ text: String, on leg: UUID, now: Duration) -> (status: Int, effects: [GroupEffect]) {
        guard let id = sessionID(carriedBy: leg), var session = sessions[id], session.isHost,
            let member = session.members[leg], member.joined, session.state == .joined
        else { return (200, [.textReceived(leg: leg, text: text, claimedSender: nil)]) }
        let data = JSONValue.object(["text": .string(text)])
        if let problem = Self.check(type: "text", size: 4 + data.encoded.count, limit: maxMessageBytes(session)) {
            return (413, [.log("\(leg): text refused: \(problem)")])
        }
        if session.throttle(member.participant.id, limits: limits, now: now) != nil {
            sessions[id] = session
            return (503, [.log("\(leg): text refused: the sender is over its rate")])
        }
        let targets = session.active.keys.filter { $0 != member.participant.id }.sorted()
        let (_, effects) = stamp(
            in: &session, source: member.participant, origin: nil, targets: targets, type: "text", data: data,
            mode: .reliable, keep: false)
        sessions[id] = session
        return (200, effects)
    }

    private mutating func receive(_ wire: GroupWire, on leg: UUID, now: Duration) -> (status: Int, effects: [GroupEffect]) {
        guard let kind = wire.kind else { return (200, [.log("ignored a group body of kind \(wire.kindName)")]) }
        if kind == .session { return receiveRoster(wire, on: leg, now: now) }
        guard var session = sessions[wire.session] else { return (403, []) }
        switch (kind, session.role) {
        case (.join, .host), (.leave, .host):
            guard var member = session.members[leg] else { return (403, []) }
            let joining = kind == .join
            guard member.joined != joining else { return (200, []) }
            // Joins and leaves cost the host a roster on every leg (and a join the journal): they count as messages.
            if session.throttle(member.participant.id, limits: limits, now: now) != nil {
                sessions[session.id] = session
                return (503, [])
            }
            member.joined = joining
            if joining, let name = wire.name?.trimmingCharacters(in: .whitespacesAndNewlines), (1...64).contains(name.count) {
                member.participant.name = name
            }
            session.members[leg] = member
            session.active[member.participant.id] = joining ? member.participant : nil
            sessions[session.id] = session
            var effects = announceRoster(
                session.id, added: joining ? [member.participant] : [], removed: joining ? [] : [member.participant])
            if joining {
                // The journal goes first: the newcomer is caught up before what comes next.
                for kept in session.journal {
                    effects += enqueue(.init(session: session.id, purpose: .control, wire: kept, text: nil), on: leg)
                }
            }
            return (200, effects)
        case (.message, .host):
            guard let member = session.members[leg], member.joined else { return (403, []) }
            sessions[session.id] = nil  // changed out of the dictionary: its pending messages are not copied
            let effects = forward(wire, from: member.participant, leg: leg, in: &session, now: now)
            sessions[session.id] = session
            return (200, effects)
        case (.message, .member(let hostLeg, _)):
            guard hostLeg == leg else { return (403, []) }
            guard session.state == .joined else { return (200, []) }
            if let seq = wire.seq {
                guard seq > session.lastSeq else { return (200, []) }  // a duplicate
                session.lastSeq = seq
            }
            sessions[session.id] = session
            guard let type = wire.type, let data = wire.data else { return (400, []) }
            let source = wire.source.flatMap { session.active[$0] }
                ?? GroupParticipant(id: wire.source ?? session.hostID, name: wire.source ?? "")
            return (200, [.deliver(GroupDelivery(
                session: session.id, seq: wire.seq ?? 0, source: source, type: type, data: data, mode: wire.deliveryMode))])
        case (.receipt, .member(let hostLeg, _)):
            guard hostLeg == leg, let id = wire.id else { return (403, []) }
            guard session.awaitingReceipts.remove(id) != nil else { return (200, []) }
            sessions[session.id] = session
            return (200, [.sendFinished(GroupSendReport(
                id: id, session: session.id, seq: wire.seq, deliveredTo: wire.deliveredTo ?? [], failed: wire.failed ?? [],
                unsupported: wire.unsupported ?? [], error: wire.error.map(Self.sendError)))])
        case (.join, .member), (.leave, .member), (.message, _), (.receipt, _), (.session, _):
            return (403, [])
        }
    }

    /// The host takes a member's message: throttled, checked and stamped, or refused in a receipt.
    private mutating func forward(
        _ wire: GroupWire, from participant: GroupParticipant, leg: UUID, in session: inout Session, now: Duration
    ) -> [GroupEffect] {
        let mode = wire.deliveryMode
        var refusal: GroupSendError?
        var targets: [String] = []
        if let wait = session.throttle(participant.id, limits: limits, now: now) {
            refusal = .throttled(retryAfter: wait)
        } else if let type = wire.type, let data = wire.data {
            refusal = Self.check(type: type, size: type.utf8.count + data.encoded.count, limit: maxMessageBytes(session))
            if let to = wire.to {
                for id in to.sorted() where id != participant.id {
                    guard session.active[id] != nil else {
                        refusal = refusal ?? .unknownParticipant(id)
                        break
                    }
                    targets.append(id)
                }
            } else {
                targets = session.active.keys.filter { $0 != participant.id }.sorted()
            }
        } else {
            refusal = .invalidMessage("a message needs a type and data")
        }
        if let refusal {
            guard mode == .reliable, let id = wire.id else { return [.log("dropped a message of \(participant.id): \(refusal)")] }
            var receipt = GroupWire(.receipt, session: session.id)
            receipt.id = id
            receipt.error = Self.errorInfo(refusal)
            return enqueue(.init(session: session.id, purpose: .control, wire: receipt, text: nil), on: leg)
        }
        let origin: Session.Origin? = mode == .reliable ? wire.id.map { .remote(leg: leg, id: $0) } : nil
        return stamp(
            in: &session, source: participant, origin: origin, targets: targets, type: wire.type!, data: wire.data!,
            mode: mode, keep: wire.keep == true && wire.to == nil
        ).1
    }

    /// A host's roster: a new session offered, an update of one we know, or its end.
    private mutating func receiveRoster(_ wire: GroupWire, on leg: UUID, now: Duration) -> (status: Int, effects: [GroupEffect]) {
        if var session = sessions[wire.session] {
            guard case .member(let hostLeg, _) = session.role, hostLeg == leg else { return (403, []) }
            if wire.active == false { return (200, close(session.id, .ended)) }
            let before = Set(session.active.values)
            var active = Dictionary((wire.participants ?? []).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            active[session.local.id] = session.local
            session.active = active
            sessions[session.id] = session
            let after = Set(active.values)
            let added = after.subtracting(before).sorted(), removed = before.subtracting(after).sorted()
            guard !added.isEmpty || !removed.isEmpty else { return (200, []) }
            return (200, [.participantsChanged(session: session.id, added: added, removed: removed, active: after.sorted())])
        }
        guard wire.active != false else { return (200, []) }
        guard let activity = wire.activity, activity.problem == nil, let host = wire.host, let you = wire.you else {
            return (400, [])
        }
        var effects: [GroupEffect] = []
        if let carried = sessionID(carriedBy: leg), let other = sessions[carried] {
            if other.isHost {
                // A member of a group we host cannot take it over; it may only join ours.
                guard other.members.count <= 1, legs[leg]?.group == nil else { return (403, []) }
                // Both sides of a call activated at once (the peer has not joined ours): the smaller id wins on both.
                // Once it has joined, its new activity replaces ours (Apple: a new activity is a new session).
                let peerJoined = other.members[leg]?.joined == true
                if !peerJoined, carried < wire.session { return (200, [.log("kept session \(carried) over \(wire.session)")]) }
            }
            effects += replace(carried)
        }
        guard sessions.count < limits.maxSessions else { return (503, effects) }
        let local = GroupParticipant(id: you, name: localName)
        var active = Dictionary((wire.participants ?? []).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        active[local.id] = local
        let session = Session(
            id: wire.session, activity: activity, role: .member(hostLeg: leg, hostID: host), state: .waiting,
            local: local, active: active, created: now)
        sessions[session.id] = session
        return (200, effects + [.sessionOffered(info(session))])
    }

    /// Joins a session a peer offered (the host's own session is joined already).
    public mutating func join(_ sessionID: String, now: Duration) -> Result<GroupSessionInfo, GroupSendError>.WithEffects {
        guard var session = sessions[sessionID] else { return .init(.failure(.unknownSession(sessionID)), []) }
        guard session.state == .waiting, case .member(let hostLeg, _) = session.role else {
            return .init(.success(info(session)), [])
        }
        session.state = .joined
        sessions[sessionID] = session
        var join = GroupWire(.join, session: sessionID)
        join.name = localName
        let effects = [GroupEffect.sessionChanged(info(session))]
            + enqueue(.init(session: sessionID, purpose: .control, wire: join, text: nil), on: hostLeg)
        return .init(.success(info(session)), effects)
    }

    /// Leaves a session; the host's leaving ends it for everyone (the sequencer is gone).
    public mutating func leave(_ sessionID: String, now: Duration) -> [GroupEffect] {
        guard let session = sessions[sessionID] else { return [] }
        guard case .member = session.role else { return end(sessionID, now: now) }
        return close(sessionID, .left)
    }

    static func errorInfo(_ error: GroupSendError) -> GroupWire.ErrorInfo {
        var info = GroupWire.ErrorInfo(code: error.code)
        switch error {
        case .throttled(let wait): info.retryAfterMs = GroupSendError.milliseconds(wait)
        case .messageTooLarge(let size, let limit):
            info.size = size
            info.limit = limit
        case .notJoined, .unknownParticipant, .participantLeft, .invalidMessage, .unknownSession: break
        }
        return info
    }

    static func sendError(_ info: GroupWire.ErrorInfo) -> GroupSendError {
        switch info.code {
        case "throttled": .throttled(retryAfter: .milliseconds(info.retryAfterMs ?? 100))
        case "messageTooLarge": .messageTooLarge(size: info.size ?? 0, limit: info.limit ?? 0)
        case "notJoined": .notJoined
        case "unknownParticipant": .unknownParticipant("")
        default: .invalidMessage("the host refused it: \(info.code)")
        }
    }
}
