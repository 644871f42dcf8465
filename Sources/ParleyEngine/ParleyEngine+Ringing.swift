import ConversationKit
import Foundation

/// The ringtone and the ringback follow the engine's events (``Ringer``); a frontend silences one call.
extension ParleyEngine {
    /// Plays the ringer's sounds with `player` from now on (ParleyNode's desktop ringer, when calls use the device).
    public func setRinger(_ player: any CallRinging) {
        ringing.withLock { $0.player = player }
    }

    /// Stops the sound of a ringing call (the call goes on ringing); false when `conversationUUID` is not ringing.
    @discardableResult
    public func silenceRinging(_ conversationUUID: UUID) -> Bool {
        ringing.withLock { state in
            let (wasRinging, effects) = state.ringer.silence(conversationUUID)
            for effect in effects { state.player?.ring(effect) }
            return wasRinging
        }
    }

    /// Feeds the ringer what changed; its effects are handed to the player in order (under the lock, so they keep it).
    func followRinging(_ event: EngineEvent) {
        let effects: (inout Ringer) -> [Ringer.Effect]
        switch event {
        case .conversationChanged(let transition):
            let conversation = transition.conversation
            effects = { $0.conversationChanged(conversation.uuid, direction: conversation.direction, state: conversation.state) }
        case .mediaChanged(let uuid, let audio, _): effects = { $0.mediaChanged(uuid, hasAudio: audio != nil) }
        case .historyRecorded, .tonesReceived, .transferProgress, .mediaStats, .audioLevels, .actionPerformed, .registrationChanged, .pushHandled,
            .actionSettled, .group, .collaboration, .doNotDisturbChanged, .browserAudioChanged, .audioRouteChanged:
            return
        }
        ringing.withLock { state in
            for effect in effects(&state.ringer) { state.player?.ring(effect) }
        }
    }
}
