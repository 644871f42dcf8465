/// When parleyd holds logind's sleep inhibitor, and what waking up means (pure: inputs in, effects out; `SleepWatch`
/// talks to logind).
///
/// ```
///   calls live > 0 ──► ask (Inhibit "sleep:idle", block) ──granted(fd)──► held(fd) ──no call left──► release(fd)
///        │               └─ the calls ended before the answer: release(fd) at once
///        │               └─ refused: said once; not asked again until the calls are over
///   PrepareForSleep(false) ──► resumed (register again: the network may have changed while asleep)
/// ```
struct SleepInhibitorPlan {
    /// An input.
    enum Input: Sendable {
        /// How many calls are live now.
        case calls(live: Int)
        /// logind granted the lock: the descriptor that holds it (closing it releases the lock).
        case granted(Int32)
        /// logind refused or is not there (`absent`).
        case refused(String, absent: Bool)
        /// `PrepareForSleep(start)`: going to sleep (true) or woken (false).
        case sleeping(Bool)
    }

    /// What to do.
    enum Effect: Sendable, Hashable {
        /// Ask logind for the lock.
        case ask
        /// Close this descriptor: the lock goes.
        case release(Int32)
        /// The machine woke up.
        case resumed
        /// Say this in the log.
        case log(String)
    }

    private enum Lock: Hashable {
        case none, asking, held(Int32)
    }

    private var lock = Lock.none
    private var wanted = false
    /// Refused while calls were live: not asked again until they are over.
    private var refusedThisTime = false
    /// logind is not on the bus: never asked again.
    private var absent = false
    private var saidRefusal = false

    /// Takes `input`; the effects to carry out, in order.
    mutating func take(_ input: Input) -> [Effect] {
        switch input {
        case .calls(let live):
            wanted = live > 0
            if !wanted { refusedThisTime = false }
            switch (wanted, lock) {
            case (true, .none) where !refusedThisTime && !absent:
                lock = .asking
                return [.ask]
            case (false, .held(let fd)):
                lock = .none
                return [.release(fd), .log("sleep: no call left: the sleep inhibitor is released")]
            default:
                return []
            }
        case .granted(let fd):
            guard wanted else {
                lock = .none
                return [.release(fd)]
            }
            lock = .held(fd)
            return [.log("sleep: a call is live: holding a sleep inhibitor (logind)")]
        case .refused(let reason, let isAbsent):
            lock = .none
            refusedThisTime = true
            absent = absent || isAbsent
            guard !saidRefusal else { return [] }
            saidRefusal = true
            return [.log("sleep: no sleep inhibitor (\(reason)); calls go on, and the machine may sleep during one (said once)")]
        case .sleeping(let starting):
            return starting ? [.log("sleep: the machine is going to sleep")] : [.resumed]
        }
    }
}
