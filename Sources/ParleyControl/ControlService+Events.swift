import CallHistory
import ControlProtocol
import ConversationKit
import Foundation
import ParleyEngine

/// What the event stream has said: the last view of each live conversation, so that an event names what changed and
/// a change that changes nothing a frontend sees is not sent. While nobody listens, only snapshots are kept (cheap):
/// views are made, and encoded, only for someone.
struct EventState {
    /// The last snapshot of a live conversation and what was said of it (nil: nothing, nobody listened).
    struct Known {
        var conversation: Conversation
        var callID: String?
        var finalStatus: SIPFinalStatus?
        var info: ConversationInfo?
    }

    var live: [UUID: Known] = [:]
    /// Where each line goes, and whether it is for the subscribers that asked for audio levels only.
    var sink: (@Sendable (Data, _ audioLevelsOnly: Bool) -> Void)?
    var listening: @Sendable () -> Bool = { false }
}

extension ControlService {
    /// From now on every event goes to `sink` (one line each), in the order the changes happened, while `listening`
    /// says someone is there to hear it (events nobody would read are neither made nor encoded).
    public func publishEvents(
        to sink: @escaping @Sendable (Data, _ audioLevelsOnly: Bool) -> Void, listening: @escaping @Sendable () -> Bool = { true }
    ) {
        events.withLock {
            $0.sink = sink
            $0.listening = listening
        }
    }

    /// The protocol's view of a live conversation now.
    func info(for conversation: Conversation) -> ConversationInfo {
        info(
            for: conversation, callID: engine.callID(of: conversation.uuid),
            finalStatus: engine.finalStatus(of: conversation.uuid))
    }

    func info(for conversation: Conversation, callID: String?, finalStatus: SIPFinalStatus?) -> ConversationInfo {
        ConversationInfo(
            conversation, callID: callID,
            pendingActions: engine.manager.pendingActions(for: conversation.uuid).map(Self.name(of:)),
            finalStatus: finalStatus.map { ($0.code, $0.reason) }, viaPush: engine.cameFromPush(conversation.uuid),
            contactName: contacts.contactName(for:))
    }

    /// A remembered snapshot's view, made now.
    func view(of known: EventState.Known) -> ConversationInfo {
        info(for: known.conversation, callID: known.callID, finalStatus: known.finalStatus)
    }

    /// The newest view of a conversation: live from the manager, else as it ended.
    func latestInfo(of uuid: UUID) -> ConversationInfo {
        if let conversation = engine.manager.conversation(uuid) { return info(for: conversation) }
        if let left = engine.endedTransition(of: uuid) {
            return info(for: left.conversation, callID: left.callID, finalStatus: left.finalStatus)
        }
        if let known = events.withLock({ $0.live[uuid] }) {
            return known.info ?? view(of: known)
        }
        // Gone, and out of the engine's memory of ended conversations (hundreds ended since): say only that it left.
        return ConversationInfo.forgotten(uuid: uuid.uuidString)
    }

    /// Turns an engine event into protocol events and sends them.
    func publish(_ event: EngineEvent) {
        events.withLock { state in
            for message in messages(for: event, state: &state) {
                state.sink?(message.encoded(), message.name == .audioLevels)
            }
        }
    }

    /// Sends a history change: the service's own methods change the history, and so do other parleyd sharing its
    /// database (the node hears those from the database and passes them on here).
    public func publish(_ change: HistoryChanged) {
        events.withLock { state in
            guard let sink = state.sink, state.listening() else { return }
            sink(ControlEventMessage.historyChanged(change).encoded(), false)
        }
    }

    /// Live conversations whose view changed without the engine knowing (contacts reloaded) are said again.
    func refreshLiveConversations() {
        events.withLock { state in
            guard state.sink != nil, state.listening() else { return }
            for uuid in state.live.keys.sorted(by: { $0.uuidString < $1.uuidString }) {
                guard let message = rerender(uuid, state: &state) else { continue }
                state.sink?(message.encoded(), false)
            }
        }
    }

