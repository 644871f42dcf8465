import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// A peer killed mid-call (`kill -9`: no BYE) is noticed by the silence of its media: the call ends as
/// `mediaTimeout`, with a BYE, and the history says so.
extension AudioInterop {
    @Suite("Interop: a dead peer's call ends (mediaTimeout)", .serialized)
    struct MediaTimeoutInteropTests {
        @Test("kill -9 of the caller mid-call: the callee ends the call within its 3 s media timeout, recorded as such")
        func killedPeer() throws {
            let (callee, calleeFolder) = try AudioInterop.AudioInteropTests.parleyd(
                tone: 440, ["--auto-answer", "0", "--media-timeout", "3"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let control = try ControlSession(callee)
            let (caller, callerFolder) = try AudioInterop.AudioInteropTests.parleyd(
                tone: 1_000, ["--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", "wait 60000; end"])
            defer { try? FileManager.default.removeItem(at: callerFolder) }
            // Two seconds of audio both ways (longer than the timeout's check interval), then the caller dies.
            try callee.process.waitForLine("the call joined") { _ in callee.transitions.first?.contains("joined") == true }
            usleep(2_000_000)
            #expect(callee.transitions.first?.last == "joined", "audio flowing keeps the call up: \(callee.transitions)")
            kill(caller.process.process.processIdentifier, SIGKILL)
            let killed = ContinuousClock.now
            try callee.waitForEnded(1, timeout: .seconds(10))
            let noticedAfter = ContinuousClock.now - killed
            #expect(callee.transitions.first?.last == "left (mediaTimeout)", "\(callee.transitions)")
            #expect(noticedAfter >= .seconds(2.5) && noticedAfter <= .seconds(5), "ended \(noticedAfter) after the kill")
            #expect(callee.process.lines.contains { $0.contains("no RTP or RTCP from the peer for 3.0 seconds; ending") })
            let record = try HoldFiguresInteropTests.lastRecord(control)
            #expect(record["endedReason"] as? String == "mediaTimeout" && record["status"] as? String == "connected", "\(record)")
            let heard = try AudioInterop.AudioInteropTests.recording(in: calleeFolder, of: callee)
            #expect(heard.seconds(at: 1_000) >= 1.5, "the caller's tone before the kill: \(heard.dominantFrequencies())")
        }
    }
}
