import Dispatch
import Foundation
import Synchronization

/// A request to do something to a conversation: start, join, end, pause, mute, play tones, merge, unmerge.
///
/// Whether it comes from a frontend button or from the network, an action goes through
/// ``ConversationManager/perform(_:)`` and reaches the delegate's `perform`, which does the work and calls
/// ``fulfill(at:)`` or ``fail(reason:)``. Each action completes exactly once: the first of fulfill, fail or
/// its timeout counts and later calls are no-ops (they return `false`). LiveCommunicationKit's subclasses
/// (`StartConversationAction`, `JoinConversationAction`, …) are the cases of ``Kind`` here; the static
/// factories (``start(conversationUUID:handles:isVideo:timeoutDate:)`` …) read the same.
public final class ConversationAction: Sendable, Identifiable, CustomStringConvertible {
    /// What the action asks for.
    public enum Kind: Sendable, Hashable {
        /// Start an outgoing conversation with these remote handles (several = a group call).
        case start(handles: [Handle], isVideo: Bool)
        /// Answer a ringing incoming conversation.
        case join
        /// End the conversation for the local member.
        case end
        /// Pause (hold) when `isPaused`, resume otherwise.
        case pause(isPaused: Bool)
        /// Mute or unmute the local member.
        case mute(isMuted: Bool)
        /// Play keypad tones.
        case playTone(digits: String, tone: Tone)
        /// Merge the conversation with another conversation (or the group it belongs to).
        case merge(with: UUID)
        /// Take the conversation out of its group.
        case unmerge
        /// Hand the remote party over to another handle (a blind transfer: SIP REFER, RFC 3515). Fulfilled when the
        /// transfer target answered the remote party (the final NOTIFY), after which the conversation ends
        /// (`transferred`); failed, the conversation going on, when the remote party refused or the target did not answer.
        case transfer(to: Handle)

        /// The kind's name without its payload, telling resume from pause and unmute from mute: `join`,
        /// `resume`, `unmute`, `playTone`…
        public var name: String {
            switch self {
            case .start: "start"
            case .join: "join"
            case .end: "end"
            case .pause(let isPaused): isPaused ? "pause" : "resume"
            case .mute(let isMuted): isMuted ? "mute" : "unmute"
            case .playTone: "playTone"
            case .merge: "merge"
            case .unmerge: "unmerge"
            case .transfer: "transfer"
            }
        }

        /// The verb the lifecycle sees.
        public var verb: ActionVerb {
            switch self {
            case .start: .start
            case .join: .join
            case .end: .end
            case .pause(let isPaused): isPaused ? .pause : .resume
            case .mute: .mute
            case .playTone: .playTone
            case .merge: .merge
            case .unmerge: .unmerge
            case .transfer: .transfer
            }
        }
    }

    /// How keypad digits are played; raw values match CallKit's `CXPlayDTMFCallAction.ActionType`.
    public enum Tone: Int, Sendable, Hashable, Codable, CaseIterable {
        /// A single keypad press.
        case single = 1
        /// Digits after a `,` in a dial string: sent after a short pause.
        case softPause = 2
        /// Digits after a `;` in a dial string: sent when the user confirms.
        case hardPause = 3
    }

    /// Where the action is in its own life.
    public enum State: Sendable, Hashable, CustomStringConvertible {
        /// Created, not performed yet.
        case idle
        /// Accepted by the manager and handed to the delegate; not completed yet.
        case running
        /// Fulfilled.
        case complete
        /// Failed, by the delegate or by the manager (e.g. its conversation ended first).
        case failed(reason: String)
        /// Its timeout date came before it completed; it can no longer be fulfilled.
        case timedOut

        /// Whether the action is over.
        public var isFinished: Bool {
            switch self {
            case .idle, .running: false
            case .complete, .failed, .timedOut: true
            }
        }

        /// `complete`, `failed(busy)`…
        public var description: String {
            switch self {
            case .idle: "idle"
            case .running: "running"
            case .complete: "complete"
            case .failed(let reason): "failed(\(reason))"
            case .timedOut: "timedOut"
            }
        }
    }

    /// The action's own identity.
    public let uuid: UUID
    /// The conversation it acts on.
    public let conversationUUID: UUID
    /// What it asks for.
    public let kind: Kind

