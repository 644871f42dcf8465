import ConversationKit
import Foundation

/// Turns a JSON document into a ``Scenario``, checking everything that can be checked before running: known
/// keys and names, value types, and that every action id a step refers to was defined by an earlier step.
struct ScenarioParser {
    /// Action ids defined so far, with the path of the action that defined each.
    private var actionIDs: [String: String] = [:]
    /// Ids in definition order, for messages.
    private var actionIDOrder: [String] = []

    static func scenario(from node: Node) throws(ScenarioError) -> Scenario {
        var parser = ScenarioParser()
        return try parser.scenario(node)
    }

    private mutating func scenario(_ node: Node) throws(ScenarioError) -> Scenario {
        let object = try node.object("a scenario", allowed: Scenario.keys)
        let name = try object.required("name").name("the scenario name")
        let description = try object.optional("description")?.string()
        let configuration = try object.optional("configuration").map { node throws(ScenarioError) in
            try Self.configuration(node)
        } ?? ConversationManager.Configuration()
        let stepsNode = try object.required("steps")
        let stepNodes = try stepsNode.elements()
        guard !stepNodes.isEmpty else { throw stepsNode.error("a scenario needs at least one step") }
        var steps: [ScenarioStep] = []
        for stepNode in stepNodes { steps.append(try step(stepNode)) }
        return Scenario(name: name, description: description, configuration: configuration, steps: steps)
    }

    // MARK: Steps

    private static let stepExtras = ["expect", "comment"]

    private mutating func step(_ node: Node) throws(ScenarioError) -> ScenarioStep {
        let object = try node.anyObject("a step")
        // In the order of `ScenarioOperation.names`, not of the keys, so messages read the same however keys sort.
        let operations = ScenarioOperation.names.filter(object.keys.contains)
        for key in object.keys where !ScenarioOperation.names.contains(key) && !Self.stepExtras.contains(key) {
            if key == "reason", operations == ["fail"] { continue }
            if let operation = operations.first {
                let allowed = [operation] + Self.stepExtras + (operation == "fail" ? ["reason"] : [])
                if key == "reason" {
                    throw node.error("'reason' belongs to a fail step, not to a \(operation) step")
                }
                throw node.error(unknownMessage("key '\(key)' in a \(operation) step", key: key, expected: allowed))
            }
            throw node.error(unknownMessage("step '\(key)'", key: key, expected: ScenarioOperation.names))
        }
        guard operations.count == 1 else {
            if operations.isEmpty {
                throw node.error(
                    "the step has no operation (expected one of: \(ScenarioOperation.names.joined(separator: ", ")))")
            }
            throw node.error(
                "a step holds exactly one operation, found \(operations.count): \(operations.joined(separator: ", "))")
        }
        let operation = try self.operation(operations[0], in: object)
        let expectation = try object.optional("expect").map { node throws(ScenarioError) in
            try self.expectation(node, for: operation)
        } ?? ScenarioExpectation()
        let comment = try object.optional("comment")?.string()
        return ScenarioStep(operation: operation, expectation: expectation, comment: comment)
    }

    private mutating func operation(_ name: String, in step: ObjectNode) throws(ScenarioError) -> ScenarioOperation {
        let node = try step.required(name)
        switch name {
        case "reportIncoming":
            let object = try node.object(
                "reportIncoming", allowed: ["conversation", "members", "activeRemoteMembers", "localMember", "capabilities"])
            let conversation = try object.required("conversation").name("a conversation name")
            return .reportIncoming(conversation: conversation, update: try Self.update(object))
        case "perform":
            var requests: [ScenarioActionRequest] = []
            for element in try node.elements() { requests.append(try actionRequest(element)) }
            return .perform(requests)
        case "fulfill":
            if case .string = node.value { return .fulfill(actionID: try reference(node), counted: true) }
            let object = try node.object("a fulfill operation", allowed: ["id", "counted"])
            let id = try reference(object.required("id"))
            return .fulfill(actionID: id, counted: try object.optional("counted")?.bool() ?? true)
        case "fail":
            let sibling = try step.optional("reason")?.string()
            if case .string = node.value {
                return .fail(actionID: try reference(node), reason: sibling ?? "failed", counted: true)
            }
            let object = try node.object("a fail operation", allowed: ["id", "reason", "counted"])
            let id = try reference(object.required("id"))
            if sibling != nil, object.optional("reason") != nil {
                throw node.error("the reason is given twice (inside 'fail' and next to it)")
            }
            let reason = try object.optional("reason")?.string() ?? sibling ?? "failed"
            return .fail(actionID: id, reason: reason, counted: try object.optional("counted")?.bool() ?? true)
        case "event":
            return try event(node)
        case "advanceClock":
            let seconds = try node.number()
            guard seconds >= 0 else {
                throw node.error("the clock only moves forward: expected 0 or more seconds, got \(formatSeconds(seconds))")
            }
            return .advanceClock(seconds: seconds)
        default:
            guard try node.bool() else { throw node.error("'invalidate' takes true (leave the step out instead)") }
            return .invalidate
        }
    }

