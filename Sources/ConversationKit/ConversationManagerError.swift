import Foundation

/// Why the manager refused a request. Nothing of a refused request was applied.
public enum ConversationManagerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `perform([])`.
    case emptyTransaction
    /// No live conversation has this uuid.
    case unknownConversation(UUID)
    /// The conversation has already ended (it is `left`).
    case conversationEnded(UUID)
    /// A conversation with this uuid already exists (Start or incoming report).
    case conversationAlreadyExists(UUID)
    /// Two actions with the same uuid, or an action uuid that is already pending.
    case duplicateActionUUID(UUID)
    /// This action object was performed before; actions are single-use.
    case actionAlreadyPerformed(UUID)
    /// The lifecycle refuses the input in the conversation's current state.
    case illegalTransition(LifecycleRejection)
    /// The conversation lacks a capability the action needs.
    case missingCapability(conversation: UUID, capability: Conversation.Capabilities)
    /// A handle's kind is not in `configuration.supportedHandleTypes`.
    case unsupportedHandleKind(Handle.Kind)
    /// Video was asked for but `configuration.supportsVideo` is false.
    case videoNotSupported
    /// A Start action without handles.
    case noHandles
    /// An action of the same kind is already pending on the conversation.
    case actionAlreadyPending(conversation: UUID, verb: ActionVerb)
    /// Merging would create more groups than `maximumConversationGroups`.
    case maximumConversationGroupsReached(limit: Int)
    /// Merging would put more conversations in a group than `maximumConversationsPerConversationGroup`.
    case maximumConversationsPerGroupReached(limit: Int)
    /// A conversation cannot merge with itself.
    case cannotMergeWithItself(UUID)
    /// The two conversations are already in the same group.
    case alreadyInSameGroup(UUID, UUID)
    /// Unmerge of a conversation that is in no group.
    case notInGroup(UUID)
    /// Tone digits are empty or hold characters other than 0-9 * # A-D , ;.
    case invalidToneDigits(String)
    /// An action's timeout date is not in the future (or is not a number).
    case invalidTimeoutDate(UUID, Date)
    /// The configuration cannot be used; the strings say why.
    case invalidConfiguration([String])
    /// The manager was invalidated; it accepts nothing more.
    case managerInvalidated

    /// A stable name for the error, used in scenario files and the control API.
    public var code: String {
        switch self {
        case .emptyTransaction: "emptyTransaction"
        case .unknownConversation: "unknownConversation"
        case .conversationEnded: "conversationEnded"
        case .conversationAlreadyExists: "conversationAlreadyExists"
        case .duplicateActionUUID: "duplicateActionUUID"
        case .actionAlreadyPerformed: "actionAlreadyPerformed"
        case .illegalTransition: "illegalTransition"
        case .missingCapability: "missingCapability"
        case .unsupportedHandleKind: "unsupportedHandleKind"
        case .videoNotSupported: "videoNotSupported"
        case .noHandles: "noHandles"
        case .actionAlreadyPending: "actionAlreadyPending"
        case .maximumConversationGroupsReached: "maximumConversationGroupsReached"
        case .maximumConversationsPerGroupReached: "maximumConversationsPerGroupReached"
        case .cannotMergeWithItself: "cannotMergeWithItself"
        case .alreadyInSameGroup: "alreadyInSameGroup"
        case .notInGroup: "notInGroup"
        case .invalidToneDigits: "invalidToneDigits"
        case .invalidTimeoutDate: "invalidTimeoutDate"
        case .invalidConfiguration: "invalidConfiguration"
        case .managerInvalidated: "managerInvalidated"
        }
    }

    /// The error in words.
    public var description: String {
        switch self {
        case .emptyTransaction: "no actions to perform"
        case .unknownConversation(let uuid): "no conversation \(uuid)"
        case .conversationEnded(let uuid): "conversation \(uuid) has already ended"
        case .conversationAlreadyExists(let uuid): "conversation \(uuid) already exists"
        case .duplicateActionUUID(let uuid): "action \(uuid) is already pending or appears twice"
        case .actionAlreadyPerformed(let uuid): "action \(uuid) was performed before; create a new action"
        case .illegalTransition(let rejection): "illegal transition: \(rejection)"
        case .missingCapability(let uuid, let capability):
            "conversation \(uuid) lacks the capability \(capability)"
        case .unsupportedHandleKind(let kind): "handle kind \(kind) is not in supportedHandleTypes"
        case .videoNotSupported: "video was requested but the configuration does not support video"
        case .noHandles: "a Start action needs at least one handle"
        case .actionAlreadyPending(let uuid, let verb): "a \(verb) action is already pending on \(uuid)"
        case .maximumConversationGroupsReached(let limit): "at most \(limit) conversation groups may exist"
        case .maximumConversationsPerGroupReached(let limit): "a group holds at most \(limit) conversations"
        case .cannotMergeWithItself(let uuid): "conversation \(uuid) cannot merge with itself"
        case .alreadyInSameGroup(let a, let b): "conversations \(a) and \(b) are already in the same group"
        case .notInGroup(let uuid): "conversation \(uuid) is not in a group"
        case .invalidToneDigits(let digits):
            "tone digits '\(digits)' must be non-empty and use only 0-9 * # A-D , ;"
        case .invalidTimeoutDate(let uuid, let date): "action \(uuid) has a timeout date that is not in the future (\(date))"
        case .invalidConfiguration(let problems): "invalid configuration: " + problems.joined(separator: "; ")
        case .managerInvalidated: "the manager was invalidated"
        }
    }
}
