import Collaboration
import Foundation

/// `collaborationStart`: share a collaboration in a joined conversation (and its merged group).
public struct CollaborationStartParams: ControlParams {
    public var conversation: String
    public var title: String?
    /// Unique here; made up when absent.
    public var localIdentifier: String?
    /// The document's link; parleyd makes `parley://collaboration/ID` when absent.
    public var url: String?
    public var defaultShareOptions: CollaborationShareOptions?
    public var userSelectedShareOptions: CollaborationShareOptions?
    /// Participants updates wait for `collaborationConfirm`.
    public var confirmUpdates: Bool?

    public init(
        conversation: String, title: String? = nil, localIdentifier: String? = nil, url: String? = nil,
        defaultShareOptions: CollaborationShareOptions? = nil, userSelectedShareOptions: CollaborationShareOptions? = nil,
        confirmUpdates: Bool? = nil
    ) {
        self.conversation = conversation
        self.title = title
        self.localIdentifier = localIdentifier
        self.url = url
        self.defaultShareOptions = defaultShareOptions
        self.userSelectedShareOptions = userSelectedShareOptions
        self.confirmUpdates = confirmUpdates
    }

    /// The members.
    public static let fields = [
        ConversationParams.conversationField,
        ControlField("title", "a string", optional: true, "the document's title, at most 500 bytes"),
        ControlField("localIdentifier", "a string", optional: true, "this frontend's own name for it, 1–200 bytes (made up when absent)"),
        ControlField("url", "a string", optional: true, "the document's link; `parley://collaboration/ID` when absent"),
        ControlField("defaultShareOptions", "share options", optional: true, "the options offered: `{\"optionsGroups\": [{\"identifier\", \"title\", \"footer\", \"picker\": boolean, \"options\": [{\"title\", \"identifier\", \"subtitle\", \"selected\", \"requiredOptionsIdentifiers\"}]}], \"summary\"}`; a picker has exactly one selected option"),
        ControlField("userSelectedShareOptions", "share options", optional: true, "the options the user picked (same shape)"),
        ControlField("confirmUpdates", "a boolean", optional: true, "participants updates wait for `collaborationConfirm` (additions only; removals apply at once)"),
    ]
    /// An example.
    public static let example = CollaborationStartParams(
        conversation: "1b4e28ba", title: "Trip plan", localIdentifier: "doc-42", url: "https://docs.example.org/d/42",
        defaultShareOptions: nil,
        userSelectedShareOptions: CollaborationShareOptions(optionsGroups: [
            CollaborationOptionsGroup(identifier: "permission", isPicker: true, options: [
                CollaborationOption(title: "Can make changes", identifier: "edit", isSelected: true),
                CollaborationOption(title: "Read only", identifier: "read"),
            ])
        ]),
        confirmUpdates: false)

    /// The metadata it asks for.
    public func metadata(initiator: String?) -> CollaborationMetadata {
        CollaborationMetadata(
            localIdentifier: localIdentifier ?? UUID().uuidString.lowercased(), title: title, initiatorHandle: initiator,
            defaultShareOptions: defaultShareOptions, userSelectedShareOptions: userSelectedShareOptions)
    }

    /// The metadata's rules.
    public func validate() throws(ControlError) {
        try ConversationParams.check(conversation, "conversation")
        if let url, url.isEmpty || url.utf8.count > 2048 { throw ControlError(.invalidParams, "\"url\" must hold 1–2048 bytes.", field: "url") }
        if let problem = metadata(initiator: nil).validate() { throw ControlError(collaboration: problem) }
    }
}

/// One collaboration, by identifier.
public struct CollaborationParams: ControlParams {
    public var collaboration: String
    public init(collaboration: String) { self.collaboration = collaboration }
    /// The members.
    public static let fields = [ControlField("collaboration", "a string", "a collaboration's identifier (from `collaborations` or its events)")]
    /// An example.
    public static let example = CollaborationParams(collaboration: "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d")
    /// Not blank.
    public func validate() throws(ControlError) { try ConversationParams.check(collaboration, "collaboration") }
}