    private func messages(for event: EngineEvent, state: inout EventState) -> [ControlEventMessage] {
        let listening = state.sink != nil && state.listening()
        switch event {
        case .conversationChanged(let transition):
            let conversation = transition.conversation
            let uuid = conversation.uuid
            guard listening else {
                if conversation.state == .left {
                    state.live[uuid] = nil
                } else {
                    state.live[uuid] = EventState.Known(
                        conversation: conversation, callID: transition.callID, finalStatus: transition.finalStatus, info: nil)
                }
                return []
            }
            let view = info(for: conversation, callID: transition.callID, finalStatus: transition.finalStatus)
            let previous = state.live[uuid].map { known in known.info ?? self.view(of: known) }
            let changes = view.changes(since: previous)
            if conversation.state == .left {
                state.live[uuid] = nil
            } else {
                state.live[uuid] = EventState.Known(
                    conversation: conversation, callID: transition.callID, finalStatus: transition.finalStatus, info: view)
            }
            guard !changes.isEmpty else { return [] }
            return [.conversationChanged(ConversationChanged(
                conversation: view, from: transition.from.map(\.rawValue), changes: changes))]
        case .actionPerformed(let action):
            guard listening else { return [] }
            return rerender(action.conversationUUID, state: &state).map { [$0] } ?? []
        case .actionSettled(let action, let settled):
            guard listening else { return [] }
            let settledEvent = ControlEventMessage.actionSettled(ActionSettled(
                action: Self.name(of: action), actionUUID: action.uuid.uuidString,
                conversation: action.conversationUUID.uuidString, state: Self.name(of: settled),
                error: error(settling: action, as: settled, state: state)))
            return [settledEvent] + (rerender(action.conversationUUID, state: &state).map { [$0] } ?? [])
        case .tonesReceived, .transferProgress, .mediaChanged, .mediaStats, .audioLevels, .historyRecorded, .registrationChanged,
            .pushHandled, .browserAudioChanged, .doNotDisturbChanged, .audioRouteChanged:
            guard listening else { return [] }
            return Self.message(for: event)
        case .group(let effect):
            if case .sendFinished(let report) = effect { groupSendFinished(report) }
            guard listening else { return [] }
            return Self.groupEvent(effect).map { [$0] } ?? []
        case .collaboration(let effect):
            guard listening else { return [] }
            return Self.collaborationEvent(effect).map { [$0] } ?? []
        }
    }

    /// The events that are one message each, whatever came before.
    private static func message(for event: EngineEvent) -> [ControlEventMessage] {
        switch event {
        case .conversationChanged, .actionPerformed, .actionSettled, .group, .collaboration:
            return []
        case .tonesReceived(let uuid, let digits):
            return [.tonesReceived(TonesReceived(conversation: uuid.uuidString, digits: digits))]
        case .transferProgress(let uuid, let status, let final, let transferee):
            return [.transferProgress(TransferProgress(
                conversation: uuid.uuidString, role: transferee ? "transferee" : "transferor", status: status.code,
                reason: status.reason, final: final))]
        case .mediaChanged(let uuid, let audio, let video):
            return [.mediaChanged(MediaChanged(conversation: uuid.uuidString, media: audio.map(Self.media), video: video.map(Self.video)))]
        case .mediaStats(let uuid, let quality):
            return [.mediaStats(MediaStats(conversation: uuid.uuidString, stats: Self.stats(quality)))]
        case .audioLevels(let uuid, let heard, let said):
            return [.audioLevels(AudioLevelsEvent(conversation: uuid.uuidString, heard: heard, said: said))]
        case .historyRecorded(let uuid, let recordID):
            return [.historyChanged(HistoryChanged(change: "inserted", records: [recordID], conversation: uuid.uuidString))]
        case .registrationChanged(let account, let registration):
            return [.registrationChanged(Self.registration(registration, of: account))]
        case .pushHandled(let callID, let handling):
            return [.pushReceived(Self.push(callID: callID, handling))]
        case .audioRouteChanged(let uuid, let source, let sink, let reason):
            return [.audioRouteChanged(AudioRouteChanged(conversation: uuid?.uuidString, source: source, sink: sink, reason: reason))]
        case .doNotDisturbChanged(let on):
            return [.doNotDisturbChanged(DoNotDisturbState(enabled: on))]
        case .browserAudioChanged(let uuid, let session, let state, let reason):
            return [.browserAudioChanged(BrowserAudioChanged(conversation: uuid.uuidString, session: session, state: state, reason: reason))]
        }
    }

