import Foundation
import GroupActivities

/// A node's collaborations, as one pure machine (Apple's `SWCollaborationCoordinator` and `SWHighlightCenter`
/// together): the ones it owns and verifies, the ones shared with it, the person roots members announced, the
/// actions in flight and the owner's nonces. Inputs carry `now`; outputs are ``CollaborationEffect``s. The
/// cryptography and the device key are injected.
///
///     frontend ──start──▶ [start action] ──fulfil──▶ active ──share──▶ members
///     members ──identity──▶ [update action: added] ──fulfil──▶ invited ──proof──▶ granted
///     group loses a member ──▶ revoked at once ──▶ [update action: removed] (reported)
///     session over / owner ends ──▶ ended
public struct CollaborationCenter: Sendable {
    /// The most collaborations a node keeps (owned and shared, ended ones included until their session ends).
    public static let maxCollaborations = 64
    /// The most collaborations one member may share with this node.
    public static let maxSharesPerMember = 8
    /// The most people a collaboration stores (revoked ones are dropped first to make room).
    public static let maxRootsPerCollaboration = 256

    struct SessionView: Sendable {
        var local: String
        var names: [String: String] = [:]
        var identities: [String: PersonIdentity] = [:]
        /// Whether this device announced itself here: only once the session carries a collaboration (a plain group
        /// session never sees collaboration traffic, nor spends its members' message rate on it).
        var announced = false
    }

    struct Owned: Sendable {
        var highlight: CollaborationHighlight
        var metadata: CollaborationMetadata
        var state: CollaborationState = .active
        var requiresConfirmation: Bool
        var roots: [PersonIdentity: ParticipantAccess] = [:]
        var bindings: [PersonIdentity: String] = [:]
        var updates: Set<String> = []
        /// Roots an update waiting for its handler adds: an announcement of one of them raises no second update.
        var pendingAdditions: Set<PersonIdentity> = []
        /// The one challenge each member may have outstanding (its nonce, hex).
        var challenges: [String: String] = [:]
    }

    struct Shared: Sendable {
        var highlight: CollaborationHighlight
        var metadata: CollaborationMetadata
        var owner: String
        var verifier: String
        var state: CollaborationState = .active
        var access: RecipientAccess = .none
        /// Whether this node already signed the challenge its current request asked for (it signs one per request).
        var signed = false
    }

    /// This device's person identity.
    public let identity: LocalIdentity
    /// This node's verifier identifier (its SIP address).
    public let verifier: String
    let crypto: any IdentityCrypto
    let signer: any DeviceSigner
    var sessions: [String: SessionView] = [:]
    /// The name each person root was last announced with, so one who left is still named (bounded).
    var personNames: [PersonIdentity: String] = [:]
    /// Identifiers of collaborations that ended here: a share reusing one is refused (the newest 256).
    var endedIdentifiers: [String] = []
    var owned: [String: Owned] = [:]
    var shared: [String: Shared] = [:]
    /// Start actions: their session and whether updates will need confirmation.
    var starting: [String: (session: String, confirm: Bool)] = [:]
    public internal(set) var coordinator: CollaborationCoordinator
    public internal(set) var nonces: NonceStore
    /// Proofs frontends hand in (`collaborationVerify`, `collaborationReplaceIdentity`): each costs an ECDSA
    /// verification, so they are rationed; proofs that come over the group are bounded by the messenger's rate.
    var frontendProofs = TokenBucket(rate: Self.frontendProofsPerSecond, burst: Self.frontendProofsPerSecond / 5, now: .zero)
    /// Frontend proofs a second, bursts of a fifth as many.
    public static let frontendProofsPerSecond = 1000
    var frontendProofsClock: Duration = .zero
    /// Challenges frontends ask for (`collaborationChallenge`): each holds a nonce for its minute, and the store
    /// forgets its oldest beyond its capacity, so an unrationed frontend could push out the challenges members were
    /// sent (3,877 a second were taken before). At this rate a minute's outstanding ones stay under a third of it.
    var frontendChallenges = TokenBucket(rate: Self.frontendChallengesPerSecond, burst: Self.frontendChallengesPerSecond * 2, now: .zero)
    /// Frontend challenges a second, bursts of twice as many.
    public static let frontendChallengesPerSecond = 50
    var frontendChallengesClock: Duration = .zero
    private var actionCount: UInt64 = 0

