import CGStreamer
import Foundation
import Synchronization

/// Where the conference bridge meets one call's pipeline: an appsink giving the call's decoded audio, one giving the
/// local source's (after mute), and the appsrc taking what the bridge mixed for it (16 kHz mono, ``MixMinus/rate``). The session attaches its current pipeline's
/// elements and detaches them before the pipeline goes, so the bridge never touches a freed element.
public final class BridgeTap: @unchecked Sendable {
    // @unchecked Sendable: the element pointers are read and changed only under `lock`.
    private let lock = NSLock()
    private var appsink: UnsafeMutablePointer<GstElement>?
    private var local: UnsafeMutablePointer<GstElement>?
    private var appsrc: UnsafeMutablePointer<GstElement>?
    /// Where the frames pushed into the current pipeline sit on its timeline.
    private var timeline = BridgeTimeline()

    /// A tap with nothing attached (the call's pipeline has no bridge elements yet).
    public init() {}

    deinit { detach() }

    /// The pipeline's bridge elements (each holds a reference until ``detach()``).
    func attach(
        appsink sink: UnsafeMutablePointer<GstElement>, local localSink: UnsafeMutablePointer<GstElement>,
        appsrc source: UnsafeMutablePointer<GstElement>
    ) {
        detach()
        lock.withLock {
            (appsink, local, appsrc) = (sink, localSink, source)
            timeline = BridgeTimeline()
        }
    }

    /// Drops the elements (their pipeline is about to go).
    func detach() {
        let elements = lock.withLock {
            defer { (appsink, local, appsrc) = (nil, nil, nil) }
            return [appsink, local, appsrc]
        }
        for element in elements.compactMap({ $0 }) { parley_bridge_unref(element) }
    }

    /// Whether a pipeline with bridge elements is attached.
    public var isAttached: Bool { lock.withLock { appsink != nil } }

    /// The samples the call decoded (`heard`), or the local source gave (`said`), since the last pull (empty when
    /// none, or nothing is attached).
    func pull() -> (heard: [Int16], said: [Int16]) {
        lock.withLock { (Self.pull(appsink), Self.pull(local)) }
    }

    private static func pull(_ sink: UnsafeMutablePointer<GstElement>?) -> [Int16] {
        guard let sink else { return [] }
        return [Int16](unsafeUninitializedCapacity: MemberQueue.capacity) { buffer, count in
            count = Int(parley_bridge_pull(sink, buffer.baseAddress, Int32(buffer.count)))
        }
    }

    /// Gives the call's sending side the frame mixed for it at the bridge's tick number `tick`.
    func push(_ samples: [Int16], tick: Int) {
        lock.withLock {
            guard let appsrc else { return }
            timeline.push(samples, tick: tick, into: appsrc)
        }
    }
}

/// The local focus's conference bridge: every tick (20 ms) it takes one frame of each member's decoded audio and of
/// the local source in each member's pipeline, and gives each member the local source and the others
/// (``MixMinus``); the local user hears each member as before (each call's audio still goes to the local sink).
///
/// ```
///   member call A: … decoder ─ tee ─ (sink)          source ─ mute ─ appsink "bridgelocal" ─┐
///                                 └─ appsink ─► [bridge tick: A's source + B + C] ◄─────────┘
///                                                   └─► appsrc ─ encoder …
///   members ──set(members:)──► mixing them (a member out of the mix — held, holding us — is simply not given)
///   the last member gone ──► the tick stops
///   the timer fires ──► every tick due since the bridge began runs (a late fire is made up, up to 5 ticks; a longer
///       stall skips the rest: a gap on the members' timelines, BridgeTimeline)
///   recording (a file sink) ──► every tick, the members' sum (what the local user hears) to ConferenceRecording
///   finish() ──► the tick stops, the recording is completed
/// ```
public final class ConferenceBridge: @unchecked Sendable {
    // @unchecked Sendable: `members` and `queues` are touched only on `queue`.
    private let queue = DispatchQueue(label: "parley-bridge", qos: .userInteractive)
    private var members: [UUID: BridgeTap] = [:]
    private var queues: [UUID: (heard: MemberQueue, said: MemberQueue)] = [:]
    private var timer: DispatchSourceTimer?
    /// Ticks run, for the figures.
    private let ticks = Atomic<Int>(0)
    /// When the first tick was due, and the number of the next tick (ticks are 20 ms apart from the first,
    /// whatever the timer does; a stretch without members counts as ticks skipped).
    private var epoch: ContinuousClock.Instant?
    private var nextTick = 0
    private let clock = ContinuousClock()
    /// The most ticks a late timer makes up at once (100 ms); beyond, the frames are skipped.
    static let catchUpLimit = 5
    /// The local user's recording of the group, when calls are recorded.
    private var recording: ConferenceRecording?

