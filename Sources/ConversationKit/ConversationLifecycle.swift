import Foundation

/// What can happen to one conversation: a report, an action being performed or completing, or a backend event.
public enum LifecycleInput: Sendable, Hashable, CustomStringConvertible {
    /// The network reported a new incoming conversation.
    case reportIncoming
    /// An action was performed (accepted by the manager and handed to the delegate).
    case perform(ActionVerb)
    /// The delegate fulfilled an action.
    case fulfill(ActionVerb)
    /// The delegate failed an action.
    case fail(ActionVerb)
    /// An action passed its timeout date before completing.
    case timeOut(ActionVerb)
    /// Event: answered, session being set up.
    case startedConnecting
    /// Event: media connected.
    case connected
    /// Event: ended for the given reason.
    case ended(Conversation.EndedReason)
    /// Event: members or capabilities changed.
    case updated

    /// `perform(join)`, `ended(remoteEnded)`…
    public var description: String {
        switch self {
        case .reportIncoming: "reportIncoming"
        case .perform(let verb): "perform(\(verb))"
        case .fulfill(let verb): "fulfill(\(verb))"
        case .fail(let verb): "fail(\(verb))"
        case .timeOut(let verb): "timeOut(\(verb))"
        case .startedConnecting: "startedConnecting"
        case .connected: "connected"
        case .ended(let reason): "ended(\(reason))"
        case .updated: "updated"
        }
    }

    /// Every input, each verb and each ended reason once: the columns of the transition table.
    public static let allInputs: [LifecycleInput] =
        [.reportIncoming]
        + ActionVerb.allCases.map { .perform($0) }
        + ActionVerb.allCases.map { .fulfill($0) }
        + ActionVerb.allCases.map { .fail($0) }
        + ActionVerb.allCases.map { .timeOut($0) }
        + [.startedConnecting, .connected]
        + Conversation.EndedReason.allCases.map { .ended($0) }
        + [.updated]
}

/// An action's verb, without its payload: what the lifecycle needs to know of it.
public enum ActionVerb: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Start an outgoing conversation.
    case start
    /// Answer (join) a ringing incoming conversation.
    case join
    /// End the conversation for the local member.
    case end
    /// Pause (hold).
    case pause
    /// Resume from pause.
    case resume
    /// Mute or unmute the local member.
    case mute
    /// Play keypad tones.
    case playTone
    /// Merge into a group.
    case merge
    /// Take out of a group.
    case unmerge
    /// Hand the remote party over to another handle.
    case transfer

    /// The verb's name.
    public var description: String { rawValue }
}

/// What the manager must do besides recording the new state. A set of flags: no allocation per transition.
public struct LifecycleEffects: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The raw bits.
    public let rawValue: UInt8
    /// Creates effects from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Hand the performed action to the delegate.
    public static let deliverAction = LifecycleEffects(rawValue: 1 << 0)
    /// Media for this conversation must start (it entered joining/joined/paused).
    public static let activateMedia = LifecycleEffects(rawValue: 1 << 1)
    /// Media for this conversation must stop (it left joining/joined/paused).
    public static let deactivateMedia = LifecycleEffects(rawValue: 1 << 2)
    /// It ended: complete its pending actions, take it out of its group, drop it from `conversations`.
    public static let finish = LifecycleEffects(rawValue: 1 << 3)
    /// Record the connect time (first entry into `joined`).
    public static let markConnected = LifecycleEffects(rawValue: 1 << 4)
    /// Record the started-connecting time (first entry into `joining`).
    public static let markStartedConnecting = LifecycleEffects(rawValue: 1 << 5)

    /// `[deliverAction, finish]`.
    public var description: String {
        let names: [(LifecycleEffects, String)] = [
            (.deliverAction, "deliverAction"), (.activateMedia, "activateMedia"),
            (.deactivateMedia, "deactivateMedia"), (.finish, "finish"), (.markConnected, "markConnected"),
            (.markStartedConnecting, "markStartedConnecting"),
        ]
        return "[" + names.filter { contains($0.0) }.map(\.1).joined(separator: ", ") + "]"
    }
}

/// The result of an accepted input: the state before and after, and the effects to carry out.
public struct LifecycleTransition: Sendable, Hashable, CustomStringConvertible {
    /// The state before the input.
    public let from: Conversation.State
    /// The state after the input (may equal `from`).
    public let to: Conversation.State
    /// Why the conversation ended, when `to` is `left`.
    public let endedReason: Conversation.EndedReason?
    /// What the driver must do.
    public let effects: LifecycleEffects

