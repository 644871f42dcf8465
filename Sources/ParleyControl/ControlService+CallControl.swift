import ControlProtocol
import ConversationKit
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

extension ControlService {
    /// Whom a `transfer` hands the remote party to: `to` read as a dial target (blind), or the peer of the answered
    /// call `toConversation` with Replaces naming that call (attended).
    func transferTarget(_ params: TransferParams, from uuid: UUID) throws(ControlError) -> Handle {
        if let other = params.toConversation {
            let consultation = try conversation(other, field: "toConversation")
            guard consultation != uuid else {
                throw ControlError(.invalidParams, "An attended transfer goes to another call, not to the same one.", field: "toConversation")
            }
            guard let target = engine.attendedTransferTarget(to: consultation) else {
                throw ControlError(.refused, "The call to transfer to is not answered (an attended transfer needs an answered consultation call).", field: "toConversation")
            }
            return target
        }
        switch DialTarget.handle(for: params.to ?? "", configuration: engine.configuration) {
        case .success(let found): return found
        case .failure(let problem):
            throw ControlError(.invalidParams, problem.message, details: .init(field: "to", technical: problem.technical))
        }
    }
}
