import Foundation
import GroupActivities

/// The owner's side: starting, the participants updates, challenges and proofs.
extension CollaborationCenter {
    /// Starts a collaboration on a joined session: the start action goes to the handler, who fulfils it with a URL
    /// and an identifier (``complete(_:with:now:)``). `confirmUpdates`: participants updates wait for a frontend.
    public mutating func start(
        _ metadata: CollaborationMetadata, on session: String, confirmUpdates: Bool = false, now: Date
    ) -> (Result<CollaborationAction, CollaborationError>, [CollaborationEffect]) {
        if let error = metadata.validate() { return (.failure(error), []) }
        guard sessions[session] != nil else { return (.failure(.notInSession(session)), []) }
        guard owned.count + starting.count < Self.maxCollaborations else {
            return (.failure(.tooManyCollaborations(Self.maxCollaborations)), [])
        }
        let action = coordinator.submit(.start(metadata, session: session), id: nextActionID(), requiresConfirmation: false, now: now)
        starting[action.id] = (session, confirmUpdates)
        return (.success(action), [.handle(action)])
    }

    /// Completes an action, once: a second completion (or one after the timeout) is `actionNotPending`.
    public mutating func complete(
        _ actionID: String, with outcome: CollaborationActionOutcome, now: Date
    ) -> (Result<CollaborationInfo?, CollaborationError>, [CollaborationEffect]) {
        guard let action = coordinator.complete(actionID) else { return (.failure(.actionNotPending(actionID)), []) }
        return finish(action, outcome, now: now)
    }

    /// The clock moved: actions past their deadline time out, old nonces are swept.
    public mutating func tick(now: Date) -> [CollaborationEffect] {
        nonces.sweep(now: now)
        var effects: [CollaborationEffect] = []
        for action in coordinator.expire(now: now) { effects += finish(action, .timedOut, now: now).1 }
        return effects
    }

    private mutating func finish(
        _ action: CollaborationAction, _ outcome: CollaborationActionOutcome, now: Date
    ) -> (Result<CollaborationInfo?, CollaborationError>, [CollaborationEffect]) {
        var effects: [CollaborationEffect] = [.actionCompleted(action, outcome)]
        switch action.kind {
        case .start(let metadata, let session):
            let plan = starting.removeValue(forKey: action.id)
            guard case .fulfilled(let url?, let identifier?) = outcome, !identifier.isEmpty, !url.isEmpty else {
                return (.failure(.startFailed(outcome == .timedOut ? "the handler timed out" : "the handler failed it")), effects)
            }
            guard owned[identifier] == nil, shared[identifier] == nil else {
                return (.failure(.startFailed("identifier '\(identifier)' is already in use")), effects)
            }
            guard let view = sessions[session] else { return (.failure(.notInSession(session)), effects) }
            var started = metadata
            started.collaborationIdentifier = identifier
            let highlight = CollaborationHighlight(identifier: identifier, url: url, title: metadata.title, session: session)
            var collaboration = Owned(highlight: highlight, metadata: started, requiresConfirmation: plan?.confirm ?? false)
            // The owner's person is in from the start: its other devices (other parleyd of the same user) prove into it.
            collaboration.roots[identity.person] = .granted
            owned[identifier] = collaboration
            // Frontends hear it started before the members hear of it (whose answers may come at once).
            if let info = info(identifier) { effects.append(.changed(info)) }
            effects += announceOnce(in: session)
            effects.append(shareMessage(collaboration, to: nil))
            let roots = Set(view.identities.filter { $0.key != view.local }.values).subtracting([identity.person])
            if !roots.isEmpty { effects += requestUpdate(identifier, added: roots.sorted { $0.hex < $1.hex }, removed: [], now: now) }
            return (.success(info(identifier)), effects)
        case .updateParticipants(let identifier, let added, _):
            guard var collaboration = owned[identifier] else { return (.success(nil), effects) }
            collaboration.updates.remove(action.id)
            collaboration.pendingAdditions.subtract(added)
            if case .fulfilled = outcome {
                // Only people still in the group: one who left while the update waited stays out.
                let present = Set(sessions[collaboration.highlight.session]?.identities.values.map { $0 } ?? [])
                for root in added where present.contains(root) && collaboration.roots[root] != .granted {
                    if collaboration.roots[root] == nil, collaboration.roots.count >= Self.maxRootsPerCollaboration {
                        collaboration.roots = collaboration.roots.filter { $0.value != .revoked }
                    }
                    guard collaboration.roots[root] != nil || collaboration.roots.count < Self.maxRootsPerCollaboration else {
                        effects.append(.log("collaboration: \(identifier) is full; \(root.hex.prefix(16)) not invited"))
                        continue
                    }
                    collaboration.roots[root] = .invited
                }
            }
            if collaboration.state != .ended { collaboration.state = collaboration.updates.isEmpty ? .active : .updating }
            owned[identifier] = collaboration
            if let info = info(identifier) { effects.append(.changed(info)) }
            return (.success(info(identifier)), effects)
        }
    }

