import Collaboration
import ConversationKit
import Foundation
import GroupActivities
import ParleyIO

/// The driver of the node's ``CollaborationCenter``: it sees the group messenger's effects first (sessions joined
/// and ended, participants, the collaboration messages, which frontends do not see as group messages), and carries
/// out the center's effects — group messages, the node's own action handler, the action deadline timer, events.
///
/// Confined to the engine's thread, like the user agent that owns it.
final class Collaborations {
    /// The activity type of a group session made to carry collaborations; nodes join such sessions on their own.
    static let activityType = "parley.collaboration"

    private(set) var center: CollaborationCenter
    private unowned let agent: SIPUserAgent
    /// Sends this driver made: their reports are not a frontend's business.
    private var ownSends: Set<UInt64> = []
    /// Start actions waiting for the built-in handler: the URL and identifier it fulfils them with.
    private var startPlans: [String: (url: String, identifier: String)] = [:]
    private var deadlineTimer: EngineTimer?
    /// Messages the messenger refused while the current request ran (its type, why).
    private var refusedSends: [(type: String, error: GroupSendError)] = []
    /// Told of what frontends hear: changes, updates to confirm, completed actions, verifications, notices.
    var onEvent: ((CollaborationEffect) -> Void)?

    init(agent: SIPUserAgent, signer: any DeviceSigner, otherDevices: [[UInt8]], verifier: String, actionTimeout: Duration) {
        self.agent = agent
        center = CollaborationCenter(
            signer: signer, otherDevices: otherDevices, verifier: verifier, crypto: OpenSSLIdentityCrypto(),
            actionTimeout: Double(actionTimeout.components.seconds) + Double(actionTimeout.components.attoseconds) / 1e18)
    }

    private var now: Date { agent.environment.now }

    /// Sees a group effect before the frontends do; false when it was collaboration traffic they must not see.
    func observe(_ effect: GroupEffect) -> Bool {
        switch effect {
        case .sessionChanged(let info):
            switch info.state {
            case .joined: apply(center.sessionJoined(info.id, local: info.localParticipant, active: info.activeParticipants))
            case .invalidated: apply(center.sessionEnded(info.id))
            case .waiting: break
            }
        case .participantsChanged(let session, let added, let removed, _):
            apply(center.participantsChanged(session, added: added, removed: removed, now: now))
        case .deliver(let delivery) where CollaborationWire.isCollaboration(delivery.type):
            apply(center.received(delivery, now: now))
            return false
        case .sendFinished(let report) where ownSends.contains(report.id):
            ownSends.remove(report.id)
            if !report.failed.isEmpty || report.error != nil {
                agent.log.info("collaboration: a message did not reach \(report.failed) \(report.error.map { "\($0)" } ?? "")")
            }
            return false
        default:
            break
        }
        return true
    }

    /// After frontends heard a group effect: a session offered to carry collaborations is joined (after the offer,
    /// so a frontend sees offered, then joined).
    func followUp(_ effect: GroupEffect) {
        guard case .sessionOffered(let info) = effect, info.activity.type == Self.activityType else { return }
        if case .failure(let error) = agent.groups.join(info.id) {
            agent.log.info("collaboration: cannot join offered session \(info.id): \(error)")
        }
    }

    // MARK: The frontend's requests

    /// Starts a collaboration on a conversation's group session, activating one for it when there is none.
    func start(
        _ metadata: CollaborationMetadata, on conversation: UUID, url: String?, confirmUpdates: Bool
    ) -> Result<CollaborationInfo, CollaborationError> {
        if let error = metadata.validate() { return .failure(error) }
        var metadata = metadata
        // The initiator is this node's SIP identity unless the frontend said otherwise (recipients never see it).
        if metadata.initiatorHandle == nil { metadata.initiatorHandle = center.verifier }
        let session: String
        if let existing = agent.groups.messenger.session(on: conversation), existing.state == .joined {
            session = existing.id
        } else {
            let activity = GroupActivity(
                identifier: "parley.collaboration", title: String((metadata.title ?? "Collaboration").prefix(200)), type: Self.activityType)
            switch agent.groups.activate(activity, on: conversation) {
            case .success(let info): session = info.id
            case .failure(let error): return .failure(.notInSession("\(conversation) (\(error))"))
            }
        }
        let identifier = RandomUUID.make().uuidString.lowercased()
        let (result, effects) = center.start(metadata, on: session, confirmUpdates: confirmUpdates, now: now)
        let action: CollaborationAction
        switch result {
        case .success(let started): action = started
        case .failure(let error): return .failure(error)
        }
        startPlans[action.id] = (url ?? "parley://collaboration/\(identifier)", identifier)
        refusedSends = []
        apply(effects)
        guard let info = center.info(identifier) else { return .failure(.startFailed("the handler did not start it")) }
        // A share the members could not be sent (too large for a UDP leg…) is no share: it ends at once.
        if let refused = refusedSends.first(where: { $0.type == CollaborationWire.share }) {
            apply(center.end(identifier).1)
            return .failure(.sendFailed("\(refused.error)"))
        }
        return .success(info)
    }

