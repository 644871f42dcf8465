import ConversationKit
import Foundation

/// What the desktop should sound while calls ring, as a pure value (docs/desktop.md, "Audio: the phone role,
/// ringing, echo cancellation"): the conversations' states and early media in, a sound to start or stop out.
///
/// ```
///   an incoming call rings (not silenced)            ──► ringtone   (wins over a ringback)
///   else an outgoing call rings at the far end (180)
///        and no early media came                     ──► ringback
///   else                                             ──► nothing    (answered, declined, cancelled, ended, silenced,
///                                                                    early media)
/// ```
public struct Ringer: Sendable, Equatable {
    /// The sounds it plays.
    public enum Sound: Sendable, Equatable {
        /// An incoming call rings here (the sound theme's `phone-incoming-call`).
        case ringtone
        /// The far end rings (the sound theme's `phone-outgoing-calling`).
        case ringback
    }

    /// What to do after an input.
    public enum Effect: Sendable, Equatable {
        /// Start playing this sound, looped.
        case play(Sound)
        /// Stop the sound playing.
        case stop
    }

    /// Incoming conversations ringing here, outgoing ones ringing at the far end.
    private var incoming: Set<UUID> = []
    private var outgoing: Set<UUID> = []
    /// Ringing conversations whose sound the user silenced, and outgoing ones with early media.
    private var silenced: Set<UUID> = []
    private var earlyMedia: Set<UUID> = []
    /// What plays now.
    public private(set) var playing: Sound?

    /// A ringer playing nothing.
    public init() {}

    /// A conversation's state changed (or it was seen first).
    public mutating func conversationChanged(_ uuid: UUID, direction: Conversation.Direction, state: Conversation.State) -> [Effect] {
        incoming.remove(uuid)
        outgoing.remove(uuid)
        switch state {
        case .ringing:
            switch direction {
            case .incoming: incoming.insert(uuid)
            case .outgoing: outgoing.insert(uuid)
            }
        case .idle, .joining, .joined, .paused, .leaving, .left:
            silenced.remove(uuid)
            if state != .idle { earlyMedia.remove(uuid) }
        }
        return settle()
    }

    /// A conversation's negotiated audio changed: while an outgoing call rings, audio is the far end's early media.
    public mutating func mediaChanged(_ uuid: UUID, hasAudio: Bool) -> [Effect] {
        if hasAudio { earlyMedia.insert(uuid) } else { earlyMedia.remove(uuid) }
        return settle()
    }

    /// The user silenced a call (it keeps ringing, without sound); false when it was not ringing.
    public mutating func silence(_ uuid: UUID) -> (wasRinging: Bool, effects: [Effect]) {
        guard incoming.contains(uuid) || outgoing.contains(uuid) else { return (false, []) }
        silenced.insert(uuid)
        return (true, settle())
    }

    /// The sound the calls want now.
    private var wanted: Sound? {
        if !incoming.subtracting(silenced).isEmpty { return .ringtone }
        if !outgoing.subtracting(silenced).subtracting(earlyMedia).isEmpty { return .ringback }
        return nil
    }

    private mutating func settle() -> [Effect] {
        let wanted = wanted
        guard wanted != playing else { return [] }
        defer { playing = wanted }
        return (playing == nil ? [] : [.stop]) + (wanted.map { [.play($0)] } ?? [])
    }
}

/// What plays a ``Ringer``'s sounds (ParleyNode's desktop ringer); told on whichever thread the engine's events come,
/// in order. It must not call back into the engine.
public protocol CallRinging: AnyObject, Sendable {
    /// Carries out one of the ringer's effects.
    func ring(_ effect: Ringer.Effect)
}
