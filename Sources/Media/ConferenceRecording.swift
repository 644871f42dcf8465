import CGStreamer
import Foundation

/// The local user's recording of a merged group (`--audio-sink file:DIR`): what the user hears of it, every member
/// in the mix summed (``MixMinus/sum(_:length:)``), a WAV file written while the group lasts. Each member's call keeps
/// its own recording too.
///
/// ```
///   the bridge's tick: members' decoded frames ─ sum ─► appsrc ─ audiorate "timeline" (silence in the gaps:
///       nobody in the mix) ─ wavenc ─ filesink
///   finish() ──► end of stream: the file completed (on MediaSession's work group, so a node shutting down waits)
/// ```
final class ConferenceRecording {
    /// Where it is written.
    let path: String
    private var pipeline: Pipeline?
    private var appsrc: UnsafeMutablePointer<GstElement>?
    private var timeline = BridgeTimeline()
    /// Samples it may still take (`--max-recording`, counted in audio pushed; nil: no cap).
    private var samplesLeft: Int?

    /// Starts recording to `path`, at most `cap` of audio.
    init(path: String, cap: Duration?) throws(MediaError) {
        self.path = path
        samplesLeft = cap.map { Int($0.components.seconds) * MixMinus.rate }
        let built = try Pipeline(
            "appsrc name=\(PipelineDescription.bridgeIn) is-live=true format=time caps=\(PipelineDescription.bridgeCaps)"
                + " ! audiorate name=\(PipelineDescription.timeline) ! wavenc ! filesink name=recording buffer-mode=full buffer-size=32768")
        built.set("recording", "location", path)
        try built.play()
        guard let source = built.element(PipelineDescription.bridgeIn) else { throw MediaError("the recording has no appsrc") }
        (pipeline, appsrc) = (built, source)
    }

    deinit { finish() }

    /// Adds the mix of tick `tick` (dropped until the pipeline plays, and once the cap is reached).
    func push(_ samples: [Int16], tick: Int) {
        guard let appsrc, samplesLeft.map({ $0 >= samples.count }) ?? true else { return }
        if timeline.push(samples, tick: tick, into: appsrc) { samplesLeft? -= samples.count }
    }

    /// Ends the recording: the file is complete when this returns (it waits up to half a second for the end of
    /// stream to reach the file).
    func finish() {
        if let appsrc { parley_bridge_unref(appsrc) }
        appsrc = nil
        pipeline?.finish(waitingMilliseconds: 500)
        pipeline = nil
    }
}
