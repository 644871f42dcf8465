/// A collaboration as the conversation shows it (Apple's `SWCollaborationHighlight`): found by URL or identifier.
public struct CollaborationHighlight: Sendable, Hashable, Codable {
    /// The collaboration's device-independent identifier.
    public let identifier: String
    /// Its link.
    public let url: String
    /// Its title.
    public let title: String?
    /// The group session it is bound to.
    public let session: String

    public init(identifier: String, url: String, title: String?, session: String) {
        self.identifier = identifier
        self.url = url
        self.title = title
        self.session = session
    }
}

/// A notice about a collaboration, posted into its conversation (Apple's `SWHighlightEvent` subclasses). The raw
/// values of the triggers are Apple's.
public enum HighlightEvent: Sendable, Hashable {
    /// Someone changed the content.
    case change(ChangeTrigger)
    /// Someone mentioned this person: shown to them alone.
    case mention(PersonIdentity)
    /// The document was created, deleted, renamed or moved.
    case persistence(PersistenceTrigger)
    /// A collaborator was added or removed.
    case membership(MembershipTrigger)

    /// `SWHighlightChangeEvent.Trigger`.
    public enum ChangeTrigger: String, Sendable, Hashable, Codable, CaseIterable {
        /// Content edited.
        case edit
        /// A comment added.
        case comment
    }

    /// `SWHighlightPersistenceEvent.Trigger` (1…4).
    public enum PersistenceTrigger: String, Sendable, Hashable, Codable, CaseIterable {
        /// Created.
        case created
        /// Deleted.
        case deleted
        /// Renamed.
        case renamed
        /// Moved.
        case moved
    }

    /// `SWHighlightMembershipEvent.Trigger` (1, 2).
    public enum MembershipTrigger: String, Sendable, Hashable, Codable, CaseIterable {
        /// A collaborator gained access.
        case addedCollaborator
        /// A collaborator lost access.
        case removedCollaborator
    }

    /// The event's kind on the wire and in the control API: `change`, `mention`, `persistence`, `membership`.
    public var kind: String {
        switch self {
        case .change: "change"
        case .mention: "mention"
        case .persistence: "persistence"
        case .membership: "membership"
        }
    }

    /// The trigger's name (`edit`, `renamed`, …), or the mentioned root for a mention.
    public var trigger: String {
        switch self {
        case .change(let trigger): trigger.rawValue
        case .mention(let person): person.hex
        case .persistence(let trigger): trigger.rawValue
        case .membership(let trigger): trigger.rawValue
        }
    }

    /// The event a kind and trigger (or mentioned root) name; nil when they name none.
    public init?(kind: String, trigger: String) {
        switch kind {
        case "change": guard let value = ChangeTrigger(rawValue: trigger) else { return nil }; self = .change(value)
        case "mention": guard let person = PersonIdentity(hex: trigger) else { return nil }; self = .mention(person)
        case "persistence": guard let value = PersistenceTrigger(rawValue: trigger) else { return nil }; self = .persistence(value)
        case "membership": guard let value = MembershipTrigger(rawValue: trigger) else { return nil }; self = .membership(value)
        default: return nil
        }
    }
}

/// A notice as it reached this node.
public struct CollaborationNotice: Sendable, Hashable {
    /// The collaboration it is about.
    public let highlight: CollaborationHighlight
    public let event: HighlightEvent
    /// The group participant who posted it (this node's own id for its own notices).
    public let from: String
    /// Their name, as their node sent it when joining.
    public let fromName: String

    public init(highlight: CollaborationHighlight, event: HighlightEvent, from: String, fromName: String) {
        self.highlight = highlight
        self.event = event
        self.from = from
        self.fromName = fromName
    }
}