/// `collaborationProve`: a challenge to sign with this device's key (its members are its shape's).
extension CollaborationChallenge: ControlParams {
    /// An example.
    public static let example = CollaborationChallenge(
        collaboration: "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", group: "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10",
        nonce: String(repeating: "ab", count: 32), expires: "2026-12-01T10:01:00Z", verifier: "sip:alice@127.0.0.1:5070")
    /// Well formed.
    public func validate() throws(ControlError) {
        guard statement != nil else { throw ControlError(.invalidParams, "The challenge is malformed (nonce, expires or a NUL).", field: "nonce") }
    }
}

/// A signed proof as a parameter (its members are its shape's).
extension SignedProofJSON: ControlParams {
    /// An example.
    public static let example = SignedProofJSON(
        publicKey: "04" + String(repeating: "11", count: 64), publicKeyIndex: 1, inclusionHashes: [String(repeating: "22", count: 32)],
        signatureDER: "3045" + String(repeating: "33", count: 69))
}

/// `collaborationVerify`: a proof for a challenge this parleyd issued.
public struct CollaborationVerifyParams: ControlParams {
    public var collaboration: String
    public var nonce: String
    public var proof: SignedProofJSON
    public init(collaboration: String, nonce: String, proof: SignedProofJSON) {
        self.collaboration = collaboration
        self.nonce = nonce
        self.proof = proof
    }
    /// The members.
    public static let fields = [
        CollaborationParams.fields[0],
        ControlField("nonce", "a string", "the challenge's nonce"),
        ControlField("proof", "a signed proof", "`{\"publicKey\", \"publicKeyIndex\", \"inclusionHashes\", \"signatureDER\"}` (hex strings and an integer)"),
    ]
    /// An example.
    public static let example = CollaborationVerifyParams(
        collaboration: CollaborationParams.example.collaboration, nonce: CollaborationChallenge.example.nonce, proof: SignedProofJSON.example)
    /// Not blank.
    public func validate() throws(ControlError) { try ConversationParams.check(collaboration, "collaboration") }
}

/// `collaborationConfirm`: accept or refuse a participants update.
public struct CollaborationConfirmParams: ControlParams {
    public var action: String
    public var accept: Bool
    public init(action: String, accept: Bool) {
        self.action = action
        self.accept = accept
    }
    /// The members.
    public static let fields = [
        ControlField("action", "a string", "the update's action id (from `collaborationParticipantsUpdate`)"),
        ControlField("accept", "a boolean", "true fulfils it (the added people are invited), false fails it (nothing is added)"),
    ]
    /// An example.
    public static let example = CollaborationConfirmParams(action: "action-3", accept: true)
}

/// `collaborationNotice`: a notice into the collaboration's conversation.
public struct CollaborationNoticeParams: ControlParams {
    public var collaboration: String
    /// `change`, `mention`, `persistence` or `membership`.
    public var kind: String
    /// `edit`/`comment`; `created`/`deleted`/`renamed`/`moved`; `addedCollaborator`/`removedCollaborator`.
    public var trigger: String?
    /// With `mention`: the mentioned person's root.
    public var person: String?
    public init(collaboration: String, kind: String, trigger: String? = nil, person: String? = nil) {
        self.collaboration = collaboration
        self.kind = kind
        self.trigger = trigger
        self.person = person
    }
    /// The members.
    public static let fields = [
        CollaborationParams.fields[0],
        ControlField("kind", "a string", "`change`, `mention`, `persistence` or `membership`"),
        ControlField("trigger", "a string", optional: true, "`edit` or `comment` (change); `created`, `deleted`, `renamed`, `moved` (persistence); `addedCollaborator`, `removedCollaborator` (membership)"),
        ControlField("person", "a string", optional: true, "with `mention`: the mentioned person's root (shown to them alone)"),
    ]
    /// An example.
    public static let example = CollaborationNoticeParams(collaboration: CollaborationParams.example.collaboration, kind: "change", trigger: "edit")

    /// The event it names.
    public var event: HighlightEvent? { HighlightEvent(kind: kind, trigger: kind == "mention" ? person ?? "" : trigger ?? "") }

    /// A known event.
    public func validate() throws(ControlError) {
        try ConversationParams.check(collaboration, "collaboration")
        guard event != nil else {
            let field = kind == "mention" ? "person" : ["change", "persistence", "membership"].contains(kind) ? "trigger" : "kind"
            let given = kind == "mention" ? person : trigger
            let sentence = given.map { "No such notice: \(kind) \($0)." } ?? "A \(kind) notice needs \(field == "person" ? "a \"person\"" : "a \"trigger\"")."
            throw ControlError(.invalidParams, field == "kind" ? "No such notice kind: \(kind)." : sentence, field: field)
        }
    }
}