    /// Raises a participants update. Removals take effect now (a member who left must not keep access while a
    /// frontend thinks about it); additions when the action is fulfilled.
    mutating func requestUpdate(
        _ identifier: String, added: [PersonIdentity], removed: [PersonIdentity], now: Date
    ) -> [CollaborationEffect] {
        guard var collaboration = owned[identifier], collaboration.state != .ended else { return [] }
        // Only additions wait for a frontend; removals have already happened and are only reported.
        let action = coordinator.submit(
            .updateParticipants(collaboration: identifier, added: added, removed: removed), id: nextActionID(),
            requiresConfirmation: collaboration.requiresConfirmation && !added.isEmpty, now: now)
        collaboration.updates.insert(action.id)
        collaboration.pendingAdditions.formUnion(added)
        collaboration.state = .updating
        owned[identifier] = collaboration
        // The change first: a handler that fulfils at once reports the newer state after it.
        var effects: [CollaborationEffect] = info(identifier).map { [.changed($0)] } ?? []
        effects.append(.handle(action))
        return effects
    }

    /// Revokes roots now and reports it as an update; a collaborator who had proved access is announced as removed.
    mutating func revoke(_ roots: [PersonIdentity], in identifier: String, now: Date) -> [CollaborationEffect] {
        guard var collaboration = owned[identifier] else { return [] }
        let affected = roots.filter { collaboration.roots[$0] == .invited || collaboration.roots[$0] == .granted }
        guard !affected.isEmpty else { return [] }
        var effects: [CollaborationEffect] = []
        for root in affected {
            let wasGranted = collaboration.roots[root] == .granted
            collaboration.roots[root] = .revoked
            collaboration.bindings[root] = nil
            if wasGranted { effects += noticeEffects(.membership(.removedCollaborator), highlight: collaboration.highlight, to: nil) }
        }
        owned[identifier] = collaboration
        return requestUpdate(identifier, added: [], removed: affected, now: now) + effects
    }

    /// Ends a collaboration this node owns: members are told.
    public mutating func end(_ identifier: String) -> (Result<Void, CollaborationError>, [CollaborationEffect]) {
        guard var collaboration = owned[identifier] else {
            return (.failure(shared[identifier] == nil ? .unknownCollaboration(identifier) : .notOwner(identifier)), [])
        }
        collaboration.state = .ended
        owned[identifier] = nil
        remember(ended: identifier)
        let info = CollaborationInfo(
            highlight: collaboration.highlight, metadata: collaboration.metadata, isOwner: true, state: .ended, verifier: verifier,
            access: .granted, participants: [])
        return (.success(()), [
            .send(session: collaboration.highlight.session, type: CollaborationWire.ended,
                  data: CollaborationWire.encode(CollaborationWire.Reference(collaboration: identifier)), to: nil, keep: false),
            .changed(info),
        ])
    }

    // MARK: Challenges and proofs

