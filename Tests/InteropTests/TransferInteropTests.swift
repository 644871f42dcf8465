import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// Blind transfer (issue 46) with baresip 1.0.0 as the party handed over: parleyd A calls baresip, then `transfer`s
/// it to parleyd C. baresip takes the REFER (202), calls C, and reports the new call's progress in NOTIFYs; A's
/// action is settled by the final one (not by the 202) and A's call then ends `transferred`. C hears baresip's 440 Hz.
extension AudioInterop {
    @Suite("Interop: blind transfer with baresip", .serialized)
    struct TransferInteropTests {
        /// The uuid in a parleyd log line about a conversation.
        static func conversation(in line: String) throws -> String {
            try #require(line.split(separator: " ").first { UUID(uuidString: String($0)) != nil }.map(String.init), "\(line)")
        }

        /// The three parties: the target parleyd (recording, with `targetArguments`), baresip, and the transferor
        /// parleyd, whose call to baresip is up; `body` gets them, the call's uuid and a control session.
        static func withCall(
            target targetArguments: [String],
            _ body: (_ target: Parleyd, _ targetFolder: URL, _ baresip: Baresip, _ transferor: Parleyd, _ uuid: String, _ control: ControlSession) throws -> Void
        ) throws {
            let (target, targetFolder) = try AudioInteropTests.parleyd(tone: 1_000, targetArguments)
            defer { try? FileManager.default.removeItem(at: targetFolder) }
            let baresip = try Baresip()
            let (transferor, transferorFolder) = try AudioInteropTests.parleyd(tone: 700, ["--call", baresip.uri(.udp)])
            defer { try? FileManager.default.removeItem(at: transferorFolder) }
            try baresip.quotingTranscript {
                let line = try transferor.process.waitForLine("the call to baresip") { $0.contains("→ joined") }
                try body(target, targetFolder, baresip, transferor, try Self.conversation(in: line), try ControlSession(transferor))
            }
        }

        @Test("parleyd transfers baresip to another parleyd: the 202, NOTIFYs to 200, A ends transferred, C hears baresip's 440 Hz")
        func blindTransfer() throws {
            try Self.withCall(target: ["--auto-answer", "0"]) { target, targetFolder, baresip, transferor, uuid, control in
                let result = try control.request(.transfer(TransferParams(conversation: uuid, to: target.uri(.udp))))
                #expect(result["state"] as? String == "complete", "\(result)")
                try transferor.waitForEnded(1, timeout: .seconds(10))
                #expect(transferor.transitions.first?.last == "left (transferred)", "\(transferor.transitions)")
                try target.waitForTransition(to: "joined")
                Thread.sleep(forTimeInterval: 2)
                try baresip.send("/hangup")
                try target.waitForEnded(1, timeout: .seconds(10))
                let heard = try AudioInteropTests.recording(in: targetFolder, of: target)
                #expect(heard.seconds(at: 440) >= 1.5, "C heard \(heard.dominantFrequencies())")
                let starts = baresip.messages.map(\.startLine)
                #expect(starts.contains { $0.hasPrefix("SIP/2.0 202") }, "baresip accepted the REFER with 202: \(starts)")
                #expect(starts.filter { $0.hasPrefix("NOTIFY ") }.count >= 1, "baresip's NOTIFYs: \(starts)")
            }
        }

        @Test("a target that refuses (486, do-not-disturb): the transfer fails naming it, and the call goes on")
        func refusedTarget() throws {
            try Self.withCall(target: ["--dnd"]) { target, _, _, transferor, uuid, control in
                let refused = try control.error(.transfer(TransferParams(conversation: uuid, to: target.uri(.udp))))
                #expect(refused.message.contains("486"), "\(refused)")
                #expect(transferor.transitions.first?.last == "joined", "the call goes on: \(transferor.transitions)")
                let unknown = try control.error(.transfer(TransferParams(conversation: uuid, to: "not a target")))
                #expect(unknown.code == "invalidParams" && unknown.field == "to", "\(unknown)")
                _ = try control.request(.end(ConversationParams(conversation: uuid)))
                try transferor.waitForEnded(1, timeout: .seconds(10))
                #expect(transferor.transitions.first?.last == "left (localEnded)", "\(transferor.transitions)")
            }
        }

