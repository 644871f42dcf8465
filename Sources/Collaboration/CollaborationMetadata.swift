/// What the initiator shares (Apple's `SWCollaborationMetadata`): a title, who started it, and the share options
/// the recipients are offered. `collaborationIdentifier` is nil until the start action is fulfilled.
public struct CollaborationMetadata: Sendable, Hashable, Codable {
    /// Unique on this device only, set before the collaboration exists.
    public var localIdentifier: String
    /// The device-independent identifier the start action's handler assigns.
    public var collaborationIdentifier: String?
    /// The document's title.
    public var title: String?
    /// The initiator's handle (a SIP address); not sent to recipients.
    public var initiatorHandle: String?
    /// The initiator's name; not sent to recipients.
    public var initiatorNameComponents: PersonNameComponents?
    /// The options the app offers.
    public var defaultShareOptions: CollaborationShareOptions?
    /// The options the initiator picked.
    public var userSelectedShareOptions: CollaborationShareOptions?

    public init(
        localIdentifier: String, collaborationIdentifier: String? = nil, title: String? = nil, initiatorHandle: String? = nil,
        initiatorNameComponents: PersonNameComponents? = nil, defaultShareOptions: CollaborationShareOptions? = nil,
        userSelectedShareOptions: CollaborationShareOptions? = nil
    ) {
        self.localIdentifier = localIdentifier
        self.collaborationIdentifier = collaborationIdentifier
        self.title = title
        self.initiatorHandle = initiatorHandle
        self.initiatorNameComponents = initiatorNameComponents
        self.defaultShareOptions = defaultShareOptions
        self.userSelectedShareOptions = userSelectedShareOptions
    }

    /// The options in force: the user's pick, else the defaults.
    public var shareOptions: CollaborationShareOptions? { userSelectedShareOptions ?? defaultShareOptions }

    /// The first rule the metadata breaks, if any (both option sets are checked).
    public func validate() -> CollaborationError? {
        guard !localIdentifier.isEmpty, localIdentifier.utf8.count <= 200 else {
            return .invalidMetadata("localIdentifier must hold 1 to 200 bytes")
        }
        if let title, title.utf8.count > 500 { return .invalidMetadata("title is longer than 500 bytes") }
        for options in [defaultShareOptions, userSelectedShareOptions].compactMap({ $0 }) {
            if let error = options.validate() { return error }
        }
        return nil
    }

    /// What recipients are told: the handle and name stay with the initiator, as on Apple's platforms.
    public var forRecipients: CollaborationMetadata {
        var shared = self
        shared.initiatorHandle = nil
        shared.initiatorNameComponents = nil
        return shared
    }
}

/// A person's name in parts (Foundation's `PersonNameComponents`, reduced to what a share shows).
public struct PersonNameComponents: Sendable, Hashable, Codable {
    /// Given name.
    public var givenName: String?
    /// Family name.
    public var familyName: String?
    /// Nickname.
    public var nickname: String?

    public init(givenName: String? = nil, familyName: String? = nil, nickname: String? = nil) {
        self.givenName = givenName
        self.familyName = familyName
        self.nickname = nickname
    }
}

/// The groups of options a share offers (Apple's `SWCollaborationShareOptions`).
public struct CollaborationShareOptions: Sendable, Hashable, Codable {
    /// The groups, in display order.
    public var optionsGroups: [CollaborationOptionsGroup]
    /// A one-line summary ("Anyone with the link can edit").
    public var summary: String?

    public init(optionsGroups: [CollaborationOptionsGroup], summary: String? = nil) {
        self.optionsGroups = optionsGroups
        self.summary = summary
    }

