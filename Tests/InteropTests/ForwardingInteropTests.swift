import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// Call forwarding (issue 46) between three parleyd: A calls B, B forwards (302 naming C), A follows the 302 and C
/// answers; A hears C's 1,000 Hz, and B's history records the call as forwarded.
extension AudioInterop {
    @Suite("Interop: call forwarding between parleyd", .serialized)
    struct ForwardingInteropTests {
        /// C (answering, 1,000 Hz), B (forwarding with `forwarding` arguments) and A calling B (recording, 700 Hz);
        /// `body` gets them once A's call is up, then A's recording is checked for C's tone.
        static func forwarded(
            _ forwarding: (_ c: String) -> [String], _ body: (_ a: Parleyd, _ b: Parleyd, _ c: Parleyd) throws -> Void
        ) throws {
            let (c, cFolder) = try AudioInterop.AudioInteropTests.parleyd(tone: 1_000, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: cFolder) }
            let (b, bFolder) = try AudioInteropTests.parleyd(tone: 440, forwarding(c.uri(.udp)))
            defer { try? FileManager.default.removeItem(at: bFolder) }
            let (a, aFolder) = try AudioInteropTests.parleyd(tone: 700, ["--call", b.uri(.udp)])
            defer { try? FileManager.default.removeItem(at: aFolder) }
            _ = try a.process.waitForLine(timeout: .seconds(20), "A's call joined (with C)") { $0.contains("→ joined") }
            _ = try c.process.waitForLine("C answered") { $0.contains("→ joined") }
            try body(a, b, c)
            Thread.sleep(forTimeInterval: 2.5)
            let call = try TransferInteropTests.conversation(in: try #require(a.process.lines.first { $0.contains("→ joined") }))
            _ = try ControlSession(a).request(.end(ConversationParams(conversation: call)))
            try a.waitForEnded(1, timeout: .seconds(10))
            let heard = try AudioInteropTests.recording(in: aFolder, of: a)
            #expect(heard.seconds(at: 1_000) >= 1.5, "A heard \(heard.dominantFrequencies())")
            #expect(heard.seconds(at: 440) < 0.2, "A never reached B's audio: \(heard.dominantFrequencies())")
            #expect(a.process.lines.contains { $0.contains("302 Moved Temporarily: following it to") }, "\(a.process.lines.suffix(20))")
            let history = try ControlSession(b).request(.history(HistoryParams()))
            let records = try #require(history["records"] as? [[String: Any]], "\(history)")
            #expect(records.first?["status"] as? String == "forwarded", "B's history: \(records)")
        }

        @Test("forwarding every call (--forward-always): B answers 302 before ringing, A calls C, C's 1,000 Hz heard; B never rang")
        func always() throws {
            try Self.forwarded({ ["--forward-always", $0] }) { _, b, _ in
                #expect(b.transitions.isEmpty, "B rang: \(b.transitions)")
                #expect(b.process.lines.contains { $0.contains("forwarded the call from") && $0.contains("forwarding every call") })
            }
        }

        @Test("forwarding on busy: with do-not-disturb on B forwards (302) instead of 486; set over the control API")
        func busy() throws {
            try Self.forwarded({ ["--dnd", "--forward-busy", $0] }) { _, b, _ in
                #expect(b.transitions.isEmpty, "B rang: \(b.transitions)")
                let state = try ControlSession(b).request(.forwarding(ForwardingParams(busy: "")))
                #expect(state["busy"] is NSNull, "turned off: \(state)")
            }
        }

        @Test("forwarding on no answer after 2 s: B rings, then 302; B's conversation ends forwarded; A's call reaches C")
        func noAnswer() throws {
            let began = ContinuousClock.now
            try Self.forwarded({ ["--forward-no-answer", $0, "--forward-after", "2"] }) { _, b, _ in
                #expect(ContinuousClock.now - began >= .seconds(2))
                #expect(b.transitions.first == ["ringing", "left (forwarded)"], "\(b.transitions)")
            }
        }
    }
}

/// Forwarding toward a caller that is not parleyd: baresip 1.0.0 calls a parleyd that forwards every call.
extension AudioInterop.ForwardingInteropTests {
    @Test("baresip calling a forwarding parleyd gets the 302 naming C and calls C (libre follows redirects)")
    func baresipFollows() throws {
        let (c, cFolder) = try AudioInterop.AudioInteropTests.parleyd(tone: 1_000, ["--auto-answer", "0"])
        defer { try? FileManager.default.removeItem(at: cFolder) }
        let (b, bFolder) = try AudioInterop.AudioInteropTests.parleyd(tone: 440, ["--forward-always", c.uri(.udp)])
        defer { try? FileManager.default.removeItem(at: bFolder) }
        let baresip = try Baresip(dial: b.uri(.udp))
        try baresip.quotingTranscript {
            _ = try c.process.waitForLine(timeout: .seconds(15), "C answering baresip") { $0.contains("→ joined") }
            let starts = baresip.messages.map(\.startLine)
            #expect(starts.contains { $0.hasPrefix("SIP/2.0 302") }, "\(starts)")
            #expect(b.transitions.isEmpty, "B rang: \(b.transitions)")
            try baresip.send("/hangup")
            try c.waitForEnded(1, timeout: .seconds(10))
        }
    }
}

/// What parleyd says of forwarding options it cannot use.
@Suite("parleyd: forwarding options")
struct ForwardingOptionTests {
    @Test("a target that is no SIP URI, --forward-after without --forward-no-answer, and a no-answer time not shorter than the ring timeout are usage errors")
    func refusals() throws {
        let cases: [([String], String)] = [
            (["--forward-always", "carol"], "--forward-always expects a SIP URI"),
            (["--forward-after", "10"], "--forward-after goes with --forward-no-answer URI"),
            (["--forward-no-answer", "sip:vm@127.0.0.1:9", "--forward-after", "90"], "--forward-after must be shorter than --ring-timeout (60 s)"),
        ]
        for (arguments, message) in cases {
            let refused = try RunningProcess(
                try Interop.binary("parleyd"), ["--no-control", "--no-history", "--dbus", "off"] + arguments, name: "parleyd forwarding options")
            #expect(try refused.waitForExit() == 64, "\(arguments)")
            #expect(refused.standardError.contains(message), "\(arguments): \(refused.standardError)")
        }
    }
}
