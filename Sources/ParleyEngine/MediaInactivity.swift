import Foundation

/// Whether a call's peer still sends media: the media timeout (baresip's `rtp_timeout`, linphone's
/// `nortp_timeout`) as a pure value. The driver tells it when the call's negotiated audio changes and, a few times
/// per timeout, how many RTP and RTCP packets have arrived so far; it says when the count has stood still for the
/// whole timeout while the peer should have been sending, and the driver hangs up (BYE, `mediaTimeout`).
///
/// ```
///   idle ──audio flowing both ways──▶ watching(since, count) ──count moved──▶ watching(now, new count)
///    ▲                                  │   │
///    └──hold (either side), no audio ───┘   └──count still for the timeout──▶ timedOut (the driver sends BYE)
/// ```
/// Only audio that flows both ways is watched: a peer that holds us, or that we hold, may rightly send nothing.
/// Each change of the audio starts the wait afresh (a re-INVITE moves the stream: the new one gets a full timeout).
struct MediaInactivity: Equatable {
    /// Where the watch stands.
    enum State: Equatable {
        /// Nothing expected: no audio, or it does not flow both ways.
        case idle
        /// Packets are expected: the count last seen (nil: not read yet) and since when it has not moved.
        case watching(since: Duration, count: Int?)
        /// The count stood still for the whole timeout: the call is being ended.
        case timedOut
    }

    /// Where it stands.
    private(set) var state: State = .idle

    /// Whether a check can still time it out.
    var isWatching: Bool {
        if case .watching = state { true } else { false }
    }

    /// The call's negotiated audio is now `audio` (nil: none) at `now`; `arrived` is the packet count then, when the
    /// media layer already has one.
    mutating func audioChanged(_ audio: NegotiatedAudio?, arrived: Int?, now: Duration) {
        guard state != .timedOut else { return }
        let flows = audio.map { $0.sends && $0.receives } ?? false
        state = flows ? .watching(since: now, count: arrived) : .idle
    }

    /// A check at `now` with `arrived` packets so far (nil: the media layer cannot tell; nothing is decided): true
    /// when the count has not moved for `timeout`, and the call must end.
    mutating func check(arrived: Int?, now: Duration, timeout: Duration) -> Bool {
        guard case .watching(let since, let count) = state, let arrived else { return false }
        guard let count else {
            // The first reading is the baseline: the wait counts from when the audio began unless packets came.
            state = .watching(since: arrived > 0 ? now : since, count: arrived)
            return false
        }
        if arrived != count {
            state = .watching(since: now, count: arrived)
            return false
        }
        guard now - since >= timeout else { return false }
        state = .timedOut
        return true
    }

    /// How often the driver checks the watched calls for a timeout of `timeout`: six times per timeout, between
    /// half a second and five seconds apart (a call ends at most one interval after its timeout).
    static func checkInterval(for timeout: Duration) -> Duration {
        min(max(timeout / 6, .milliseconds(500)), .seconds(5))
    }
}
