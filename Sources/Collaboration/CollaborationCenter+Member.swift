import Foundation
import GroupActivities

/// The recipient's side (a collaboration shared with this node) and the notices everyone posts.
extension CollaborationCenter {
    mutating func shareReceived(_ message: CollaborationWire.Share, from owner: String, in session: String) -> [CollaborationEffect] {
        guard owned[message.collaboration] == nil else { return [] }
        guard !endedIdentifiers.contains(message.collaboration) else {
            return [.log("collaboration: \(owner) shared \(message.collaboration), which ended here: refused")]
        }
        if let known = shared[message.collaboration] {
            guard known.owner == owner else { return [.log("collaboration: \(owner) re-shared \(message.collaboration), owned by \(known.owner)")] }
            return []
        }
        // Shares have their own budget, and one member has a small part of it: nobody can fill this node's slots.
        guard shared.count < Self.maxCollaborations, shared.values.count(where: { $0.owner == owner }) < Self.maxSharesPerMember else {
            return [.log("collaboration: \(message.collaboration) from \(owner) refused: too many shared collaborations")]
        }
        guard message.metadata.validate() == nil, !message.url.isEmpty else {
            return [.log("collaboration: invalid share \(message.collaboration) from \(owner)")]
        }
        let highlight = CollaborationHighlight(identifier: message.collaboration, url: message.url, title: message.metadata.title, session: session)
        shared[message.collaboration] = Shared(highlight: highlight, metadata: message.metadata, owner: owner, verifier: message.verifier)
        return (info(message.collaboration).map { [.changed($0)] } ?? []) + announceOnce(in: session)
    }

    mutating func endReceived(_ identifier: String, from member: String, in session: String) -> [CollaborationEffect] {
        guard var collaboration = shared[identifier], collaboration.owner == member, collaboration.highlight.session == session else { return [] }
        collaboration.state = .ended
        shared[identifier] = nil
        remember(ended: identifier)
        return [.changed(CollaborationInfo(
            highlight: collaboration.highlight, metadata: collaboration.metadata, isOwner: false, state: .ended,
            verifier: collaboration.verifier, access: collaboration.access, participants: []))]
    }

    /// Asks the owner for access (a recipient opening the link): the owner's challenge is signed and sent back on
    /// its own; the answer comes as a ``CollaborationEffect/changed(_:)`` with the access.
    public mutating func requestAccess(_ identifier: String) -> (Result<Void, CollaborationError>, [CollaborationEffect]) {
        guard var collaboration = shared[identifier], collaboration.state != .ended else {
            return (.failure(owned[identifier] == nil ? .unknownCollaboration(identifier) : .ownedHere(identifier)), [])
        }
        collaboration.access = .requested
        collaboration.signed = false
        shared[identifier] = collaboration
        let request = CollaborationWire.Reference(collaboration: identifier)
        var effects: [CollaborationEffect] = [.send(
            session: collaboration.highlight.session, type: CollaborationWire.challengeRequest, data: CollaborationWire.encode(request),
            to: [collaboration.owner], keep: false)]
        if let info = info(identifier) { effects.append(.changed(info)) }
        return (.success(()), effects)
    }

    /// This device's signed proof for a challenge (`collaborationProve`; Apple's `signedIdentityProof(for:using:)`).
    public func prove(_ challenge: CollaborationChallenge) -> Result<SignedIdentityProof, CollaborationError> {
        guard let statement = challenge.statement else { return .failure(.proofRejected(.malformed)) }
        return .success(SignedIdentityProof(proof: identity.proof, signatureData: signer.sign(statement.bytes)))
    }

    /// This device's signature of a change of its person's device set, for a challenge of `challenge`'s
    /// collaboration: `old` must be a root this device is in.
    public func proveIdentityUpdate(
        from old: PersonIdentity, oldDevices: [[UInt8]], to new: PersonIdentity, challenge: CollaborationChallenge
    ) -> Result<SignedIdentityProof, CollaborationError> {
        guard let nonce = Hex.decode(challenge.nonce), nonce.count == 32, let expires = ProofStatement.date(challenge.expires),
            let statement = ProofStatement(purpose: .identityUpdate(old: old, new: new), nonce: nonce, expires: expires, verifier: challenge.verifier),
            let tree = MerkleTree(publicKeys: oldDevices + [signer.publicKey], crypto: crypto), tree.identity == old,
            let proof = tree.proof(for: signer.publicKey, crypto: crypto)
        else { return .failure(.proofRejected(.malformed)) }
        return .success(SignedIdentityProof(proof: proof, signatureData: signer.sign(statement.bytes)))
    }

