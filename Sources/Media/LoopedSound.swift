import Foundation

/// A sound file played over and over on the desktop until stopped: a ringtone or a ringback, on a stream with the
/// phone role when PulseAudio is there (``DeviceAudio``). Any format GStreamer decodes (the sound theme's Ogg Vorbis,
/// WAV). Every call returns at once: the pipeline lives on the sound's own serial queue.
public final class LoopedSound: @unchecked Sendable {
    // @unchecked Sendable: `pipeline` and `poller` are touched only on `queue`; the `let`s are immutable.

    /// The file it plays.
    public let path: String
    private let device: DeviceAudio
    private let report: @Sendable (String) -> Void
    private let queue = DispatchQueue(label: "parley-looped-sound")
    private var pipeline: Pipeline?
    private var poller: DispatchSourceTimer?

    /// Starts playing `path` in a loop; `report` is told (on the sound's queue) when it cannot be played.
    public init(path: String, device: DeviceAudio, report: @escaping @Sendable (String) -> Void = { _ in }) {
        self.path = path
        self.device = device
        self.report = report
        queue.async { self.start() }
    }

    deinit {
        // The queue's blocks hold the sound strongly: by now none is pending.
        poller?.cancel()
        pipeline?.finish(waitingMilliseconds: 0)
    }

    /// Stops it (idempotent); returns at once.
    public func stop() {
        queue.async {
            self.poller?.cancel()
            self.poller = nil
            self.pipeline?.finish(waitingMilliseconds: 0)
            self.pipeline = nil
        }
    }

    /// Waits for the queued work (tests).
    public func settle() { queue.sync {} }

    private func start() {
        do {
            let built = try Pipeline("filesrc name=file ! decodebin ! audioconvert ! audioresample ! \(device.soundSink)")
            try built.setChecked("file", "location", path)
            try built.play()
            pipeline = built
        } catch {
            return report("\(path) cannot be played: \(error)")
        }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        timer.setEventHandler { [weak self] in self?.poll() }
        timer.resume()
        poller = timer
    }

    private func poll() {
        guard let pipeline else { return }
        do {
            try pipeline.loopAtEnd()
        } catch {
            report("\(path) stopped: \(error)")
            poller?.cancel()
            poller = nil
            pipeline.finish(waitingMilliseconds: 0)
            self.pipeline = nil
        }
    }
}
