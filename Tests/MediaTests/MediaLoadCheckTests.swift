import Media
import Testing

/// Issue 48's media load check: the worst send lag of each second decides whether new calls with audio come in.
@Suite("Media: the load check on the media threads' lag")
struct MediaLoadCheckTests {
    @Test("two seconds running at 80 ms or more fall behind; three under 30 ms keep up again; a lone spike or a dip does not flap")
    func enterAndExit() {
        var check = MediaLoadCheck()
        let samples: [(Int, Bool)] = [
            (5, false), (200, false),  // one spike: not yet
            (10, false), (90, false), (85, true),  // two running: behind
            (20, true), (25, true), (50, true),  // a dip under 30 ms broken by 50: still behind
            (10, true), (5, true), (0, false),  // three under 30 ms: keeps up
            (79, false), (79, false),  // under the line
        ]
        for (index, (lag, behind)) in samples.enumerated() {
            check.sample(worstLag: .milliseconds(lag))
            #expect(check.isBehind == behind, "sample \(index) (\(lag) ms)")
            #expect(check.lastLag == .milliseconds(lag))
        }
    }

    @Test("sample says when it changed the verdict, once")
    func changes() {
        var check = MediaLoadCheck()
        let changed = [100, 100, 100, 0, 0, 0, 0].map { check.sample(worstLag: .milliseconds($0)) }
        #expect(changed == [false, true, false, false, false, true, false])
    }
}