/// A person stored against a collaboration.
public struct CollaborationParticipantData: Codable, Sendable, Equatable {
    public var root: String
    /// `invited`, `granted` or `revoked`.
    public var access: String
    @Nullable public var participant: String?
    @Nullable public var name: String?
    public init(_ person: CollaborationParticipant) {
        root = person.identity.hex
        access = person.access.rawValue
        participant = person.participant
        name = person.name
    }
}

/// A collaboration as the control API shows it.
public struct CollaborationData: Codable, Sendable, Equatable {
    public var collaboration: String
    public var url: String
    @Nullable public var title: String?
    /// The group session it rides.
    public var session: String
    public var isOwner: Bool
    /// `active`, `updating` or `ended`.
    public var state: String
    public var verifier: String
    /// On a recipient: `none`, `requested`, `granted` or `rejected`.
    public var access: String
    @Nullable public var rejection: String?
    public var metadata: CollaborationMetadataInfo
    /// On the owner: the people stored against it.
    public var participants: [CollaborationParticipantData]

    public init(_ info: CollaborationInfo) {
        collaboration = info.highlight.identifier
        url = info.highlight.url
        title = info.highlight.title
        session = info.highlight.session
        isOwner = info.isOwner
        state = info.state.rawValue
        verifier = info.verifier
        access = info.access.name
        if case .rejected(let reason) = info.access { rejection = reason.rawValue } else { rejection = nil }
        metadata = CollaborationMetadataInfo(info.metadata)
        participants = info.participants.map(CollaborationParticipantData.init)
    }
}

/// `collaborations`' result.
public struct CollaborationsResult: Codable, Sendable, Equatable {
    public var collaborations: [CollaborationData]
    public init(collaborations: [CollaborationData]) { self.collaborations = collaborations }
}

/// `identity`'s result: this device's key and its person.
public struct IdentityResult: Codable, Sendable, Equatable {
    public var publicKey: String
    public var root: String
    public var publicKeyIndex: Int
    public var inclusionHashes: [String]
    /// Every device key of the person, this one included.
    public var devices: [String]
    public init(_ identity: LocalIdentity) {
        publicKey = Hex.encode(identity.proof.publicKey)
        root = identity.person.hex
        publicKeyIndex = identity.proof.publicKeyIndex
        inclusionHashes = identity.proof.inclusionHashes.map(Hex.encode)
        devices = identity.devices.map(Hex.encode)
    }
}

/// `collaborationVerify`'s result.
public struct CollaborationGranted: Codable, Sendable, Equatable {
    public var collaboration: String
    public var root: String
    public init(collaboration: String, root: String) {
        self.collaboration = collaboration
        self.root = root
    }
}

/// `collaborationChanged`: started, shared with us, updated, access changed, ended.
public struct CollaborationChanged: Codable, Sendable, Equatable {
    public var collaboration: CollaborationData
    public init(collaboration: CollaborationData) { self.collaboration = collaboration }
}

/// `collaborationParticipantsUpdate`: people to add or remove (confirm with `collaborationConfirm` when asked).
public struct CollaborationUpdateEvent: Codable, Sendable, Equatable {
    public var action: String
    public var collaboration: String
    public var added: [String]
    public var removed: [String]
    public var requiresConfirmation: Bool
    /// When an unanswered confirmation times out (a wire timestamp).
    public var deadline: String
    public init(_ action: CollaborationAction) {
        self.action = action.id
        if case .updateParticipants(let identifier, let added, let removed) = action.kind {
            collaboration = identifier
            self.added = added.map(\.hex)
            self.removed = removed.map(\.hex)
        } else {
            collaboration = ""
            added = []
            removed = []
        }
        requiresConfirmation = action.requiresConfirmation
        deadline = ControlTime.string(action.deadline)
    }
}

