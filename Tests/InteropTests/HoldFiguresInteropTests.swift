import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// A hold in the middle of a call between two parleyd: the figures count no loss for it (live, in `parley audio`
/// and in the history record), never a negative count, and each recording keeps the held seconds as silence.
extension AudioInterop {
    @Suite("Interop: a hold in the figures and the recordings", .serialized)
    struct HoldFiguresInteropTests {
        /// The call: 1.5 s, a 2 s hold by the caller, 3 s more (time enough for a reading after the resume).
        static let script = "wait 1500; hold; wait 2000; resume; wait 3000; end"
        /// When the hold starts and ends, in seconds from the answer (the script runs once the call is joined).
        static let (holdAt, resumeAt) = (1.5, 3.5)

        @Test("loss 0 % with a 2 s hold, nothing negative, and WAVs as long as the call with the hold silent")
        func holdInTheMiddle() throws {
            let (callee, calleeFolder) = try AudioInteropTests.parleyd(tone: 440, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: calleeFolder) }
            let control = try ControlSession(callee)
            _ = try control.request(.subscribe(SubscribeParams()))
            let (caller, callerFolder) = try AudioInteropTests.parleyd(
                tone: 1_000, ["--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", Self.script])
            defer { try? FileManager.default.removeItem(at: callerFolder) }

            // The callee sees the hold and the resume (its direction leaves sendrecv and comes back), then a reading.
            let changes = try control.collect({ event in
                if case .mediaChanged = event { return true }
                return false
            }, until: { events in Self.directions(events).suffix(2) == ["recvonly", "sendrecv"] })
            guard case .mediaChanged(let resumed) = changes.last else { throw InteropError("no resume: \(changes)") }
            let conversation = resumed.conversation
            var readings = try Self.readings(control, of: conversation, timeout: 0)
            let beforeResume = readings.count
            readings += try Self.readings(control, of: conversation, timeout: 5)
            #expect(readings.count > beforeResume, "a reading after the resume")
            let audio = try RunningProcess(
                try Interop.binary("parley"), ["audio", String(conversation.prefix(8)), "--data-dir", callee.dataDirectory.path],
                name: "parley audio")
            #expect(try audio.waitForExit() == 0, "\(audio.standardError)")
            let statsLine = audio.lines.last ?? ""
            #expect(statsLine.contains(" lost 0 (0.0 %)") && !statsLine.contains("-"), "after the resume: \(audio.lines)")

            try caller.waitForEnded(1)
            try callee.waitForEnded(1)
            #expect(caller.transitions == [["idle", "ringing", "joined", "paused", "joined", "leaving", "left (localEnded)"]])
            let calleeRecord = try Self.lastRecord(control)
            let callerRecord = try Self.lastRecord(try ControlSession(caller))
            // Every reading the callee announced while the call ran, then both records' figures.
            readings += try Self.readings(control, of: conversation, timeout: 0)
            #expect(readings.count >= 2, "mediaStats every 2 s during a 6.5 s call")
            for figures in readings {
                #expect(figures.packetsLost == 0 && figures.lossPercent == 0, "a live reading: \(figures)")
                #expect((figures.peerPacketsLost ?? 0) >= 0, "a live reading: \(figures)")
            }
            for (side, record) in [("callee", calleeRecord), ("caller", callerRecord)] {
                let quality = try #require(record["quality"] as? [String: Any], "the \(side)'s record: \(record)")
                #expect(quality["packetsLost"] as? Int == 0 && quality["lossPercent"] as? Double == 0, "\(side): \(quality)")
                #expect((quality["peerPacketsLost"] as? Int ?? 0) >= 0, "\(side): \(quality)")
                #expect((quality["packetsReceived"] as? Int ?? 0) >= 150, "\(side): \(quality)")
            }

            // Each recording is as long as the call was connected, silent while held, the tone on either side.
            for (daemon, folder, record, hertz) in [
                (callee, calleeFolder, calleeRecord, 1_000.0), (caller, callerFolder, callerRecord, 440),
            ] {
                let heard = try AudioInteropTests.recording(in: folder, of: daemon)
                let connected = Double(try #require(record["durationMs"] as? Int)) / 1_000
                #expect(abs(heard.duration - connected) <= 0.3, "\(heard.duration) s recorded, \(connected) s connected")
                let before = heard.part(from: 0.3, to: Self.holdAt - 0.3)
                let held = heard.part(from: Self.holdAt + 0.5, to: Self.resumeAt - 0.3)
                let after = heard.part(from: Self.resumeAt + 0.5, to: connected - 0.3)
                #expect(before.seconds(at: hertz) >= 0.7 * before.duration, "\(hertz) Hz before: \(before.dominantFrequencies())")
                #expect(held.dominantFrequencies().allSatisfy { $0 == nil }, "held: \(held.dominantFrequencies())")
                #expect(after.seconds(at: hertz) >= 0.7 * after.duration, "\(hertz) Hz after: \(after.dominantFrequencies())")
            }
        }

        /// The directions that `mediaChanged` events gave, in order (none for a call's end).
        static func directions(_ events: [ControlEventMessage]) -> [String] {
            events.compactMap { event in
                if case .mediaChanged(let change) = event { return change.media?.direction }
                return nil
            }
        }

        /// The `mediaStats` readings of `conversation` that came so far (kept aside or still to read); with a
        /// `timeout`, at least one, waiting that long for it.
        static func readings(_ control: ControlSession, of conversation: String, timeout: TimeInterval) throws
            -> [MediaStatsInfo]
        {
            try control.collect(timeout: timeout, { event in
                if case .mediaStats(let figures) = event { return figures.conversation == conversation }
                return false
            }, until: { timeout == 0 || !$0.isEmpty }).compactMap { event in
                if case .mediaStats(let figures) = event { return figures.stats }
                return nil
            }
        }

        /// The newest history record of the daemon behind `control`.
        static func lastRecord(_ control: ControlSession) throws -> [String: Any] {
            let history = try control.request(.history(HistoryParams(limit: 1)))
            return try #require((history["records"] as? [[String: Any]])?.first, "\(history)")
        }
    }
}
