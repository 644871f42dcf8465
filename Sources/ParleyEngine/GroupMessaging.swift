import ConversationKit
import Foundation
import GroupActivities
import ParleyIO
import SIPMessages
import SIPSignaling

/// The driver of the node's ``GroupMessenger``: it feeds the machine the conversations as they change, the group
/// MESSAGEs the legs receive and the answers to the ones they sent, and carries out its effects — a MESSAGE on a
/// leg, a leg's resume timer, ending a conversation whose dialog is dead, and events for the frontends.
///
/// Confined to the engine's thread, like the user agent that owns it.
final class GroupMessaging {
    private(set) var messenger: GroupMessenger
    /// Whether the machine hears of calls yet: not before the node's first group request or group MESSAGE. Most nodes
    /// never carry a group session, and telling the machine of every change of every call cost each call about 3 %
    /// of the engine thread's time. Woken, it first hears of every conversation there is, then of each change.
    private var isAwake = false
    private unowned let agent: SIPUserAgent
    private var resumeTimers: [UUIDKey: EngineTimer] = [:]
    /// Told of everything a frontend hears (offers, state changes, participants, messages, send results, text).
    var onEvent: ((GroupEffect) -> Void)?

    init(agent: SIPUserAgent, localName: String, messagesPerSecond: Int) {
        self.agent = agent
        var limits = GroupLimits()
        limits.messagesPerSecond = messagesPerSecond
        limits.burst = messagesPerSecond * 2
        messenger = GroupMessenger(localName: localName, limits: limits)
    }

    private var now: Duration { agent.environment.uptime }

    // MARK: Inputs

    /// A conversation changed: the machine hears whether it is up, its group, how its peer reads messages.
    func conversationChanged(_ reported: Conversation) {
        guard isAwake else { return }
        let uuid = reported.uuid
        // A change reported off this thread arrives late: what the manager holds now wins, and one it no longer holds
        // has left (a stale "joined" must not bring an ended call back).
        let current = agent.manager.conversation(uuid)
        let conversation = current ?? reported
        if current == nil || conversation.state == .left {
            guard messenger.isKnown(uuid) else { return }
            apply(messenger.legEnded(uuid, now: now))
            if let timer = resumeTimers.removeValue(forKey: UUIDKey(uuid)) { agent.environment.cancel(timer) }
            return
        }
        let connected = conversation.state == .joined || conversation.state == .paused
        // Conversations that never connected cost the machine nothing.
        guard connected || messenger.isKnown(uuid) else { return }
        let facts = agent.peek(uuid) { leg in (leg.remoteHandle, leg.peerGroupFormat, leg.signalsOverStream) }
        guard let (handle, format, isStream) = facts else { return }
        let leg = GroupMessenger.Leg(
            uuid: uuid, name: handle.displayName.isEmpty ? handle.value : handle.displayName, format: format, isStream: isStream,
            group: conversation.groupUUID, isConnected: connected)
        apply(messenger.legChanged(leg, now: now))
    }

    /// A MESSAGE in a conversation's dialog, for its group messenger: answered with the machine's status.
    func received(_ request: SIPRequest, key: TransactionKey, on uuid: UUID, toTag: String?) {
        wake()
        let contentType = request.headers.contentType?.headerValue ?? ""
        let (status, effects) = messenger.receive(request.body, contentType: contentType, on: uuid, now: now)
        var extra: SIPHeaders = [:]
        if status == 415 { extra.append("Accept", GroupMessenger.acceptedTypes) }
        if status == 503 { extra.append("Retry-After", "1") }
        agent.respond(to: request, key: key, status: status, toTag: toTag, extra: extra)
        apply(effects)
    }

    /// Text from outside a call's dialog whose From names the call's peer: frontends hear it as a claim; no session
    /// ever takes it as a member's.
    func unverifiedText(_ text: String, on uuid: UUID, claimedSender: String) {
        onEvent?(.textReceived(leg: uuid, text: text, claimedSender: claimedSender))
    }

