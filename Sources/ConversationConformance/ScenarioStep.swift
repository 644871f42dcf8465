import ConversationKit
import Foundation

/// One step of a scenario: an operation on the manager (or its clock) and what must hold afterwards.
public struct ScenarioStep: Sendable {
    /// What the step does.
    public var operation: ScenarioOperation
    /// What must hold once it has been done; empty means only "the step must not throw".
    public var expectation: ScenarioExpectation
    /// Free text from the file's `"comment"` key, documenting the step.
    public var comment: String?

    /// Creates a step.
    public init(operation: ScenarioOperation, expectation: ScenarioExpectation = ScenarioExpectation(), comment: String? = nil) {
        self.operation = operation
        self.expectation = expectation
        self.comment = comment
    }

    /// The one-line description used in reports: `perform join(A) as join-A`, `fulfill join-A`,
    /// `event connected(A)`.
    public var summary: String { operation.summary }
}

/// What a step does. Conversations and actions are referred to by the names the scenario chose.
public enum ScenarioOperation: Sendable {
    /// `reportNewIncomingConversation` for the named conversation with this update (members, capabilities…).
    case reportIncoming(conversation: String, update: Conversation.Update)
    /// `perform` these actions in one transaction.
    case perform([ScenarioActionRequest])
    /// `fulfill()` the action with this id; `counted` is what the call must return.
    case fulfill(actionID: String, counted: Bool)
    /// `fail(reason:)` the action with this id; `counted` is what the call must return.
    case fail(actionID: String, reason: String, counted: Bool)
    /// `reportConversationEvent` for the named conversation; dates are the manual clock's now.
    case event(conversation: String, event: ScenarioEvent)
    /// Moves the manual clock forward by this many seconds, running the timeouts that fall due.
    case advanceClock(seconds: TimeInterval)
    /// `invalidate()` the manager.
    case invalidate

    /// The step names a file may use, in the order they are listed in messages.
    public static let names = ["reportIncoming", "perform", "fulfill", "fail", "event", "advanceClock", "invalidate"]

    /// The operation's step name (`perform`, `fulfill`…).
    public var name: String {
        switch self {
        case .reportIncoming: "reportIncoming"
        case .perform: "perform"
        case .fulfill: "fulfill"
        case .fail: "fail"
        case .event: "event"
        case .advanceClock: "advanceClock"
        case .invalidate: "invalidate"
        }
    }

    /// Whether the manager call behind the operation can throw a ``ConversationManagerError`` (so an
    /// `"expect": {"error": …}` makes sense).
    public var canThrow: Bool {
        switch self {
        case .reportIncoming, .perform, .event: true
        case .fulfill, .fail, .advanceClock, .invalidate: false
        }
    }

    /// `perform join(A) as join-A`, `event ended(A, remoteEnded)`, `advanceClock 31s`…
    public var summary: String {
        switch self {
        case .reportIncoming(let conversation, _):
            return "reportIncoming \(conversation)"
        case .perform(let requests):
            guard !requests.isEmpty else { return "perform nothing" }
            return "perform " + requests.map(\.summary).joined(separator: ", ")
        case .fulfill(let id, let counted):
            return "fulfill \(id)" + (counted ? "" : " (must not count)")
        case .fail(let id, let reason, let counted):
            return "fail \(id) (\(reason))" + (counted ? "" : " (must not count)")
        case .event(let conversation, let event):
            return "event \(event.summary(for: conversation))"
        case .advanceClock(let seconds):
            return "advanceClock \(formatSeconds(seconds))s"
        case .invalidate:
            return "invalidate"
        }
    }
}

/// A backend event; its date is taken from the manual clock when the step runs.
public enum ScenarioEvent: Sendable, Hashable {
    /// `Conversation.Event.startedConnecting`.
    case startedConnecting
    /// `Conversation.Event.connected`.
    case connected
    /// `Conversation.Event.ended` with this reason.
    case ended(Conversation.EndedReason)
    /// `Conversation.Event.updated` with this update.
    case updated(Conversation.Update)

    /// The event type names a file may use.
    public static let typeNames = ["startedConnecting", "connected", "ended", "updated"]