        @Test("parleyd transfers parleyd: B takes the REFER (202), calls C and tells A 100 then 200; both calls with A end transferred; C hears B's 440 Hz; --accept-refer never answers 603")
        func parleydTransferred() throws {
            let (target, targetFolder) = try AudioInteropTests.parleyd(tone: 1_000, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: targetFolder) }
            let (transferee, transfereeFolder) = try AudioInteropTests.parleyd(tone: 440, ["--auto-answer", "0"])
            defer { try? FileManager.default.removeItem(at: transfereeFolder) }
            let (transferor, transferorFolder) = try AudioInteropTests.parleyd(
                tone: 700, ["--call", "sip:parley@127.0.0.1:\(transferee.port)"])
            defer { try? FileManager.default.removeItem(at: transferorFolder) }
            let uuid = try Self.conversation(in: try transferor.process.waitForLine("the call to B") { $0.contains("→ joined") })
            let (watchingA, watchingB) = (try GroupControl(transferor), try GroupControl(transferee))
            let result = try ControlSession(transferor).request(.transfer(TransferParams(conversation: uuid, to: target.uri(.udp))))
            #expect(result["state"] as? String == "complete", "\(result)")
            for (watcher, role) in [(watchingA, "transferor"), (watchingB, "transferee")] {
                let trying = try watcher.nextEvent("transferProgress") { $0["role"] as? String == role && $0["status"] as? Int == 100 }
                let answered = try watcher.nextEvent("transferProgress") { $0["role"] as? String == role && $0["final"] as? Bool == true }
                #expect(trying["final"] as? Bool == false && answered["status"] as? Int == 200, "\(role): \(trying), \(answered)")
            }
            try transferor.waitForEnded(1, timeout: .seconds(10))
            #expect(transferor.transitions.first?.last == "left (transferred)", "A: \(transferor.transitions)")
            let answered = try target.process.waitForLine("C answering B") { $0.contains("→ joined") }
            #expect(transferee.process.lines.contains { $0.contains("transferred by the peer: calling") }, "\(transferee.process.lines.suffix(10))")
            let bsCalls = try ControlSession(transferee).request(.list(ListParams()))["conversations"] as? [[String: Any]] ?? []
            let withA = try #require(transferee.process.lines.first { $0.contains("→ joined") }.map { try Self.conversation(in: $0) })
            #expect(bsCalls.contains { ($0["transferredFrom"] as? String)?.lowercased() == withA.lowercased() }, "B's new call names the call it came from: \(bsCalls)")
            Thread.sleep(forTimeInterval: 2)
            _ = try ControlSession(target).request(.end(ConversationParams(conversation: try Self.conversation(in: answered))))
            try target.waitForEnded(1, timeout: .seconds(10))
            try transferee.waitForEnded(2, timeout: .seconds(10))
            #expect(transferee.transitions.first?.last == "left (transferred)", "B's call with A: \(transferee.transitions)")
            let heard = try AudioInteropTests.recording(in: targetFolder, of: target)
            #expect(heard.seconds(at: 440) >= 1.5, "C heard \(heard.dominantFrequencies())")
        }

        @Test("a parleyd with --accept-refer never answers the REFER 603: the transfer fails naming it and the call goes on")
        func refuses() throws {
            let (transferee, transfereeFolder) = try AudioInteropTests.parleyd(tone: 440, ["--auto-answer", "0", "--accept-refer", "never"])
            defer { try? FileManager.default.removeItem(at: transfereeFolder) }
            let (transferor, transferorFolder) = try AudioInteropTests.parleyd(
                tone: 700, ["--call", "sip:parley@127.0.0.1:\(transferee.port)"])
            defer { try? FileManager.default.removeItem(at: transferorFolder) }
            let uuid = try Self.conversation(in: try transferor.process.waitForLine("the call to B") { $0.contains("→ joined") })
            let control = try ControlSession(transferor)
            let refused = try control.error(.transfer(TransferParams(conversation: uuid, to: "sip:carol@127.0.0.1:9")))
            #expect(refused.message.contains("603"), "\(refused)")
            #expect(transferor.transitions.first?.last == "joined" && transferee.transitions.first?.last == "joined")
            _ = try control.request(.end(ConversationParams(conversation: uuid)))
            try transferee.waitForEnded(1, timeout: .seconds(10))
        }
    }
}

