import CommandLineSupport
import ControlProtocol

extension ControlCommands {
    /// `parley forward [always|busy|no-answer TARGET|off [SECONDS]]` as the `forwarding` method's params.
    static func forwarding(_ words: [String]) throws(UsageError) -> ForwardingParams {
        guard let rule = words.first else { return ForwardingParams() }
        guard words.count >= 2 else { throw UsageError("parley forward \(rule) takes a TARGET (a SIP URI) or off") }
        let target = words[1] == "off" ? "" : words[1]
        switch rule {
        case "always", "busy":
            guard words.count == 2 else { throw UsageError("parley forward \(rule) takes one TARGET or off") }
            return rule == "always" ? ForwardingParams(always: target) : ForwardingParams(busy: target)
        case "no-answer":
            guard words.count == 2 || target != "" else { throw UsageError("parley forward no-answer off takes no SECONDS") }
            let seconds = try words.dropFirst(2).first.map { text throws(UsageError) in
                guard let value = Int(text), (1...600).contains(value) else {
                    throw UsageError("SECONDS after the target goes from 1 to 600, got '\(text)'")
                }
                return value
            }
            return ForwardingParams(noAnswer: target, noAnswerSeconds: seconds)
        default:
            throw UsageError("parley forward takes always, busy or no-answer (or nothing, to say how it is), got '\(rule)'")
        }
    }
}

extension ControlRendering {
    /// The forwarding in force, a line per rule.
    static func forwarding(_ state: ForwardingState) -> String {
        guard state.always != nil || state.busy != nil || state.noAnswer != nil else { return "no forwarding" }
        var lines: [String] = []
        if let always = state.always { lines.append("always     \(always) (every call, before it rings)") }
        if let busy = state.busy { lines.append("busy       \(busy) (do-not-disturb on, or every line taken)") }
        if let noAnswer = state.noAnswer { lines.append("no-answer  \(noAnswer) (after \(state.noAnswerSeconds) s of ringing)") }
        return lines.joined(separator: "\n")
    }
}
