import Collaboration
import Foundation

extension CollaborationParticipantData: ControlShape {
    /// `a collaborator`.
    public static let noun = ControlNoun("a collaborator", plural: "collaborators")

    /// The members.
    public static let fields = [
        ControlField("root", .string, "the person's identity: a Merkle root over their devices' keys, 64 hex digits"),
        ControlField(
            "access", .oneOf(["invited", "granted", "revoked"]),
            "`invited`: a proof from one of their devices will be accepted; `granted`: one was; `revoked`: they left the group"),
        ControlField("participant", .nullable(.string), "their group participant id, once a device proved itself"),
        ControlField("name", .nullable(.string), "their name, once known"),
    ]

    /// Invited, and granted.
    public static let examples: [CollaborationParticipantData] = [
        ControlExample.decode(#"{"root": "\#(String(repeating: "ab", count: 32))", "access": "invited", "participant": null, "name": null}"#),
        ControlExample.decode(
            #"{"root": "\#(String(repeating: "cd", count: 32))", "access": "granted", "participant": "8c1f0e4b-2a53-4c2b-9e0a-6d1f3b7a9c21", "#
                + #""name": "Bob"}"#),
    ]
}

/// A collaboration's metadata as the control API writes it (Apple's `SWCollaborationMetadata`): every member present,
/// `null` when it has no value.
public struct CollaborationMetadataInfo: Codable, Sendable, Equatable {
    /// The owner's own identifier for the document.
    public var localIdentifier: String
    /// The identifier the owner's server gave it, or null.
    @Nullable public var collaborationIdentifier: String?
    /// The document's title, or null.
    @Nullable public var title: String?
    /// Who started it (on the owner only), or null.
    @Nullable public var initiatorHandle: String?
    /// The starter's name (on the owner only), or null.
    @Nullable public var initiatorNameComponents: NameComponentsInfo?
    /// The options offered, or null.
    @Nullable public var defaultShareOptions: ShareOptionsInfo?
    /// The options picked, or null.
    @Nullable public var userSelectedShareOptions: ShareOptionsInfo?

    /// The view of `metadata`.
    public init(_ metadata: CollaborationMetadata) {
        localIdentifier = metadata.localIdentifier
        collaborationIdentifier = metadata.collaborationIdentifier
        title = metadata.title
        initiatorHandle = metadata.initiatorHandle
        initiatorNameComponents = metadata.initiatorNameComponents.map(NameComponentsInfo.init)
        defaultShareOptions = metadata.defaultShareOptions.map(ShareOptionsInfo.init)
        userSelectedShareOptions = metadata.userSelectedShareOptions.map(ShareOptionsInfo.init)
    }
}

extension CollaborationMetadataInfo: ControlShape {
    /// `collaboration metadata`.
    public static let noun = ControlNoun("collaboration metadata", plural: "collaboration metadata")

    /// The members.
    public static let fields = [
        ControlField("localIdentifier", .string, "the owner's own identifier for the document (`collaborationStart`'s `localIdentifier`)"),
        ControlField("collaborationIdentifier", .nullable(.string), "the identifier the owner's server gave it"),
        ControlField("title", .nullable(.string), "the document's title"),
        ControlField("initiatorHandle", .nullable(.string), "who started it: on the owner only (recipients never see it)"),
        ControlField("initiatorNameComponents", .nullable(.object(NameComponentsInfo.self)), "the starter's name: on the owner only"),
        ControlField("defaultShareOptions", .nullable(.object(ShareOptionsInfo.self)), "the options offered"),
        ControlField("userSelectedShareOptions", .nullable(.object(ShareOptionsInfo.self)), "the options picked"),
    ]

    /// On the owner, and as a recipient sees it.
    public static let examples = [
        CollaborationMetadataInfo(CollaborationMetadata(
            localIdentifier: "doc-42", collaborationIdentifier: "srv-9", title: "Trip plan", initiatorHandle: "sip:alice@127.0.0.1:5170",
            initiatorNameComponents: Collaboration.PersonNameComponents(givenName: "Alice"), defaultShareOptions: ShareOptionsInfo.sample,
            userSelectedShareOptions: ShareOptionsInfo.sample)),
        CollaborationMetadataInfo(CollaborationMetadata(localIdentifier: "doc-43")),
    ]
}

/// A person's name in parts (Apple's `Collaboration.PersonNameComponents`).
public struct NameComponentsInfo: Codable, Sendable, Equatable {
    /// Given name, or null.
    @Nullable public var givenName: String?
    /// Family name, or null.
    @Nullable public var familyName: String?
    /// Nickname, or null.
    @Nullable public var nickname: String?

    /// The view of `name`.
    public init(_ name: Collaboration.PersonNameComponents) {
        givenName = name.givenName
        familyName = name.familyName
        nickname = name.nickname
    }
}

extension NameComponentsInfo: ControlShape {
    /// `a name`.
    public static let noun = ControlNoun("a name", plural: "names")

    /// The members.
    public static let fields = [
        ControlField("givenName", .nullable(.string), "given name"),
        ControlField("familyName", .nullable(.string), "family name"),
        ControlField("nickname", .nullable(.string), "nickname"),
    ]

    /// Whole, and a nickname.
    public static let examples = [
        NameComponentsInfo(Collaboration.PersonNameComponents(givenName: "Alice", familyName: "Liddell")),
        NameComponentsInfo(Collaboration.PersonNameComponents(nickname: "Al")),
    ]
}

/// Share options as the control API writes them (Apple's `SWCollaborationShareOptions`).
public struct ShareOptionsInfo: Codable, Sendable, Equatable {
    /// The groups of options.
    public var optionsGroups: [OptionsGroupInfo]
    /// A sentence summing up the choice, or null.
    @Nullable public var summary: String?

    /// The view of `options`.
    public init(_ options: CollaborationShareOptions) {
        optionsGroups = options.optionsGroups.map(OptionsGroupInfo.init)
        summary = options.summary
    }

    /// A permission picker.
    static let sample = CollaborationShareOptions(
        optionsGroups: [
            CollaborationOptionsGroup(
                identifier: "permission", title: "Permission", isPicker: true,
                options: [
                    CollaborationOption(title: "Can make changes", identifier: "edit", isSelected: true),
                    CollaborationOption(title: "Read only", identifier: "read", subtitle: "Comments only"),
                ])
        ], summary: "Anyone in the call can make changes")
}

extension ShareOptionsInfo: ControlShape {
    /// `share options`.
    public static let noun = ControlNoun("share options", plural: "share options")

    /// The members.
    public static let fields = [
        ControlField("optionsGroups", .array(.object(OptionsGroupInfo.self)), "the groups of options"),
        ControlField("summary", .nullable(.string), "a sentence summing up the choice"),
    ]

    /// With and without a summary.
    public static let examples = [
        ShareOptionsInfo(sample),
        ShareOptionsInfo(CollaborationShareOptions(optionsGroups: [])),
    ]
}

/// A group of share options (Apple's `SWCollaborationOptionsGroup`; a picker when exactly one may be selected).
public struct OptionsGroupInfo: Codable, Sendable, Equatable {
    /// Unique among the groups and options.
    public var identifier: String
    /// Its title, or null.
    @Nullable public var title: String?
    /// Its footer, or null.
    @Nullable public var footer: String?
    /// Exactly one option is selected.
    public var picker: Bool
    /// Its options.
    public var options: [OptionInfo]

    /// The view of `group`.
    public init(_ group: CollaborationOptionsGroup) {
        identifier = group.identifier
        title = group.title
        footer = group.footer
        picker = group.isPicker
        options = group.options.map(OptionInfo.init)
    }
}

extension OptionsGroupInfo: ControlShape {
    /// `an options group`.
    public static let noun = ControlNoun("an options group", plural: "options groups")

    /// The members.
    public static let fields = [
        ControlField("identifier", .string, "unique among the groups and options"),
        ControlField("title", .nullable(.string), "its title"),
        ControlField("footer", .nullable(.string), "its footer"),
        ControlField("picker", .boolean, "exactly one of its options is selected"),
        ControlField("options", .array(.object(OptionInfo.self)), "its options"),
    ]

    /// A picker, and a plain group.
    public static let examples = [
        OptionsGroupInfo(ShareOptionsInfo.sample.optionsGroups[0]),
        OptionsGroupInfo(CollaborationOptionsGroup(identifier: "extras", footer: "Applies to everyone", options: [])),
    ]
}

/// One share option (Apple's `SWCollaborationOption`).
public struct OptionInfo: Codable, Sendable, Equatable {
    /// What people read.
    public var title: String
    /// Unique among the groups and options.
    public var identifier: String
    /// More words, or null.
    @Nullable public var subtitle: String?
    /// Whether it is chosen.
    public var selected: Bool
    /// Options that must be selected with it.
    public var requiredOptionsIdentifiers: [String]

    /// The view of `option`.
    public init(_ option: CollaborationOption) {
        title = option.title
        identifier = option.identifier
        subtitle = option.subtitle
        selected = option.isSelected
        requiredOptionsIdentifiers = option.requiredOptionsIdentifiers
    }
}

extension OptionInfo: ControlShape {
    /// `an option`.
    public static let noun = ControlNoun("an option", plural: "options")

    /// The members.
    public static let fields = [
        ControlField("title", .string, "what people read"),
        ControlField("identifier", .string, "unique among the groups and options"),
        ControlField("subtitle", .nullable(.string), "more words"),
        ControlField("selected", .boolean, "it is chosen"),
        ControlField("requiredOptionsIdentifiers", .array(.string), "options that must be selected with it"),
    ]

    /// Both options of the sample picker.
    public static let examples = ShareOptionsInfo.sample.optionsGroups[0].options.map(OptionInfo.init)
}

extension CollaborationData: ControlShape {
    /// `a collaboration`.
    public static let noun = ControlNoun("a collaboration", plural: "collaborations")

    /// The members.
    public static let fields = [
        ControlField("collaboration", .string, "its identifier (lower case)"),
        ControlField("url", .string, "the document's link"),
        ControlField("title", .nullable(.string), "the document's title"),
        ControlField("session", .string, "the group session it rides"),
        ControlField("isOwner", .boolean, "this parleyd started it and checks the proofs"),
        ControlField("state", .oneOf(["active", "updating", "ended"]), "`updating`: a participants update waits for its handler"),
        ControlField("verifier", .string, "the owner's SIP address, which proofs name"),
        ControlField(
            "access", .oneOf(["none", "requested", "granted", "rejected"]),
            "where this device stands: `granted` on the owner; on a recipient `none` until `collaborationOpen` asks, then `requested`, `granted` or `rejected`"),
        ControlField("rejection", .nullable(.string), "why access was rejected (a proof rejection reason), else null"),
        ControlField("metadata", .object(CollaborationMetadataInfo.self), "what the owner shared"),
        ControlField(
            "participants", .array(.object(CollaborationParticipantData.self)),
            "on the owner, the people stored against it; on a recipient, the owner (`granted`)"),
    ]

    /// On the owner, and on a rejected recipient.
    public static let examples: [CollaborationData] = [
        ControlExample.decode(
            #"{"collaboration": "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", "url": "parley://collaboration/8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", "#
                + #""title": "Trip plan", "session": "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", "isOwner": true, "state": "active", "#
                + #""verifier": "sip:alice@127.0.0.1:5170", "access": "none", "rejection": null, "metadata": "#
                + String(decoding: ControlJSON.encode(CollaborationMetadataInfo.examples[0]), as: UTF8.self)
                + #", "participants": "# + String(decoding: ControlJSON.encode(CollaborationParticipantData.examples), as: UTF8.self) + "}"),
        ControlExample.decode(
            #"{"collaboration": "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", "url": "https://docs.example.org/d/42", "title": null, "#
                + #""session": "5f0c6a1e-3b8d-4c1e-9a57-0d2b7e4c9f10", "isOwner": false, "state": "ended", "#
                + #""verifier": "sip:alice@127.0.0.1:5170", "access": "rejected", "rejection": "revoked", "metadata": "#
                + String(decoding: ControlJSON.encode(CollaborationMetadataInfo.examples[1]), as: UTF8.self) + #", "participants": []}"#),
    ]
}

extension CollaborationsResult: ControlShape {
    /// `collaborations`' result.
    public static let noun = ControlNoun("a list of collaborations", plural: "lists of collaborations")

    /// The members.
    public static let fields = [
        ControlField("collaborations", .array(.object(CollaborationData.self)), "the collaborations this parleyd owns or was shared")
    ]

    /// Two.
    public static let examples = [CollaborationsResult(collaborations: CollaborationData.examples)]
}

extension CollaborationChallenge: ControlShape {
    /// `a challenge`.
    public static let noun = ControlNoun("a challenge", plural: "challenges")

    /// The members.
    public static let fields = [
        ControlField("collaboration", .string, "the collaboration's identifier"),
        ControlField("group", .string, "the group session it is bound to"),
        ControlField("nonce", .string, "32 random bytes, 64 hex digits, good for one proof"),
        ControlField("expires", .string, "when the nonce expires, RFC 3339 UTC to the second (`2026-12-01T10:01:00Z`): part of what is signed"),
        ControlField("verifier", .string, "the owner's SIP address"),
    ]

    /// The reference's challenge.
    public static let examples = [CollaborationChallenge.example]
}

extension SignedProofJSON: ControlShape {
    /// `a signed proof`.
    public static let noun = ControlNoun("a signed proof", plural: "signed proofs")

    /// The members.
    public static let fields = [
        ControlField("publicKey", .string, "the device's P-256 key, 65-byte uncompressed point in hex"),
        ControlField("publicKeyIndex", .integer, "its leaf's index in its person's tree"),
        ControlField("inclusionHashes", .array(.string), "the siblings, bottom up, 32-byte hex each (at most 16)"),
        ControlField("signatureDER", .string, "ECDSA/SHA-256 over the statement, DER in hex"),
    ]

    /// The reference's proof.
    public static let examples = [SignedProofJSON.example]
}

extension IdentityResult: ControlShape {
    /// `identity`'s result.
    public static let noun = ControlNoun("an identity", plural: "identities")

    /// The members.
    public static let fields = [
        ControlField("publicKey", .string, "this device's P-256 key, 65-byte uncompressed point in hex"),
        ControlField("root", .string, "its person's root over every device, 64 hex digits"),
        ControlField("publicKeyIndex", .integer, "this device's leaf in the person's tree"),
        ControlField("inclusionHashes", .array(.string), "its proof of inclusion, bottom up, hex"),
        ControlField("devices", .array(.string), "every device key of the person, this one included, hex"),
    ]

    /// One device.
    public static let examples: [IdentityResult] = [
        ControlExample.decode(
            #"{"publicKey": "04\#(String(repeating: "11", count: 64))", "root": "\#(String(repeating: "ab", count: 32))", "#
                + #""publicKeyIndex": 0, "inclusionHashes": [], "devices": ["04\#(String(repeating: "11", count: 64))"]}"#)
    ]
}

extension CollaborationGranted: ControlShape {
    /// `collaborationVerify`'s result.
    public static let noun = ControlNoun("a granted proof", plural: "granted proofs")

    /// The members.
    public static let fields = [
        ControlField("collaboration", .string, "the collaboration's identifier"),
        ControlField("root", .string, "the person root the proof was bound to"),
    ]

    /// Granted.
    public static let examples = [CollaborationGranted(collaboration: "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", root: String(repeating: "ab", count: 32))]
}

extension CollaborationConfirmed: ControlShape {
    /// `collaborationConfirm`'s result.
    public static let noun = ControlNoun("a confirmation", plural: "confirmations")

    /// The members.
    public static let fields = [
        ControlField("action", .string, "the update's action id"),
        ControlField("accepted", .boolean, "what was answered"),
    ]

    /// Accepted.
    public static let examples = [CollaborationConfirmed(action: "action-3", accepted: true)]
}

extension CollaborationPosted: ControlShape {
    /// `collaborationNotice`'s result.
    public static let noun = ControlNoun("a posted notice", plural: "posted notices")

    /// The members.
    public static let fields = [
        ControlField("collaboration", .string, "the collaboration's identifier"),
        ControlField("posted", .boolean, "always true"),
    ]

    /// Posted.
    public static let examples = [CollaborationPosted(collaboration: "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", posted: true)]
}

extension CollaborationEnded: ControlShape {
    /// `collaborationEnd`'s result.
    public static let noun = ControlNoun("an ended collaboration", plural: "ended collaborations")

    /// The members.
    public static let fields = [
        ControlField("collaboration", .string, "the collaboration's identifier"),
        ControlField("state", .oneOf(["ended"]), "always `ended`"),
    ]

    /// Ended.
    public static let examples = [CollaborationEnded(collaboration: "8d3c2a10-5e1f-4b7a-9c3d-2f6e8a1b4c5d", state: "ended")]
}

extension IdentityUpdateProof: ControlShape {
    /// `identityUpdateProve`'s result.
    public static let noun = ControlNoun("an identity update proof", plural: "identity update proofs")

    /// The members.
    public static let fields = [
        ControlField("oldRoot", .string, "the person's root before the change"),
        ControlField("newRoot", .string, "the person's root with the new device set"),
        ControlField("proof", .object(SignedProofJSON.self), "this old device's proof against the old root: hand it to the owner's `collaborationReplaceIdentity`"),
    ]

    /// One update.
    public static let examples = [
        IdentityUpdateProof(oldRoot: String(repeating: "aa", count: 32), newRoot: String(repeating: "bb", count: 32), proof: .example)
    ]
}
