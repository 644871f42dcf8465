import ConversationKit
import Foundation
import SIPMessages

extension ParleyEngine {
    /// The target of an attended transfer to the call `consultation` (answered, ours): its peer's URI with a
    /// `Replaces` header naming that call (RFC 3891), as a handle a `transfer` action takes; nil when that call has no
    /// answered SIP dialog. From any thread.
    public func attendedTransferTarget(to consultation: UUID) -> Handle? {
        let target = onEngine { agent in agent.peek(consultation) { $0.replacesTarget } ?? nil } ?? nil
        return target.map { Handle(kind: .generic, value: $0.description) }
    }
}