    /// Runs a center request that returns a value and effects.
    func perform<Value>(_ body: (inout CollaborationCenter, Date) -> (Result<Value, CollaborationError>, [CollaborationEffect])) -> Result<Value, CollaborationError> {
        apply(center.tick(now: now))
        let (result, effects) = body(&center, now)
        apply(effects)
        return result
    }

    /// A fresh challenge for a collaboration this node owns, for a frontend (rationed).
    func challenge(_ identifier: String) -> Result<CollaborationChallenge, CollaborationError> {
        perform { center, now in (center.frontendChallenge(for: identifier, now: now), []) }
    }

    /// A notice into a collaboration's conversation.
    func post(_ event: HighlightEvent, for identifier: String) -> Result<Void, CollaborationError> {
        refusedSends = []
        let result: Result<Void, CollaborationError> = perform { center, _ in
            switch center.postNotice(event, for: identifier) {
            case .success(let effects): (.success(()), effects)
            case .failure(let error): (.failure(error), [])
            }
        }
        if case .success = result, let refused = refusedSends.first { return .failure(.sendFailed("\(refused.error)")) }
        return result
    }

    // MARK: Effects

    private func apply(_ effects: [CollaborationEffect]) {
        for effect in effects {
            switch effect {
            case .send(let session, let type, let data, let to, let keep):
                switch agent.groups.send(data, type: type, to: to.map { .only($0) } ?? .all, mode: .reliable, keep: keep, in: session) {
                case .success(let id):
                    // Every reliable send is reported once; should a report never come, the set still cannot grow for ever.
                    if ownSends.count >= 10_000 { ownSends.removeAll() }
                    ownSends.insert(id)
                case .failure(let error):
                    agent.log.info("collaboration: cannot send \(type) in \(session): \(error)")
                    refusedSends.append((type, error))
                }
            case .handle(let action):
                handle(action)
            case .log(let line):
                agent.log.debug(line)
            case .actionCompleted, .changed, .verified, .notice, .identityLearned:
                onEvent?(effect)
            }
        }
        scheduleDeadline()
    }

    /// The node's own handler: it starts collaborations itself (parleyd is the collaboration's server) and fulfils
    /// participants updates that need no confirmation, after announcing them; the rest wait for a frontend
    /// (`collaborationConfirm`).
    private func handle(_ action: CollaborationAction) {
        switch action.kind {
        case .start:
            guard let plan = startPlans.removeValue(forKey: action.id) else { return }
            apply(center.complete(action.id, with: .fulfilled(url: plan.url, identifier: plan.identifier), now: now).1)
        case .updateParticipants where !action.requiresConfirmation:
            // Announced all the same (requiresConfirmation false), so a frontend hears who was added or removed.
            onEvent?(.handle(action))
            apply(center.complete(action.id, with: .fulfilled(url: nil, identifier: nil), now: now).1)
        case .updateParticipants:
            onEvent?(.handle(action))
        }
    }

    private func scheduleDeadline() {
        if let timer = deadlineTimer { agent.environment.cancel(timer) }
        deadlineTimer = nil
        guard let deadline = center.coordinator.nextDeadline else { return }
        let delay = max(0, deadline.timeIntervalSince(now))
        deadlineTimer = agent.environment.schedule(after: .milliseconds(Int64(delay * 1000) + 1)) { [weak self] in
            guard let self else { return }
            self.deadlineTimer = nil
            self.apply(self.center.tick(now: self.now))
        }
    }
}
