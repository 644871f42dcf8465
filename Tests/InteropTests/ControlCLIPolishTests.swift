import ControlProtocol
import Foundation
import Testing

/// `parley status`, `mute`/`unmute` and what `parley call` refuses, against running parleyd.
@Suite("Control API: parley status, mute and transports", .serialized)
struct ControlCLIPolishTests {
    struct Run {
        let status: Int32
        let stdout: [String]
        let stderr: String
    }

    /// Runs `parley ARGS…` to completion (at most 30 s), standard output and error apart.
    static func parley(_ arguments: [String]) throws -> Run {
        let process = try RunningProcess(try Interop.binary("parley"), arguments, name: "parley \(arguments.first ?? "")")
        let status = try process.waitForExit(timeout: .seconds(30))
        return Run(status: status, stdout: process.lines, stderr: process.standardError)
    }

    /// The `--json` answer's `result`.
    static func result(_ arguments: [String]) throws -> [String: Any] {
        let run = try parley(arguments + ["--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data((run.stdout.first ?? "").utf8)) as? [String: Any]
        return try #require(object?["result"] as? [String: Any], "\(run.stdout)")
    }

    @Test("parley status: every block under its heading, with the values the protocol gives")
    func status() throws {
        let alice = try Parleyd(["--user", "alice"])
        let a = ["--data-dir", alice.dataDirectory.path]
        let run = try Self.parley(["status"] + a)
        #expect(run.status == 0 && run.stderr.isEmpty, "\(run.stderr)")
        let json = try Self.result(["status"] + a)

        // Blocks: a heading flush left, then its rows indented; a blank line between blocks.
        let blocks = run.stdout.split(separator: "", omittingEmptySubsequences: true).map(Array.init)
        #expect(blocks.map { $0.first ?? "" } == ["parleyd", "registration", "conversations", "counters (since parleyd started)", "limits"],
                "\(run.stdout.joined(separator: "\n"))")
        for block in blocks {
            #expect(block.count >= 2, "\(block)")
            #expect(block.dropFirst().allSatisfy { $0.hasPrefix("  ") && !$0.hasPrefix("   ") }, "\(block)")
        }
        func rows(_ heading: String) -> [(String, String)] {
            (blocks.first { $0.first == heading } ?? []).dropFirst().map { line in
                let parts = line.trimmingCharacters(in: .whitespaces).split(separator: "  ", maxSplits: 1)
                return (String(parts[0]), parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
            }
        }
        let daemon = try #require(json["daemon"] as? [String: Any])
        let parleyd = rows("parleyd")
        #expect(parleyd.first { $0.0 == "version" }?.1 == daemon["version"] as? String)
        #expect(parleyd.first { $0.0 == "user" }?.1 == daemon["user"] as? String)
        #expect(parleyd.filter { $0.0 == "listening on" }.map(\.1) == daemon["listening"] as? [String])
        #expect(rows("registration").first?.0 == "state" && rows("registration").first?.1 == "unregistered")
        #expect(rows("conversations").map(\.1) == ["0"])
        let counters = try #require(json["counters"] as? [String: Int])
        // In the reference's order (docs/control-api.md, "Status counters" and "Status limits"), every one once.
        #expect(rows("counters (since parleyd started)").map(\.0) == StatusCounters.fields.map(\.name))
        // The load figures are measured afresh for each request (a busy machine moves them between the two): the
        // counts are compared.
        let measured: Set<String> = ["loopLagMs", "queueWaitMs", "loadBusyPercent", "loadShedPercent", "overloaded"]
        #expect(Dictionary(uniqueKeysWithValues: rows("counters (since parleyd started)")).filter { !measured.contains($0.key) }
            == counters.mapValues(String.init).filter { !measured.contains($0.key) })
        let limits = try #require(json["limits"] as? [String: Int])
        #expect(rows("limits").map(\.0) == StatusLimits.fields.map(\.name))
        #expect(Dictionary(uniqueKeysWithValues: rows("limits")) == limits.mapValues(String.init))
    }

    @Test("parley mute CONV toggles and says so; mute CONV on|off chooses; unmute always unmutes")
    func mute() throws {
        let bob = try Parleyd(["--user", "bob", "--auto-answer", "0"])
        let alice = try Parleyd(["--user", "alice"])
        let a = ["--data-dir", alice.dataDirectory.path]
        let call = try Self.parley(["call", "sip:bob@127.0.0.1:\(bob.port)"] + a)
        #expect(call.status == 0, "\(call.stderr)")
        func muted() throws -> Bool? {
            ((try Self.result(["list"] + a)["conversations"] as? [[String: Any]])?.first)?["isMuted"] as? Bool
        }
        for (command, said, now) in [
            (["mute", "1"], "muted", true), (["mute", "1"], "unmuted", false), (["mute", "1"], "muted", true),
            (["mute", "1", "on"], "muted", true), (["unmute", "1"], "unmuted", false), (["unmute", "1"], "unmuted", false),
            (["mute", "1", "off"], "unmuted", false), (["mute", "1", "on"], "muted", true),
        ] {
            let run = try Self.parley(command + a)
            #expect(run.status == 0, "\(command): \(run.stderr)")
            #expect(run.stdout.first?.hasPrefix(said + " ") == true, "\(command): \(run.stdout)")
            #expect(try muted() == now, "\(command)")
        }
        let bad = try Self.parley(["mute", "1", "loud"] + a)
        #expect(bad.status == 64 && bad.stderr.contains("on or off goes after CONV, got 'loud'"), "\(bad.stderr)")
        let nobody = try Self.parley(["mute", "ffffffff"] + a)
        #expect(nobody.status == 1 && nobody.stderr.contains("No live call matches \"ffffffff\"."), "\(nobody.stderr)")
        #expect(try Self.parley(["end", "1"] + a).status == 0)
        try bob.waitForEnded(1)
    }

    @Test("parley call refuses ;transport=sctp before anything is sent; ;transport=tcp reaches a TCP-only callee")
    func transports() throws {
        let bobPort = Interop.freePort()
        let bobDirectory = FileManager.default.temporaryDirectory.appending(path: "parleyd-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: bobDirectory) }
        let bob = try RunningProcess(
            try Interop.binary("parleyd"),
            ["--listen", "tcp://127.0.0.1:\(bobPort)", "--data-dir", bobDirectory.path, "--auto-answer", "0", "--media", "off"],
            name: "parleyd (TCP only)")
        defer { _ = try? bob.stop() }
        try bob.waitForLine("its listening line") { $0.contains("listening on") }
        let alice = try Parleyd(["--user", "alice"])
        let a = ["--data-dir", alice.dataDirectory.path]

        let sctp = try Self.parley(["call", "sip:bob@127.0.0.1:\(bobPort);transport=sctp"] + a)
        #expect(sctp.status == 1)
        #expect(sctp.stderr == "parley call: Parley can't place calls over SCTP; use udp, tcp or tls. (invalidParams, field to)\n")
        #expect(try Self.result(["list"] + a)["conversations"] as? [Any] != nil)
        #expect((try Self.result(["list"] + a)["conversations"] as? [Any])?.isEmpty == true, "a refused call is no conversation")
        #expect(try Self.result(["status"] + a)["counters"].flatMap { ($0 as? [String: Int])?["outgoingCalls"] } == 0)

        let tcp = try Self.parley(["call", "sip:bob@127.0.0.1:\(bobPort);transport=tcp"] + a)
        #expect(tcp.status == 0, "\(tcp.stderr)")
        try bob.waitForLine("the call over TCP") { $0.contains("→ joined") }
        #expect(try Self.parley(["end", "1"] + a).status == 0)
        try bob.waitForLine("its end") { $0.contains("→ left") }

        // parleyd's own calls are checked when it starts.
        let scripted = try RunningProcess(
            try Interop.binary("parleyd"),
            ["--listen", "udp://127.0.0.1:\(Interop.freePort())", "--no-history", "--call", "sip:bob@127.0.0.1:\(bobPort);transport=sctp"],
            name: "parleyd --call sctp")
        #expect(try scripted.waitForExit(timeout: .seconds(10)) == 64)
        #expect(scripted.standardError.contains("Parley can't place calls over SCTP; use udp, tcp or tls."), "\(scripted.standardError)")
    }

    @Test("parley call says why a call could not be placed, at once: nobody listening (ICMP), no TCP listener, refused")
    func failureReasons() throws {
        let alice = try Parleyd(["--user", "alice", "--media", "off"])
        let a = ["--data-dir", alice.dataDirectory.path]
        let nobody = Interop.freePort()
        let started = ContinuousClock.now
        let unreachable = try Self.parley(["call", "sip:bob@127.0.0.1:\(nobody)"] + a)
        #expect(ContinuousClock.now - started < .seconds(3), "an ICMP port unreachable fails the call at once")
        #expect(unreachable.status == 1)
        #expect(unreachable.stderr == "parley call: Couldn't place the call: nobody is listening at udp 127.0.0.1:\(nobody) "
            + "(ICMP port unreachable). (failed)\n")
        let json = try Self.parley(["call", "sip:bob@127.0.0.1:\(nobody)", "--json"] + a)
        let error = try JSONSerialization.jsonObject(with: Data((json.stdout.first ?? "").utf8)) as? [String: Any]
        let details = (error?["error"] as? [String: Any])?["details"] as? [String: Any]
        #expect(details?["technical"] as? String == "nobody is listening at udp 127.0.0.1:\(nobody) (ICMP port unreachable)",
            "\(json.stdout)")
        let refused = try Self.parley(["call", "sip:bob@127.0.0.1:\(nobody);transport=tcp"] + a)
        #expect(refused.stderr.hasPrefix("parley call: Couldn't place the call: connection to 127.0.0.1:\(nobody) failed: "),
            "\(refused.stderr)")
    }
}
