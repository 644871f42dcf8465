import CallHistory
import Collaboration
import ConversationKit
import Foundation
import GroupActivities

/// What the engine tells observers (a frontend's event stream).
public enum EngineEvent: Sendable {
    /// Anything about a conversation changed (its state, members, capabilities, mute, group…).
    case conversationChanged(ConversationTransition)
    /// An ended conversation is now stored in the call history, as this record.
    case historyRecorded(UUID, recordID: Int64)
    /// The peer sent keypad tones in this conversation.
    case tonesReceived(UUID, digits: String)
    /// A transfer in this conversation progressed: the status line of a NOTIFY we received (we transfer the peer) or
    /// sent (the peer transfers us), and whether it is the last.
    case transferProgress(UUID, SIPFinalStatus, final: Bool, transferee: Bool)
    /// The conversation's negotiated audio or video changed (nil: it has none now), when calls carry media.
    case mediaChanged(UUID, NegotiatedAudio?, video: NegotiatedVideo?)
    /// The conversation's audio figures, every two seconds while parleyd carries its audio.
    case mediaStats(UUID, CallQuality)
    /// How loud the conversation's audio is (-dBov, 0–127: RFC 6464's scale; nil: not measured), a few times a
    /// second while someone asked for levels (``ParleyEngine/setAudioLevelDemand(_:)``).
    case audioLevels(UUID, heard: Int?, said: Int?)
    /// An action went to the engine (it is pending on its conversation until it settles).
    case actionPerformed(ConversationAction)
    /// An account's registration changed state.
    case registrationChanged(Account, RegistrationState)
    /// Do-not-disturb was turned on or off.
    case doNotDisturbChanged(Bool)
    /// The devices calls play on changed: a call's chosen device went (the call, nil for a new default), the source
    /// and sink in use now, why.
    case audioRouteChanged(UUID?, source: String?, sink: String?, reason: String)
    /// A page's part in the conversation's audio (browser audio, named by its session) is `connecting`,
    /// `connected` or `ended` (why).
    case browserAudioChanged(UUID, session: String, state: String, reason: String?)
    /// A VoIP push was handled.
    case pushHandled(callID: String, handling: PushHandling)
    /// An action (from a frontend or the network) completed, failed or timed out.
    case actionSettled(ConversationAction, ConversationAction.State)
    /// A group session's news for the frontend: offered, joined or invalidated, participants, a message, how a
    /// send went, text from a plain softphone outside any session.
    case group(GroupEffect)
    /// A collaboration's news: it started, was shared with us, changed or ended; an update waits for confirmation;
    /// an action completed; a proof was checked; a notice came; a member announced their identity.
    case collaboration(CollaborationEffect)
}