    private func event(_ node: Node) throws(ScenarioError) -> ScenarioOperation {
        let updateKeys = ["members", "activeRemoteMembers", "localMember", "capabilities"]
        let object = try node.object("an event", allowed: ["conversation", "type", "reason"] + updateKeys)
        let conversation = try object.required("conversation").name("a conversation name")
        let typeNode = try object.required("type")
        let type = try typeNode.string()
        guard ScenarioEvent.typeNames.contains(type) else {
            throw typeNode.error(unknownMessage("event type '\(type)'", key: type, expected: ScenarioEvent.typeNames))
        }
        if type != "ended", let reason = object.optional("reason") {
            throw reason.error("only an ended event takes a reason")
        }
        if type != "updated", let extra = object.nodes.first(where: { updateKeys.contains($0.key) }) {
            throw extra.node.error("only an updated event takes \(extra.key)")
        }
        switch type {
        case "startedConnecting":
            return .event(conversation: conversation, event: .startedConnecting)
        case "connected":
            return .event(conversation: conversation, event: .connected)
        case "ended":
            guard let reasonNode = object.optional("reason") else {
                throw node.error(
                    "an ended event needs a 'reason' (one of: "
                        + Conversation.EndedReason.allCases.map(\.rawValue).joined(separator: ", ") + ")")
            }
            return .event(conversation: conversation, event: .ended(try Self.endedReason(reasonNode)))
        default:
            return .event(conversation: conversation, event: .updated(try Self.update(object)))
        }
    }

    // MARK: Actions

    private static let commonActionKeys = ["action", "conversation", "id", "timeout", "sameUUIDAs"]

    private mutating func actionRequest(_ node: Node) throws(ScenarioError) -> ScenarioActionRequest {
        let object = try node.anyObject("an action")
        if let reuse = object.optional("reuse") {
            _ = try node.object("a reuse entry", allowed: ["reuse"])
            return .reuse(actionID: try reference(reuse))
        }
        let actionNode = try object.required("action")
        let name = try actionNode.string()
        guard ScenarioAction.Kind.names.contains(name) else {
            throw actionNode.error(unknownMessage("action '\(name)'", key: name, expected: ScenarioAction.Kind.names))
        }
        let specific: [String] =
            switch name {
            case "start": ["handles", "isVideo"]
            case "pause": ["isPaused"]
            case "mute": ["isMuted"]
            case "playTone": ["digits", "tone"]
            case "merge": ["with"]
            case "transfer": ["to"]
            default: []
            }
        _ = try node.object("a \(name) action", allowed: Self.commonActionKeys + specific)
        let conversation = try object.required("conversation").name("a conversation name")
        let kind: ScenarioAction.Kind
        switch name {
        case "start":
            var handles: [Handle] = []
            for element in try object.optional("handles")?.elements() ?? [] { handles.append(try Self.handle(element)) }
            kind = .start(handles: handles, isVideo: try object.optional("isVideo")?.bool() ?? false)
        case "join": kind = .join
        case "end": kind = .end
        case "pause": kind = .pause(isPaused: try object.required("isPaused").bool())
        case "resume": kind = .pause(isPaused: false)
        case "mute": kind = .mute(isMuted: try object.required("isMuted").bool())
        case "unmute": kind = .mute(isMuted: false)
        case "playTone":
            let digits = try object.required("digits").string()
            kind = .playTone(digits: digits, tone: try object.optional("tone").map(Self.tone) ?? .single)
        case "merge": kind = .merge(with: try object.required("with").name("a conversation name"))
        case "transfer": kind = .transfer(to: try Self.handle(try object.required("to")))
        default: kind = .unmerge
        }
        let timeout = try object.optional("timeout")?.number()
        let sameUUIDAs = try object.optional("sameUUIDAs").map { node throws(ScenarioError) in try reference(node) }
        let id: String
        if let idNode = object.optional("id") {
            id = try idNode.name("an action id")
            try checkUnused(id, at: idNode)
        } else {
            let base = "\(name)-\(conversation)"
            if sameUUIDAs != nil {
                var suffix = 2
                while actionIDs["\(base)-\(suffix)"] != nil { suffix += 1 }
                id = actionIDs[base] == nil ? base : "\(base)-\(suffix)"
            } else {
                id = base
                try checkUnused(id, at: node, defaulted: true)
            }
        }
        actionIDs[id] = node.path.description
        actionIDOrder.append(id)
        return .new(ScenarioAction(id: id, conversation: conversation, kind: kind, timeout: timeout, sameUUIDAs: sameUUIDAs))
    }

    private func checkUnused(_ id: String, at node: Node, defaulted: Bool = false) throws(ScenarioError) {
        guard let earlier = actionIDs[id] else { return }
        throw node.error(
            "\(defaulted ? "the default action id" : "action id") '\(id)' is already used by \(earlier); "
                + "give this action its own \"id\" (to test a duplicate uuid add \"sameUUIDAs\": \"\(id)\"; "
                + "to perform the same object again use {\"reuse\": \"\(id)\"})")
    }

    /// An action id that an earlier action defined.
    func reference(_ node: Node) throws(ScenarioError) -> String {
        let id = try node.name("an action id")
        guard actionIDs[id] != nil else {
            var message = "no action with id '\(id)' is defined before this point"
            if actionIDOrder.isEmpty {
                message += " (no action has been performed yet)"
            } else {
                message += " (defined: \(actionIDOrder.joined(separator: ", ")))"
                if let suggestion = closestMatch(to: id, in: actionIDOrder) { message += "; did you mean '\(suggestion)'?" }
            }
            throw node.error(message)
        }
        return id
    }
}