    /// A fresh challenge for a collaboration this node owns, asked for by a frontend (`collaborationChallenge`):
    /// rationed (``frontendChallengesPerSecond``), `throttled` beyond.
    public mutating func frontendChallenge(for identifier: String, now: Date) -> Result<CollaborationChallenge, CollaborationError> {
        guard owned[identifier].map({ $0.state != .ended }) == true else { return challenge(for: identifier, now: now) }
        let time = Self.uptime(now)
        if time < frontendChallengesClock {
            frontendChallenges = TokenBucket(
                rate: Self.frontendChallengesPerSecond, burst: Self.frontendChallengesPerSecond * 2, now: time)
        }
        frontendChallengesClock = time
        if let wait = frontendChallenges.take(now: time) { return .failure(.throttled(retryAfterMs: Self.milliseconds(wait))) }
        return challenge(for: identifier, now: now)
    }

    /// A fresh challenge for a collaboration this node owns (a member's is one outstanding at a time).
    public mutating func challenge(for identifier: String, now: Date) -> Result<CollaborationChallenge, CollaborationError> {
        guard let collaboration = owned[identifier], collaboration.state != .ended else {
            return .failure(shared[identifier] == nil ? .unknownCollaboration(identifier) : .notOwner(identifier))
        }
        let nonce = crypto.randomBytes(32)
        let expires = nonces.issue(nonce, scope: identifier, now: now)
        return .success(CollaborationChallenge(
            collaboration: identifier, group: collaboration.highlight.session, nonce: Hex.encode(nonce),
            expires: ProofStatement.timestamp(expires), verifier: verifier))
    }

    /// Checks a proof against a challenge this node issued (`collaborationVerify`): the nonce is spent first, then
    /// the proof is checked against the statement this node expects and the collaboration's roots. A success binds
    /// the root to `participant` (nil: a frontend's own device outside the group).
    public mutating func verify(
        _ proof: SignedIdentityProof, nonce nonceHex: String, for identifier: String, participant: String?, now: Date
    ) -> (Result<PersonIdentity, CollaborationError>, [CollaborationEffect]) {
        verify(.success(proof), nonce: nonceHex, for: identifier, participant: participant, now: now)
    }

    /// ``verify(_:nonce:for:participant:now:)`` for a proof that may not have decoded: its nonce is spent all the same.
    public mutating func verify(
        _ decoded: Result<SignedIdentityProof, ProofRejection>, nonce nonceHex: String, for identifier: String, participant: String?,
        now: Date
    ) -> (Result<PersonIdentity, CollaborationError>, [CollaborationEffect]) {
        guard let collaboration = owned[identifier], collaboration.state != .ended else {
            return (.failure(shared[identifier] == nil ? .unknownCollaboration(identifier) : .notOwner(identifier)), [])
        }
        // A frontend's proof waits its turn before it spends a nonce (so a throttled one can be tried again).
        if participant == nil, let wait = takeFrontendProof(now: now) { return (.failure(.throttled(retryAfterMs: Self.milliseconds(wait))), []) }
        let rejected = { (reason: ProofRejection) -> (Result<PersonIdentity, CollaborationError>, [CollaborationEffect]) in
            (.failure(.proofRejected(reason)), [.verified(collaboration: identifier, participant: participant, result: .failure(reason))])
        }
        guard let nonce = Hex.decode(nonceHex), nonce.count == 32 else { return rejected(.nonceUnknown) }
        let expires: Date
        switch nonces.consume(nonce, scope: identifier, now: now) {
        case .success(let date): expires = date
        case .failure(let reason): return rejected(reason)
        }
        let proof: SignedIdentityProof
        switch decoded {
        case .success(let value): proof = value
        case .failure(let reason): return rejected(reason)
        }
        guard let statement = ProofStatement(
            purpose: .collaboration(identifier: identifier, group: collaboration.highlight.session), nonce: nonce, expires: expires,
            verifier: verifier)
        else { return rejected(.malformed) }
        let active = collaboration.roots.filter { $0.value != .revoked }.keys.sorted { $0.hex < $1.hex }
        let revoked = collaboration.roots.filter { $0.value == .revoked }.keys.sorted { $0.hex < $1.hex }
        switch ProofVerifier.check(proof, statement: statement.bytes, roots: active, revoked: revoked, crypto: crypto) {
        case .failure(let reason):
            return rejected(reason)
        case .success(let root):
            // A member proves the person it announced itself as; a proof relayed from someone else's device is not its.
            if let participant, sessions[collaboration.highlight.session]?.identities[participant] != root {
                return rejected(.rootNotInCollaboration)
            }
            var effects: [CollaborationEffect] = [.verified(collaboration: identifier, participant: participant, result: .success(root))]
            let first = owned[identifier]?.roots[root] != .granted
            owned[identifier]?.roots[root] = .granted
            if let participant { owned[identifier]?.bindings[root] = participant }
            if first { effects += noticeEffects(.membership(.addedCollaborator), highlight: collaboration.highlight, to: nil) }
            if let info = info(identifier) { effects.append(.changed(info)) }
            return (.success(root), effects)
        }
    }

