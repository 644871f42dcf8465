import ConversationKit
import Foundation

/// What parleyd does with each call once it is joined, for tests and demos without a frontend:
/// `wait 500; hold; wait 500; resume; dtmf 12#; mute; unmute; end`.
struct CallScript: Sendable, Equatable {
    /// One step.
    enum Step: Sendable, Equatable {
        /// Wait this many milliseconds.
        case wait(Int)
        /// Pause (hold) the call.
        case hold
        /// Resume it.
        case resume
        /// Send these keypad tones.
        case dtmf(String)
        /// Mute or unmute.
        case mute(Bool)
        /// End the call.
        case end
    }

    let steps: [Step]

    /// Parses `;`-separated steps; a clear error names the step it cannot read.
    init(parsing text: String) throws(CallScriptError) {
        var steps: [Step] = []
        for raw in text.split(separator: ";") {
            let words = raw.split(separator: " ").map(String.init)
            guard let verb = words.first?.lowercased() else { continue }
            switch (verb, words.count) {
            case ("wait", 2):
                guard let ms = Int(words[1]), (0...3_600_000).contains(ms) else {
                    throw CallScriptError("wait needs milliseconds, got '\(words[1])'")
                }
                steps.append(.wait(ms))
            case ("hold", 1): steps.append(.hold)
            case ("resume", 1): steps.append(.resume)
            case ("dtmf", 2):
                guard words[1].allSatisfy({ "0123456789*#ABCDabcd".contains($0) }) else {
                    throw CallScriptError("dtmf takes keypad digits, got '\(words[1])'")
                }
                steps.append(.dtmf(words[1]))
            case ("mute", 1): steps.append(.mute(true))
            case ("unmute", 1): steps.append(.mute(false))
            case ("end", 1): steps.append(.end)
            default:
                throw CallScriptError(
                    "cannot read step '\(raw.trimmingCharacters(in: .whitespaces))' (steps: wait MS, hold, resume, dtmf DIGITS, mute, unmute, end)")
            }
        }
        guard !steps.isEmpty else { throw CallScriptError("the script has no steps") }
        self.steps = steps
    }

    /// The action a step performs on `conversation` (nil for `wait`).
    static func action(for step: Step, conversation: UUID) -> ConversationAction? {
        switch step {
        case .wait: nil
        case .hold: .pause(conversationUUID: conversation, isPaused: true)
        case .resume: .pause(conversationUUID: conversation, isPaused: false)
        case .dtmf(let digits): .playTone(conversationUUID: conversation, digits: digits)
        case .mute(let muted): .mute(conversationUUID: conversation, isMuted: muted)
        case .end: .end(conversationUUID: conversation)
        }
    }
}

/// A script step parleyd cannot read.
struct CallScriptError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