    /// Whether the state changed.
    public var changesState: Bool { from != to }

    /// `ringing → joining [markStartedConnecting, activateMedia]`.
    public var description: String {
        "\(from) → \(to)\(endedReason.map { "(\($0))" } ?? "") \(effects)"
    }
}

/// An input the lifecycle refuses in its current state; nothing was applied.
public struct LifecycleRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// The refused input.
    public let input: LifecycleInput
    /// The state that refused it.
    public let state: Conversation.State
    /// The conversation's direction.
    public let direction: Conversation.Direction
    /// Why, in words.
    public let explanation: String

    /// `perform(join) is not allowed in joined (outgoing): …`.
    public var description: String {
        "\(input) is not allowed in \(state) (\(direction)): \(explanation)"
    }
}

/// The pure lifecycle of one conversation: a sealed state and one entry point, ``handle(_:)``, that takes an
/// input and returns the transition (new state and effects) or a typed rejection. No I/O, no clock, no
/// knowledge of other conversations: the manager checks capabilities, groups and pending actions, and carries
/// out the effects.
public struct ConversationLifecycle: Sendable, Hashable {
    /// Who started the conversation; decides whether it can be joined.
    public let direction: Conversation.Direction
    /// The current state. Only ``handle(_:)`` changes it.
    public private(set) var state: Conversation.State
    /// Why it ended, once `state` is `left`.
    public private(set) var endedReason: Conversation.EndedReason?

    /// A new lifecycle in `idle`.
    public init(direction: Conversation.Direction) {
        self.direction = direction
        self.state = .idle
        self.endedReason = nil
    }

    /// A lifecycle placed in `state`, for tables and tests. A `left` one ended as `failed`.
    public init(direction: Conversation.Direction, state: Conversation.State) {
        self.direction = direction
        self.state = state
        self.endedReason = state == .left ? .failed : nil
    }

    /// Applies `input`: on success the state moves and the transition says what to do; on rejection nothing changes.
    @discardableResult
    public mutating func handle(_ input: LifecycleInput) throws(LifecycleRejection) -> LifecycleTransition {
        let transition = try peek(input)
        state = transition.to
        if let reason = transition.endedReason { endedReason = reason }
        return transition
    }

    /// What ``handle(_:)`` would do, without doing it.
    public func peek(_ input: LifecycleInput) throws(LifecycleRejection) -> LifecycleTransition {
        switch Self.decide(state: state, direction: direction, input: input) {
        case .reject(let explanation):
            throw LifecycleRejection(input: input, state: state, direction: direction, explanation: explanation)
        case .move(let next, let reason, var effects):
            if !state.hasMedia && next.hasMedia { effects.insert(.activateMedia) }
            if state.hasMedia && !next.hasMedia { effects.insert(.deactivateMedia) }
            if next == .joining && state != .joining { effects.insert(.markStartedConnecting) }
            if next == .joined && (state == .joining || !state.hasMedia) { effects.insert(.markConnected) }
            if next == .left { effects.insert(.finish) }
            return LifecycleTransition(from: state, to: next, endedReason: reason, effects: effects)
        }
    }
}

extension ConversationLifecycle {
    /// The verdict of the transition table for one cell.
    enum Decision {
        case move(Conversation.State, Conversation.EndedReason?, LifecycleEffects)
        case reject(String)

        static func stay(_ state: Conversation.State, _ effects: LifecycleEffects = []) -> Decision {
            .move(state, nil, effects)
        }
        static func end(_ reason: Conversation.EndedReason) -> Decision { .move(.left, reason, []) }
    }