    /// A person's device set changed: an old device signs the change (`parley-identity-update-v1`) against a
    /// challenge of this collaboration, and the stored root is replaced, keeping its access.
    public mutating func replaceIdentity(
        _ old: PersonIdentity, with new: PersonIdentity, proof: SignedIdentityProof, nonce nonceHex: String, for identifier: String,
        now: Date
    ) -> (Result<PersonIdentity, CollaborationError>, [CollaborationEffect]) {
        replaceIdentity(old, with: new, proof: .success(proof), nonce: nonceHex, for: identifier, now: now)
    }

    /// ``replaceIdentity(_:with:proof:nonce:for:now:)`` for a proof that may not have decoded (its nonce is spent).
    public mutating func replaceIdentity(
        _ old: PersonIdentity, with new: PersonIdentity, proof decoded: Result<SignedIdentityProof, ProofRejection>, nonce nonceHex: String,
        for identifier: String, now: Date
    ) -> (Result<PersonIdentity, CollaborationError>, [CollaborationEffect]) {
        guard let collaboration = owned[identifier], collaboration.state != .ended else {
            return (.failure(shared[identifier] == nil ? .unknownCollaboration(identifier) : .notOwner(identifier)), [])
        }
        if let wait = takeFrontendProof(now: now) { return (.failure(.throttled(retryAfterMs: Self.milliseconds(wait))), []) }
        guard let nonce = Hex.decode(nonceHex), nonce.count == 32 else { return (.failure(.proofRejected(.nonceUnknown)), []) }
        let expires: Date
        switch nonces.consume(nonce, scope: identifier, now: now) {
        case .success(let date): expires = date
        case .failure(let reason): return (.failure(.proofRejected(reason)), [])
        }
        let proof: SignedIdentityProof
        switch decoded {
        case .success(let value): proof = value
        case .failure(let reason): return (.failure(.proofRejected(reason)), [])
        }
        guard let statement = ProofStatement(purpose: .identityUpdate(old: old, new: new), nonce: nonce, expires: expires, verifier: verifier)
        else { return (.failure(.proofRejected(.malformed)), []) }
        let access = collaboration.roots[old]
        let active = access == nil || access == .revoked ? [] : [old]
        switch ProofVerifier.check(proof, statement: statement.bytes, roots: active, revoked: access == .revoked ? [old] : [], crypto: crypto) {
        case .failure(let reason):
            return (.failure(.proofRejected(reason)), [])
        case .success:
            // A root already stored (someone else's, or one revoked) is never overwritten.
            guard collaboration.roots[new] == nil else { return (.failure(.proofRejected(.revoked)), []) }
            // Members announced with the old root are the new person now, in every collaboration on the session, so
            // leaving revokes the new root everywhere.
            let session = collaboration.highlight.session
            for (member, root) in sessions[session]?.identities ?? [:] where root == old { sessions[session]?.identities[member] = new }
            var effects: [CollaborationEffect] = []
            for other in owned.keys.sorted() where owned[other]?.highlight.session == session {
                guard let state = owned[other]?.roots[old], owned[other]?.roots[new] == nil else { continue }
                owned[other]?.roots[old] = nil
                owned[other]?.roots[new] = state
                if let member = owned[other]?.bindings.removeValue(forKey: old) { owned[other]?.bindings[new] = member }
                if let info = info(other) { effects.append(.changed(info)) }
            }
            return (.success(new), effects)
        }
    }

