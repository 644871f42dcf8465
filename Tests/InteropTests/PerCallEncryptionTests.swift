import Foundation
import ParleyTestSupport
import Testing

/// `start {"encryption": …}` (issue 42): one call's offer encrypted otherwise than the node's `--media-encryption`.
@Suite("Interop: per-call media encryption", .serialized, .timeLimit(.minutes(3)))
struct PerCallEncryptionTests {
    typealias Audio = AudioInterop.AudioInteropTests

    /// The conversation `uuid` as `parley list --json` shows it on `daemon`, once `ready` holds (bounded: 10 s).
    static func listed(_ uuid: String?, on daemon: Parleyd, until ready: ([String: Any]) -> Bool) throws -> [String: Any]? {
        var found: [String: Any]?
        for _ in 0..<100 {
            let list = try ControlCLITests.parley(["list", "--json", "--data-dir", daemon.dataDirectory.path])
            let object = try? JSONSerialization.jsonObject(with: Data(list.output.utf8)) as? [String: Any]
            let conversations = (object?["result"] as? [String: Any])?["conversations"] as? [[String: Any]] ?? []
            found = conversations.first { uuid == nil || $0["uuid"] as? String == uuid }
            if let found, ready(found) { return found }
            usleep(100_000)
        }
        return found
    }

    @Test("a plain node's call asked for dtls, then sdes: each offer is encrypted so, answered in kind, seen by both sides")
    func override() throws {
        let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0"])
        defer { try? FileManager.default.removeItem(at: calleeFolder) }
        let (caller, callerFolder) = try Audio.parleyd(tone: 1_000, [])
        defer { try? FileManager.default.removeItem(at: callerFolder) }
        let own = ["--data-dir", caller.dataDirectory.path]
        for (index, method) in ["dtls", "sdes"].enumerated() {
            // Either case is understood.
            let call = try ControlCLITests.parley(
                ["call", "sip:parley@127.0.0.1:\(callee.port)", "--encryption", index == 0 ? method.uppercased() : method, "--json"] + own)
            #expect(call.status == 0, "\(call.output)")
            let result = try JSONSerialization.jsonObject(with: Data(call.output.split(separator: "\n")[0].utf8)) as? [String: Any]
            let uuid = try #require(((result?["result"] as? [String: Any])?["conversation"] as? [String: Any])?["uuid"] as? String)
            let ours = try Self.listed(uuid, on: caller) { $0["state"] as? String == "joined" && $0["encryption"] is String }
            #expect(ours?["encryption"] as? String == method, "\(String(describing: ours))")
            let theirs = try Self.listed(nil, on: callee) { $0["state"] as? String == "joined" && $0["encryption"] is String }
            #expect(theirs?["encryption"] as? String == method, "\(String(describing: theirs))")
            let audio = try ControlCLITests.parley(["audio", uuid] + own)
            #expect(audio.output.contains("encrypted (SRTP keyed by \(method.uppercased())"), "parley audio says how: \(audio.output)")
            #expect(try ControlCLITests.parley(["end", uuid] + own).status == 0)
            try callee.waitForEnded(index + 1)
        }
        #expect(!caller.process.lines.contains { $0.contains("inline:") }, "no key in the log")
    }

    @Test("refused before anything is sent: an unknown method (usage, 64), and plain media on a node that requires encryption")
    func refusals() throws {
        let strict = try Parleyd(["--require-media-encryption"])
        let own = ["--data-dir", strict.dataDirectory.path]
        let unknown = try ControlCLITests.parley(["call", "sip:bob@127.0.0.1:9", "--encryption", "zrtp"] + own)
        #expect(unknown.status == 64 && unknown.output.contains("none, auto, sdes or dtls"), "\(unknown.output)")
        let plain = try ControlCLITests.parley(["call", "sip:bob@127.0.0.1:9", "--encryption", "none"] + own)
        #expect(plain.status == 1 && plain.output.contains("requires encrypted media"), "\(plain.output)")
        let list = try ControlCLITests.parley(["list", "--json"] + own)
        #expect(list.output.contains(#""conversations":[]"#), "nothing was started: \(list.output)")
    }

    @Test("--require-media-encryption alone offers SRTP keyed by DTLS (SDES keys would cross in the SDP): a default parleyd answers in kind")
    func requiredOffersDTLS() throws {
        let (callee, calleeFolder) = try Audio.parleyd(tone: 440, ["--auto-answer", "0"])
        defer { try? FileManager.default.removeItem(at: calleeFolder) }
        let (caller, callerFolder) = try Audio.parleyd(
            tone: 1_000, ["--require-media-encryption", "--call", "sip:parley@127.0.0.1:\(callee.port)", "--script", "wait 1500; end"])
        defer { try? FileManager.default.removeItem(at: callerFolder) }
        let audio = try caller.process.waitForLine(timeout: .seconds(15), "its audio line") { $0.contains(": audio ") }
        #expect(audio.contains("keyed by DTLS"), "\(audio)")
        try caller.waitForEnded(1)
    }
}
