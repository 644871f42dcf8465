/// Why a collaboration request was refused (the control API's error codes say the same).
public enum CollaborationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The metadata or its share options break a rule (the text says which).
    case invalidMetadata(String)
    /// No collaboration with this identifier (or URL) is known here.
    case unknownCollaboration(String)
    /// The group session to bind to is not one this node has joined.
    case notInSession(String)
    /// Only the collaboration's owner (its verifier) can do this.
    case notOwner(String)
    /// This node owns the collaboration: what a member does (asking for access) does not apply.
    case ownedHere(String)
    /// The action was already fulfilled, failed or timed out, or never existed.
    case actionNotPending(String)
    /// The start action failed or timed out: nothing was shared.
    case startFailed(String)
    /// The mentioned person is not a member of the bound group.
    case unknownPerson(String)
    /// The proof was checked and refused.
    case proofRejected(ProofRejection)
    /// Too many collaborations on this node.
    case tooManyCollaborations(Int)
    /// Too many proofs or challenges from frontends lately: try again after this many milliseconds.
    case throttled(retryAfterMs: Int)
    /// The group messenger refused a message it needed (too large for the call's legs, throttled, not joined).
    case sendFailed(String)

    public var description: String {
        switch self {
        case .invalidMetadata(let why): "invalid collaboration metadata: \(why)"
        case .unknownCollaboration(let id): "no collaboration '\(id)'"
        case .notInSession(let id): "not a member of group session '\(id)'"
        case .notOwner(let id): "only the owner of collaboration '\(id)' can do that"
        case .ownedHere(let id): "collaboration '\(id)' is owned here: it needs no access"
        case .actionNotPending(let id): "action '\(id)' is not pending (already completed, timed out, or unknown)"
        case .startFailed(let why): "the collaboration was not started: \(why)"
        case .unknownPerson(let root): "no member of the group has identity \(root)"
        case .proofRejected(let reason): "proof rejected: \(reason.rawValue) (\(reason.explanation))"
        case .tooManyCollaborations(let limit): "this node already has \(limit) collaborations"
        case .sendFailed(let why): "the group messenger refused it: \(why)"
        case .throttled(let ms): "too many proofs or challenges lately; try again in \(ms) ms"
        }
    }
}