/// `collaborationActionCompleted`: a start or participants update action ended.
public struct CollaborationActionCompleted: Codable, Sendable, Equatable {
    public var action: String
    /// `start` or `updateParticipants`.
    public var kind: String
    /// `fulfilled`, `failed` or `timedOut`.
    public var outcome: String
    public init(_ action: CollaborationAction, _ outcome: CollaborationActionOutcome) {
        self.action = action.id
        if case .start = action.kind { kind = "start" } else { kind = "updateParticipants" }
        switch outcome {
        case .fulfilled: self.outcome = "fulfilled"
        case .failed: self.outcome = "failed"
        case .timedOut: self.outcome = "timedOut"
        }
    }
}

/// `collaborationVerified`: the owner checked a proof.
public struct CollaborationVerified: Codable, Sendable, Equatable {
    public var collaboration: String
    /// The group participant who sent it, or null for one given to `collaborationVerify`.
    @Nullable public var participant: String?
    public var granted: Bool
    @Nullable public var root: String?
    /// A rejection reason when not granted.
    @Nullable public var reason: String?
    public init(collaboration: String, participant: String?, result: Result<PersonIdentity, ProofRejection>) {
        self.collaboration = collaboration
        self.participant = participant
        switch result {
        case .success(let root):
            granted = true
            self.root = root.hex
            reason = nil
        case .failure(let why):
            granted = false
            root = nil
            reason = why.rawValue
        }
    }
}

/// `collaborationNotice`: a notice posted into a collaboration's conversation.
public struct CollaborationNoticeEvent: Codable, Sendable, Equatable {
    public var collaboration: String
    @Nullable public var title: String?
    public var url: String
    public var kind: String
    public var trigger: String
    /// The participant who posted it, and their name.
    public var from: String
    public var fromName: String
    public init(_ notice: CollaborationNotice) {
        collaboration = notice.highlight.identifier
        title = notice.highlight.title
        url = notice.highlight.url
        kind = notice.event.kind
        trigger = notice.event.trigger
        from = notice.from
        fromName = notice.fromName
    }
}

/// `identityAnnounced`: a group member told its person root.
public struct IdentityAnnounced: Codable, Sendable, Equatable {
    public var session: String
    public var participant: String
    public var name: String
    public var root: String
    public init(session: String, participant: String, name: String, root: String) {
        self.session = session
        self.participant = participant
        self.name = name
        self.root = root
    }
}

extension ControlError {
    /// A collaboration refusal as a control error.
    public init(collaboration error: CollaborationError) {
        switch error {
        case .invalidMetadata(let why): self.init(.invalidParams, why.prefix(1).uppercased() + why.dropFirst() + ".", field: "userSelectedShareOptions")
        case .unknownCollaboration(let id): self.init(.notFound, "No collaboration \(id).", details: .init(field: "collaboration"))
        case .notInSession: self.init(.notJoined, "The call is not connected (or its group session is gone).")
        case .notOwner(let id): self.init(.refused, "Only the owner of collaboration \(id) can do that.")
        case .ownedHere(let id): self.init(.refused, "This parleyd owns collaboration \(id): it has access already.")
        case .actionNotPending(let id): self.init(.notFound, "Action \(id) is not pending (completed, timed out or unknown).", details: .init(field: "action"))
        case .startFailed(let why): self.init(.failed, "The collaboration was not started: \(why).")
        case .unknownPerson(let root):
            self.init(.unknownParticipant, "Nobody in the group has identity \(root.prefix(16))….", details: .init(field: "person"))
        case .proofRejected(let reason):
            self.init(.proofRejected, "Proof rejected: \(reason.explanation).", details: .init(reason: reason.rawValue))
        case .tooManyCollaborations(let limit): self.init(.refused, "This parleyd already has \(limit) collaborations.", details: .init(limit: limit))
        case .sendFailed(let why): self.init(.failed, "The group messenger refused it: \(why).")
        case .throttled(let ms): self.init(.throttled, "Too many proofs or challenges; try again in \(ms) ms.", details: .init(retryAfterMs: ms))
        }
    }
}

/// The rejection reasons, for the reference.
enum ProofRejectionNames {
    static let all = ProofRejection.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", ")
}

/// `collaborationConfirm`'s result.
public struct CollaborationConfirmed: Codable, Sendable, Equatable {
    public var action: String
    public var accepted: Bool
    public init(action: String, accepted: Bool) {
        self.action = action
        self.accepted = accepted
    }
}

/// `collaborationNotice`'s result.
public struct CollaborationPosted: Codable, Sendable, Equatable {
    public var collaboration: String
    public var posted: Bool
    public init(collaboration: String, posted: Bool) {
        self.collaboration = collaboration
        self.posted = posted
    }
}