    struct Core {
        var state: State = .idle
        var timeoutDate: Date?
        /// Set while the action is pending (strong: a manager lives at least until its pending actions
        /// complete or time out); cleared when the action settles.
        var manager: ConversationManager?
        /// The manager's sequence number for this action while it is pending.
        var pendingSequence: UInt64?
        /// The manager validating a transaction with this action in it: one at a time, so two managers can
        /// never both accept it.
        var claimedBy: ObjectIdentifier?
        /// Called once when the action settles (see ``ConversationAction/whenSettled(_:)``).
        var settledHandlers: [@Sendable (State) -> Void] = []
    }
    let core: Mutex<Core>

    /// Reserves the action for `manager` while it validates a transaction; false if it was performed before
    /// or another manager holds it.
    func claim(for manager: ConversationManager) -> Bool {
        core.withLock { core in
            guard core.state == .idle, core.claimedBy == nil, core.manager == nil else { return false }
            core.claimedBy = ObjectIdentifier(manager)
            return true
        }
    }

    /// Gives back a claim of a transaction that was refused.
    func releaseClaim() {
        core.withLock { core in
            if core.state == .idle { core.claimedBy = nil }
        }
    }

    /// Marks the action accepted by `manager`: running until `deadline`. Returns the deadline.
    func begin(with manager: ConversationManager, sequence: UInt64, defaultDeadline: Date) -> Date {
        core.withLock { core in
            precondition(core.claimedBy == ObjectIdentifier(manager), "an action begins only with the manager that claimed it")
            let deadline = core.timeoutDate ?? defaultDeadline
            core.timeoutDate = deadline
            core.state = .running
            core.manager = manager
            core.pendingSequence = sequence
            return deadline
        }
    }

    /// Sets the final state and lets go of the manager; then tells whoever asked, on the manager's settlement queue
    /// `queue` (the manager settles actions while it holds its own lock, where no outside code may run).
    func settle(_ state: State, on queue: DispatchQueue) {
        let handlers = core.withLock { core -> [@Sendable (State) -> Void] in
            core.state = state
            core.manager = nil
            core.pendingSequence = nil
            defer { core.settledHandlers = [] }
            return core.settledHandlers
        }
        guard !handlers.isEmpty else { return }
        queue.async {
            for handler in handlers { handler(state) }
        }
    }

    /// The serial queue settlement handlers run on unless a manager is given another: one queue, so they run in
    /// the order the actions settled.
    public static let defaultSettlementQueue = DispatchQueue(label: "parley.action-settled")

    /// Calls `handler` once with the final state (complete, failed or timed out) when the action settles — at once,
    /// on this thread, if it already has; otherwise soon after, on the manager's settlement queue (in settling
    /// order), outside every lock.
    public func whenSettled(_ handler: @escaping @Sendable (State) -> Void) {
        let settled = core.withLock { core -> State? in
            if core.state.isFinished { return core.state }
            core.settledHandlers.append(handler)
            return nil
        }
        if let settled { handler(settled) }
    }

    /// Whether the action is pending under this sequence number.
    func isPending(sequence: UInt64) -> Bool { core.withLock { $0.pendingSequence == sequence } }



    /// Creates an action. With no `timeoutDate` the manager sets one when the action is performed: its clock's
    /// now plus `configuration.defaultActionTimeout` (30 s unless configured).
    public init(uuid: UUID = RandomUUID.make(), conversationUUID: UUID, kind: Kind, timeoutDate: Date? = nil) {
        self.uuid = uuid
        self.conversationUUID = conversationUUID
        self.kind = kind
        self.core = Mutex(Core(timeoutDate: timeoutDate))
    }

    /// The verb the lifecycle sees.
    public var verb: ActionVerb { kind.verb }
    /// The action's current state.
    public var state: State { core.withLock { $0.state } }
    /// When the action times out; nil until performed unless given at creation.
    public var timeoutDate: Date? { core.withLock { $0.timeoutDate } }
    /// Whether the action is over (complete, failed or timed out).
    public var isComplete: Bool { state.isFinished }

    /// Marks the action done. `date` is when it took effect (connect time for Join, end time for End); the
    /// manager's clock when nil. Returns whether the action is now complete because of this call: false when
    /// it is not running (never performed, already completed, failed or timed out — including a call at or
    /// after its timeout date) or when the manager could no longer apply it (a merge whose partner ended or
    /// whose group limits no longer hold), in which case ``state`` says why it failed.
    @discardableResult
    public func fulfill(at date: Date? = nil) -> Bool {
        guard let manager = core.withLock({ $0.manager }) else { return false }
        return manager.complete(self, with: .fulfilled(date))
    }

