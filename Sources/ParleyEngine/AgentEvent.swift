import CallHistory
import ConversationKit
import Foundation

/// What the user agent tells its engine, one value per fact, through one stream (``SIPUserAgent/onEvent``). The
/// engine keeps what it must remember about live calls and turns the rest into ``EngineEvent``s, the one stream every
/// view (the control API, the audio feed, later D-Bus and notifications) subscribes to (docs/architecture.md, "From a
/// SIP message to every view").
///
/// ```
///   SIP message ─► transactions ─► call leg (pure) ─► effects ─► SIPUserAgent ─┬─► ConversationManager (lifecycle)
///                                                                             └─► AgentEvent ─► ParleyEngine
///   ConversationManager's delegate ─► ParleyEngine ─► EngineEvent ─► observeEvents: ControlService, AudioFeed, …
/// ```
enum AgentEvent {
    /// A new call's conversation and Call-ID, before the conversation is reported.
    case callCreated(UUID, callID: String)
    /// A call whose conversation was never reported (the manager refused it): nothing waits for its end.
    case callRefused(UUID, callID: String)
    /// An account's registration changed state.
    case registrationChanged(Account, RegistrationState)
    /// Keypad tones the peer sent in a call.
    case tonesReceived(UUID, digits: String)
    /// A transfer's progress in a call: a NOTIFY's status line, received (we transfer) or sent (we are transferred).
    case transferProgress(UUID, SIPFinalStatus, final: Bool, transferee: Bool)
    /// A call's negotiated audio changed (nil: it has none now), with a media handler.
    case mediaChanged(UUID, NegotiatedAudio?, video: NegotiatedVideo?)
    /// A call's audio figures, just before its audio stops (the leg is forgotten).
    case finalStatistics(UUID, CallQuality)
    /// The final response that refused a call's INVITE, before the leg hears it.
    case finalStatus(UUID, SIPFinalStatus)
    /// Why a conversation failed, in words (the host not found, nobody listening, no answer within timer B).
    case failure(UUID, String)
    /// A call refused because the caller policy does not accept its caller, with its Call-ID and the account it was
    /// made to (at most `EngineConfiguration.blockedRecordsPerMinute` a minute).
    case callerBlocked(Handle, callID: String, account: String?)
    /// A call refused because do-not-disturb is on (486), with its Call-ID and account (as limited as blocked ones).
    case refusedByDoNotDisturb(Handle, callID: String, account: String?)
    /// A call forwarded before it rang (302: always, or busy), with its Call-ID and account (as limited as blocked
    /// ones).
    case forwarded(Handle, callID: String, account: String?)
}