/// Attended transfer (RFC 3891 Replaces) between three parleyd: A calls B, then C (B is held), and transfers B to C
/// replacing its call with C.
extension AudioInterop.TransferInteropTests {
    @Test("attended: A's REFER names its call with C (Replaces); B calls C with Replaces, C takes it over at once and hangs up A; both of A's calls end; C hears B's 440 Hz")
    func attended() throws {
        let (c, cFolder) = try AudioInterop.AudioInteropTests.parleyd(tone: 1_000, ["--auto-answer", "0"])
        defer { try? FileManager.default.removeItem(at: cFolder) }
        let (b, bFolder) = try AudioInterop.AudioInteropTests.parleyd(tone: 440, ["--auto-answer", "0"])
        defer { try? FileManager.default.removeItem(at: bFolder) }
        let (a, aFolder) = try AudioInterop.AudioInteropTests.parleyd(tone: 700, ["--call", b.uri(.udp)])
        defer { try? FileManager.default.removeItem(at: aFolder) }
        let withB = try Self.conversation(in: try a.process.waitForLine("A's call to B") { $0.contains("→ joined") })
        let control = try ControlSession(a)
        _ = try control.request(.start(StartParams(to: c.uri(.udp))))
        try c.waitForTransition(to: "joined")
        try a.waitForTransition(to: "joined", count: 2)
        let withC = try #require(a.process.lines.filter { $0.contains("→ joined") }.compactMap { try? Self.conversation(in: $0) }.first { $0 != withB })
        Thread.sleep(forTimeInterval: 1)
        let result = try control.request(.transfer(TransferParams(conversation: withB, toConversation: withC)))
        #expect(result["state"] as? String == "complete", "\(result)")
        try a.waitForEnded(2, timeout: .seconds(10))
        #expect(a.transitions.first?.last == "left (transferred)", "A's call with B: \(a.transitions)")
        try c.waitForTransition(to: "joined", count: 2)
        #expect(c.transitions.first?.last == "left (transferred)", "C's call with A, replaced: \(c.transitions)")
        #expect(c.transitions.last?.contains("ringing") == true, "the new call reported: \(c.transitions)")
        #expect(c.process.lines.contains { $0.contains("replaces") && $0.contains("attended transfer") })
        Thread.sleep(forTimeInterval: 2.5)
        let replacing = try Self.conversation(in: try #require(c.process.lines.last { $0.contains("→ joined") }))
        _ = try ControlSession(c).request(.end(ConversationParams(conversation: replacing)))
        try c.waitForEnded(2, timeout: .seconds(10))
        try b.waitForEnded(2, timeout: .seconds(10))
        #expect(b.transitions.first?.last == "left (transferred)", "B's call with A: \(b.transitions)")
        _ = try c.process.waitForLine("C's two recordings") { _ in c.process.lines.filter { $0.contains("recording complete:") }.count >= 2 }
        let files = try FileManager.default.contentsOfDirectory(atPath: cFolder.path).filter { $0.hasSuffix(".wav") }
        let heard = try files.map { try Recording(wavAt: cFolder.appending(path: $0).path) }
        #expect(heard.contains { $0.seconds(at: 440) >= 1.5 }, "C heard \(heard.map { $0.dominantFrequencies() })")
    }
}

/// baresip 1.0.0 as the transferor: its `/transfer` REFERs the parleyd it called.
extension AudioInterop.TransferInteropTests {
    @Test("baresip transfers parleyd (/transfer): parleyd answers 202, calls the target, NOTIFYs 100 and 200; its call with baresip ends transferred")
    func baresipTransfers() throws {
        let (c, cFolder) = try AudioInterop.AudioInteropTests.parleyd(tone: 1_000, ["--auto-answer", "0"])
        defer { try? FileManager.default.removeItem(at: cFolder) }
        let (b, bFolder) = try AudioInterop.AudioInteropTests.parleyd(tone: 440, ["--auto-answer", "0"])
        defer { try? FileManager.default.removeItem(at: bFolder) }
        let baresip = try Baresip(dial: b.uri(.udp))
        try baresip.quotingTranscript {
            try b.waitForTransition(to: "joined", timeout: .seconds(10))
            Thread.sleep(forTimeInterval: 1)
            try baresip.send("/transfer \(c.uri(.udp))")
            try c.waitForTransition(to: "joined", timeout: .seconds(10))
            try b.waitForTransition(to: "joined", count: 2, timeout: .seconds(10))
            try b.waitForEnded(1, timeout: .seconds(10))
            #expect(b.transitions.first?.last == "left (transferred)", "B's call with baresip: \(b.transitions)")
            let received = baresip.messages.map(\.startLine)
            #expect(received.contains { $0.hasPrefix("SIP/2.0 202") }, "\(received)")
            #expect(received.filter { $0.hasPrefix("NOTIFY ") }.count >= 2, "\(received)")
            Thread.sleep(forTimeInterval: 2)
            let call = try Self.conversation(in: try #require(c.process.lines.last { $0.contains("→ joined") }))
            _ = try ControlSession(c).request(.end(ConversationParams(conversation: call)))
            try c.waitForEnded(1, timeout: .seconds(10))
            let heard = try AudioInterop.AudioInteropTests.recording(in: cFolder, of: c)
            #expect(heard.seconds(at: 440) >= 1.5, "C heard \(heard.dominantFrequencies())")
        }
    }
}

/// Transfer's edge cases against a real peer: sipp (Tests/Interop/sipp/uac-refer-storm.xml).
extension AudioInterop.TransferInteropTests {
    @Test("sipp: a REFER outside a dialog 405, one naming parleyd 403, five REFERs in one call each taken (202, NOTIFY 100, NOTIFY failure) and the sixth refused 403; the call goes on until sipp hangs up")
    func referStorm() throws {
        let parleyd = try Parleyd(["--auto-answer", "0"])
        let run = try SippInteropTests.sippCalls(parleyd, scenario: "uac-refer-storm.xml")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(6, timeout: .seconds(20))
        #expect(parleyd.transitions.first == ["ringing", "joining", "joined", "left (remoteEnded)"], "\(parleyd.transitions)")
        #expect(parleyd.process.lines.filter { $0.contains("transferred by the peer: calling") }.count == 5)
        #expect(parleyd.process.lines.contains { $0.contains("the peer's REFER refused: 5 taken already") })
    }
}