    /// A live conversation's view again (pending actions or contact names moved); the event, if anything changed.
    ///
    /// When the manager already holds a newer snapshot, nothing is said now: its own `conversationChanged` is on the
    /// way and will carry the pending actions as they are then (an older snapshot never follows a newer one).
    private func rerender(_ uuid: UUID, state: inout EventState) -> ControlEventMessage? {
        guard var known = state.live[uuid], engine.manager.conversation(uuid) == known.conversation else { return nil }
        let view = self.view(of: known)
        let changes = view.changes(since: known.info ?? view)
        guard !changes.isEmpty else { return nil }
        known.info = view
        state.live[uuid] = known
        return .conversationChanged(ConversationChanged(
            conversation: view, from: known.conversation.state.rawValue, changes: changes))
    }

    /// The error a settled action reports (nil when it completed): a sentence for people, the SIP status when the
    /// network gave one.
    func error(settling action: ConversationAction, as settled: ConversationAction.State) -> ControlError? {
        events.withLock { error(settling: action, as: settled, state: $0) }
    }

    private func error(
        settling action: ConversationAction, as settled: ConversationAction.State, state: EventState
    ) -> ControlError? {
        let name = Self.name(of: action)
        switch settled {
        case .complete, .idle, .running:
            return nil
        case .timedOut:
            return ControlError(
                .timedOut, "Couldn't \(ControlError.verb(forAction: name)) the call in time; try again.",
                details: .init(action: name))
        case .failed(let reason):
            // The peer's refusal of the action's own request (a tone's INFO, a hold's re-INVITE), else the one that
            // refused the conversation's INVITE: values the engine kept, never read out of the text.
            let uuid = action.conversationUUID
            let refusal = engine.failureStatus(ofAction: action.uuid)
            let status = refusal ?? state.live[uuid]?.finalStatus ?? engine.finalStatus(of: uuid)
                ?? engine.endedTransition(of: uuid)?.finalStatus
            let failure = engine.failure(of: uuid) ?? engine.endedTransition(of: uuid)?.failure
            // A transfer's reason says who refused what (the remote party the REFER, or the target the new call).
            if case .transfer = action.kind {
                return ControlError(
                    .failed, "Couldn't transfer the call: \(reason).",
                    details: .init(sipStatus: refusal?.code, sipReason: refusal?.reason, action: name, technical: reason))
            }
            let sentence = refusal.map {
                "Couldn't \(ControlError.verb(forAction: name)) the call: the other side refused (SIP \($0.code) \($0.reason))."
            } ?? failure.map { "Couldn't \(ControlError.verb(forAction: name)) the call: \($0)." }
            return ControlError(
                .failed, sentence ?? Self.failureSentence(action: name, status: status?.code),
                details: .init(
                    sipStatus: status?.code, sipReason: status?.reason, retryAfterMs: status?.retryAfter.map { $0 * 1000 },
                    action: name,
                    technical: failure ?? reason))
        }
    }

    /// What a person reads when an action failed.
    static func failureSentence(action: String, status: Int?) -> String {
        switch status {
        case 486?, 600?: "The line is busy."
        case 603?, 607?: "The call was declined."
        case 404?, 604?: "That number or address does not exist."
        case 408?, 480?: "No answer."
        case 487?: "The call was cancelled."
        case 401?, 403?, 407?: "The call was not allowed."
        case 488?, 606?: "The other side cannot take this kind of call."
        case let code?: "The call failed (SIP \(code))."
        case nil: "Couldn't \(ControlError.verb(forAction: action)) the call."
        }
    }

    static func name(of state: ConversationAction.State) -> String {
        switch state {
        case .complete: "complete"
        case .failed: "failed"
        case .timedOut: "timedOut"
        case .idle: "idle"
        case .running: "running"
        }
    }

