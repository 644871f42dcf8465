import GroupActivities

/// This device's person identity: its own key among the keys of every device of the same person.
public struct LocalIdentity: Sendable, Hashable {
    /// The person root.
    public let person: PersonIdentity
    /// This device's proof of inclusion in it.
    public let proof: IdentityProof
    /// Every device key of the person, this one included, sorted by leaf.
    public let devices: [[UInt8]]

    /// The identity of `publicKey` among `otherDevices`.
    public init(publicKey: [UInt8], otherDevices: [[UInt8]] = [], crypto: some IdentityCrypto) {
        // A tree over at least one key always exists and always holds that key.
        guard let tree = MerkleTree(publicKeys: [publicKey] + otherDevices, crypto: crypto),
            let proof = tree.proof(for: publicKey, crypto: crypto)
        else { preconditionFailure("a tree over a key holds the key") }
        person = tree.identity
        self.proof = proof
        devices = tree.leaves.compactMap { leaf in ([publicKey] + otherDevices).first { crypto.sha256($0) == leaf } }
    }
}

/// Where a collaboration is (docs/collaboration.md):
///
///     (start action) ──▶ active ⇄ updating ──▶ ended
public enum CollaborationState: String, Sendable, Hashable, Codable {
    /// Shared and in force.
    case active
    /// A participants update waits for its handler.
    case updating
    /// Ended by its owner, or its group session is over.
    case ended
}

/// Where a person stands with a collaboration, as its owner sees them.
public enum ParticipantAccess: String, Sendable, Hashable, Codable {
    /// Their root is stored: a proof from one of their devices will be accepted.
    case invited
    /// A device of theirs proved it: the root is bound to that member.
    case granted
    /// Removed from the group: their proofs are refused as `revoked`.
    case revoked
}

/// What this node's own request for access came to, as a recipient.
public enum RecipientAccess: Sendable, Hashable {
    /// Not asked yet.
    case none
    /// Asked; the owner's challenge or answer has not come.
    case requested
    /// The owner accepted this device's proof.
    case granted
    /// The owner refused it.
    case rejected(ProofRejection)

    /// `none`, `requested`, `granted` or `rejected`.
    public var name: String {
        switch self {
        case .none: "none"
        case .requested: "requested"
        case .granted: "granted"
        case .rejected: "rejected"
        }
    }
}

/// A person the owner stores against a collaboration.
public struct CollaborationParticipant: Sendable, Hashable {
    public let identity: PersonIdentity
    public let access: ParticipantAccess
    /// The group participant a granted root is bound to, or the member who announced it.
    public let participant: String?
    /// Their name, when they are in the group.
    public let name: String?

    public init(identity: PersonIdentity, access: ParticipantAccess, participant: String?, name: String?) {
        self.identity = identity
        self.access = access
        self.participant = participant
        self.name = name
    }
}

/// A collaboration as frontends see it.
public struct CollaborationInfo: Sendable, Hashable {
    /// The highlight: identifier, URL, title, bound session.
    public let highlight: CollaborationHighlight
    /// The metadata (the recipients' view, without the initiator's handle, on a recipient).
    public let metadata: CollaborationMetadata
    /// Whether this node owns it (and verifies its proofs).
    public let isOwner: Bool
    public let state: CollaborationState
    /// The owner's verifier identifier.
    public let verifier: String
    /// On a recipient: what its request for access came to.
    public let access: RecipientAccess
    /// On the owner: the people stored against it. On a recipient: the owner, as the group knows them (the group
    /// participant who shared it and the root it announced), once it announced itself.
    public let participants: [CollaborationParticipant]

    public init(
        highlight: CollaborationHighlight, metadata: CollaborationMetadata, isOwner: Bool, state: CollaborationState, verifier: String,
        access: RecipientAccess, participants: [CollaborationParticipant]
    ) {
        self.highlight = highlight
        self.metadata = metadata
        self.isOwner = isOwner
        self.state = state
        self.verifier = verifier
        self.access = access
        self.participants = participants
    }
}

/// A challenge the owner issued: everything a device needs to build the statement it signs.
public struct CollaborationChallenge: Sendable, Hashable, Codable {
    public let collaboration: String
    /// The bound group session.
    public let group: String
    /// 32 bytes, hex.
    public let nonce: String
    /// RFC 3339 UTC.
    public let expires: String
    public let verifier: String

    public init(collaboration: String, group: String, nonce: String, expires: String, verifier: String) {
        self.collaboration = collaboration
        self.group = group
        self.nonce = nonce
        self.expires = expires
        self.verifier = verifier
    }

    /// The statement a proof for this challenge signs; nil when a field is malformed.
    public var statement: ProofStatement? {
        guard let nonceBytes = Hex.decode(nonce), nonceBytes.count == 32, let date = ProofStatement.date(expires) else { return nil }
        return ProofStatement(
            purpose: .collaboration(identifier: collaboration, group: group), nonce: nonceBytes, expires: date, verifier: verifier)
    }
}

/// What the center asks its driver to do, and tells its frontends.
public enum CollaborationEffect: Sendable, Hashable {
    /// Send a group message (`to` nil: every other member).
    case send(session: String, type: String, data: JSONValue, to: Set<String>?, keep: Bool)
    /// An action for the handler (the node's own, or a frontend when it needs confirmation).
    case handle(CollaborationAction)
    /// An action completed (fulfilled, failed, timed out).
    case actionCompleted(CollaborationAction, CollaborationActionOutcome)
    /// A collaboration started, was shared with us, changed, or ended.
    case changed(CollaborationInfo)
    /// On the owner: a proof was checked.
    case verified(collaboration: String, participant: String?, result: Result<PersonIdentity, ProofRejection>)
    /// A notice for this node's frontends.
    case notice(CollaborationNotice)
    /// A member of a session announced their person root.
    case identityLearned(session: String, participant: GroupParticipant, identity: PersonIdentity)
    /// A line for the log.
    case log(String)
}
