import ConversationKit
import Foundation

/// Runs a ``Scenario`` against a fresh ``ConversationManager``: a ``ManualClock``, the scenario's configuration
/// and a recording delegate attached before the first step. The delegate never fulfills or fails actions on
/// its own; only the scenario's steps do. Every step runs even after one fails, so a report shows all misses.
public struct ScenarioRunner: Sendable {
    /// Creates a runner.
    public init() {}

    /// Runs every step and checks its expectations; never throws and never traps on a scenario's content.
    public func run(_ scenario: Scenario) -> ScenarioReport {
        let clock = ManualClock()
        let manager: ConversationManager
        do {
            manager = try ConversationManager(configuration: scenario.configuration, clock: clock)
        } catch {
            let failure = "the manager refused the configuration: \(error.description)"
            return ScenarioReport(
                scenarioName: scenario.name,
                steps: [StepReport(index: 0, summary: "create the manager", failures: [failure])])
        }
        let recorder = CallbackRecorder()
        manager.delegate = recorder
        _ = recorder.take()  // the initial `begin`
        var session = ScenarioSession(manager: manager, clock: clock, recorder: recorder)
        var reports: [StepReport] = []
        for (offset, step) in scenario.steps.enumerated() {
            reports.append(session.run(step, index: offset + 1))
        }
        withExtendedLifetime(recorder) {}
        return ScenarioReport(scenarioName: scenario.name, steps: reports)
    }
}

/// One run in progress: the manager, its clock and delegate, and the scenario's names.
struct ScenarioSession {
    let manager: ConversationManager
    let clock: ManualClock
    let recorder: CallbackRecorder
    var names = NameTable()

    init(manager: ConversationManager, clock: ManualClock, recorder: CallbackRecorder) {
        self.manager = manager
        self.clock = clock
        self.recorder = recorder
    }

    /// Does the step, then checks its expectations against what happened.
    mutating func run(_ step: ScenarioStep, index: Int) -> StepReport {
        var failures: [String] = []
        var thrown: ConversationManagerError?
        do {
            try execute(step.operation, failures: &failures)
        } catch {
            thrown = error
        }
        let callbacks = recorder.take()
        failures += checkError(thrown, expected: step.expectation.error)
        failures += check(step.expectation, callbacks: callbacks)
        return StepReport(index: index, summary: step.summary, failures: failures)
    }

    private mutating func execute(
        _ operation: ScenarioOperation, failures: inout [String]
    ) throws(ConversationManagerError) {
        switch operation {
        case .reportIncoming(let name, let update):
            try manager.reportNewIncomingConversation(uuid: names.conversation(name), update: update)
        case .perform(let requests):
            var actions: [ConversationAction] = []
            for request in requests {
                switch request {
                case .new(let spec):
                    guard let action = makeAction(spec, failures: &failures) else { return }
                    actions.append(action)
                case .reuse(let id):
                    guard let action = names.actions[id] else {
                        failures.append("no action with id '\(id)' was created before this step")
                        return
                    }
                    actions.append(action)
                }
            }
            try manager.perform(actions)
        case .fulfill(let id, let counted):
            guard let action = names.actions[id] else {
                failures.append("no action with id '\(id)' was created before this step")
                return
            }
            failures += checkCounted(action.fulfill(), expected: counted, call: "fulfill \(id)", action: action)
        case .fail(let id, let reason, let counted):
            guard let action = names.actions[id] else {
                failures.append("no action with id '\(id)' was created before this step")
                return
            }
            failures += checkCounted(action.fail(reason: reason), expected: counted, call: "fail \(id)", action: action)
        case .event(let name, let event):
            try manager.reportConversationEvent(event.event(at: clock.now()), for: names.conversation(name))
        case .advanceClock(let seconds):
            guard seconds >= 0, seconds.isFinite else {
                failures.append("advanceClock: the clock only moves forward (got \(seconds))")
                return
            }
            clock.advance(by: seconds)
        case .invalidate:
            manager.invalidate()
        }
    }

    /// Creates the action object for `spec` and records it under its id.
    private mutating func makeAction(_ spec: ScenarioAction, failures: inout [String]) -> ConversationAction? {
        let uuid: UUID
        if let original = spec.sameUUIDAs {
            guard let action = names.actions[original] else {
                failures.append("no action with id '\(original)' was created before this step")
                return nil
            }
            uuid = action.uuid
        } else {
            uuid = names.newActionUUID(for: spec.id)
        }
        let conversation = names.conversation(spec.conversation)
        let kind: ConversationAction.Kind =
            switch spec.kind {
            case .start(let handles, let isVideo): .start(handles: handles, isVideo: isVideo)
            case .join: .join
            case .end: .end
            case .pause(let isPaused): .pause(isPaused: isPaused)
            case .mute(let isMuted): .mute(isMuted: isMuted)
            case .playTone(let digits, let tone): .playTone(digits: digits, tone: tone)
            case .merge(let other): .merge(with: names.conversation(other))
            case .unmerge: .unmerge
            case .transfer(let target): .transfer(to: target)
            }
        let timeoutDate = spec.timeout.map { clock.now().addingTimeInterval($0) }
        let action = ConversationAction(uuid: uuid, conversationUUID: conversation, kind: kind, timeoutDate: timeoutDate)
        names.actions[spec.id] = action
        return action
    }

    private func checkCounted(_ counted: Bool, expected: Bool, call: String, action: ConversationAction) -> [String] {
        guard counted != expected else { return [] }
        if counted { return ["\(call) counted, expected it not to count"] }
        let state = ExpectedActionState.notation(for: action.state)
        return ["\(call) did not count (the action is \(state)), expected it to count"]
    }

    private func checkError(_ thrown: ConversationManagerError?, expected: String?) -> [String] {
        switch (thrown, expected) {
        case (nil, nil):
            return []
        case (let error?, nil):
            return ["step threw \(error.code): \(error.description), expected no error"]
        case (nil, let code?):
            return ["step succeeded, expected error \(code)"]
        case (let error?, let code?):
            return error.code == code ? [] : ["step threw \(error.code): \(error.description), expected error \(code)"]
        }
    }
}