    /// The first rule broken: identifiers unique, a picker has exactly one selected option, a selected option's
    /// required options are selected too, at most 32 groups of 32 options.
    public func validate() -> CollaborationError? {
        guard optionsGroups.count <= 32 else { return .invalidMetadata("more than 32 option groups") }
        var identifiers = Set<String>()
        var selected = Set<String>()
        for group in optionsGroups {
            guard !group.identifier.isEmpty, identifiers.insert(group.identifier).inserted else {
                return .invalidMetadata("option group identifier '\(group.identifier)' is empty or repeated")
            }
            guard group.options.count <= 32 else { return .invalidMetadata("group '\(group.identifier)' has more than 32 options") }
            for option in group.options {
                guard !option.identifier.isEmpty, identifiers.insert(option.identifier).inserted else {
                    return .invalidMetadata("option identifier '\(option.identifier)' is empty or repeated")
                }
                if option.isSelected { selected.insert(option.identifier) }
            }
            if group.isPicker {
                let count = group.options.count { $0.isSelected }
                guard count == 1 else {
                    return .invalidMetadata("picker group '\(group.identifier)' has \(count) selected options (exactly one must be)")
                }
            }
        }
        for group in optionsGroups {
            for option in group.options where option.isSelected {
                if let missing = option.requiredOptionsIdentifiers.first(where: { !selected.contains($0) }) {
                    return .invalidMetadata("option '\(option.identifier)' requires '\(missing)', which is not selected")
                }
            }
        }
        return nil
    }

    /// Whether the option with this identifier is selected.
    public func isSelected(_ identifier: String) -> Bool {
        optionsGroups.contains { $0.options.contains { $0.identifier == identifier && $0.isSelected } }
    }
}

/// A group of options: independent switches (Apple's `SWCollaborationOptionsGroup`), or, as a picker, exactly one
/// choice (`SWCollaborationOptionsPickerGroup`).
public struct CollaborationOptionsGroup: Sendable, Hashable, Codable {
    /// Unique among the share's groups and options.
    public var identifier: String
    /// The group's heading.
    public var title: String?
    /// Text under the group.
    public var footer: String?
    /// Exactly one option selected when true; any number when false.
    public var isPicker: Bool
    /// The options, in display order.
    public var options: [CollaborationOption]

    public init(identifier: String, title: String? = nil, footer: String? = nil, isPicker: Bool = false, options: [CollaborationOption]) {
        self.identifier = identifier
        self.title = title
        self.footer = footer
        self.isPicker = isPicker
        self.options = options
    }

    enum CodingKeys: String, CodingKey { case identifier, title, footer, isPicker = "picker", options }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        identifier = try container.decode(String.self, forKey: .identifier)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        footer = try container.decodeIfPresent(String.self, forKey: .footer)
        isPicker = try container.decodeIfPresent(Bool.self, forKey: .isPicker) ?? false
        options = try container.decode([CollaborationOption].self, forKey: .options)
    }
}

/// One option (Apple's `SWCollaborationOption`).
public struct CollaborationOption: Sendable, Hashable, Codable {
    /// What the option reads.
    public var title: String
    /// Unique among the share's groups and options.
    public var identifier: String
    /// A second line.
    public var subtitle: String?
    /// Whether it is on (picked).
    public var isSelected: Bool
    /// Options that must be selected for this one to be.
    public var requiredOptionsIdentifiers: [String]

    public init(title: String, identifier: String, subtitle: String? = nil, isSelected: Bool = false, requiredOptionsIdentifiers: [String] = []) {
        self.title = title
        self.identifier = identifier
        self.subtitle = subtitle
        self.isSelected = isSelected
        self.requiredOptionsIdentifiers = requiredOptionsIdentifiers
    }

    enum CodingKeys: String, CodingKey { case title, identifier, subtitle, isSelected = "selected", requiredOptionsIdentifiers }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        title = try container.decode(String.self, forKey: .title)
        identifier = try container.decode(String.self, forKey: .identifier)
        subtitle = try container.decodeIfPresent(String.self, forKey: .subtitle)
        isSelected = try container.decodeIfPresent(Bool.self, forKey: .isSelected) ?? false
        requiredOptionsIdentifiers = try container.decodeIfPresent([String].self, forKey: .requiredOptionsIdentifiers) ?? []
    }
}
