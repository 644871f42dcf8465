import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// Transfer with linphonec 5.1 (issue 46), both roles, in a network namespace of the test's own: alice is the parleyd
/// beside linphonec (1,000 Hz), bob a second parleyd there (2,500 Hz, answering at once, recording).
extension AudioInterop {
    @Suite("Interop: transfer with linphonec", .serialized)
    struct LinphoneTransferTests {
        /// linphonec (440 Hz) and alice, bob beside them, and alice's control; bob's listening URI.
        static func parties() throws -> (LoopbackNamespace, LinphoneAndParleyd, NamespacedParleyd, GroupControl) {
            let namespace = try LoopbackNamespace()
            let peers = try LinphoneAndParleyd(tone: 440, namespace: namespace.name) { _ in ["--user", "alice", "--auto-answer", "0"] }
            // bob on 5060: linphonec's attended REFER names him without his port (sip:bob@127.0.0.1?Replaces=…).
            let bob = try NamespacedParleyd(namespace: namespace.name, tone: 2_500, port: 5060, ["--user", "bob", "--auto-answer", "0"])
            return (namespace, peers, bob, try GroupControl(dataDirectory: peers.parleydData))
        }

        /// Bob's one call ended by his control API after `seconds`; his recording.
        static func endBobsCall(_ bob: NamespacedParleyd, after seconds: Double) throws -> Recording {
            _ = try endBobsCalls(bob, after: seconds)
            return try bob.recording()
        }

