import Foundation
import ParleyTestSupport
import Testing

/// Media admission (issue 48): beyond `--max-media-calls` calls with audio a new call gets 503, and the calls
/// already carried keep their audio.
@Suite("Interop: media admission control", .serialized, .timeLimit(.minutes(1)))
struct MediaAdmissionTests {
    typealias Audio = AudioInterop.AudioInteropTests

    /// `parley ARGS… --json --data-dir` of `daemon`, parsed.
    static func json(_ arguments: [String], of daemon: Parleyd) throws -> (status: Int32, object: [String: Any]?) {
        let run = try ControlCLITests.parley(arguments + ["--json", "--data-dir", daemon.dataDirectory.path])
        let first = run.output.split(separator: "\n").first.map(String.init) ?? ""
        return (run.status, try? JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])
    }

    @Test("with --max-media-calls 1 a second call gets 503 while the first keeps its audio; once it ends, calls come in again")
    func capacity() throws {
        let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0", "--max-media-calls", "1"])
        defer { try? FileManager.default.removeItem(at: calleeFolder) }
        // The caller's second call would hold the first (call waiting) while it is tried: left out here.
        let (caller, callerFolder) = try Audio.parleyd(tone: 1_000, ["--on-new-call", "none"])
        defer { try? FileManager.default.removeItem(at: callerFolder) }
        let target = "sip:parley@127.0.0.1:\(callee.port)"
        let first = try Self.json(["call", target], of: caller)
        let uuid = try #require(((first.object?["result"] as? [String: Any])?["conversation"] as? [String: Any])?["uuid"] as? String)
        _ = try PerCallEncryptionTests.listed(uuid, on: caller) { $0["state"] as? String == "joined" }
        let second = try ControlCLITests.parley(["call", target, "--data-dir", caller.dataDirectory.path])
        #expect(second.status != 0 && second.output.contains("503"), "\(second.output)")
        let status = try Self.json(["status"], of: callee).object?["result"] as? [String: Any]
        let counters = status?["counters"] as? [String: Any], limits = status?["limits"] as? [String: Any]
        #expect(counters?["callsRefusedOverMediaLimit"] as? Int == 1 && limits?["maxMediaCalls"] as? Int == 1, "\(String(describing: status))")
        // The first call's audio went on: the caller keeps receiving the callee's stream (figures every 2 s).
        Thread.sleep(forTimeInterval: 2.2)
        let audio = try Self.json(["audio", uuid], of: caller).object?["result"] as? [String: Any]
        let received = (audio?["stats"] as? [String: Any])?["packetsReceived"] as? Int ?? 0
        #expect(received >= 80, "the first call still carries audio: \(String(describing: audio))")
        #expect(try ControlCLITests.parley(["end", uuid, "--data-dir", caller.dataDirectory.path]).status == 0)
        try callee.waitForEnded(1)
        let third = try Self.json(["call", target], of: caller)
        let again = try #require(((third.object?["result"] as? [String: Any])?["conversation"] as? [String: Any])?["uuid"] as? String)
        let joined = try PerCallEncryptionTests.listed(again, on: caller) { $0["state"] as? String == "joined" }
        #expect(joined?["state"] as? String == "joined", "a call fits again: \(String(describing: joined))")
        #expect(callee.process.lines.contains { $0.contains("--max-media-calls") }, "the log says why calls are refused")
    }
}
