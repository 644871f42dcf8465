/// Overload control for new out-of-dialog requests (issue 15): a pure machine fed, once a window, the engine thread's
/// measured busy share and the longest time a datagram waited in the receive queue, which says what share of new
/// requests to shed. Calls in progress are never shed: in-dialog requests, ACK, BYE, CANCEL, PRACK and responses do
/// not pass through it.
///
///            saturated — busy ≥ enterBusy and the queue backed up (a wait ≥ backlogWait; no datagram measured: busy
///            alone), or starved (a wait ≥ starvedWait) whatever the busy share — for enterWindows windows running,
///            or starved for starvedEnterWindows
///     normal ─────────────────────────────────────────────────────► shedding (share = n steps)
///       ▲                                                              │  each window:
///       │                   share back at 0                            │    saturated, not starved, wait fell by ¼ or more → holds
///       └──────────────────────────────────────────────────────────────┘    saturated otherwise → share + n steps (≤ max %)
///                                                                            busy ≥ leaveBusy, queue short → share − step
///                                                                            busy < leaveBusy → share − 2 steps
///                                                                            busy < leaveBusy ÷ 2 → share 0
///     n = the wait ÷ starvedWait, from 1 to 4 (1 with no wait measured)
///
/// The steps follow the backlog: at twice the capacity a 5 % step a window let datagrams wait 200–400 ms for a second
/// and a half, long enough for the socket to overflow and callers to retransmit. A share that already drains the
/// backlog holds: the wait lags the share by the time the queue takes to empty, and stepping on until it was short
/// overshot to 95 % and back. But not while datagrams still wait `starvedWait`: holding then kept waits of 100–200 ms
/// for a second more (12 runs alternated at 2 × capacity: median 100 % of it accepted with the hold, 107 % without).
///
/// While shedding, every new out-of-dialog request adds the share (in percent) to a credit and is shed when the credit
/// reaches 100, so exactly that share is shed, evenly spread (no randomness to test around). A datagram that waited
/// less than `shortQueueWait` is never shed: the queue has drained, so the engine keeps up with what comes now (this
/// makes recovery immediate when the load drops, before the busy share of the next window says so). A shed request is
/// answered 503 with a jittered Retry-After, written from its bytes without parsing it; once the share reaches
/// `dropSharePercent` a shed request over UDP is dropped instead (cheaper still, but the caller retransmits it).
struct LoadShedder {
    /// A change worth a log line.
    enum Change: Equatable {
        /// Shedding began at this busy share; `starved`: because datagrams waited `starvedWait` or more for
        /// `starvedEnterWindows` windows (else the busy share and a backlog, for `enterWindows`).
        case began(busy: Double, starved: Bool = false)
        /// Shedding ended; this many requests had been shed.
        case ended(shed: Int)
    }

    let policy: OverloadPolicy
    /// The share of new requests shed now, in percent (0 when not shedding).
    private(set) var sharePercent = 0
    /// The busy share of the last window.
    private(set) var busy = 0.0
    /// Requests shed since shedding last began (503 or dropped).
    private(set) var shedInEpisode = 0
    private var saturatedWindows = 0
    private var starvedWindows = 0
    private var lastWait: Duration?
    private var credit = 0

    /// The most steps one window moves the share up.
    static let mostSteps = 4

    init(policy: OverloadPolicy) {
        self.policy = policy
    }

    /// Whether new requests are being shed.
    var isShedding: Bool { sharePercent > 0 }

    /// Whether shed UDP requests are dropped rather than answered.
    var drops: Bool { sharePercent >= policy.dropSharePercent }

