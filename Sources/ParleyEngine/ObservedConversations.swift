import CallHistory
import ConversationKit
import Foundation
import Synchronization

/// What the engine remembers about each conversation for its log: the last state seen and the SIP Call-ID.
final class ObservedConversations: Sendable {
    /// Keeps a live conversation's audio figures (one that already left keeps none: its record is written);
    /// whether it was live.
    @discardableResult
    func keep(_ quality: CallQuality, for uuid: UUID) -> Bool {
        state.withLock {
            guard $0.states[uuid] != nil else { return false }
            $0.quality[uuid] = quality
            return true
        }
    }

    struct State {
        var states: [UUID: Conversation.State] = [:]
        var callIDs: [UUID: String] = [:]
        var uuids: [String: UUID] = [:]
        var finalStatuses: [UUID: SIPFinalStatus] = [:]
        /// Why live conversations failed, in words, when the engine knows (until they leave).
        var failures: [UUID: String] = [:]
        /// The negotiated audio of calls that have some now.
        var audio: [UUID: NegotiatedAudio] = [:]
        /// Live calls' negotiated video, while they have some.
        var video: [UUID: NegotiatedVideo] = [:]
        /// The latest audio figures of live calls (their history record takes the last).
        var quality: [UUID: CallQuality] = [:]
        /// Conversations a push announced: live ones and those still in `ended`.
        var pushed: Set<UUID> = []
        /// The last `endedLimit` transitions to `left`, for whoever asks after the manager forgot them; `endedOrder`
        /// holds their uuids as a ring, the oldest at `endedNext` once it is full (a call ending at full rate must not
        /// shift the whole list).
        var ended: [UUID: ConversationTransition] = [:]
        var endedOrder: [UUID] = []
        var endedNext = 0
        static let endedLimit = 256

        mutating func rememberEnded(_ transition: ConversationTransition) {
            let uuid = transition.conversation.uuid
            guard ended.updateValue(transition, forKey: uuid) == nil else { return }
            guard endedOrder.count == Self.endedLimit else { return endedOrder.append(uuid) }
            let forgotten = endedOrder[endedNext]
            ended[forgotten] = nil
            pushed.remove(forgotten)
            endedOrder[endedNext] = uuid
            endedNext = (endedNext + 1) % Self.endedLimit
        }
    }
    let state = Mutex(State())
}
