import Foundation

extension ConversationManager {
    /// How a manager behaves. Mirrors LiveCommunicationKit's configuration, with CallKit's defaults where LCK
    /// has none (2 groups, 5 conversations per group, recents on, no video), plus Parley's own knobs.
    public struct Configuration: Sendable, Hashable {
        /// A ringtone resource name for incoming conversations (nil: the frontend's default).
        public var ringtoneName: String?
        /// A PNG icon for system UI.
        public var iconTemplateImageData: Data?
        /// How many conversation groups may exist at once (a merge forms a group).
        public var maximumConversationGroups: Int
        /// How many conversations one group may hold.
        public var maximumConversationsPerConversationGroup: Int
        /// Whether ended conversations go to the call history.
        public var includesConversationInRecents: Bool
        /// Whether video conversations are allowed.
        public var supportsVideo: Bool
        /// Which handle kinds are accepted in reports and Start actions.
        public var supportedHandleTypes: Set<Handle.Kind>
        /// Parley: how long an action may run before it times out, when it has no timeout date of its own.
        public var defaultActionTimeout: TimeInterval
        /// Parley: capabilities a conversation gets when its report or Start does not say.
        public var defaultCapabilities: Conversation.Capabilities
        /// Parley: how handles are normalised for matching (default country code…).
        public var handleNormalizer: HandleNormalizer

        /// Creates a configuration; every parameter has CallKit's default or Parley's.
        public init(
            ringtoneName: String? = nil,
            iconTemplateImageData: Data? = nil,
            maximumConversationGroups: Int = 2,
            maximumConversationsPerConversationGroup: Int = 5,
            includesConversationInRecents: Bool = true,
            supportsVideo: Bool = false,
            supportedHandleTypes: Set<Handle.Kind> = Set(Handle.Kind.allCases),
            defaultActionTimeout: TimeInterval = 30,
            defaultCapabilities: Conversation.Capabilities = .audioCall,
            handleNormalizer: HandleNormalizer = .northAmerica
        ) {
            self.ringtoneName = ringtoneName
            self.iconTemplateImageData = iconTemplateImageData
            self.maximumConversationGroups = maximumConversationGroups
            self.maximumConversationsPerConversationGroup = maximumConversationsPerConversationGroup
            self.includesConversationInRecents = includesConversationInRecents
            self.supportsVideo = supportsVideo
            self.supportedHandleTypes = supportedHandleTypes
            self.defaultActionTimeout = defaultActionTimeout
            self.defaultCapabilities = defaultCapabilities
            self.handleNormalizer = handleNormalizer
        }

        /// The problems with this configuration, in words; empty when it is usable.
        public var problems: [String] {
            var problems: [String] = []
            if maximumConversationGroups < 0 {
                problems.append("maximumConversationGroups must be 0 or more (got \(maximumConversationGroups))")
            }
            if maximumConversationsPerConversationGroup < 2 && maximumConversationGroups > 0 {
                problems.append(
                    "maximumConversationsPerConversationGroup must be at least 2 when groups are allowed "
                        + "(got \(maximumConversationsPerConversationGroup))")
            }
            if supportedHandleTypes.isEmpty { problems.append("supportedHandleTypes must not be empty") }
            if !(defaultActionTimeout > 0) || !defaultActionTimeout.isFinite {
                problems.append("defaultActionTimeout must be a positive number of seconds (got \(defaultActionTimeout))")
            }
            if defaultCapabilities.contains(.video) && !supportsVideo {
                problems.append("defaultCapabilities include video but supportsVideo is false")
            }
            return problems
        }
    }
}
