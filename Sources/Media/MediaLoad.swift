import Foundation
import Synchronization

/// Whether the media threads keep up (issue 48's load check), as a pure value fed one sample a second: the worst
/// lag of any call's sending chain in that second (`send_lag.h`). A machine that keeps up has its live sources'
/// buffers through the send valve within a few milliseconds of their period's end; when calls wait for a core the
/// lag grows, and every peer hears gaps. Two seconds running at ``enterLag`` or more: new calls with audio are
/// refused; three running under ``exitLag``: taken again (the gap between the two keeps it from flapping).
///
/// ```
///   keeping up ──lag ≥ enterLag, 2 samples running──► behind (new calls with audio get 503)
///   behind ──lag < exitLag, 3 samples running──► keeping up
/// ```
public struct MediaLoadCheck: Sendable, Equatable {
    /// The lag that, sustained, says the machine carries all it can: over the jitter buffers' 60 ms, what a peer
    /// hears as a gap.
    public static let enterLag = Duration.milliseconds(80)
    /// The lag under which, sustained, it takes calls again.
    public static let exitLag = Duration.milliseconds(30)
    static let enterSamples = 2
    static let exitSamples = 3

    /// Whether new calls with audio are refused now.
    public private(set) var isBehind = false
    /// The last sample's worst lag.
    public private(set) var lastLag = Duration.zero
    private var run = 0

    /// A check that keeps up.
    public init() {}

    /// One second's worst lag; true when that changed ``isBehind``.
    @discardableResult
    public mutating func sample(worstLag: Duration) -> Bool {
        lastLag = worstLag
        let pushes = isBehind ? worstLag < Self.exitLag : worstLag >= Self.enterLag
        run = pushes ? run + 1 : 0
        guard run >= (isBehind ? Self.exitSamples : Self.enterSamples) else { return false }
        isBehind.toggle()
        run = 0
        return true
    }
}

/// The process's media load: every session notes its pipeline's send lag each time it polls (every 100 ms), and
/// whichever poll finds the last sample a second old or more feeds the worst of that second to the check. With no
/// call up nothing samples, and a sample three seconds old or more counts as keeping up.
public enum MediaLoad {
    private struct State {
        var check = MediaLoadCheck()
        var worst = Duration.zero
        var sampledAt: ContinuousClock.Instant?
    }
    private static let state = Mutex(State())

    /// A session's reading of its send lag.
    static func note(_ lag: Duration, at now: ContinuousClock.Instant = .now) {
        state.withLock { state in
            state.worst = max(state.worst, lag)
            guard let last = state.sampledAt else {
                state.sampledAt = now
                return
            }
            guard now - last >= .seconds(1) else { return }
            let worst = state.worst
            state.worst = .zero
            state.sampledAt = now
            // A sample long after the last (no call polled in between) starts a fresh run.
            if now - last >= .seconds(3) { state.check = MediaLoadCheck() }
            state.check.sample(worstLag: worst)
        }
    }

    /// Whether new calls with audio should be refused, and the last second's worst lag.
    public static func current(at now: ContinuousClock.Instant = .now) -> (isBehind: Bool, lag: Duration) {
        state.withLock { state in
            guard let last = state.sampledAt, now - last < .seconds(3) else { return (false, .zero) }
            return (state.check.isBehind, state.check.lastLag)
        }
    }
}