    /// The transition table. Every (state, input) pair lands in exactly one line of this function.
    static func decide(
        state: Conversation.State, direction: Conversation.Direction, input: LifecycleInput
    ) -> Decision {
        if state == .left { return .reject("the conversation has left; left is terminal") }
        switch input {
        case .reportIncoming:
            guard state == .idle, direction == .incoming else {
                return .reject("only a new incoming conversation is reported")
            }
            return .stay(.ringing)
        case .perform(let verb):
            return decidePerform(verb, state: state, direction: direction)
        case .fulfill(let verb):
            return decideFulfill(verb, state: state)
        case .fail(let verb), .timeOut(let verb):
            return decideFailure(verb, state: state)
        case .startedConnecting:
            switch state {
            case .idle where direction == .outgoing: return .stay(.joining)
            case .ringing: return .stay(.joining)
            case .idle: return .reject("an incoming conversation must be reported first")
            case .joining: return .reject("it is already connecting")
            case .joined, .paused: return .reject("it is already connected")
            case .leaving: return .reject("it is ending")
            case .left: return .reject("the conversation has left; left is terminal")
            }
        case .connected:
            switch state {
            case .idle where direction == .outgoing: return .stay(.joined)
            case .ringing, .joining: return .stay(.joined)
            case .idle: return .reject("an incoming conversation must be reported first")
            case .joined, .paused: return .reject("it is already connected")
            case .leaving: return .reject("it is ending")
            case .left: return .reject("the conversation has left; left is terminal")
            }
        case .ended(let reason):
            if reason == .localEnded {
                return .reject("a local end is recorded by fulfilling an End action, not reported as an event")
            }
            if reason == .crashed {
                return .reject("a crash is recorded by the next start's history, not reported as an event")
            }
            return .end(reason)
        case .updated:
            return .stay(state)
        }
    }

    private static func decidePerform(
        _ verb: ActionVerb, state: Conversation.State, direction: Conversation.Direction
    ) -> Decision {
        switch verb {
        case .start:
            guard state == .idle, direction == .outgoing else {
                return .reject("Start creates a new outgoing conversation")
            }
            return .stay(.idle, .deliverAction)
        case .join:
            guard state == .ringing, direction == .incoming else {
                return .reject("only a ringing incoming conversation can be joined")
            }
            return .stay(.ringing, .deliverAction)
        case .end:
            guard state != .leaving else { return .reject("it is already leaving") }
            return .stay(.leaving, .deliverAction)
        case .pause:
            switch state {
            case .joined: return .stay(.joined, .deliverAction)
            case .paused: return .reject("it is already paused")
            case .idle, .ringing, .joining, .leaving, .left:
                return .reject("only a joined conversation can be paused")
            }
        case .resume:
            switch state {
            case .paused: return .stay(.paused, .deliverAction)
            case .joined: return .reject("it is not paused")
            case .idle, .ringing, .joining, .leaving, .left:
                return .reject("only a paused conversation can be resumed")
            }
        case .mute:
            guard state != .leaving else { return .reject("it is ending") }
            return .stay(state, .deliverAction)
        case .playTone:
            switch state {
            case .joining, .joined: return .stay(state, .deliverAction)
            case .paused: return .reject("tones cannot be played while paused")
            case .idle, .ringing, .leaving, .left: return .reject("tones need connected media")
            }
        case .merge, .unmerge:
            switch state {
            case .joined, .paused: return .stay(state, .deliverAction)
            case .idle, .ringing, .joining, .leaving, .left:
                return .reject("only joined or paused conversations can be merged or unmerged")
            }
        case .transfer:
            switch state {
            case .joined, .paused: return .stay(state, .deliverAction)
            case .idle, .ringing, .joining, .leaving, .left:
                return .reject("only joined or paused conversations can be transferred")
            }
        }
    }

    private static func decideFulfill(_ verb: ActionVerb, state: Conversation.State) -> Decision {
        switch verb {
        case .start:
            return state == .idle ? .stay(.ringing) : .stay(state)
        case .join:
            switch state {
            case .ringing, .joining: return .stay(.joined)
            case .idle: return .reject("an incoming conversation must be reported first")
            case .joined, .paused, .leaving, .left: return .stay(state)
            }
        case .end:
            guard state == .leaving else { return .reject("no End is in progress") }
            return .end(.localEnded)
        case .pause:
            return state == .joined ? .stay(.paused) : .stay(state)
        case .resume:
            return state == .paused ? .stay(.joined) : .stay(state)
        case .mute, .playTone, .merge, .unmerge, .transfer:
            return .stay(state)
        }
    }

    private static func decideFailure(_ verb: ActionVerb, state: Conversation.State) -> Decision {
        switch verb {
        case .start, .join:
            switch state {
            case .idle, .ringing, .joining: return .end(.failed)
            case .joined, .paused, .leaving, .left: return .stay(state)
            }
        case .end:
            guard state == .leaving else { return .reject("no End is in progress") }
            return .end(.failed)
        case .pause, .resume, .mute, .playTone, .merge, .unmerge, .transfer:
            return .stay(state)
        }
    }
}
