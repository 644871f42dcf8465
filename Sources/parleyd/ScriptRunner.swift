import ConversationKit
import Foundation
import ParleyEngine
import ParleyIO
import ParleyIO

/// Runs a ``CallScript`` on one conversation: each action is performed through the manager (the same pipeline a
/// frontend uses) and the next step starts when it has completed; `wait` steps use the loop's timers.
struct ScriptRunner: Sendable {
    let manager: ConversationManager
    let loop: EventLoop
    let log: EngineLog

    func run(_ script: CallScript, on conversation: UUID) {
        loop.execute { self.step(script.steps[...], conversation: conversation) }
    }

    private func step(_ steps: ArraySlice<CallScript.Step>, conversation: UUID) {
        guard let first = steps.first, manager.conversation(conversation) != nil else { return }
        let rest = steps.dropFirst()
        guard let action = CallScript.action(for: first, conversation: conversation) else {
            if case .wait(let ms) = first {
                loop.schedule(after: .milliseconds(ms)) { self.step(rest, conversation: conversation) }
            }
            return
        }
        do {
            try manager.perform([action])
        } catch {
            log.error("script: \(action.kindDescription) on \(conversation) refused: \(error)")
            return
        }
        // The next step starts (on the loop) when this one's action settles.
        action.whenSettled { state in
            if case .failed(let reason) = state {
                log.error("script: \(action.kindDescription) on \(conversation) failed: \(reason)")
            }
            loop.execute { self.step(rest, conversation: conversation) }
        }
    }
}