        /// Bob's live calls (one joined call expected after a takeover) ended by his control API after `seconds`;
        /// every recording he made once there are `recordings`.
        @discardableResult
        static func endBobsCalls(_ bob: NamespacedParleyd, after seconds: Double, recordings: Int? = nil) throws -> [Recording] {
            Thread.sleep(forTimeInterval: seconds)
            let control = try GroupControl(dataDirectory: bob.dataDirectory)
            let live = try control.result(.list(ListParams()))["conversations"] as? [[String: Any]] ?? []
            if recordings != nil { #expect(live.count == 1 && live.first?["state"] as? String == "joined", "bob's one call: \(live)") }
            for conversation in live { _ = try? control.result(.end(ConversationParams(conversation: conversation["uuid"] as? String ?? ""))) }
            guard let recordings else { return [] }
            _ = try bob.process.waitForLine("bob's recordings") { _ in bob.process.lines.filter { $0.contains("recording complete:") }.count >= recordings }
            let files = try FileManager.default.contentsOfDirectory(atPath: bob.folder.path).filter { $0.hasSuffix(".wav") }
            return try files.map { try Recording(wavAt: bob.folder.appending(path: $0).path) }
        }

        @Test("alice transfers linphonec to bob (blind): linphonec takes the REFER and calls bob; alice's call ends transferred; bob hears linphonec's 440 Hz")
        func parleydTransfersLinphone() throws {
            let (namespace, peers, bob, alice) = try Self.parties()
            defer { withExtendedLifetime((namespace, peers, bob)) {} }
            let call = try alice.call("sip:linphone@127.0.0.1:\(peers.linphonePort)")
            try alice.waitForJoined([call])
            Thread.sleep(forTimeInterval: 1)
            let result = try alice.result(.transfer(TransferParams(conversation: call, to: "sip:bob@127.0.0.1:\(bob.port)")))
            #expect(result["state"] as? String == "complete", "\(result); linphonec: \(peers.linphoneOutput.suffix(1_000))")
            _ = try peers.process.waitForLine("alice's call ended") { $0.contains("→ left (transferred)") }
            let heard = try Self.endBobsCall(bob, after: 2.5)
            #expect(heard.seconds(at: 440) >= 1.5, "bob heard \(heard.dominantFrequencies())")
        }

        @Test("alice transfers linphonec to bob (attended): alice calls linphonec, then bob; her REFER names her call with bob (Replaces); linphonec calls bob replacing it; bob takes it over; both of alice's calls end; bob hears linphonec's 440 Hz")
        func parleydAttendedLinphone() throws {
            let (namespace, peers, bob, alice) = try Self.parties()
            defer { withExtendedLifetime((namespace, peers, bob)) {} }
            let withLinphone = try alice.call("sip:linphone@127.0.0.1:\(peers.linphonePort)")
            try alice.waitForJoined([withLinphone])
            let withBob = try alice.call("sip:bob@127.0.0.1:\(bob.port)")
            try alice.waitForJoined([withBob])
            Thread.sleep(forTimeInterval: 1)
            let result = try alice.result(.transfer(TransferParams(conversation: withLinphone, toConversation: withBob)))
            #expect(result["state"] as? String == "complete", "\(result); linphonec: \(peers.linphoneOutput.suffix(1_000))")
            _ = try bob.process.waitForLine(timeout: .seconds(10), "bob's call with alice replaced") { $0.contains("→ left (transferred)") }
            _ = try peers.process.waitForLine("alice's calls ended") { _ in peers.process.lines.filter { $0.contains("→ left") }.count >= 2 }
            let heard = try Self.endBobsCalls(bob, after: 2.5, recordings: 2)
            #expect(heard.contains { $0.seconds(at: 440) >= 1.5 }, "bob heard \(heard.map { $0.dominantFrequencies() })")
        }

        @Test("linphonec transfers alice to bob (blind, 'transfer URI'): alice answers 202, calls bob, NOTIFYs 200; her call with linphonec ends transferred; bob hears alice's 1,000 Hz")
        func linphoneTransfersParleyd() throws {
            let (namespace, peers, bob, alice) = try Self.parties()
            defer { withExtendedLifetime((namespace, peers, bob)) {} }
            let call = try alice.call("sip:linphone@127.0.0.1:\(peers.linphonePort)")
            try alice.waitForJoined([call])
            Thread.sleep(forTimeInterval: 1)
            peers.send("transfer sip:bob@127.0.0.1:\(bob.port)")
            _ = try peers.process.waitForLine(timeout: .seconds(15), "alice's call with linphonec ended") { $0.contains("→ left (transferred)") }
            #expect(peers.process.lines.contains { $0.contains("transferred by the peer: calling") })
            let heard = try Self.endBobsCall(bob, after: 2.5)
            #expect(heard.seconds(at: 1_000) >= 1.5, "bob heard \(heard.dominantFrequencies())")
        }

        @Test("linphonec's attended transfer ('transfer 1 --to-call 2'): linphonec calls alice and bob, hands alice to bob replacing its call with bob; bob takes it over; bob hears alice's 1,000 Hz")
        func linphoneAttended() throws {
            let (namespace, peers, bob, alice) = try Self.parties()
            defer { withExtendedLifetime((namespace, peers, bob)) {} }
            _ = alice
            peers.send("call sip:alice@127.0.0.1:\(peers.parleydPort)")
            _ = try peers.process.waitForLine(timeout: .seconds(10), "alice answering linphonec") { $0.contains("→ joined") }
            Thread.sleep(forTimeInterval: 1)
            peers.send("pause")  // linphonec places no second call while one is active
            try peers.waitForLinphone("is now paused")
            peers.send("call sip:bob@127.0.0.1:\(bob.port)")
            _ = try bob.process.waitForLine(timeout: .seconds(10), "bob answering linphonec") { $0.contains("→ joined") }
            Thread.sleep(forTimeInterval: 1)
            peers.send("transfer 1 --to-call 2")
            do {
                _ = try bob.process.waitForLine(timeout: .seconds(15), "bob's call with linphonec replaced") { $0.contains("→ left (transferred)") }
            } catch {
                print("alice, as the test failed:", peers.process.lines.suffix(25).joined(separator: "\n"))
                print("bob:", bob.process.lines.suffix(25).joined(separator: "\n"))
                print("linphonec:", peers.linphoneOutput.suffix(2_500))
                throw error
            }
            #expect(bob.process.lines.contains { $0.contains("attended transfer") }, "\(bob.process.lines.suffix(20))")
            let heard = try Self.endBobsCalls(bob, after: 2.5, recordings: 2)
            #expect(heard.contains { $0.seconds(at: 1_000) >= 1.5 }, "bob heard \(heard.map { $0.dominantFrequencies() })")
        }
    }
}
