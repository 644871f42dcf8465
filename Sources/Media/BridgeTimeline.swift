import CGStreamer

/// Where the bridge's frames go on a pipeline's timeline: the first frame pushed is stamped with the pipeline's
/// running time then, and each later one by its tick number, 20 ms a tick. A tick libdispatch ran late, and made
/// up at once, keeps its place (no jump in what the call sends, no silence at a receiver that keeps a timeline); a
/// stretch with no tick (nobody to mix) is a gap of its length.
///
/// ```
///   first push (pipeline playing) ──► base = running time now, first = tick
///   push at tick t ──► PTS = base + (t − first) × 20 ms
///   a pipeline not playing yet ──► nothing pushed, nothing fixed
/// ```
struct BridgeTimeline {
    private var origin: (base: Int64, tick: Int)?

    /// A frame's length on the timeline.
    static let frameNanoseconds: Int64 = 1_000_000_000 / 50

    /// Pushes one frame, made at tick `tick`, into `appsrc`; false when its pipeline does not play yet.
    @discardableResult
    mutating func push(_ samples: [Int16], tick: Int, into appsrc: UnsafeMutablePointer<GstElement>) -> Bool {
        if origin == nil {
            let now = parley_bridge_running_time(appsrc)
            guard now >= 0 else { return false }
            origin = (now, tick)
        }
        guard let origin else { return false }
        let pts = origin.base + Int64(tick - origin.tick) * Self.frameNanoseconds
        return samples.withUnsafeBufferPointer {
            parley_bridge_push(appsrc, $0.baseAddress, Int32($0.count), pts, Self.frameNanoseconds) == 0
        }
    }
}
