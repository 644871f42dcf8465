import ConversationKit
import Foundation

extension ScenarioParser {
    // MARK: Configuration

    static let configurationKeys = [
        "maximumConversationGroups", "maximumConversationsPerConversationGroup", "supportsVideo",
        "supportedHandleTypes", "defaultActionTimeout", "defaultCapabilities", "includesConversationInRecents",
        "ringtoneName",
    ]

    static func configuration(_ node: Node) throws(ScenarioError) -> ConversationManager.Configuration {
        let object = try node.object("the configuration", allowed: configurationKeys)
        var configuration = ConversationManager.Configuration()
        if let value = object.optional("maximumConversationGroups") {
            configuration.maximumConversationGroups = try value.integer()
        }
        if let value = object.optional("maximumConversationsPerConversationGroup") {
            configuration.maximumConversationsPerConversationGroup = try value.integer()
        }
        if let value = object.optional("supportsVideo") { configuration.supportsVideo = try value.bool() }
        if let value = object.optional("supportedHandleTypes") {
            var kinds: Set<Handle.Kind> = []
            for element in try value.elements() { kinds.insert(try handleKind(element)) }
            configuration.supportedHandleTypes = kinds
        }
        if let value = object.optional("defaultActionTimeout") { configuration.defaultActionTimeout = try value.number() }
        if let value = object.optional("defaultCapabilities") { configuration.defaultCapabilities = try capabilities(value) }
        if let value = object.optional("includesConversationInRecents") {
            configuration.includesConversationInRecents = try value.bool()
        }
        if let value = object.optional("ringtoneName") { configuration.ringtoneName = try value.string() }
        let problems = configuration.problems
        guard problems.isEmpty else {
            throw node.error("the manager would refuse this configuration: " + problems.joined(separator: "; "))
        }
        return configuration
    }

    // MARK: Values

    static func handleKind(_ node: Node) throws(ScenarioError) -> Handle.Kind {
        let name = try node.string()
        guard let kind = Handle.Kind(name: name) else {
            let names = Handle.Kind.allCases.map(\.description)
            throw node.error(unknownMessage("handle kind '\(name)'", key: name, expected: names))
        }
        return kind
    }

    static func handle(_ node: Node) throws(ScenarioError) -> Handle {
        let object = try node.object("a handle", allowed: ["kind", "value", "displayName"])
        return Handle(
            kind: try handleKind(object.required("kind")), value: try object.required("value").string(),
            displayName: try object.optional("displayName")?.string())
    }

    static func handles(_ node: Node) throws(ScenarioError) -> Set<Handle> {
        var handles: Set<Handle> = []
        for element in try node.elements() { handles.insert(try handle(element)) }
        return handles
    }

    static func capabilities(_ node: Node) throws(ScenarioError) -> Conversation.Capabilities {
        var capabilities: Conversation.Capabilities = []
        for element in try node.elements() {
            let name = try element.string()
            guard let capability = Conversation.Capabilities(name: name) else {
                let names = Conversation.Capabilities.named.map(\.name)
                throw element.error(unknownMessage("capability '\(name)'", key: name, expected: names))
            }
            capabilities.insert(capability)
        }
        return capabilities
    }

    /// The update fields of a reportIncoming or updated event object.
    static func update(_ object: ObjectNode) throws(ScenarioError) -> Conversation.Update {
        Conversation.Update(
            localMember: try object.optional("localMember").map(handle),
            members: try object.optional("members").map(handles),
            activeRemoteMembers: try object.optional("activeRemoteMembers").map(handles),
            capabilities: try object.optional("capabilities").map(capabilities))
    }

    static func tone(_ node: Node) throws(ScenarioError) -> ConversationAction.Tone {
        let name = try node.string()
        let tones: [(String, ConversationAction.Tone)] = [("single", .single), ("softPause", .softPause), ("hardPause", .hardPause)]
        guard let tone = tones.first(where: { $0.0 == name })?.1 else {
            throw node.error(unknownMessage("tone '\(name)'", key: name, expected: tones.map(\.0)))
        }
        return tone
    }

    static func endedReason(_ node: Node) throws(ScenarioError) -> Conversation.EndedReason {
        let name = try node.string()
        guard let reason = Conversation.EndedReason(rawValue: name) else {
            let names = Conversation.EndedReason.allCases.map(\.rawValue)
            throw node.error(unknownMessage("ended reason '\(name)'", key: name, expected: names))
        }
        return reason
    }

    // MARK: Expectations

