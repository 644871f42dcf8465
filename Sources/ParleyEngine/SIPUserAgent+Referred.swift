import ConversationKit
import Foundation
import SIPMessages

/// Being transferred: the call a peer's REFER asks for is a conversation of its own, placed like any Start; its
/// outcome goes back to the leg whose peer asked (``CallLeg/referredCallProgress(_:_:in:)``), as NOTIFYs.
///
///   leg: transferAsked(target) ──► Start(target) ── connected ──► leg: NOTIFY 200, BYE (transferred)
///                                        └── ended first ──► leg: NOTIFY <its INVITE's final status, else 503>
extension SIPUserAgent {
    /// Places the call the peer of `referrer` asked for.
    func placeReferredCall(to target: SIPURI, for referrer: UUID) {
        let start = ConversationAction.start(handles: [Handle(kind: .generic, value: target.description)])
        referredCalls[UUIDKey(start.conversationUUID)] = referrer
        log.info("\(referrer): transferred by the peer: calling \(target) (conversation \(start.conversationUUID))")
        do {
            try manager.perform([start])
        } catch {
            referredCallFailed(start.conversationUUID, SIPFinalStatus(code: 503, reason: "Service Unavailable"))
        }
    }

    /// A referred call's conversation connected or ended: the referrer's peer is told.
    func referredCallReported(_ event: Conversation.Event, uuid: UUID) {
        guard let referrer = referredCalls[UUIDKey(uuid)] else { return }
        switch event {
        case .connected:
            referredCalls.removeValue(forKey: UUIDKey(uuid))
            referredStatus.removeValue(forKey: UUIDKey(uuid))
            drive(referrer) { leg, context in leg.referredCallProgress(200, "OK", in: context) }
        case .ended:
            referredCallFailed(uuid, referredStatus[UUIDKey(uuid)] ?? SIPFinalStatus(code: 503, reason: "Service Unavailable"))
        case .startedConnecting, .updated:
            break
        }
    }

    /// A referred call that will not connect: the referrer's peer hears its final status.
    func referredCallFailed(_ uuid: UUID, _ status: SIPFinalStatus) {
        guard let referrer = referredCalls.removeValue(forKey: UUIDKey(uuid)) else { return }
        referredStatus.removeValue(forKey: UUIDKey(uuid))
        guard legs[UUIDKey(referrer)] != nil else { return }
        drive(referrer) { leg, context in leg.referredCallProgress(status.code, status.reason, in: context) }
    }
}
