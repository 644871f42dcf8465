import Foundation
import Testing

/// RFC 4028 session timers against sipp: the headers of parleyd's INVITE, and its refresh re-INVITE at half the
/// interval when the answer makes it the refresher. The timing of the other cases (the non-refresher's BYE, 422, the
/// negotiation both ways) is checked on the manual timeline (ParleyEngineTests' SessionTimerTests): the shortest
/// interval RFC 4028 allows on the wire is 90 s, so one refresh (45 s) is what fits in a test here.
@Suite("Interop: sipp, session timers", .serialized)
struct SessionTimerInteropTests {
    @Test("sipp answers Session-Expires: 90;refresher=uac: parleyd refreshes by re-INVITE after 45 s, then sipp hangs up")
    func parleydRefreshes() throws {
        let started = ContinuousClock.now
        let (run, parleyd) = try SippInteropTests.parleydCalls(
            scenario: "uas-session-timer.xml", timeout: .seconds(58),
            options: ["--media-timeout", "off"])  // sipp sends no RTP
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["idle", "ringing", "joined", "left (remoteEnded)"]])
        let elapsed = ContinuousClock.now - started
        #expect(elapsed >= .seconds(45), "the refresh came at half the interval, not before: \(elapsed)")
    }
}
