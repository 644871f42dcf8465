import Foundation

/// The lifecycle's transition table, computed from ``ConversationLifecycle`` itself so the documentation cannot
/// drift from the code.
public enum TransitionTable {
    /// One cell: the state and direction a conversation is in, an input, and what the lifecycle does.
    public struct Cell: Sendable, Hashable {
        /// The direction of the conversation.
        public let direction: Conversation.Direction
        /// The state before the input.
        public let state: Conversation.State
        /// The input.
        public let input: LifecycleInput
        /// The transition, or the rejection.
        public let outcome: Result<LifecycleTransition, LifecycleRejection>
    }

    /// Every (direction × state × input) cell.
    public static func cells() -> [Cell] {
        var cells: [Cell] = []
        for direction in Conversation.Direction.allCases {
            for state in Conversation.State.allCases {
                for input in LifecycleInput.allInputs {
                    let lifecycle = ConversationLifecycle(direction: direction, state: state)
                    let outcome: Result<LifecycleTransition, LifecycleRejection>
                    do { outcome = .success(try lifecycle.peek(input)) } catch { outcome = .failure(error) }
                    cells.append(Cell(direction: direction, state: state, input: input, outcome: outcome))
                }
            }
        }
        return cells
    }

    /// The table as Markdown: one row per input, one column per state; a cell shows the next state, or `✗`
    /// for a rejection. Where incoming and outgoing conversations differ the cell shows `in: … / out: …`.
    public static func markdown() -> String {
        let all = cells()
        func text(_ outcome: Result<LifecycleTransition, LifecycleRejection>) -> String {
            switch outcome {
            case .success(let transition):
                let reason = transition.endedReason.map { "(\($0))" } ?? ""
                return transition.changesState ? "**\(transition.to)\(reason)**" : "\(transition.to)\(reason)"
            case .failure: return "✗"
            }
        }
        var lines: [String] = []
        lines.append("# Conversation lifecycle: transition table")
        lines.append("")
        lines.append("Generated from `ConversationLifecycle` by `parley conformance --table`; do not edit by hand.")
        lines.append("Rows are inputs, columns the state before it. A cell is the state after it (bold when it")
        lines.append("changed), or ✗ when the input is rejected and nothing is applied. `in:`/`out:` mark cells")
        lines.append("where incoming and outgoing conversations differ. Manager-level checks (capabilities, groups,")
        lines.append("pending actions, duplicate uuids) come on top of this table.")
        lines.append("")
        let states = Conversation.State.allCases
        lines.append("| input | " + states.map(\.rawValue).joined(separator: " | ") + " |")
        lines.append("|---|" + states.map { _ in "---" }.joined(separator: "|") + "|")
        for input in LifecycleInput.allInputs {
            var row = ["`\(input)`"]
            for state in states {
                let incoming = all.first { $0.direction == .incoming && $0.state == state && $0.input == input }!
                let outgoing = all.first { $0.direction == .outgoing && $0.state == state && $0.input == input }!
                let a = text(incoming.outcome)
                let b = text(outgoing.outcome)
                row.append(a == b ? a : "in: \(a) / out: \(b)")
            }
            lines.append("| " + row.joined(separator: " | ") + " |")
        }
        lines.append("")
        lines.append("Effects that come with each accepted input (media activation when entering joining, joined or")
        lines.append("paused from a state without media and deactivation when leaving them; delivery of performed")
        lines.append("actions to the delegate; `finish` on entering left) are listed by `parley conformance --table --effects`.")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Every accepted cell with its effects, one line each: `outgoing idle perform(start) → idle [deliverAction]`.
    public static func effectsListing() -> String {
        cells().compactMap { cell -> String? in
            guard case .success(let transition) = cell.outcome else { return nil }
            return "\(cell.direction) \(cell.state) \(cell.input) → \(transition)"
        }.joined(separator: "\n") + "\n"
    }
}