    mutating func expectation(_ node: Node, for operation: ScenarioOperation) throws(ScenarioError) -> ScenarioExpectation {
        let object = try node.object("expect", allowed: ScenarioExpectation.keys)
        var expectation = ScenarioExpectation()
        if let errorNode = object.optional("error") {
            let code = try errorNode.string()
            guard KnownErrorCodes.all.contains(code) else {
                throw errorNode.error(unknownMessage("error code '\(code)'", key: code, expected: KnownErrorCodes.all))
            }
            guard operation.canThrow else {
                throw errorNode.error(
                    "a \(operation.name) step never throws; 'error' applies to reportIncoming, perform and event steps")
            }
            expectation.error = code
        }
        if let states = object.optional("states") {
            for (name, value) in try Self.map(states) {
                let text = try value.string()
                guard let state = ExpectedState(name: text) else {
                    throw value.error(unknownMessage("state '\(text)'", key: text, expected: ExpectedState.names))
                }
                expectation.states[name] = state
            }
        }
        if let reasons = object.optional("endedReasons") {
            for (name, value) in try Self.map(reasons) {
                let text = try value.string()
                guard let reason = ExpectedEndedReason(name: text) else {
                    throw value.error(unknownMessage("ended reason '\(text)'", key: text, expected: ExpectedEndedReason.names))
                }
                expectation.endedReasons[name] = reason
            }
        }
        if let actions = object.optional("actions") {
            for (id, value) in try Self.map(actions) {
                _ = try reference(Node(value: .string(id), path: value.path, source: value.source))
                let text = try value.string()
                guard let state = ExpectedActionState(name: text) else {
                    throw value.error(unknownMessage("action state '\(text)'", key: text, expected: ExpectedActionState.names))
                }
                expectation.actions[id] = state
            }
        }
        if let muted = object.optional("muted") {
            for (name, value) in try Self.map(muted) { expectation.muted[name] = try value.bool() }
        }
        if let groups = object.optional("groups") {
            var result: [[String]] = []
            for groupNode in try groups.elements() {
                var names: [String] = []
                for nameNode in try groupNode.elements() {
                    let name = try nameNode.name("a conversation name")
                    guard !names.contains(name) else { throw nameNode.error("'\(name)' appears twice in the group") }
                    names.append(name)
                }
                guard names.count >= 2 else { throw groupNode.error("a group holds at least two conversations") }
                result.append(names)
            }
            expectation.groups = result
        }
        expectation.conversations = try object.optional("conversations")?.nonNegativeInteger()
        expectation.pendingActions = try object.optional("pendingActions")?.nonNegativeInteger()
        if let callbacks = object.optional("callbacks") {
            var result: [String] = []
            for element in try callbacks.elements() {
                let text = try element.string()
                guard CallbackPattern.isValid(text) else {
                    throw element.error("unknown callback '\(text)' (expected one of the forms: \(CallbackPattern.forms))")
                }
                result.append(text)
            }
            expectation.callbacks = result
        }
        return expectation
    }

    /// The members of a name → value map such as `expect.states`.
    private static func map(_ node: Node) throws(ScenarioError) -> [(String, Node)] {
        let object = try node.anyObject("a map from names to values")
        var result: [(String, Node)] = []
        for (key, value) in object.nodes {
            guard !key.isEmpty else { throw value.error("a name must not be empty") }
            result.append((key, value))
        }
        return result
    }
}

/// The shapes of callback strings in `expect.callbacks`.
enum CallbackPattern {
    static let forms =
        "changed NAME STATE, perform ACTION NAME, timedOut ACTION NAME, activate NAME, deactivate NAME, reset, begin"

    static func isValid(_ text: String) -> Bool {
        if text == "begin" || text == "reset" { return true }
        let words = text.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard words.count >= 2, !words.contains(where: \.isEmpty) else { return false }
        switch words[0] {
        case "changed": return words.count >= 3 && Conversation.State(rawValue: words[words.count - 1]) != nil
        case "perform", "timedOut": return words.count >= 3 && ScenarioAction.Kind.names.contains(words[1])
        case "activate", "deactivate": return true
        default: return false
        }
    }
}

/// Every ``ConversationManagerError/code``, for checking `expect.error` while parsing.
enum KnownErrorCodes {
    static let all: [String] = samples.map(\.code)

    private static let samples: [ConversationManagerError] = {
        let uuid = UUID(uuidString: "00000000-0000-0000-0000-000000000000")!
        var rejection: LifecycleRejection?
        do throws(LifecycleRejection) { _ = try ConversationLifecycle(direction: .incoming, state: .left).peek(.connected) } catch { rejection = error }
        var samples: [ConversationManagerError] = [
            .emptyTransaction, .unknownConversation(uuid), .conversationEnded(uuid), .conversationAlreadyExists(uuid),
            .duplicateActionUUID(uuid), .actionAlreadyPerformed(uuid),
        ]
        if let rejection { samples.append(.illegalTransition(rejection)) }
        samples += [
            .missingCapability(conversation: uuid, capability: .pausing), .unsupportedHandleKind(.generic),
            .videoNotSupported, .noHandles, .actionAlreadyPending(conversation: uuid, verb: .join),
            .maximumConversationGroupsReached(limit: 0), .maximumConversationsPerGroupReached(limit: 0),
            .cannotMergeWithItself(uuid), .alreadyInSameGroup(uuid, uuid), .notInGroup(uuid),
            .invalidToneDigits(""), .invalidTimeoutDate(uuid, .distantPast), .invalidConfiguration([]),
            .managerInvalidated,
        ]
        return samples
    }()

    /// Does not compile when ConversationManagerError gains a case: add a sample for it above.
    private static func coverage(_ error: ConversationManagerError) {
        switch error {
        case .emptyTransaction, .unknownConversation, .conversationEnded, .conversationAlreadyExists,
            .duplicateActionUUID, .actionAlreadyPerformed, .illegalTransition, .missingCapability,
            .unsupportedHandleKind, .videoNotSupported, .noHandles, .actionAlreadyPending,
            .maximumConversationGroupsReached, .maximumConversationsPerGroupReached, .cannotMergeWithItself,
            .alreadyInSameGroup, .notInGroup, .invalidToneDigits, .invalidTimeoutDate, .invalidConfiguration,
            .managerInvalidated:
            break
        }
    }
}
