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
        var bare = target
        bare.headers = SIPParameters()
        let start = ConversationAction.start(handles: [Handle(kind: .generic, value: bare.description)])
        referredCalls[UUIDKey(start.conversationUUID)] = referrer
        // Attended: the INVITE carries the Replaces the REFER named (``invite`` takes it).
        if let replaces = target.headers["Replaces"] { replacingCalls[UUIDKey(start.conversationUUID)] = replaces }
        log.info("\(referrer): transferred by the peer: calling \(target) (conversation \(start.conversationUUID))")
        do {
            try manager.perform([start])
            try? manager.reportConversationEvent(.updated(Conversation.Update(transferredFrom: referrer)), for: start.conversationUUID)
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
        replacingCalls.removeValue(forKey: UUIDKey(uuid))
        guard legs[UUIDKey(referrer)] != nil else { return }
        drive(referrer) { leg, context in leg.referredCallProgress(status.code, status.reason, in: context) }
    }
}

/// Being the target of an attended transfer: an INVITE whose `Replaces` names one of our answered calls takes it over
/// (``CallLeg`` Replaces, RFC 3891 §3): answered at once, and the call it replaces is hung up.
extension SIPUserAgent {
    /// The call a `Replaces` header names, or why the INVITE is refused: 400 malformed, 481 no such dialog or an
    /// early one (we replace answered calls only), 486 `early-only` for an answered one, 603 transfers refused.
    func callReplaced(by value: String) -> Result<UUID, ReferRefusal> {
        guard let replaces = ReplacesHeader(value) else { return .failure(ReferRefusal(400, "Malformed Replaces")) }
        guard let uuid = legIDs[replaces.callID],
            let match = peek(uuid, { $0.replacement(toTag: replaces.toTag, fromTag: replaces.fromTag) }), match != .none
        else { return .failure(ReferRefusal(481, "Call/Transaction Does Not Exist")) }
        guard match == .confirmed else { return .failure(ReferRefusal(481, "Replaces Names An Early Dialog")) }
        guard !replaces.earlyOnly else { return .failure(ReferRefusal(486, "Busy Here")) }
        guard acceptsTransfer(from: uuid) else { return .failure(ReferRefusal(603, "Transfers Not Accepted")) }
        return .success(uuid)
    }

    /// Whether the peer of the call `uuid` may transfer us (`--accept-refer`): anyone, its contacts, or nobody.
    func acceptsTransfer(from uuid: UUID) -> Bool {
        guard let policy = configuration.transferrers else { return false }
        if case .anyone = policy { return true }
        return peek(uuid) { policy.admits($0.remoteHandle) } ?? false
    }

    /// `newCall` replaces `old`: `old` ends with BYE first (so answering does not put it on hold as a waiting call
    /// would), then `newCall` is answered (it rang only for the report).
    func takeOver(_ old: UUID, with newCall: UUID) {
        log.info("\(newCall): replaces \(old) (attended transfer): ending that one, answering this one")
        drive(old) { leg, context in leg.replaced(in: context) }
        do {
            try manager.perform([.join(conversationUUID: newCall)])
        } catch {
            log.error("\(newCall): could not answer the call that replaces \(old): \(error)")
        }
    }
}
