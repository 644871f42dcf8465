import ConversationKit
import Foundation
import SIPMessages
import SIPTransport

/// Following a redirection (3xx) of an outgoing call: the leg names the target, the driver locates it (through the
/// call's account's outbound proxy, as the first INVITE went) and hands the leg where to send the INVITE again.
extension SIPUserAgent {
    /// Locates `target` for `uuid`'s leg: at once for a numeric host, on a later turn for a name.
    func followRedirect(to target: SIPURI, for uuid: UUID) {
        let from = peek(uuid) { $0.invite.headers.from?.uri } ?? nil
        let account = from.flatMap { accountsByAddress[Self.addressKey($0)] }.map { accounts[$0].account }
        locate(nextHop(for: target, through: account)) { [weak self] result in
            guard let self else { return }
            let placedOver = self.peek(uuid) { $0.outgoingDestination?.kind } ?? nil
            var located = result
            if case .success(let targets) = result, let placedOver, targets[0].kind != placedOver {
                located = .failure(HandleDialError("it is reached over \(targets[0].kind.rawValue), the call was placed over \(placedOver.rawValue)"))
            }
            if case .failure(let problem) = located, self.peek(uuid, { $0.isFollowingRedirect }) == true {
                self.onEvent?(.failure(uuid, "the call was redirected to \(target), which cannot be called: \(problem)"))
            }
            self.drive(uuid) { leg, context in
                switch located {
                case .success(let targets): leg.redirected(to: target, at: targets[0], in: context)
                case .failure(let problem): leg.redirectFailed(problem.description, in: context)
                }
            }
            // The target's other servers, in turn, if nothing answers at the first (as for the first INVITE).
            if case .success(let targets) = located, self.legs[UUIDKey(uuid)] != nil {
                self.inviteAlternatives[UUIDKey(uuid)] = targets.count > 1 ? Array(targets.dropFirst()) : nil
            }
        }
    }
}
