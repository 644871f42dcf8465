import Collaboration
import Foundation

/// Collaborations (Apple's SharedWithYou) on the engine's conversations: start one on a connected conversation (it
/// rides the conversation's group session), open one shared with this node, challenge and verify proofs as its
/// owner, post notices. Every call hops onto the engine's thread; news comes as ``EngineEvent/collaboration(_:)``.
extension ParleyEngine {
    /// This device's person identity (its key, its root, the person's devices).
    public var identity: LocalIdentity? { onEngine { $0.collaborations.center.identity } }

    /// Every collaboration this node owns or was shared.
    public var collaborations: [CollaborationInfo] { onEngine { $0.collaborations.center.collaborations } ?? [] }

    /// Starts a collaboration on a conversation (and its merged group). `url`: the document's link, when the
    /// frontend has one; parleyd makes a `parley://collaboration/ID` link otherwise.
    public func startCollaboration(
        _ metadata: CollaborationMetadata, on conversation: UUID, url: String? = nil, confirmUpdates: Bool = false
    ) -> Result<CollaborationInfo, CollaborationError> {
        onEngine { $0.collaborations.start(metadata, on: conversation, url: url, confirmUpdates: confirmUpdates) }
            ?? .failure(.notInSession(conversation.uuidString))
    }

    /// Asks a collaboration's owner for access with this device's proof (a recipient opening the link).
    public func openCollaboration(_ identifier: String) -> Result<Void, CollaborationError> {
        onEngine { agent in agent.collaborations.perform { center, _ in center.requestAccess(identifier) } }
            ?? .failure(.unknownCollaboration(identifier))
    }

    /// A fresh challenge for a collaboration this node owns.
    public func collaborationChallenge(_ identifier: String) -> Result<CollaborationChallenge, CollaborationError> {
        onEngine { $0.collaborations.challenge(identifier) } ?? .failure(.unknownCollaboration(identifier))
    }

    /// This device's signed proof for a challenge (any node's).
    public func proveCollaboration(_ challenge: CollaborationChallenge) -> Result<SignedIdentityProof, CollaborationError> {
        onEngine { $0.collaborations.center.prove(challenge) } ?? .failure(.proofRejected(.malformed))
    }

    /// Checks a proof against a challenge this node issued for one of its collaborations (a proof that did not
    /// decode spends its nonce all the same: one nonce, one try).
    public func verifyCollaborationProof(
        _ proof: Result<SignedIdentityProof, ProofRejection>, nonce: String, for identifier: String
    ) -> Result<PersonIdentity, CollaborationError> {
        onEngine { agent in
            agent.collaborations.perform { center, now in center.verify(proof, nonce: nonce, for: identifier, participant: nil, now: now) }
        } ?? .failure(.unknownCollaboration(identifier))
    }

    /// Confirms (or refuses) a participants update that waits for a frontend.
    public func confirmCollaborationUpdate(_ action: String, accept: Bool) -> Result<Void, CollaborationError> {
        onEngine { agent in
            agent.collaborations.perform { center, now in
                let (result, effects) = center.complete(action, with: accept ? .fulfilled(url: nil, identifier: nil) : .failed, now: now)
                return (result.map { _ in () }, effects)
            }
        } ?? .failure(.actionNotPending(action))
    }

    /// Posts a notice into a collaboration's conversation (a mention reaches the mentioned person alone).
    public func postCollaborationNotice(_ event: HighlightEvent, for identifier: String) -> Result<Void, CollaborationError> {
        onEngine { $0.collaborations.post(event, for: identifier) } ?? .failure(.unknownCollaboration(identifier))
    }

    /// Ends a collaboration this node owns.
    public func endCollaboration(_ identifier: String) -> Result<Void, CollaborationError> {
        onEngine { agent in agent.collaborations.perform { center, _ in center.end(identifier) } }
            ?? .failure(.unknownCollaboration(identifier))
    }

    /// This device's proof that its person's device set changed: from the old root (this device and `oldDevices`) to
    /// the new one (this device and `newDevices`, or its configured set), for a challenge of the collaboration's owner.
    public func proveIdentityUpdate(
        oldDevices: [[UInt8]], newDevices: [[UInt8]]?, challenge: CollaborationChallenge
    ) -> Result<(PersonIdentity, PersonIdentity, SignedIdentityProof), CollaborationError> {
        onEngine { agent in
            let center = agent.collaborations.center
            let crypto = OpenSSLIdentityCrypto()
            let key = center.identity.proof.publicKey
            guard let oldTree = MerkleTree(publicKeys: oldDevices + [key], crypto: crypto),
                let newTree = MerkleTree(publicKeys: (newDevices ?? center.identity.devices) + [key], crypto: crypto)
            else { return .failure(.proofRejected(.malformed)) }
            let old = oldTree.identity, new = newTree.identity
            guard old != new else { return .failure(.invalidMetadata("the old device set is the current one: nothing changed")) }
            return center.proveIdentityUpdate(from: old, oldDevices: oldDevices, to: new, challenge: challenge).map { (old, new, $0) }
        } ?? .failure(.proofRejected(.malformed))
    }

    /// On the owner: a person's stored root becomes their new one, vouched for by an old device.
    public func replaceCollaborationIdentity(
        _ old: PersonIdentity, with new: PersonIdentity, proof: Result<SignedIdentityProof, ProofRejection>, nonce: String,
        for identifier: String
    ) -> Result<PersonIdentity, CollaborationError> {
        onEngine { agent in
            agent.collaborations.perform { center, now in
                center.replaceIdentity(old, with: new, proof: proof, nonce: nonce, for: identifier, now: now)
            }
        } ?? .failure(.unknownCollaboration(identifier))
    }
}
