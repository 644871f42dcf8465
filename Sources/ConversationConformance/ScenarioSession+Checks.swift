import ConversationKit
import Foundation

extension ScenarioSession {
    /// Compares the manager and the recorded callbacks with `expectation`; one diff line per mismatch.
    func check(_ expectation: ScenarioExpectation, callbacks: [CallbackRecorder.Callback]) -> [String] {
        var failures: [String] = []
        for name in expectation.states.keys.sorted() {
            let expected = expectation.states[name]!
            let actual: ExpectedState = lastSeen(name).map { .state($0.state) } ?? .none
            if actual != expected { failures.append("state of \(name): expected \(expected), got \(actual)") }
        }
        for name in expectation.endedReasons.keys.sorted() {
            let expected = expectation.endedReasons[name]!
            let actual: ExpectedEndedReason = lastSeen(name)?.endedReason.map { .reason($0) } ?? .notEnded
            if actual != expected { failures.append("ended reason of \(name): expected \(expected), got \(actual)") }
        }
        for id in expectation.actions.keys.sorted() {
            let expected = expectation.actions[id]!
            guard let action = names.actions[id] else {
                failures.append("action \(id): expected \(expected), but no action with this id was created")
                continue
            }
            let state = action.state
            if !expected.matches(state) {
                failures.append("action \(id): expected \(expected), got \(ExpectedActionState.notation(for: state))")
            }
        }
        for name in expectation.muted.keys.sorted() {
            let expected = expectation.muted[name]!
            let actual = lastSeen(name).map { String($0.isMuted) } ?? "none (never seen)"
            if actual != String(expected) { failures.append("muted of \(name): expected \(expected), got \(actual)") }
        }
        if let expected = expectation.groups {
            let actual = manager.groups.map { group in group.conversationUUIDs.map { names.name(of: $0) } }
            let (want, got) = (Self.normalized(expected), Self.normalized(actual))
            if want != got {
                failures.append("groups: expected \(Self.render(want)), got \(Self.render(got))")
            }
        }
        if let expected = expectation.conversations {
            let actual = manager.conversationCount
            if actual != expected { failures.append("conversations: expected \(expected), got \(actual)") }
        }
        if let expected = expectation.pendingActions {
            let actual = manager.pendingActions.count
            if actual != expected { failures.append("pendingActions: expected \(expected), got \(actual)") }
        }
        if let expected = expectation.callbacks {
            let actual = callbacks.map(describe)
            if actual != expected {
                failures.append(
                    "callbacks: expected [\(expected.joined(separator: ", "))], got [\(actual.joined(separator: ", "))]")
            }
        }
        return failures
    }

    /// The last snapshot the delegate received for a conversation name, if any.
    private func lastSeen(_ name: String) -> Conversation? {
        names.existingConversation(name).flatMap(recorder.lastSeen)
    }

    /// `changed A ringing`, `perform join A`, `reset`.
    func describe(_ callback: CallbackRecorder.Callback) -> String {
        switch callback {
        case .begin: "begin"
        case .reset: "reset"
        case .changed(let uuid, let state): "changed \(names.name(of: uuid)) \(state)"
        case .perform(let verb, let uuid): "perform \(verb) \(names.name(of: uuid))"
        case .timedOut(let verb, let uuid): "timedOut \(verb) \(names.name(of: uuid))"
        case .activate(let uuid): "activate \(names.name(of: uuid))"
        case .deactivate(let uuid): "deactivate \(names.name(of: uuid))"
        }
    }

    /// Groups as a canonical set of sets: each group sorted, the groups sorted.
    private static func normalized(_ groups: [[String]]) -> [[String]] {
        groups.map { $0.sorted() }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    private static func render(_ groups: [[String]]) -> String {
        "[" + groups.map { "[" + $0.joined(separator: ", ") + "]" }.joined(separator: ", ") + "]"
    }
}
