/// How loud a call's audio is, as RFC 6464 says it: the level in -dBov, 0 (full scale) to 127 (silence), measured by
/// the pipeline's `level` elements over a quarter of a second (`PipelineDescription.levelIntervalMilliseconds`).
public struct AudioLevels: Sendable, Equatable {
    /// What the peer sends us, decoded; nil when nothing was measured since the last report (nothing arrived).
    public var heard: Int?
    /// What the local source gives the call, after mute; nil when nothing was measured.
    public var said: Int?

    /// Levels as given (each -dBov, 0–127).
    public init(heard: Int?, said: Int?) {
        self.heard = heard
        self.said = said
    }

    /// The -dBov of a `level` element's RMS in dB (0 or below; digital silence is far below -127): rounded, capped.
    static func dBov(_ rms: Double) -> Int {
        guard rms.isFinite, rms < 0 else { return rms.isFinite ? 0 : 127 }
        return min(127, Int((-rms).rounded()))
    }
}

/// Who wants a call's audio levels, and where they go: asked at every poll of the pipeline's bus (ten times a
/// second), so the `level` elements post only while `wanted` says someone listens.
public struct AudioLevelReporting: Sendable {
    /// Whether anyone listens now.
    public let wanted: @Sendable () -> Bool
    /// Each measurement (a few a second while wanted), on the session's queue.
    public let reported: @Sendable (AudioLevels) -> Void

    /// Reports to `reported` while `wanted`.
    public init(wanted: @escaping @Sendable () -> Bool, reported: @escaping @Sendable (AudioLevels) -> Void) {
        self.wanted = wanted
        self.reported = reported
    }
}
