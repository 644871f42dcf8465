import Testing

@testable import ParleyDBus

/// When the sleep inhibitor is asked for, held and released.
@Suite("D-Bus: the sleep inhibitor's plan")
struct SleepInhibitorPlanTests {
    @Test("asked when a call goes live (once for several), held, released when the last call ends; waking up is reported")
    func heldDuringCalls() {
        var plan = SleepInhibitorPlan()
        #expect(plan.take(.calls(live: 1)) == [.ask])
        #expect(plan.take(.calls(live: 2)).isEmpty)
        #expect(plan.take(.granted(9)).count == 1)
        #expect(plan.take(.calls(live: 1)).isEmpty)
        #expect(plan.take(.calls(live: 0)).first == .release(9))
        #expect(plan.take(.calls(live: 0)).isEmpty)
        #expect(plan.take(.sleeping(false)) == [.resumed])
        #expect(plan.take(.sleeping(true)) != [.resumed])
        #expect(plan.take(.calls(live: 1)) == [.ask])
    }

    @Test("a lock granted after the calls ended is released at once")
    func grantedLate() {
        var plan = SleepInhibitorPlan()
        _ = plan.take(.calls(live: 1))
        #expect(plan.take(.calls(live: 0)).isEmpty)
        #expect(plan.take(.granted(4)) == [.release(4)])
        #expect(plan.take(.calls(live: 1)) == [.ask])
    }

    @Test("a refusal is said once and not asked again until the calls are over; logind absent: never asked again")
    func refused() {
        var plan = SleepInhibitorPlan()
        _ = plan.take(.calls(live: 1))
        #expect(plan.take(.refused("denied", absent: false)).count == 1)
        #expect(plan.take(.calls(live: 2)).isEmpty)
        _ = plan.take(.calls(live: 0))
        #expect(plan.take(.calls(live: 1)) == [.ask])
        #expect(plan.take(.refused("not there", absent: true)).isEmpty, "said once")
        _ = plan.take(.calls(live: 0))
        #expect(plan.take(.calls(live: 1)).isEmpty)
    }
}
