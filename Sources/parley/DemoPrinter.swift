import ConversationKit
import Foundation
import Synchronization

/// Prints the demo's lines: simulated time, conversation label and who it is with, what happened.
final class DemoPrinter: Sendable {
    /// Labels, each conversation's last seen value, and the ended ones, behind one lock.
    private struct State {
        var labels: [UUID: String] = [:]
        var last: [UUID: Conversation] = [:]
        var ended: [Conversation] = []
    }
    private let state = Mutex(State())
    private let clock: ManualClock
    private let start: Date
    private let contacts: ContactDirectory
    /// Whether nothing is printed (`parley demo --quiet`).
    let quiet: Bool

    init(clock: ManualClock, contacts: ContactDirectory, quiet: Bool = false) {
        self.clock = clock
        self.start = clock.now()
        self.contacts = contacts
        self.quiet = quiet
    }

    func label(_ uuid: UUID, _ label: String) { state.withLock { $0.labels[uuid] = label } }

    /// An action as the demo shows it: a merge names its partner by label (`merge with B`).
    func describe(_ action: ConversationAction) -> String {
        guard case .merge(let other) = action.kind else { return action.kindDescription }
        return "merge with \(state.withLock { $0.labels[other] } ?? String(other.uuidString.prefix(8)))"
    }

    func say(_ text: String) {
        guard !quiet else { return }
        print(text)
        flushOutput()
    }

    /// `[00:02.300] A  text`.
    func line(_ uuid: UUID?, _ text: String) {
        guard !quiet else { return }
        let label = uuid.map { uuid in state.withLock { $0.labels[uuid] } ?? String(uuid.uuidString.prefix(4)) } ?? "-"
        let elapsed = clock.now().timeIntervalSince(start)
        let time = String(format: "%02d:%06.3f", Int(elapsed) / 60, elapsed.truncatingRemainder(dividingBy: 60))
        say("[\(time)] \(label.padding(toLength: 2, withPad: " ", startingAt: 0)) \(text)")
    }

    private func who(_ conversation: Conversation) -> String {
        conversation.members.map { contacts.displayName(for: $0) }.sorted().joined(separator: ", ")
    }

    /// Prints a state change (`ringing → joining`) or what else changed.
    func changed(_ conversation: Conversation) {
        let previous = state.withLock { state in
            defer {
                state.last[conversation.uuid] = conversation
                if conversation.state == .left { state.ended.append(conversation) }
            }
            return state.last[conversation.uuid]
        }
        let uuid = conversation.uuid
        guard let previous else {
            line(uuid, "\(conversation.direction) conversation with \(who(conversation)): \(conversation.state)")
            return
        }
        if previous.state != conversation.state {
            let reason = conversation.endedReason.map { " (\($0))" } ?? ""
            line(uuid, "\(previous.state) → \(conversation.state)\(reason)")
        }
        if previous.isMuted != conversation.isMuted { line(uuid, conversation.isMuted ? "muted" : "unmuted") }
        if previous.groupUUID != conversation.groupUUID, conversation.state != .left {
            line(uuid, conversation.groupUUID.map { "in group \($0.uuidString.prefix(4))" } ?? "out of its group")
        }
    }

    func summaryTable() {
        let ended = state.withLock { $0.ended }
        let rows = ended.map { conversation -> [String] in
            let label = state.withLock { $0.labels[conversation.uuid] } ?? "?"
            let duration = zip(conversation.connectedAt.map { [$0] } ?? [], conversation.endedAt.map { [$0] } ?? [])
                .map { String(format: "%.1f s", $1.timeIntervalSince($0)) }.first ?? "—"
            return [label, who(conversation), conversation.direction.rawValue,
                    conversation.endedReason?.rawValue ?? "?", conversation.hasConnected ? "yes" : "no", duration]
        }
        let header = ["", "with", "direction", "ended", "connected", "talk time"]
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        for row in [header] + rows {
            say("  " + row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  "))
        }
    }
}