/// `collaborationEnd`'s result.
public struct CollaborationEnded: Codable, Sendable, Equatable {
    public var collaboration: String
    public var state: String
    public init(collaboration: String, state: String) {
        self.collaboration = collaboration
        self.state = state
    }
}

/// `identityUpdateProve`: this device vouches for its person's new device set, for a challenge of a collaboration.
public struct IdentityUpdateProveParams: ControlParams {
    public var challenge: CollaborationChallenge
    /// The person's other devices before the change (this one excluded): they make the old root.
    public var oldDevices: [String]
    /// The person's other devices after it (this one excluded): the new root; this device's own set when absent.
    public var newDevices: [String]?
    public init(challenge: CollaborationChallenge, oldDevices: [String], newDevices: [String]? = nil) {
        self.challenge = challenge
        self.oldDevices = oldDevices
        self.newDevices = newDevices
    }
    /// The members.
    public static let fields = [
        ControlField("challenge", "a challenge", "from the owner's `collaborationChallenge`: `{\"collaboration\", \"group\", \"nonce\", \"expires\", \"verifier\"}`"),
        ControlField("oldDevices", "a list of strings", "the person's other devices' public keys before the change (hex), this one excluded; empty for a person who had only this device"),
        ControlField("newDevices", "a list of strings", optional: true, "the other devices' keys after the change (the new device among them); this parleyd's own `identity/devices` when absent"),
    ]
    /// An example.
    public static let example = IdentityUpdateProveParams(challenge: .example, oldDevices: [], newDevices: ["04" + String(repeating: "11", count: 64)])
    /// A well-formed challenge, hex keys.
    public func validate() throws(ControlError) {
        try challenge.validate()
        for (name, keys) in [("oldDevices", oldDevices), ("newDevices", newDevices ?? [])] {
            guard keys.count < 32, keys.allSatisfy({ Hex.decode($0)?.count == 65 }) else {
                throw ControlError(.invalidParams, "\"\(name)\" must hold fewer than 32 public keys of 65 bytes in hex.", field: name)
            }
        }
    }
}

/// `identityUpdateProve`'s result: what to hand to the owner's `collaborationReplaceIdentity`.
public struct IdentityUpdateProof: Codable, Sendable, Equatable {
    public var oldRoot: String
    public var newRoot: String
    public var proof: SignedProofJSON
    public init(oldRoot: String, newRoot: String, proof: SignedProofJSON) {
        self.oldRoot = oldRoot
        self.newRoot = newRoot
        self.proof = proof
    }
}

/// `collaborationReplaceIdentity`: on the owner, a person's old root becomes their new one, vouched for by an old device.
public struct CollaborationReplaceIdentityParams: ControlParams {
    public var collaboration: String
    public var nonce: String
    public var oldRoot: String
    public var newRoot: String
    public var proof: SignedProofJSON
    public init(collaboration: String, nonce: String, oldRoot: String, newRoot: String, proof: SignedProofJSON) {
        self.collaboration = collaboration
        self.nonce = nonce
        self.oldRoot = oldRoot
        self.newRoot = newRoot
        self.proof = proof
    }
    /// The members.
    public static let fields = [
        CollaborationParams.fields[0],
        ControlField("nonce", "a string", "the challenge's nonce"),
        ControlField("oldRoot", "a string", "the stored root (hex)"),
        ControlField("newRoot", "a string", "the person's root with the new device set (hex)"),
        ControlField("proof", "a signed proof", "an old device's proof against the old root, signing `parley-identity-update-v1`"),
    ]
    /// An example.
    public static let example = CollaborationReplaceIdentityParams(
        collaboration: CollaborationParams.example.collaboration, nonce: CollaborationChallenge.example.nonce,
        oldRoot: String(repeating: "aa", count: 32), newRoot: String(repeating: "bb", count: 32), proof: .example)
    /// Roots are 32-byte hex.
    public func validate() throws(ControlError) {
        try ConversationParams.check(collaboration, "collaboration")
        for (name, value) in [("oldRoot", oldRoot), ("newRoot", newRoot)] where PersonIdentity(hex: value) == nil {
            throw ControlError(.invalidParams, "\"\(name)\" must be 64 hex digits.", field: name)
        }
    }
}