    static func push(callID: String, _ handling: PushHandling) -> PushReceived {
        switch handling {
        case .reported(let uuid): PushReceived(callID: callID, handling: "reported", conversation: uuid.uuidString, reason: nil)
        case .alreadyReported(let uuid):
            PushReceived(callID: callID, handling: "alreadyReported", conversation: uuid.uuidString, reason: nil)
        case .reportedAndEnded(let uuid, let reason):
            PushReceived(callID: callID, handling: "reportedAndEnded", conversation: uuid.uuidString, reason: reason)
        case .cancelled(let uuid):
            PushReceived(callID: callID, handling: "cancelled", conversation: uuid?.uuidString, reason: nil)
        case .notReported(let reason): PushReceived(callID: callID, handling: "notReported", conversation: nil, reason: reason)
        }
    }
}

extension ControlService {
    /// The protocol's view of a call's negotiated audio.
    static func media(_ audio: NegotiatedAudio) -> MediaInfo {
        MediaInfo(
            localAddress: audio.localAddress, localPort: audio.localPort, remoteAddress: audio.remoteAddress,
            remotePort: audio.remotePort, remoteRTCPPort: audio.remoteRTCPPort, codec: audio.codec.encodingName,
            payloadType: audio.payloadType, clockRate: audio.codec.clockRate, sends: audio.sends, receives: audio.receives,
            ptime: audio.ptime, telephoneEvent: audio.telephoneEvent, receivedTelephoneEvent: audio.localTelephoneEvent,
            encryption: audio.encryption, encryptionSuite: audio.srtp?.suite.rawValue,
            peerFingerprint: audio.peerFingerprint, iceState: audio.icePath?.state, iceLocalType: audio.icePath?.localType,
            iceLocal: audio.icePath?.local, iceRemoteType: audio.icePath?.remoteType, iceRemote: audio.icePath?.remote)
    }

    /// The protocol's view of a call's audio figures.
    static func stats(_ quality: CallQuality) -> MediaStatsInfo {
        MediaStatsInfo(
            codec: quality.codec, packetsSent: quality.packetsSent, packetsReceived: quality.packetsReceived,
            packetsLost: quality.lostPackets, lossPercent: (quality.lossFraction * 10_000).rounded() / 100,
            jitterMs: Self.rounded(quality.jitterMs), peerPacketsLost: quality.peerLostPackets,
            peerJitterMs: quality.peerJitterMs.map(Self.rounded), roundTripMs: quality.roundTripMs.map(Self.rounded),
            packetsDropped: quality.packetsDropped ?? 0, iceLocalType: quality.iceLocalType, iceRemoteType: quality.iceRemoteType,
            video: quality.video.map(Self.stats))
    }

    /// The protocol's view of a call's negotiated video.
    static func video(_ video: NegotiatedVideo) -> VideoInfo {
        VideoInfo(
            localPort: video.localPort, remoteAddress: video.remoteAddress, remotePort: video.remotePort, codec: video.encodingName,
            payloadType: video.payloadType, receivedPayloadType: video.localPayloadType, sends: video.sends, receives: video.receives,
            encryption: video.encryption, encryptionSuite: video.srtp?.suite.rawValue)
    }

    /// The protocol's view of a call's video figures.
    static func stats(_ video: VideoQuality) -> VideoStatsInfo {
        VideoStatsInfo(
            codec: video.codec, framesSent: video.framesSent, framesReceived: video.framesReceived,
            frameRateSent: (video.frameRateSent * 10).rounded() / 10, frameRateReceived: (video.frameRateReceived * 10).rounded() / 10,
            width: video.width, height: video.height, keyframesSent: video.keyframesSent, keyframesReceived: video.keyframesReceived,
            keyframeRequestsReceived: video.keyframeRequestsReceived, keyframeRequestsSent: video.keyframeRequestsSent,
            nacksReceived: video.nacksReceived, nacksSent: video.nacksSent, kilobitsSent: video.kilobitsSent,
            kilobitsReceived: video.kilobitsReceived)
    }

    /// Whole milliseconds (the protocol's one rule for members ending in `Ms`).
    private static func rounded(_ milliseconds: Double) -> Int { Int(milliseconds.rounded()) }
}
