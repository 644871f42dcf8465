import ConversationKit
import Foundation
import ParleyEngine
import ParleyNode
import Synchronization

/// What parleyd does with calls on its own, for tests and demos without a frontend: the `--call` calls once
/// listening, the `--script` on each call once it is joined, and exiting after `--exit-after` conversations ended.
final class DaemonAutomation: Sendable {
    private let options: DaemonOptions
    private let node: ParleyNode
    private let state = Mutex(State())

    private struct State {
        var ended = 0
        var scripted: Set<UUID> = []
    }

    init(options: DaemonOptions, node: ParleyNode) {
        self.options = options
        self.node = node
        node.engine.observeTransitions { [weak self] transition in self?.observe(transition) }
    }

    /// Places the `--call` calls.
    func start() {
        for target in options.calls {
            // Dialled as a person would (a bare name at the account's domain, a number); what the rules refuse is
            // started as written, so that the engine fails it with its reason and it counts for --exit-after.
            let handle: Handle
            switch DialTarget.handle(for: target, configuration: node.engine.configuration) {
            case .success(let found): handle = found
            case .failure(let problem):
                node.configuration.log.error("cannot call \(target): \(problem.message)")
                handle = Handle(kind: .generic, value: target, displayName: target)
            }
            let uuid = RandomUUID.make()
            if let callID = options.callID { node.engine.assignCallID(callID, toOutgoing: uuid) }
            do {
                try node.manager.perform([.start(conversationUUID: uuid, handles: [handle])])
            } catch {
                node.configuration.log.error("cannot call \(target): \(error)")
            }
        }
    }

    private func observe(_ transition: ConversationTransition) {
        let conversation = transition.conversation
        if conversation.state == .joined, let script = options.script {
            let first = state.withLock { $0.scripted.insert(conversation.uuid).inserted }
            if first {
                ScriptRunner(manager: node.manager, loop: node.loop, log: node.configuration.log).run(script, on: conversation.uuid)
            }
        }
        if conversation.state == .left { state.withLock { _ = $0.scripted.remove(conversation.uuid) } }
        guard conversation.state == .left, let limit = options.exitAfter else { return }
        let ended = state.withLock { state -> Int in
            state.ended += 1
            return state.ended
        }
        if ended == limit {
            node.configuration.log.info("\(limit) conversation(s) ended; exiting")
            let node = node
            DispatchQueue.global().async { node.exit(afterStopping: 0) }
        }
    }
}
