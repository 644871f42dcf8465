import SIPSignaling

/// The timers a transaction has running, inline: an RFC 3261 transaction never runs more than three at once (an
/// INVITE server's "trying", G and H), so four slots hold them without the heap allocation of a dictionary — a
/// finished transaction waits 64·T1 for its last timer, so its entry is kept for every request of the last 32 s.
struct RunningTimers {
    private var slots: (Slot?, Slot?, Slot?, Slot?) = (nil, nil, nil, nil)

    private struct Slot {
        let timer: TransactionTimer
        let engineTimer: EngineTimer
    }

    /// The environment's timer running as `timer`, if any; assigning nil forgets it (without cancelling it).
    subscript(timer: TransactionTimer) -> EngineTimer? {
        get {
            for index in 0..<4 where slot(index)?.timer == timer { return slot(index)?.engineTimer }
            return nil
        }
        set {
            let index = (0..<4).first { slot($0)?.timer == timer }
            guard let newValue else {
                if let index { setSlot(index, nil) }
                return
            }
            guard let free = index ?? (0..<4).first(where: { slot($0) == nil }) else {
                preconditionFailure("A transaction ran more than four timers at once")
            }
            setSlot(free, Slot(timer: timer, engineTimer: newValue))
        }
    }

    /// Forgets `timer` and returns what ran as it.
    mutating func removeValue(forKey timer: TransactionTimer) -> EngineTimer? {
        defer { self[timer] = nil }
        return self[timer]
    }

    /// Every running timer.
    var values: [EngineTimer] { (0..<4).compactMap { slot($0)?.engineTimer } }

    private func slot(_ index: Int) -> Slot? {
        switch index {
        case 0: slots.0
        case 1: slots.1
        case 2: slots.2
        default: slots.3
        }
    }

    private mutating func setSlot(_ index: Int, _ value: Slot?) {
        switch index {
        case 0: slots.0 = value
        case 1: slots.1 = value
        case 2: slots.2 = value
        default: slots.3 = value
        }
    }
}