    mutating func challengeRequested(_ identifier: String, by member: String, in session: String, now: Date) -> [CollaborationEffect] {
        guard let collaboration = owned[identifier], collaboration.highlight.session == session, collaboration.state != .ended else {
            return [.log("collaboration: challenge request for \(identifier) from \(member), not ours on \(session)")]
        }
        // Only people the collaboration stores get a challenge (each answer costs this node's own message budget);
        // one whose addition never happened (timed out, refused) is raised again, and asks again once it is in.
        guard let root = sessions[session]?.identities[member] else {
            return [.log("collaboration: challenge request from \(member), who has not announced itself")]
        }
        switch collaboration.roots[root] {
        case .invited, .granted: break
        case .revoked, nil:
            guard collaboration.roots[root] == nil, !collaboration.pendingAdditions.contains(root) else {
                return [.log("collaboration: challenge request from \(member), whose root is \(collaboration.roots[root] == nil ? "pending" : "revoked")")]
            }
            return requestUpdate(identifier, added: [root], removed: [], now: now)
        }
        // One challenge outstanding per member: asking again while one is live gets nothing new.
        if let live = collaboration.challenges[member], let nonce = Hex.decode(live), nonces.isOutstanding(nonce, scope: identifier, now: now) {
            return [.log("collaboration: \(member) already has a challenge for \(identifier)")]
        }
        switch challenge(for: identifier, now: now) {
        case .success(let challenge):
            owned[identifier]?.challenges[member] = challenge.nonce
            let message = CollaborationWire.Challenge(
                collaboration: identifier, group: challenge.group, nonce: challenge.nonce, expires: challenge.expires, verifier: verifier)
            return [.send(session: session, type: CollaborationWire.challenge, data: CollaborationWire.encode(message), to: [member], keep: false)]
        case .failure(let error):
            return [.log("collaboration: no challenge for \(member): \(error)")]
        }
    }

    mutating func proofReceived(_ message: CollaborationWire.Proof, from member: String, in session: String, now: Date) -> [CollaborationEffect] {
        guard owned[message.collaboration]?.highlight.session == session else {
            return [.log("collaboration: proof for \(message.collaboration) from \(member), not ours on \(session)")]
        }
        // Only a proof for the challenge this member was sent is answered (a made-up nonce costs no reply).
        guard owned[message.collaboration]?.challenges.removeValue(forKey: member) == message.nonce else {
            return [.log("collaboration: proof from \(member) for a challenge it was not sent")]
        }
        let (result, produced) = verify(message.proof.signed, nonce: message.nonce, for: message.collaboration, participant: member, now: now)
        var effects = produced
        let answer: CollaborationWire.Access
        switch result {
        case .success(let root): answer = .init(collaboration: message.collaboration, granted: true, reason: nil, root: root)
        case .failure(.proofRejected(let reason)): answer = .init(collaboration: message.collaboration, granted: false, reason: reason, root: nil)
        case .failure: answer = .init(collaboration: message.collaboration, granted: false, reason: .rootNotInCollaboration, root: nil)
        }
        effects.append(.send(session: session, type: CollaborationWire.access, data: CollaborationWire.encode(answer), to: [member], keep: false))
        return effects
    }

    /// The share of a collaboration this node owns, to everyone (nil) or to newcomers.
    func shareMessage(_ collaboration: Owned, to recipients: Set<String>?) -> CollaborationEffect {
        let share = CollaborationWire.Share(
            collaboration: collaboration.highlight.identifier, url: collaboration.highlight.url, metadata: collaboration.metadata.forRecipients,
            verifier: verifier)
        return .send(
            session: collaboration.highlight.session, type: CollaborationWire.share, data: CollaborationWire.encode(share), to: recipients, keep: false)
    }

    /// The wall clock as the token bucket's clock.
    static func uptime(_ date: Date) -> Duration { .milliseconds(Int64(date.timeIntervalSince1970 * 1000)) }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }

    /// A frontend proof's turn; a wall clock stepped back starts the ration afresh (it would otherwise stop refilling).
    mutating func takeFrontendProof(now: Date) -> Duration? {
        let time = Self.uptime(now)
        if time < frontendProofsClock {
            frontendProofs = TokenBucket(rate: Self.frontendProofsPerSecond, burst: Self.frontendProofsPerSecond / 5, now: time)
        }
        frontendProofsClock = time
        return frontendProofs.take(now: time)
    }
}