    func answered(token: UInt64, status: Int, retryAfter: Int?, on uuid: UUID) {
        apply(messenger.answered(leg: uuid, token: token, status: status, retryAfter: retryAfter.map { .seconds($0) }, now: now))
    }

    func failed(token: UInt64, on uuid: UUID) {
        apply(messenger.failed(leg: uuid, token: token, now: now))
    }

    /// Starts telling the machine of calls (see `isAwake`), with every conversation the manager holds now.
    private func wake() {
        guard !isAwake else { return }
        isAwake = true
        for conversation in agent.manager.conversations { conversationChanged(conversation) }
    }

    // MARK: The frontend's requests

    /// Whether a group session may be activated on the conversation (it is up, over SIP).
    func isEligible(_ conversation: UUID) -> Bool {
        wake()
        return messenger.isEligible(conversation)
    }

    func activate(_ activity: GroupActivity, on conversation: UUID) -> Result<GroupSessionInfo, GroupSendError> {
        wake()
        let outcome = messenger.activate(
            activity, on: conversation, sessionID: RandomUUID.make().uuidString.lowercased(),
            localID: RandomUUID.make().uuidString.lowercased(), now: now)
        apply(outcome.effects)
        return outcome.result
    }

    func join(_ session: String) -> Result<GroupSessionInfo, GroupSendError> {
        wake()
        let outcome = messenger.join(session, now: now)
        apply(outcome.effects)
        return outcome.result
    }

    func leave(_ session: String, end: Bool) -> Result<Void, GroupSendError> {
        guard messenger.session(session) != nil else { return .failure(.unknownSession(session)) }
        apply(end ? messenger.end(session, now: now) : messenger.leave(session, now: now))
        return .success(())
    }

    func send(
        _ data: JSONValue, type: String, to recipients: GroupRecipients, mode: GroupDeliveryMode, keep: Bool, in session: String
    ) -> Result<UInt64, GroupSendError> {
        let outcome = messenger.send(data, type: type, to: recipients, mode: mode, keep: keep, in: session, now: now)
        apply(outcome.effects)
        return outcome.result
    }

    /// The SIP form of the machine's two body types.
    static func contentType(_ text: String) -> SIPContentType {
        guard text.hasPrefix("text/plain") else { return SIPContentType(type: "application", subtype: "vnd.parley.group+json") }
        return SIPContentType(type: "text", subtype: "plain", parameters: [SIPParameter(name: "charset", value: "utf-8")])
    }

    // MARK: Effects

    private func apply(_ effects: [GroupEffect]) {
        for effect in effects {
            switch effect {
            case .transmit(let uuid, let transmission):
                let contentType = Self.contentType(transmission.contentType)
                agent.drive(uuid) { leg, context in
                    leg.sendMessage(token: transmission.token, contentType: contentType, body: transmission.body, in: context)
                }
                if agent.peek(uuid, { _ in true }) == nil { apply(messenger.failed(leg: uuid, token: transmission.token, now: now)) }
            case .resumeLater(let uuid, let delay):
                let key = UUIDKey(uuid)
                if let old = resumeTimers.removeValue(forKey: key) { agent.environment.cancel(old) }
                resumeTimers[key] = agent.environment.schedule(after: delay) { [weak self] in
                    guard let self else { return }
                    self.resumeTimers[key] = nil
                    self.apply(self.messenger.resume(leg: uuid, now: self.now))
                }
            case .endConversation(let uuid, let status):
                agent.log.info("\(uuid): its dialog failed a group message (\(status)); ending the call")
                try? agent.manager.perform([.end(conversationUUID: uuid)])
            case .log(let line):
                agent.log.debug("group: \(line)")
            case .sessionOffered, .sessionChanged, .participantsChanged, .deliver, .sendFinished, .textReceived:
                onEvent?(effect)
            }
        }
    }
}
