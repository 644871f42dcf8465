import ConversationKit
import Foundation

/// What must hold after a step. Every field is optional; an empty expectation only requires that the step did
/// not throw. Conversations and actions are referred to by scenario name.
public struct ScenarioExpectation: Sendable {
    /// The ``ConversationManagerError/code`` the step must throw; nil means it must not throw.
    public var error: String?
    /// The last state each named conversation reported through `conversationChanged`.
    public var states: [String: ExpectedState]
    /// Why each named conversation ended (or `.notEnded`).
    public var endedReasons: [String: ExpectedEndedReason]
    /// The state of each action, by action id.
    public var actions: [String: ExpectedActionState]
    /// Whether each named conversation is muted (from its last `conversationChanged` snapshot).
    public var muted: [String: Bool]
    /// The groups, as sets of conversation names (compared as a set of sets).
    public var groups: [[String]]?
    /// How many conversations are live.
    public var conversations: Int?
    /// How many actions are pending.
    public var pendingActions: Int?
    /// The exact delegate callbacks since the previous step, e.g. `changed A ringing`, `perform join A`.
    public var callbacks: [String]?

    /// The keys an `expect` object may hold.
    public static let keys = [
        "error", "states", "endedReasons", "actions", "muted", "groups", "conversations", "pendingActions", "callbacks",
    ]

    /// Creates an expectation; everything defaults to "not checked".
    public init(
        error: String? = nil, states: [String: ExpectedState] = [:],
        endedReasons: [String: ExpectedEndedReason] = [:], actions: [String: ExpectedActionState] = [:],
        muted: [String: Bool] = [:], groups: [[String]]? = nil, conversations: Int? = nil,
        pendingActions: Int? = nil, callbacks: [String]? = nil
    ) {
        self.error = error
        self.states = states
        self.endedReasons = endedReasons
        self.actions = actions
        self.muted = muted
        self.groups = groups
        self.conversations = conversations
        self.pendingActions = pendingActions
        self.callbacks = callbacks
    }
}

/// An expected conversation state: a ``Conversation/State`` or `none` (never seen).
public enum ExpectedState: Sendable, Hashable, CustomStringConvertible {
    /// The manager never reported the conversation.
    case none
    /// The conversation's last reported state.
    case state(Conversation.State)

    /// Parses `ringing`, `left`, `none`…
    public init?(name: String) {
        if name == "none" {
            self = .none
        } else if let state = Conversation.State(rawValue: name) {
            self = .state(state)
        } else {
            return nil
        }
    }

    /// The names a file may use.
    public static var names: [String] { Conversation.State.allCases.map(\.rawValue) + ["none"] }

    /// The state's name, or `none`.
    public var description: String {
        switch self {
        case .none: "none"
        case .state(let state): state.rawValue
        }
    }
}

/// An expected ended reason: a ``Conversation/EndedReason`` or `none` (not ended, or never seen).
public enum ExpectedEndedReason: Sendable, Hashable, CustomStringConvertible {
    /// The conversation has not ended (or was never seen).
    case notEnded
    /// It ended for this reason.
    case reason(Conversation.EndedReason)

    /// Parses `localEnded`, `remoteEnded`…, or `none`.
    public init?(name: String) {
        if name == "none" {
            self = .notEnded
        } else if let reason = Conversation.EndedReason(rawValue: name) {
            self = .reason(reason)
        } else {
            return nil
        }
    }

    /// The names a file may use.
    public static var names: [String] { Conversation.EndedReason.allCases.map(\.rawValue) + ["none"] }

    /// The reason's name, or `none`.
    public var description: String {
        switch self {
        case .notEnded: "none"
        case .reason(let reason): reason.rawValue
        }
    }
}

/// An expected action state. `failed` matches any reason; `failed:REASON` matches that reason exactly.
public enum ExpectedActionState: Sendable, Hashable, CustomStringConvertible {
    /// Created, not (successfully) performed.
    case idle
    /// Performed, not completed.
    case running
    /// Fulfilled.
    case complete
    /// Failed; with a reason, for exactly that reason.
    case failed(reason: String?)
    /// Timed out.
    case timedOut

    /// Parses `idle`, `running`, `complete`, `failed`, `failed:REASON TEXT` or `timedOut`.
    public init?(name: String) {
        switch name {
        case "idle": self = .idle
        case "running": self = .running
        case "complete": self = .complete
        case "failed": self = .failed(reason: nil)
        case "timedOut": self = .timedOut
        default:
            guard name.hasPrefix("failed:") else { return nil }
            self = .failed(reason: String(name.dropFirst("failed:".count)))
        }
    }

    /// The names a file may use.
    public static let names = ["idle", "running", "complete", "failed", "failed:REASON", "timedOut"]

    /// Whether an action in `state` meets the expectation.
    public func matches(_ state: ConversationAction.State) -> Bool {
        switch self {
        case .idle: state == .idle
        case .running: state == .running
        case .complete: state == .complete
        case .timedOut: state == .timedOut
        case .failed(let expected):
            if case .failed(let reason) = state { expected == nil || expected == reason } else { false }
        }
    }

    /// How an actual action state is written in the same notation: `failed:no route`.
    public static func notation(for state: ConversationAction.State) -> String {
        switch state {
        case .idle: "idle"
        case .running: "running"
        case .complete: "complete"
        case .failed(let reason): "failed:\(reason)"
        case .timedOut: "timedOut"
        }
    }

    /// `complete`, `failed`, `failed:no route`.
    public var description: String {
        switch self {
        case .idle: "idle"
        case .running: "running"
        case .complete: "complete"
        case .failed(nil): "failed"
        case .failed(let reason?): "failed:\(reason)"
        case .timedOut: "timedOut"
        }
    }
}