    public init(
        signer: any DeviceSigner, otherDevices: [[UInt8]] = [], verifier: String, crypto: any IdentityCrypto,
        actionTimeout: TimeInterval = 30, nonces: NonceStore = NonceStore()
    ) {
        self.signer = signer
        self.crypto = crypto
        self.verifier = verifier
        identity = LocalIdentity(publicKey: signer.publicKey, otherDevices: otherDevices, crypto: crypto)
        coordinator = CollaborationCoordinator(timeout: actionTimeout)
        self.nonces = nonces
    }

    // MARK: Queries

    /// Every collaboration, owned first, by identifier.
    public var collaborations: [CollaborationInfo] {
        owned.keys.sorted().compactMap(info) + shared.keys.sorted().compactMap(info)
    }

    /// One collaboration, by identifier.
    public func info(_ identifier: String) -> CollaborationInfo? {
        if let collaboration = owned[identifier] {
            let view = sessions[collaboration.highlight.session]
            // The owner's own person is stored too (its other devices prove into it) but is not listed.
            let people = collaboration.roots.keys.filter { $0 != identity.person }.sorted { $0.hex < $1.hex }.map { root in
                let member = collaboration.bindings[root] ?? view?.identities.first { $0.value == root }?.key
                return CollaborationParticipant(
                    identity: root, access: collaboration.roots[root] ?? .revoked, participant: member,
                    name: member.flatMap { view?.names[$0] } ?? personNames[root])
            }
            return CollaborationInfo(
                highlight: collaboration.highlight, metadata: collaboration.metadata, isOwner: true, state: collaboration.state,
                verifier: verifier, access: .granted, participants: people)
        }
        guard let collaboration = shared[identifier] else { return nil }
        // A recipient's one participant is the owner, as the group knows them: the verifier string is only a claim.
        let view = sessions[collaboration.highlight.session]
        let owner = view?.identities[collaboration.owner].map {
            CollaborationParticipant(identity: $0, access: .granted, participant: collaboration.owner, name: view?.names[collaboration.owner])
        }
        return CollaborationInfo(
            highlight: collaboration.highlight, metadata: collaboration.metadata, isOwner: false, state: collaboration.state,
            verifier: collaboration.verifier, access: collaboration.access, participants: owner.map { [$0] } ?? [])
    }

    /// The highlight with this URL (Apple's `collaborationHighlight(for:)`).
    public func highlight(for url: String) -> CollaborationHighlight? {
        (owned.values.map(\.highlight) + shared.values.map(\.highlight)).first { $0.url == url }
    }

    /// The highlight with this identifier (`collaborationHighlight(forIdentifier:)`).
    public func highlight(forIdentifier identifier: String) -> CollaborationHighlight? {
        owned[identifier]?.highlight ?? shared[identifier]?.highlight
    }

    /// The person root a member of a session announced.
    public func identity(of participant: String, in session: String) -> PersonIdentity? {
        sessions[session]?.identities[participant]
    }

    // MARK: Sessions (from the group messenger)

    /// This node joined (or activated) a group session: it learns who is there. It announces its person root once the
    /// session carries a collaboration (``announceOnce(in:)``).
    public mutating func sessionJoined(_ session: String, local: GroupParticipant, active: [GroupParticipant]) -> [CollaborationEffect] {
        guard sessions[session] == nil else { return [] }
        var view = SessionView(local: local.id)
        for participant in active { view.names[participant.id] = participant.name }
        view.identities[local.id] = identity.person
        sessions[session] = view
        return []
    }

