import Foundation
import SIPMessages
import SIPTransport

/// Overload control's driver (the machine is `LoadShedder`): a probe timer every window reads how much of it the
/// engine's thread spent waiting for work, feeds the busy share to the shedder and logs when shedding begins and
/// ends; new out-of-dialog requests then ask it whether to shed them.
///
///   datagram ──► shedder drops (share ≥ dropSharePercent), UDP, RequestPeek says new out-of-dialog, credit full?
///        │ no                                             └─yes─► dropped unread (requestsShedDropped)
///        ▼
///   parse ──► transaction layer ──► new request ──► admits: no To tag, not ACK/BYE/CANCEL/PRACK, credit full?
///                                                        └─yes─► 503, Retry-After 1–5 s jittered (requestsShed)
///
/// The trigger is measured, not guessed: busy share = 1 − (idle time in `epoll_wait` ÷ window), which counts every
/// kind of work on the thread (SIP, timers, the control API); the probe's own lateness is the loop lag `status` shows.
extension SIPUserAgent {
    /// Starts the probe when overload control is configured and the environment measures its idle time.
    func startLoadProbe() {
        guard let shedder, lastLoadProbe == nil, let idle = environment.idleTime else { return }
        lastLoadProbe = (environment.uptime, idle)
        scheduleLoadProbe(after: shedder.policy.window)
    }

    private func scheduleLoadProbe(after window: Duration) {
        let due = environment.uptime + window
        _ = environment.schedule(after: window) { [weak self] in self?.probeLoad(due: due) }
    }

    private func probeLoad(due: Duration) {
        guard var shedder, let last = lastLoadProbe, let idle = environment.idleTime else { return }
        let now = environment.uptime
        loopLag = max(now - due, .zero)
        let elapsed = now - last.at
        lastLoadProbe = (now, idle)
        if elapsed > .zero {
            let busy = 1 - (idle - last.idle) / elapsed
            switch shedder.sample(busy: busy) {
            case .began(let busy):
                log.info("overload: the engine thread was \(Int(busy * 100))% busy for \(shedder.policy.enterWindows) "
                    + "windows of \(Self.milliseconds(shedder.policy.window)) ms; shedding new out-of-dialog requests "
                    + "(503 with Retry-After; dropped unread over UDP from \(shedder.policy.dropSharePercent)% on); "
                    + "calls in progress go on")
            case .ended(let shed):
                log.info("overload over: taking every new request again (\(shed) shed in this episode; "
                    + "\(counters.requestsShed) answered 503 and \(counters.requestsShedDropped) dropped since start)")
            case nil:
                break
            }
            self.shedder = shedder
        }
        scheduleLoadProbe(after: shedder.policy.window)
    }

    /// Before parsing: whether this datagram is shed unread (dropping mode only, UDP only).
    func dropsUnread(_ inbound: InboundSIPMessage) -> Bool {
        guard inbound.kind == .udp, shedder?.drops == true, RequestPeek.isNewOutOfDialogRequest(inbound.bytes),
            shedder!.sheds()
        else { return false }
        counters.requestsShedDropped += 1
        return true
    }

    /// For a new request at admission: the Retry-After of the 503 that sheds it, or nil when it goes on. UDP requests
    /// in dropping mode were decided before parsing (`dropsUnread`), so they are not asked twice.
    func shedRetryAfter(for request: SIPRequest, from source: SIPDestination) -> Int? {
        guard let policy = shedder?.policy, shedder?.isShedding == true, !(source.kind == .udp && shedder!.drops),
            request.headers.to?.tag == nil, ![.ack, .bye, .cancel, .prack].contains(request.method),
            !(request.headers.callID.map(pushedCalls.isPending(callID:)) ?? false), shedder!.sheds()
        else { return nil }
        counters.requestsShed += 1
        return Int.random(in: policy.retryAfter)
    }

    /// What `status` shows of the load: busy and shed shares in percent, the loop lag in milliseconds.
    var loadFigures: (busyPercent: Int, shedPercent: Int, lagMilliseconds: Int, overloaded: Bool) {
        guard let shedder else { return (0, 0, 0, false) }
        return (Int((shedder.busy * 100).rounded()), shedder.sharePercent, Self.milliseconds(loopLag),
            shedder.isShedding)
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }
}