    /// One window's measures: the share of it the engine's thread was busy (0...1) and the longest a datagram read
    /// in it had waited in the receive queue (nil when none was measured: stream traffic only, or none at all).
    mutating func sample(busy measured: Double, longestWait: Duration? = nil) -> Change? {
        busy = min(max(measured, 0), 1)
        let backedUp = longestWait.map { $0 >= policy.backlogWait } ?? true
        let starved = longestWait.map { $0 >= policy.starvedWait } ?? false
        let saturated = (busy >= policy.enterBusy && backedUp) || starved
        saturatedWindows = saturated ? saturatedWindows + 1 : 0
        starvedWindows = starved ? starvedWindows + 1 : 0
        let previousWait = lastWait
        lastWait = longestWait
        var steps = 1
        while steps < Self.mostSteps, let longestWait, longestWait >= policy.starvedWait * (steps + 1) { steps += 1 }
        if !isShedding {
            guard saturatedWindows >= policy.enterWindows || starvedWindows >= policy.starvedEnterWindows else { return nil }
            sharePercent = min(steps * policy.stepPercent, policy.maxSharePercent)
            shedInEpisode = 0
            credit = 0
            return .began(busy: busy, starved: starvedWindows >= policy.starvedEnterWindows)
        }
        if saturated {
            // The wait falling by a quarter or more since the last window: the share works, the backlog drains. Not
            // while datagrams still wait starvedWait: callers retransmit after T1, so the share steps on.
            if !starved, let longestWait, let previousWait, longestWait * 4 <= previousWait * 3 { return nil }
            sharePercent = min(sharePercent + steps * policy.stepPercent, policy.maxSharePercent)
            return nil
        }
        if busy < policy.leaveBusy {
            // Down twice as fast as up, and at once when the thread is mostly idle: when the load drops, the shed
            // share must not outlive it (halving instead made the share swing on and off under steady overload).
            sharePercent = busy < policy.leaveBusy / 2 ? 0 : max(sharePercent - 2 * policy.stepPercent, 0)
        } else if !backedUp {
            // Busy, but the queue stays short: more is shed than needed (without this the share only ever climbed
            // while the thread stayed busy, up to dropping, and the callers' retransmissions stretched the flood).
            sharePercent = max(sharePercent - policy.stepPercent, 0)
        }
        if sharePercent == 0 {
            saturatedWindows = 0
            return .ended(shed: shedInEpisode)
        }
        return nil
    }

    /// For each new out-of-dialog request: whether to shed it, given how long it waited in the receive queue (nil:
    /// not measured, over a stream). One that waited less than `shortQueueWait` is taken: the queue is short.
    mutating func sheds(waited: Duration? = nil) -> Bool {
        guard isShedding else { return false }
        if let waited, waited < policy.shortQueueWait { return false }
        credit += sharePercent
        guard credit >= 100 else { return false }
        credit -= 100
        shedInEpisode += 1
        return true
    }

    /// The request `sheds` just picked belongs to a call in progress (a retransmitted INVITE whose first copy got
    /// through): it is taken after all and counts for nothing, as if it had not come, so the next new request is shed
    /// in its place and the share of new requests stays exact.
    mutating func spare() {
        credit += 100 - sharePercent
        shedInEpisode -= 1
    }
}

/// The thresholds of overload control (`LoadShedder`); `EngineConfiguration.overload`.
public struct OverloadPolicy: Sendable, Hashable {
    /// How often the busy share is measured.
    public var window: Duration = .milliseconds(100)
    /// Busy share from which the engine counts as overloaded.
    public var enterBusy = 0.97
    /// Windows running at `enterBusy` or more before shedding begins (a burst is absorbed by the buffers: with two
    /// windows, sipp's bursts at 79 % of a core already drew 503s and cut the rate bench-sip confirms from 2,750 to
    /// 1,710 calls/s).
    public var enterWindows = 5
    /// The wait in the receive queue that shows a backlog: a window counts as saturated only when some datagram read
    /// in it waited this long (busy alone can be a burst the buffers absorb). Stream traffic carries no wait; over
    /// streams the busy share decides alone.
    public var backlogWait: Duration = .milliseconds(20)
    /// A wait this long makes a window saturated whatever the busy share. Threads that wait for a core (when other
    /// work takes the machine: sipp's uac offering 25,600 calls/s took one of two) look idle to the busy share, which
    /// counts a woken thread's wait for the CPU as waiting for work: under such a flood the engine's threads measured
    /// 73–96 % busy while datagrams waited 60–290 ms, and nothing was shed.
    public var starvedWait: Duration = .milliseconds(100)
    /// Windows running starved (a wait of `starvedWait` or more) before shedding begins: the socket's buffer holds
    /// tens of milliseconds at such rates, so a backlog this old is no burst it absorbs.
    public var starvedEnterWindows = 2
    /// While shedding, a datagram that waited less than this in the receive queue is never shed: the queue has
    /// drained, so the engine keeps up with what comes now. This makes recovery immediate when the load drops (the
    /// share only falls with the next window's busy share, which let 503s reach the first calls after a flood).
    public var shortQueueWait: Duration = .milliseconds(2)
    /// Busy share under which the shed share goes down again.
    public var leaveBusy = 0.80
    /// The step the shed share moves by, in percent: one a window, up to four while datagrams wait long.
    public var stepPercent = 5
    /// The most that is ever shed, in percent (some new calls always get through, so the rate never drops to nothing).
    public var maxSharePercent = 95
    /// From this shed share on (percent), shed UDP requests are dropped unanswered instead of answered 503: only at
    /// the most that is shed, since a dropped INVITE comes back as retransmissions (measured: at 90 % the
    /// retransmissions stretched a 10 s overload run to 21 s).
    public var dropSharePercent = 95
    /// The Retry-After range of a 503, in seconds (jittered so refused callers do not come back together).
    public var retryAfter: ClosedRange<Int> = 1...5

    /// The defaults above.
    public init() {}
}
