import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// Call waiting between real parleyd on loopback: a call alice places or answers while another is up holds it first
/// (`--on-new-call hold`, the default), or leaves it (`none`); answering with `endOthers` ends it.
extension AudioInterop {
    @Suite("Interop: call waiting", .serialized, .timeLimit(.minutes(2)))
    struct CallWaitingInteropTests {
        /// alice (1,000 Hz) calls bob (440 Hz), and 2.5 s later carol (2,500 Hz), for 2.5 s more; bob's recording,
        /// alice's state for bob's call, and the parleyd.
        static func secondCall(aliceOptions: [String] = []) throws -> (heard: Recording, states: [String]) {
            let (alice, aliceFolder) = try AudioInteropTests.parleyd(tone: 1_000, ["--user", "alice"] + aliceOptions)
            let (bob, bobFolder) = try AudioInteropTests.parleyd(tone: 440, ["--user", "bob", "--auto-answer", "0"])
            let (carol, carolFolder) = try AudioInteropTests.parleyd(tone: 2_500, ["--user", "carol", "--auto-answer", "0"])
            defer { for folder in [aliceFolder, bobFolder, carolFolder] { try? FileManager.default.removeItem(at: folder) } }
            let phone = try GroupControl(alice)
            let bobsCall = try phone.call("sip:bob@127.0.0.1:\(bob.port)")
            try phone.waitForJoined([bobsCall])
            Thread.sleep(forTimeInterval: 2.5)
            let carolsCall = try phone.call("sip:carol@127.0.0.1:\(carol.port)")
            try phone.waitForJoined([carolsCall])
            Thread.sleep(forTimeInterval: 2.5)
            for call in [bobsCall, carolsCall] { _ = try phone.result(.end(ConversationParams(conversation: call))) }
            try bob.waitForEnded(1)
            try alice.waitForEnded(2)
            return (try AudioInteropTests.recording(in: bobFolder, of: bob), alice.transitions.first ?? [])
        }

        @Test("a second call holds the first: bob hears alice until carol's call starts, then nothing (his call paused at alice's)")
        func secondCallHoldsTheFirst() throws {
            let (heard, states) = try Self.secondCall()
            let before = heard.part(from: 0.5, to: 2.0), after = heard.part(from: heard.duration - 2.0, to: heard.duration - 0.3)
            print("call waiting: bob heard alice at \(before.level(at: 1_000)) dB before carol's call, \(after.level(at: 1_000)) dB after; alice's call with bob went \(states)")
            #expect(before.level(at: 1_000) > -15)
            #expect(after.level(at: 1_000) < -60, "held: nothing from alice")
            #expect(states.contains("paused"), "\(states)")
        }

        @Test("--on-new-call none: the first call stays up, bob hears alice throughout")
        func noneLeavesTheFirst() throws {
            let (heard, states) = try Self.secondCall(aliceOptions: ["--on-new-call", "none"])
            let after = heard.part(from: heard.duration - 2.0, to: heard.duration - 0.3)
            #expect(after.level(at: 1_000) > -15, "not held: \(after.level(at: 1_000)) dB")
            #expect(!states.contains("paused"), "\(states)")
        }

        @Test("answering with endOthers (End & Answer) ends the call that was up; answering plainly (Hold & Answer) holds it")
        func answerEndingOrHoldingOthers() throws {
            let (alice, aliceFolder) = try AudioInteropTests.parleyd(tone: 1_000, ["--user", "alice"])
            let (bob, bobFolder) = try AudioInteropTests.parleyd(tone: 440, ["--user", "bob", "--auto-answer", "0"])
            let (carol, carolFolder) = try AudioInteropTests.parleyd(tone: 2_500, ["--user", "carol"])
            defer { for folder in [aliceFolder, bobFolder, carolFolder] { try? FileManager.default.removeItem(at: folder) } }
            let phone = try GroupControl(alice), carolsPhone = try GroupControl(carol)
            for endOthers in [false, true] {
                let bobsCall = try phone.call("sip:bob@127.0.0.1:\(bob.port)")
                try phone.waitForJoined([bobsCall])
                _ = try carolsPhone.call("sip:alice@127.0.0.1:\(alice.port)")
                let ringing = try phone.nextEvent("conversationChanged") { change in
                    let conversation = change["conversation"] as? [String: Any]
                    return conversation?["state"] as? String == "ringing" && conversation?["direction"] as? String == "incoming"
                }
                let incoming = try #require((ringing["conversation"] as? [String: Any])?["uuid"] as? String)
                _ = try phone.result(.join(JoinParams(conversation: incoming, endOthers: endOthers ? true : nil)))
                let bobs = try phone.nextEvent("conversationChanged") { change in
                    let conversation = change["conversation"] as? [String: Any]
                    return (conversation?["uuid"] as? String)?.lowercased() == bobsCall.lowercased() && ["paused", "left"].contains(conversation?["state"] as? String)
                }
                let state = (bobs["conversation"] as? [String: Any])?["state"] as? String
                #expect(state == (endOthers ? "left" : "paused"), "endOthers \(endOthers): bob's call \(String(describing: state))")
                for call in [bobsCall, incoming] { _ = try? phone.result(.end(ConversationParams(conversation: call))) }
                try bob.waitForEnded(endOthers ? 2 : 1)
            }
        }

        @Test("a new call that never connects gives the held call back: alice calls carol, who does not answer, and cancels; bob's call resumes and he hears alice again")
        func unansweredNewCallResumes() throws {
            let (alice, aliceFolder) = try AudioInteropTests.parleyd(tone: 1_000, ["--user", "alice"])
            let (bob, bobFolder) = try AudioInteropTests.parleyd(tone: 440, ["--user", "bob", "--auto-answer", "0"])
            let (carol, carolFolder) = try AudioInteropTests.parleyd(tone: 2_500, ["--user", "carol"])
            defer { for folder in [aliceFolder, bobFolder, carolFolder] { try? FileManager.default.removeItem(at: folder) } }
            let phone = try GroupControl(alice)
            let bobsCall = try phone.call("sip:bob@127.0.0.1:\(bob.port)")
            try phone.waitForJoined([bobsCall])
            let carolsCall = try phone.call("sip:carol@127.0.0.1:\(carol.port)")
            Thread.sleep(forTimeInterval: 1)
            _ = try phone.result(.end(ConversationParams(conversation: carolsCall)))
            _ = try phone.nextEvent("conversationChanged") { change in
                let conversation = change["conversation"] as? [String: Any]
                return (conversation?["uuid"] as? String)?.lowercased() == bobsCall.lowercased() && conversation?["state"] as? String == "joined"
            }
            Thread.sleep(forTimeInterval: 2)
            _ = try phone.result(.end(ConversationParams(conversation: bobsCall)))
            try bob.waitForEnded(1)
            let heard = try AudioInteropTests.recording(in: bobFolder, of: bob)
            let states = alice.transitions.first ?? []
            #expect(states.starts(with: ["idle", "ringing", "joined", "paused", "joined"]), "\(states)")
            let last = heard.part(from: heard.duration - 1.5, to: heard.duration - 0.3)
            #expect(last.level(at: 1_000) > -15, "bob hears alice again: \(last.level(at: 1_000)) dB")
        }
    }
}