    /// `connected(A)`, `ended(A, remoteEnded)`.
    public func summary(for conversation: String) -> String {
        switch self {
        case .startedConnecting: "startedConnecting(\(conversation))"
        case .connected: "connected(\(conversation))"
        case .ended(let reason): "ended(\(conversation), \(reason))"
        case .updated: "updated(\(conversation))"
        }
    }

    /// The engine's event, dated `date`.
    public func event(at date: Date) -> Conversation.Event {
        switch self {
        case .startedConnecting: .startedConnecting(date)
        case .connected: .connected(date)
        case .ended(let reason): .ended(date, reason)
        case .updated(let update): .updated(update)
        }
    }
}

/// One entry of a `perform` step: a new action object, or an action object performed before.
public enum ScenarioActionRequest: Sendable {
    /// Create a new action object and perform it.
    case new(ScenarioAction)
    /// Perform again the very action object created under this id (the manager must refuse it:
    /// `actionAlreadyPerformed`).
    case reuse(actionID: String)

    /// `join(A) as join-A`, or `join-A again`.
    public var summary: String {
        switch self {
        case .new(let action): action.summary
        case .reuse(let id): "\(id) again"
        }
    }
}

/// A new action as the scenario describes it.
public struct ScenarioAction: Sendable {
    /// What the action asks for; conversations by scenario name.
    public enum Kind: Sendable, Hashable {
        /// Start an outgoing conversation with these handles.
        case start(handles: [Handle], isVideo: Bool)
        /// Answer a ringing conversation.
        case join
        /// End the conversation.
        case end
        /// Pause (`true`) or resume (`false`).
        case pause(isPaused: Bool)
        /// Mute (`true`) or unmute (`false`).
        case mute(isMuted: Bool)
        /// Play keypad tones.
        case playTone(digits: String, tone: ConversationAction.Tone)
        /// Merge with the named conversation (or its group).
        case merge(with: String)
        /// Take the conversation out of its group.
        case unmerge
        /// Hand the remote party over to this handle (a blind transfer).
        case transfer(to: Handle)

        /// The action names a file may use (`resume` and `unmute` are shorthands for pause/mute with false).
        public static let names = [
            "start", "join", "end", "pause", "resume", "mute", "unmute", "playTone", "merge", "unmerge", "transfer",
        ]

        /// The name used in ids, summaries and callbacks: `pause`/`resume`, `mute`/`unmute`, `join`…
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
    }

    /// The scenario's id for the action (default `<action>-<conversation>`, e.g. `join-A`).
    public var id: String
    /// The conversation it acts on, by scenario name.
    public var conversation: String
    /// What it asks for.
    public var kind: Kind
    /// Seconds from the clock's now to the action's timeout date; nil leaves the manager's default.
    public var timeout: TimeInterval?
    /// The id of an earlier action whose uuid this new action object reuses (to test duplicate uuids).
    public var sameUUIDAs: String?

    /// Creates an action description.
    public init(id: String, conversation: String, kind: Kind, timeout: TimeInterval? = nil, sameUUIDAs: String? = nil) {
        self.id = id
        self.conversation = conversation
        self.kind = kind
        self.timeout = timeout
        self.sameUUIDAs = sameUUIDAs
    }

    /// `join(A) as join-A`, `merge(A, B) as merge-A`, `playTone(A, "12#") as playTone-A`.
    public var summary: String {
        let arguments: String =
            switch kind {
            case .start(_, let isVideo): isVideo ? "\(conversation), video" : conversation
            case .playTone(let digits, _): "\(conversation), \"\(digits)\""
            case .merge(let other): "\(conversation), \(other)"
            case .transfer(let target): "\(conversation), \(target.value)"
            case .join, .end, .pause, .mute, .unmerge: conversation
            }
        var text = "\(kind.name)(\(arguments)) as \(id)"
        if let sameUUIDAs { text += " (uuid of \(sameUUIDAs))" }
        return text
    }
}

/// `31`, `0.5`.
func formatSeconds(_ seconds: TimeInterval) -> String {
    seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int(seconds)) : String(seconds)
}