    /// The first collaboration on a session (started here, or shared with us): this device announces itself there.
    mutating func announceOnce(in session: String) -> [CollaborationEffect] {
        guard sessions[session]?.announced == false else { return [] }
        sessions[session]?.announced = true
        return announcement(in: session, to: nil)
    }

    /// This device's signed announcement of its person root, to everyone (nil) or to newcomers.
    func announcement(in session: String, to recipients: Set<String>?) -> [CollaborationEffect] {
        guard let local = sessions[session]?.local,
            let statement = ProofStatement.announcement(session: session, participant: local, root: identity.person)
        else { return [.log("collaboration: session \(session) cannot carry an announcement")] }
        let signed = SignedIdentityProof(proof: identity.proof, signatureData: signer.sign(statement))
        let message = CollaborationWire.Identity(root: identity.person, proof: .init(signed))
        return [.send(session: session, type: CollaborationWire.identity, data: CollaborationWire.encode(message), to: recipients, keep: false)]
    }

    /// Members came or went: those who went lose access to what this node owns on the session.
    public mutating func participantsChanged(
        _ session: String, added: [GroupParticipant], removed: [GroupParticipant], now: Date
    ) -> [CollaborationEffect] {
        guard var view = sessions[session] else { return [] }
        let newcomers = Set(added.map(\.id)).subtracting([view.local])
        for participant in added { view.names[participant.id] = participant.name }
        var gone: [PersonIdentity] = []
        for participant in removed where participant.id != view.local {
            view.names[participant.id] = nil
            if let root = view.identities.removeValue(forKey: participant.id), !view.identities.values.contains(root) { gone.append(root) }
        }
        sessions[session] = view
        var effects: [CollaborationEffect] = []
        // Newcomers hear who this device is, and of the collaborations this node owns here (nothing relies on the
        // host's journal, which would replay members long gone and shares long ended).
        if !newcomers.isEmpty, view.announced {
            effects += announcement(in: session, to: newcomers)
            for identifier in owned.keys.sorted() {
                guard let collaboration = owned[identifier], collaboration.highlight.session == session, collaboration.state != .ended else { continue }
                effects.append(shareMessage(collaboration, to: newcomers))
            }
        }
        // A member who leaves takes the collaborations it shared with it.
        for participant in removed {
            for identifier in shared.keys.sorted() where shared[identifier]?.owner == participant.id && shared[identifier]?.highlight.session == session {
                effects += endReceived(identifier, from: participant.id, in: session)
            }
        }
        for identifier in owned.keys.sorted() where owned[identifier]?.highlight.session == session && !gone.isEmpty {
            effects += revoke(gone, in: identifier, now: now)
        }
        return effects
    }

    /// The session is over (left, ended, its call gone): so is every collaboration bound to it.
    public mutating func sessionEnded(_ session: String) -> [CollaborationEffect] {
        sessions[session] = nil
        var effects: [CollaborationEffect] = []
        for identifier in owned.keys.sorted() where owned[identifier]?.highlight.session == session {
            owned[identifier]?.state = .ended
            if let info = info(identifier) { effects.append(.changed(info)) }
            owned[identifier] = nil
            remember(ended: identifier)
        }
        for identifier in shared.keys.sorted() where shared[identifier]?.highlight.session == session {
            shared[identifier]?.state = .ended
            if let info = info(identifier) { effects.append(.changed(info)) }
            shared[identifier] = nil
            remember(ended: identifier)
        }
        return effects
    }