    mutating func challenged(_ message: CollaborationWire.Challenge, by member: String, in session: String) -> [CollaborationEffect] {
        // Only a challenge this node asked for is signed: an owner cannot make it sign whatever it likes.
        guard let collaboration = shared[message.collaboration], collaboration.owner == member, collaboration.highlight.session == session,
            message.group == session, message.verifier == collaboration.verifier, collaboration.access == .requested, !collaboration.signed
        else { return [.log("collaboration: unexpected challenge for \(message.collaboration) from \(member)")] }
        shared[message.collaboration]?.signed = true
        let challenge = CollaborationChallenge(
            collaboration: message.collaboration, group: message.group, nonce: message.nonce, expires: message.expires, verifier: message.verifier)
        guard case .success(let signed) = prove(challenge) else { return [.log("collaboration: malformed challenge from \(member)")] }
        let proof = CollaborationWire.Proof(collaboration: message.collaboration, nonce: message.nonce, proof: .init(signed))
        return [.send(session: session, type: CollaborationWire.proof, data: CollaborationWire.encode(proof), to: [member], keep: false)]
    }

    mutating func accessAnswered(_ message: CollaborationWire.Access, by member: String, in session: String) -> [CollaborationEffect] {
        guard var collaboration = shared[message.collaboration], collaboration.owner == member, collaboration.highlight.session == session,
            collaboration.access == .requested
        else { return [] }
        collaboration.access = message.granted ? .granted : .rejected(message.reason ?? .rootNotInCollaboration)
        shared[message.collaboration] = collaboration
        return info(message.collaboration).map { [.changed($0)] } ?? []
    }

    // MARK: Notices

    /// Posts a notice into the collaboration's conversation (Apple's `postNotice(for:)`): a mention goes to the
    /// mentioned person's members alone, everything else to every other member.
    public func postNotice(_ event: HighlightEvent, for identifier: String) -> Result<[CollaborationEffect], CollaborationError> {
        guard let highlight = owned[identifier]?.highlight ?? shared[identifier]?.highlight,
            (owned[identifier]?.state ?? shared[identifier]?.state) != .ended
        else { return .failure(.unknownCollaboration(identifier)) }
        var recipients: Set<String>?
        if case .mention(let person) = event {
            let view = sessions[highlight.session]
            let members = Set((view?.identities ?? [:]).filter { $0.value == person && $0.key != view?.local }.keys)
            guard !members.isEmpty else { return .failure(.unknownPerson(person.hex)) }
            recipients = members
        }
        return .success(noticeEffects(event, highlight: highlight, to: recipients))
    }

    func noticeEffects(_ event: HighlightEvent, highlight: CollaborationHighlight, to recipients: Set<String>?) -> [CollaborationEffect] {
        let notice = CollaborationWire.Notice(collaboration: highlight.identifier, kind: event.kind, trigger: event.trigger)
        return [.send(session: highlight.session, type: CollaborationWire.notice, data: CollaborationWire.encode(notice), to: recipients, keep: false)]
    }

    mutating func noticeReceived(_ message: CollaborationWire.Notice, from source: GroupParticipant, in session: String) -> [CollaborationEffect] {
        guard let highlight = owned[message.collaboration]?.highlight ?? shared[message.collaboration]?.highlight, highlight.session == session,
            let event = HighlightEvent(kind: message.kind, trigger: message.trigger)
        else { return [.log("collaboration: notice for unknown \(message.collaboration) (or malformed) from \(source.id)")] }
        // A mention is only for the person mentioned: a node that is not them drops it (it should not have come).
        if case .mention(let person) = event, person != identity.person { return [] }
        // Who has access is the owner's to say: a membership notice from anyone else is dropped.
        if case .membership = event, shared[message.collaboration]?.owner != source.id {
            return [.log("collaboration: membership notice for \(message.collaboration) from \(source.id), not its owner")]
        }
        return [.notice(CollaborationNotice(highlight: highlight, event: event, from: source.id, fromName: source.name))]
    }
}
