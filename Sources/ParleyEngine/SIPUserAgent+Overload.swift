import Foundation
import SIPMessages
import SIPTransport

/// Overload control's driver (the machine is `LoadShedder`): a probe timer every window reads how much of it the
/// engine's thread spent waiting for work, feeds the busy share to the shedder and logs when shedding begins and
/// ends; new out-of-dialog requests then ask it whether to shed them.
///
///   message ──► ACK of one of our refusals (To tag "sr-…")? ──yes──► absorbed unread
///        │ no
///        ▼
///   shedding, RequestPeek says new out-of-dialog (no To tag; not ACK/BYE/CANCEL/PRACK), waited ≥ shortQueueWait
///   (or not measured), credit full?
///        │ no                        └─yes─► an INVITE of a call here (a retransmission)? ──yes──► taken; the next
///        │                                           │ no                                  one shed in its place
///        │                                           ▼                                     (retransmissionsSpared)
///        │                           UDP and share ≥ dropSharePercent? ──yes──► dropped (requestsShedDropped)
///        ▼                                           │ no
///   parse, transactions, calls as usual              └──► 503 Retry-After 1–5 s written from its bytes (requestsShed)
///
/// The trigger is measured, not guessed: busy share = 1 − (idle time in `epoll_wait` ÷ window), which counts every
/// kind of work on the thread (SIP, timers, the control API), and the backlog: how long datagrams waited in the
/// receive queue (their kernel arrival time, `InboundSIPMessage.waited`). With a parse thread, the busier of the two
/// threads and the longer wait count (the parse queue's too, and a request's wait includes the parse queue's age).
/// The probe's own lateness is the loop lag `status` shows, beside the last window's longest queue wait.
extension SIPUserAgent {
    /// Starts the probe when overload control is configured and the environment measures its idle time.
    func startLoadProbe() {
        guard let shedder, lastLoadProbe == nil, let idle = environment.idleTime else { return }
        lastLoadProbe = (environment.uptime, idle, parseThread?.idleTime)
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
        let parseIdle = parseThread?.idleTime
        lastLoadProbe = (now, idle, parseIdle)
        if elapsed > .zero {
            var busy = 1 - (idle - last.idle) / elapsed
            var wait = longestQueueWait
            longestQueueWait = nil
            // With a parse thread the engine is two stages: the busier one, and the longer wait, decide. When parsing
            // falls behind (sipp's uac at 25,600 calls/s left it a core's third), the engine's thread idles waiting
            // for parsed messages while the parse queue overflows; its busy share alone never reached enterBusy.
            if let parseThread, let parseIdle, let lastParseIdle = last.parseIdle {
                busy = max(busy, 1 - (parseIdle - lastParseIdle) / elapsed)
                if let parseWait = parseThread.takeLongestWait() { wait = max(wait ?? .zero, parseWait) }
            }
            lastQueueWait = wait ?? .zero
            switch shedder.sample(busy: busy, longestWait: wait) {
            case .began(let busy, let starved):
                let policy = shedder.policy, window = Self.milliseconds(policy.window)
                let waited = Self.milliseconds(wait ?? .zero)
                let reason = starved
                    ? "datagrams waited \(Self.milliseconds(policy.starvedWait)) ms or more for \(policy.starvedEnterWindows) "
                        + "windows of \(window) ms running (up to \(waited) ms; the engine's threads \(Int(busy * 100))% busy)"
                    : "the engine's threads were \(Int(busy * 100))% busy for \(policy.enterWindows) windows of \(window) ms "
                        + "running" + (wait == nil ? "" : ", datagrams waiting up to \(waited) ms")
                log.warning("overload: \(reason); shedding new out-of-dialog requests (503 with Retry-After; dropped "
                    + "unread over UDP from \(policy.dropSharePercent)% on); calls in progress go on")
            case .ended(let shed):
                log.warning("overload over: taking every new request again (\(shed) shed in this episode; "
                    + "\(counters.requestsShed) answered 503 and \(counters.requestsShedDropped) dropped since start)")
            case nil:
                break
            }
            self.shedder = shedder
        }
        scheduleLoadProbe(after: shedder.policy.window)
    }

    /// Before parsing: whether this message is shed (or was an ACK of a shed one), unread. A new out-of-dialog
    /// request the shedder picks is answered 503 with a jittered Retry-After written from its bytes
    /// (`StatelessRefusal`), or dropped over UDP at `dropSharePercent` or more, or when its bytes do not allow a
    /// refusal written unread.
    func shedsUnread(_ inbound: InboundSIPMessage, from source: SIPDestination) -> Bool {
        if let waited = inbound.waited, shedder != nil, waited > longestQueueWait ?? .zero { longestQueueWait = waited }
        if let refused = lastStatelessRefusal, environment.uptime - refused <= transactions.timers.t1 * 64,
            StatelessRefusal.isACKOfRefusal(inbound.bytes)
        {
            counters.refusalACKsAbsorbed += 1
            return true
        }
        guard let policy = shedder?.policy, shedder?.isShedding == true,
            RequestPeek.isNewOutOfDialogRequest(inbound.bytes),
            shedder!.sheds(waited: inbound.waited.map { $0 + (parseThread?.backlogAge() ?? .zero) })
        else { return false }
        if inbound.bytes.starts(with: Self.invitePrefix), let callID = StatelessRefusal.callID(of: inbound.bytes),
            legIDs[callID] != nil
        {
            // A retransmitted INVITE of a call that got through (its caller waited out T1 in our queue): a 503 would
            // fail at the caller the call its first copy set up, while the leg here lived on, retransmitting its 200
            // for 64·T1 and counting against --max-calls (at 2 × 12,800 calls/s, 550–8,190 a run were spared).
            shedder!.spare()
            counters.retransmissionsSpared += 1
            return false
        }
        if inbound.kind != .udp || !shedder!.drops, let refusal = StatelessRefusal.response(
            to: inbound.bytes, status: 503, reason: "Overloaded", tagSuffix: String(counters.requestsShed &+ 1, radix: 36),
            extra: [("Server", configuration.product), ("Retry-After", String(Int.random(in: policy.retryAfter)))])
        {
            counters.requestsShed += 1
            lastStatelessRefusal = environment.uptime
            environment.send(refusal, to: source)
        } else {
            counters.requestsShedDropped += 1
        }
        return true
    }

    /// How an INVITE's bytes begin.
    private static let invitePrefix = Array("INVITE ".utf8)

    /// What `status` shows of the load: busy and shed shares in percent, the loop lag and the last window's longest
    /// wait in the receive queue in milliseconds.
    var loadFigures: (busyPercent: Int, shedPercent: Int, lagMilliseconds: Int, queueWaitMilliseconds: Int, overloaded: Bool) {
        guard let shedder else { return (0, 0, 0, 0, false) }
        return (Int((shedder.busy * 100).rounded()), shedder.sharePercent, Self.milliseconds(loopLag),
            Self.milliseconds(lastQueueWait), shedder.isShedding)
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }
}
