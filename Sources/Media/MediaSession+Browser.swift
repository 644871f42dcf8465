extension MediaSession {
    /// Hands the call's local audio to `browser` (its microphone is what the call sends, the call's audio goes to its
    /// speaker), or takes it back (nil: the configured source and sink again). A new pipeline at once when it
    /// changes, keeping the stream (SSRC, sequence) as every rebuild does; `done` hears, on the session's queue,
    /// whether the handover took.
    public func handOver(to browser: BrowserAudio?, done: (@Sendable (MediaError?) -> Void)? = nil) {
        queue.async(group: Self.work) {
            guard !self.stopped else { return done?(MediaError("the call's audio has ended")) ?? () }
            guard self.browser !== browser else { return done?(nil) ?? () }
            self.browser?.unlink()
            self.browser = browser
            guard self.pipeline != nil else { return done?(nil) ?? () }
            self.rebuild()
            done?(self.pipeline == nil ? MediaError("the call's audio could not be rebuilt") : nil)
        }
    }
}

extension MediaSession {
    /// Plays the call on these devices (sound-server names from ``AudioDevice/list()``; nil: the default, followed as
    /// it moves): a new pipeline at once when it changes, as a handover does. Only a call whose source or sink is the
    /// device, on PulseAudio streams, has devices to choose.
    public func choose(source: String?, sink: String?) {
        queue.async(group: Self.work) {
            guard !self.stopped, self.chosenDevices != (source, sink) else { return }
            self.chosenDevices = (source, sink)
            guard self.pipeline != nil else { return }
            self.rebuild()
        }
    }
}