    /// Marks the action failed with a reason. Returns whether this call counted (see ``fulfill(at:)``).
    @discardableResult
    public func fail(reason: String = "failed") -> Bool {
        guard let manager = core.withLock({ $0.manager }) else { return false }
        return manager.complete(self, with: .failed(reason))
    }

    /// `join 1A2B3C4D on 5E6F7A8B (running)`.
    public var description: String {
        "\(kindDescription) \(uuid.uuidString.prefix(8)) on \(conversationUUID.uuidString.prefix(8)) (\(state))"
    }

    /// The kind with its payload, for logs.
    public var kindDescription: String {
        switch kind {
        case .start(let handles, let isVideo):
            "start(\(handles.map(\.description).joined(separator: ", "))\(isVideo ? ", video" : ""))"
        case .join: "join"
        case .end: "end"
        case .pause(let isPaused): isPaused ? "pause" : "resume"
        case .mute(let isMuted): isMuted ? "mute" : "unmute"
        case .playTone(let digits, let tone): "playTone(\(digits), \(tone))"
        case .merge(let other): "merge(with: \(other.uuidString.prefix(8)))"
        case .unmerge: "unmerge"
        case .transfer(let target): "transfer(to: \(target.description))"
        }
    }
}

extension ConversationAction {
    /// Start an outgoing conversation (LiveCommunicationKit's `StartConversationAction`).
    public static func start(
        conversationUUID: UUID = RandomUUID.make(), handles: [Handle], isVideo: Bool = false, timeoutDate: Date? = nil
    ) -> ConversationAction {
        ConversationAction(
            conversationUUID: conversationUUID, kind: .start(handles: handles, isVideo: isVideo),
            timeoutDate: timeoutDate)
    }

    /// Answer a ringing conversation (`JoinConversationAction`).
    public static func join(conversationUUID: UUID, timeoutDate: Date? = nil) -> ConversationAction {
        ConversationAction(conversationUUID: conversationUUID, kind: .join, timeoutDate: timeoutDate)
    }

    /// End a conversation for the local member (`EndConversationAction`).
    public static func end(conversationUUID: UUID, timeoutDate: Date? = nil) -> ConversationAction {
        ConversationAction(conversationUUID: conversationUUID, kind: .end, timeoutDate: timeoutDate)
    }

    /// Pause or resume (`PauseConversationAction`).
    public static func pause(conversationUUID: UUID, isPaused: Bool, timeoutDate: Date? = nil) -> ConversationAction {
        ConversationAction(conversationUUID: conversationUUID, kind: .pause(isPaused: isPaused), timeoutDate: timeoutDate)
    }

    /// Mute or unmute (`MuteConversationAction`).
    public static func mute(conversationUUID: UUID, isMuted: Bool, timeoutDate: Date? = nil) -> ConversationAction {
        ConversationAction(conversationUUID: conversationUUID, kind: .mute(isMuted: isMuted), timeoutDate: timeoutDate)
    }

    /// Play keypad tones (`PlayToneAction`).
    public static func playTone(
        conversationUUID: UUID, digits: String, tone: Tone = .single, timeoutDate: Date? = nil
    ) -> ConversationAction {
        ConversationAction(
            conversationUUID: conversationUUID, kind: .playTone(digits: digits, tone: tone), timeoutDate: timeoutDate)
    }

    /// Merge with another conversation or its group (`MergeConversationAction`).
    public static func merge(
        conversationUUID: UUID, with other: UUID, timeoutDate: Date? = nil
    ) -> ConversationAction {
        ConversationAction(conversationUUID: conversationUUID, kind: .merge(with: other), timeoutDate: timeoutDate)
    }

    /// Take a conversation out of its group (`UnmergeConversationAction`).
    public static func unmerge(conversationUUID: UUID, timeoutDate: Date? = nil) -> ConversationAction {
        ConversationAction(conversationUUID: conversationUUID, kind: .unmerge, timeoutDate: timeoutDate)
    }

    /// Hand the remote party over to `target` (a blind transfer; Android Telecom's `Call.transfer`).
    public static func transfer(conversationUUID: UUID, to target: Handle, timeoutDate: Date? = nil) -> ConversationAction {
        ConversationAction(conversationUUID: conversationUUID, kind: .transfer(to: target), timeoutDate: timeoutDate)
    }

    /// The characters a tone string may hold: keypad digits, `*`, `#`, A–D, and `,`/`;` pauses of a dial string.
    static let toneCharacters = Set("0123456789*#ABCDabcd,;")
}
