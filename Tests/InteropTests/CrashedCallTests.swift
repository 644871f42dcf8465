import Foundation
import Glibc
import Testing

/// parleyd killed (SIGKILL) with a call up records that call at its next start: ended as `crashed`, from the journal
/// of live calls in its data directory.
@Suite("Interop: a call up at a crash is recorded at restart", .serialized, .timeLimit(.minutes(3)))
struct CrashedCallTests {
    /// parleyd on `port` with `directory` as its data directory, signalling only.
    private static func parleyd(port: UInt16, directory: URL, _ extra: [String] = [], name: String) throws -> RunningProcess {
        let process = try RunningProcess(
            try Interop.binary("parleyd"),
            ["--listen", "udp://127.0.0.1:\(port)", "--data-dir", directory.path, "--media", "off", "--log-level", "debug"]
                + extra,
            name: name)
        try process.waitForLine("its listening line") { $0.contains("listening on") }
        return process
    }

    @Test("kill -9 with a call up: the restart on the same data directory records it as crashed (connected, ended by the kill); a clean stop leaves no journal")
    func killedWithACallUp() throws {
        let callee = try Parleyd(["--auto-answer", "0", "--media", "off"])
        let directory = FileManager.default.temporaryDirectory.appending(path: "parley-crashed-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = directory.appending(path: "calls.journal").path
        let port = Interop.freePort()
        let caller = try Self.parleyd(
            port: port, directory: directory, ["--call", "sip:parley@127.0.0.1:\(callee.port)"], name: "parleyd (caller)")
        try caller.waitForLine("the call joined") { _ in caller.conversationTransitions.first?.last == "joined" }
        // The journal holds the call as connected (written within 100 ms of the change, off the SIP thread).
        let connected = try Regex(#""connectedAt":[0-9]"#)
        let deadline = Date().addingTimeInterval(5)
        while ((try? String(contentsOfFile: journal, encoding: .utf8))?.contains(connected) != true) && Date() < deadline {
            usleep(20_000)
        }
        let text = try String(contentsOfFile: journal, encoding: .utf8)
        #expect(text.contains(connected), "\(text)")
        kill(caller.process.processIdentifier, SIGKILL)
        caller.process.waitUntilExit()
        let killedAt = Date()
        #expect(caller.process.terminationReason == .uncaughtSignal)
        #expect(!caller.lines.contains { $0.contains("→ left") })

        let restarted = try Self.parleyd(port: port, directory: directory, name: "parleyd (restarted)")
        #expect(restarted.lines.contains { $0.contains("was live when parleyd stopped without ending it: recorded as crashed") },
                "\(restarted.lines.prefix(20))")
        let history = try ControlCLITests.parley(["history", "--json", "--data-dir", directory.path])
        #expect(history.status == 0, "\(history.output)")
        let json = try #require(history.output.data(using: .utf8))
        let page = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any], "\(history.output)")
        let records = try #require(page["records"] as? [[String: Any]], "\(history.output)")
        try #require(records.count == 1, "\(history.output)")
        let record = records[0]
        #expect(record["endedReason"] as? String == "crashed", "\(record)")
        #expect(record["status"] as? String == "connected" && record["direction"] as? String == "outgoing", "\(record)")
        let formatter = ISO8601DateFormatter()  // whole seconds, as the CLI writes them
        let connectedAt = try #require((record["connectedAt"] as? String).flatMap(formatter.date(from:)), "\(record)")
        let endedAt = try #require((record["endedAt"] as? String).flatMap(formatter.date(from:)), "\(record)")
        #expect(endedAt >= connectedAt && endedAt <= killedAt, "ended \(endedAt), connected \(connectedAt), killed \(killedAt)")
        #expect(killedAt.timeIntervalSince(endedAt) < 12, "the journal is touched at least every 10 s while calls are live")
        // A second start records nothing more, and a clean stop leaves no journal behind.
        #expect(try restarted.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: journal))
        let again = try Self.parleyd(port: port, directory: directory, name: "parleyd (again)")
        #expect(!again.lines.contains { $0.contains("recorded as crashed") })
        #expect(try again.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: journal))
        let count = try ControlCLITests.parley(["history", "count", "--data-dir", directory.path])
        #expect(count.output.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("1"), "\(count.output)")
    }
}
