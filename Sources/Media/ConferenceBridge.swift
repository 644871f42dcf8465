import CGStreamer
import Foundation
import Synchronization

/// Where the conference bridge meets one call's pipeline: the appsink giving the call's decoded audio and the appsrc
/// taking what the bridge mixed for it (16 kHz mono, ``MixMinus/rate``). The session attaches its current pipeline's
/// elements and detaches them before the pipeline goes, so the bridge never touches a freed element.
public final class BridgeTap: @unchecked Sendable {
    // @unchecked Sendable: the element pointers are read and changed only under `lock`.
    private let lock = NSLock()
    private var appsink: UnsafeMutablePointer<GstElement>?
    private var appsrc: UnsafeMutablePointer<GstElement>?

    /// A tap with nothing attached (the call's pipeline has no bridge elements yet).
    public init() {}

    deinit { detach() }

    /// The pipeline's bridge elements (each holds a reference until ``detach()``).
    func attach(appsink sink: UnsafeMutablePointer<GstElement>, appsrc source: UnsafeMutablePointer<GstElement>) {
        detach()
        lock.withLock { (appsink, appsrc) = (sink, source) }
    }

    /// Drops the elements (their pipeline is about to go).
    func detach() {
        let (sink, source) = lock.withLock {
            defer { (appsink, appsrc) = (nil, nil) }
            return (appsink, appsrc)
        }
        if let sink { parley_bridge_unref(sink) }
        if let source { parley_bridge_unref(source) }
    }

    /// Whether a pipeline with bridge elements is attached.
    public var isAttached: Bool { lock.withLock { appsink != nil } }

    /// The samples the call decoded since the last pull (empty when none, or nothing is attached).
    func pull() -> [Int16] {
        lock.withLock {
            guard let appsink else { return [] }
            var buffer = [Int16](repeating: 0, count: MemberQueue.capacity)
            let count = buffer.withUnsafeMutableBufferPointer { parley_bridge_pull(appsink, $0.baseAddress, Int32($0.count)) }
            return Array(buffer.prefix(Int(count)))
        }
    }

    /// Gives the call's sending side a frame mixed for it.
    func push(_ samples: [Int16]) {
        lock.withLock {
            guard let appsrc else { return }
            _ = samples.withUnsafeBufferPointer { parley_bridge_push(appsrc, $0.baseAddress, Int32($0.count)) }
        }
    }
}

/// The local focus's conference bridge: every tick (20 ms) it takes one frame of each member's decoded audio and gives
/// each member the mix of the others (``MixMinus``); the local user needs nothing from it (its source already goes to
/// every member's encoder, and each member's audio to the local sink).
///
/// ```
///   member call A: … decoder ─ tee ─ (sink)                      (source) ─ audiomixer ─ encoder …
///                                 └─ appsink ─► [bridge tick: B + C for A] ─► appsrc ─┘
///   members ──set(members:)──► mixing them (a member out of the mix — held, holding us — is simply not given)
///   the last member gone ──► the tick stops
/// ```
public final class ConferenceBridge: @unchecked Sendable {
    // @unchecked Sendable: `members` and `queues` are touched only on `queue`.
    private let queue = DispatchQueue(label: "parley-bridge", qos: .userInteractive)
    private var members: [UUID: BridgeTap] = [:]
    private var queues: [UUID: MemberQueue] = [:]
    private var timer: DispatchSourceTimer?
    /// Ticks run, for the figures.
    private let ticks = Atomic<Int>(0)

    /// A bridge mixing nobody yet.
    public init() {}

    deinit { timer?.cancel() }

    /// The members whose audio is mixed now (each hears all the others); fewer than two stops the tick.
    public func set(members new: [UUID: BridgeTap]) {
        queue.async {
            self.members = new
            self.queues = self.queues.filter { new[$0.key] != nil }
            if new.count >= 2 { self.startTicking() } else { self.stopTicking() }
        }
    }

    /// Ticks run so far.
    public var tickCount: Int { ticks.load(ordering: .relaxed) }

    private func startTicking() {
        guard timer == nil else { return }
        let made = DispatchSource.makeTimerSource(flags: .strict, queue: queue)
        made.schedule(deadline: .now() + .milliseconds(20), repeating: .milliseconds(20), leeway: .milliseconds(1))
        made.setEventHandler { [weak self] in self?.tick() }
        made.resume()
        timer = made
    }

    private func stopTicking() {
        timer?.cancel()
        timer = nil
        queues = [:]
    }

    /// One tick: each member's frame in, each member's mix out.
    private func tick() {
        ticks.add(1, ordering: .relaxed)
        let order = Array(members.keys)
        let frames = order.map { member in
            queues[member, default: MemberQueue()].append(members[member]!.pull())
            return queues[member]!.take()
        }
        for (member, mixed) in zip(order, MixMinus.mix(frames)) { members[member]?.push(mixed) }
    }
}