    /// A group message: the collaboration ones are read, the rest ignored.
    public mutating func received(_ delivery: GroupDelivery, now: Date) -> [CollaborationEffect] {
        guard CollaborationWire.isCollaboration(delivery.type), sessions[delivery.session] != nil else { return [] }
        let from = delivery.source.id
        switch delivery.type {
        case CollaborationWire.identity:
            guard let message = CollaborationWire.decode(CollaborationWire.Identity.self, delivery.data) else { return bad(delivery) }
            return announced(message, by: delivery.source, in: delivery.session, now: now)
        case CollaborationWire.share:
            guard let message = CollaborationWire.decode(CollaborationWire.Share.self, delivery.data) else { return bad(delivery) }
            return shareReceived(message, from: from, in: delivery.session)
        case CollaborationWire.ended:
            guard let message = CollaborationWire.decode(CollaborationWire.Reference.self, delivery.data) else { return bad(delivery) }
            return endReceived(message.collaboration, from: from, in: delivery.session)
        case CollaborationWire.challengeRequest:
            guard let message = CollaborationWire.decode(CollaborationWire.Reference.self, delivery.data) else { return bad(delivery) }
            return challengeRequested(message.collaboration, by: from, in: delivery.session, now: now)
        case CollaborationWire.challenge:
            guard let message = CollaborationWire.decode(CollaborationWire.Challenge.self, delivery.data) else { return bad(delivery) }
            return challenged(message, by: from, in: delivery.session)
        case CollaborationWire.proof:
            guard let message = CollaborationWire.decode(CollaborationWire.Proof.self, delivery.data) else { return bad(delivery) }
            return proofReceived(message, from: from, in: delivery.session, now: now)
        case CollaborationWire.access:
            guard let message = CollaborationWire.decode(CollaborationWire.Access.self, delivery.data) else { return bad(delivery) }
            return accessAnswered(message, by: from, in: delivery.session)
        case CollaborationWire.notice:
            guard let message = CollaborationWire.decode(CollaborationWire.Notice.self, delivery.data) else { return bad(delivery) }
            return noticeReceived(message, from: delivery.source, in: delivery.session)
        default:
            return [.log("collaboration: unknown message type \(delivery.type) from \(from)")]
        }
    }

    private func bad(_ delivery: GroupDelivery) -> [CollaborationEffect] {
        [.log("collaboration: malformed \(delivery.type) from \(delivery.source.id) in \(delivery.session)")]
    }

    private mutating func announced(
        _ message: CollaborationWire.Identity, by source: GroupParticipant, in session: String, now: Date
    ) -> [CollaborationEffect] {
        guard var view = sessions[session], source.id != view.local else { return [] }
        let root = message.root
        // Only members of the session now (a replay for one gone would bring it back), and nothing new costs no check.
        guard view.names[source.id] != nil else { return [.log("collaboration: announcement from \(source.id), not in \(session)")] }
        guard view.identities[source.id] != root else { return [] }
        // Only a device of the person can announce them, and only as the participant it is.
        guard case .success(let signed) = message.proof.signed,
            let statement = ProofStatement.announcement(session: session, participant: source.id, root: root),
            case .success = ProofVerifier.check(signed, statement: statement, roots: [root], crypto: crypto)
        else { return [.log("collaboration: unverifiable identity announcement from \(source.id) in \(session)")] }
        let previous = view.identities[source.id]
        view.identities[source.id] = root
        view.names[source.id] = source.name
        sessions[session] = view
        if personNames.count >= 1024 { personNames.removeAll() }
        personNames[root] = source.name
        var effects: [CollaborationEffect] = [.identityLearned(session: session, participant: source, identity: root)]
        if let previous, previous != root, !view.identities.values.contains(previous) {
            for identifier in owned.keys.sorted() where owned[identifier]?.highlight.session == session {
                effects += revoke([previous], in: identifier, now: now)
            }
        }
        for identifier in owned.keys.sorted() {
            guard let collaboration = owned[identifier], collaboration.highlight.session == session, collaboration.state != .ended,
                collaboration.roots[root] == nil || collaboration.roots[root] == .revoked,
                !collaboration.pendingAdditions.contains(root)
            else { continue }
            effects += requestUpdate(identifier, added: [root], removed: [], now: now)
        }
        return effects
    }

    /// An identifier that must not come back as someone's share.
    mutating func remember(ended identifier: String) {
        endedIdentifiers.append(identifier)
        if endedIdentifiers.count > 256 { endedIdentifiers.removeFirst(endedIdentifiers.count - 256) }
    }

    mutating func nextActionID() -> String {
        actionCount += 1
        return "action-\(actionCount)"
    }
}