    /// A bridge mixing nobody yet; with `recordingPath`, what the local user hears of the group is recorded there, at
    /// most `maxRecording` of it (`report` is told why, if it cannot be).
    public init(
        recordingPath: String? = nil, maxRecording: Duration? = nil, report: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        guard let recordingPath else { return }
        queue.async(group: MediaSession.work) {
            do {
                self.recording = try ConferenceRecording(path: recordingPath, cap: maxRecording)
            } catch {
                report("the group's recording \(recordingPath) could not start: \(error)")
            }
        }
    }

    deinit { timer?.cancel() }

    /// Stops mixing and completes the recording; `done` is called (on the bridge's queue) once the file is complete.
    public func finish(then done: (@Sendable (String?) -> Void)? = nil) {
        queue.async(group: MediaSession.work) {
            self.members = [:]
            self.stopTicking()
            let path = self.recording?.path
            self.recording?.finish()
            self.recording = nil
            done?(path)
        }
    }

    /// The members whose audio is mixed now (each hears the local source and all the others; one alone hears the
    /// local source); none stops the tick.
    public func set(members new: [UUID: BridgeTap]) {
        queue.async {
            self.members = new
            self.queues = self.queues.filter { new[$0.key] != nil }
            if new.isEmpty { self.stopTicking() } else { self.startTicking() }
        }
    }

    /// Ticks run so far.
    public var tickCount: Int { ticks.load(ordering: .relaxed) }

    private func startTicking() {
        guard timer == nil else { return }
        // Ticking again after a stretch with nobody to mix: that stretch is skipped, not made up.
        if let epoch { nextTick = Self.ticksDue(since: epoch, at: clock.now) }
        let made = DispatchSource.makeTimerSource(flags: .strict, queue: queue)
        made.schedule(deadline: .now() + .milliseconds(20), repeating: .milliseconds(20), leeway: .milliseconds(1))
        made.setEventHandler { [weak self] in self?.runDueTicks() }
        made.resume()
        timer = made
    }

    private func stopTicking() {
        timer?.cancel()
        timer = nil
        queues = [:]
    }

    /// Runs every tick due by now: libdispatch runs a timer's handler once for fires it missed (a busy machine, a
    /// stalled process), so the count comes from the clock, not from the fires.
    private func runDueTicks() {
        let now = clock.now
        let epoch = self.epoch ?? now
        self.epoch = epoch
        let due = Self.ticksDue(since: epoch, at: now)
        if due - nextTick > Self.catchUpLimit { nextTick = due - Self.catchUpLimit }
        while nextTick < due {
            tick(nextTick)
            nextTick += 1
        }
    }

    /// How many ticks are due at `now` when the first was due at `epoch` (it included).
    private static func ticksDue(since epoch: ContinuousClock.Instant, at now: ContinuousClock.Instant) -> Int {
        Int(((now - epoch) / .milliseconds(20)).rounded(.down)) + 1
    }

    /// One tick: each member's frames in (what it sent us, what the local source gave its pipeline), each member's
    /// mix out.
    private func tick(_ number: Int) {
        ticks.add(1, ordering: .relaxed)
        let order = Array(members.keys)
        var heard: [[Int16]] = [], said: [[Int16]] = []
        for member in order {
            let pulled = members[member]!.pull()
            var queued = queues[member] ?? (MemberQueue(), MemberQueue())
            queued.heard.append(pulled.heard)
            queued.said.append(pulled.said)
            heard.append(queued.heard.take())
            said.append(queued.said.take())
            queues[member] = queued
        }
        for (member, mixed) in zip(order, MixMinus.mix(heard, adding: said)) { members[member]?.push(mixed, tick: number) }
        recording?.push(MixMinus.sum(heard), tick: number)
    }
}
