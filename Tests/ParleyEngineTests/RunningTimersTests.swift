import SIPSignaling
import Testing

@testable import ParleyEngine

/// The inline timer slots a transaction entry keeps instead of a dictionary behave as one.
@Suite struct RunningTimersTests {
    @Test func slotsStoreReplaceAndForgetLikeADictionary() {
        var timers = RunningTimers()
        var reference: [TransactionTimer: EngineTimer] = [:]
        // Every sequence of up to four live timers: set, replace, remove, in an order that reuses freed slots.
        let steps: [(TransactionTimer, UInt64?)] = [
            (.trying, 1), (.g, 2), (.h, 3), (.g, 4), (.trying, nil), (.i, 5), (.h, nil), (.d, 6), (.g, nil),
            (.a, 7), (.i, nil), (.b, 8), (.a, nil), (.b, nil), (.d, nil), (.j, 9),
        ]
        for (timer, id) in steps {
            timers[timer] = id.map(EngineTimer.init(id:))
            reference[timer] = id.map(EngineTimer.init(id:))
            for each in TransactionTimer.allCases { #expect(timers[each] == reference[each], "\(each) after \(timer)") }
            #expect(Set(timers.values) == Set(reference.values))
            #expect(timers.values.count == reference.count)
        }
        #expect(timers.removeValue(forKey: .j) == EngineTimer(id: 9))
        #expect(timers.removeValue(forKey: .j) == nil)
        #expect(timers.values.isEmpty)
    }

    @Test func fourTimersFitAtOnce() {
        var timers = RunningTimers()
        for (offset, timer) in [TransactionTimer.a, .b, .d, .k].enumerated() { timers[timer] = EngineTimer(id: UInt64(offset)) }
        #expect(timers.values.count == 4)
        timers[.b] = EngineTimer(id: 99)  // replacing never needs a fifth slot
        #expect(timers[.b] == EngineTimer(id: 99))
        #expect(timers.values.count == 4)
    }
}
