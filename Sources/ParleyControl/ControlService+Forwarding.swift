import ControlProtocol
import Foundation
import ParleyEngine

extension ForwardingParams {
    /// `current` with these changes: a target set (checked: a SIP URI), an empty one turned off, the seconds.
    func applied(to current: CallForwarding) throws(ControlError) -> CallForwarding {
        var forwarding = current
        for (rule, text) in [(CallForwarding.Rule.always, always), (.busy, busy), (.noAnswer, noAnswer)] {
            guard let text else { continue }
            guard forwarding.setTarget(text, of: rule) else {
                throw ControlError(
                    .invalidParams, "\(rule.rawValue) must be a SIP URI such as sip:carol@example.com (or carol@example.com), got '\(text)'.",
                    field: rule.rawValue)
            }
        }
        if let noAnswerSeconds { forwarding.noAnswerAfter = .seconds(noAnswerSeconds) }
        return forwarding
    }
}

extension ForwardingState {
    /// The state of `forwarding`.
    init(_ forwarding: CallForwarding) {
        self.init(
            always: forwarding.target(of: .always), busy: forwarding.target(of: .busy), noAnswer: forwarding.target(of: .noAnswer),
            noAnswerSeconds: Int(forwarding.noAnswerAfter.components.seconds))
    }
}
