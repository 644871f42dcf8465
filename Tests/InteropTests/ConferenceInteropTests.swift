import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// The conference bridge between real parleyd on loopback (docs/media.md, "The conference bridge"): alice (1,000 Hz)
/// calls bob (440 Hz) and carol (2,500 Hz) and merges the calls; what bob and carol record is read tone by tone.
extension AudioInterop {
    @Suite("Interop: merged calls hear each other", .serialized, .timeLimit(.minutes(2)))
    struct ConferenceInteropTests {
        static let tones = (alice: 1_000.0, bob: 440.0, carol: 2_500.0)

        /// alice (the focus, 1,000 Hz) with bob (440 Hz) and carol (2,500 Hz) answering, each recording what it hears
        /// into its folder; alice's calls to both, joined.
        struct ThreeParties {
            let alice: Parleyd, bob: Parleyd, carol: Parleyd
            let folders: [URL]
            let focus: GroupControl
            let bobsCall: String, carolsCall: String

            init() throws {
                var made: [(Parleyd, URL)] = []
                for (user, tone) in [("alice", tones.alice), ("bob", tones.bob), ("carol", tones.carol)] {
                    let answers = user == "alice" ? [] : ["--auto-answer", "0"]
                    made.append(try AudioInteropTests.parleyd(tone: Int(tone), ["--user", user] + answers))
                }
                (alice, bob, carol) = (made[0].0, made[1].0, made[2].0)
                folders = made.map(\.1)
                focus = try GroupControl(alice)
                bobsCall = try focus.call("sip:bob@127.0.0.1:\(bob.port)")
                carolsCall = try focus.call("sip:carol@127.0.0.1:\(carol.port)")
                try focus.waitForJoined([bobsCall, carolsCall])
            }

            func removeFolders() { for folder in folders { try? FileManager.default.removeItem(at: folder) } }
        }

        /// The focus's recording of its group (what the local user heard of it: `group-UUID.wav`), once complete.
        static func groupRecording(in folder: URL, of daemon: Parleyd) throws -> Recording {
            let said = try daemon.process.waitForLine("the group's recording complete") {
                $0.contains("recording complete:") && $0.contains("group-")
            }
            guard let path = said.components(separatedBy: "recording complete: ").last, path.hasPrefix(folder.path) else {
                throw InteropError("no group recording in \(folder.path): \(said)")
            }
            return try Recording(wavAt: path)
        }

        /// The levels (dB) of the three tones in a stretch of a recording.
        static func levels(_ recording: Recording) -> (alice: Double, bob: Double, carol: Double) {
            (recording.level(at: tones.alice), recording.level(at: tones.bob), recording.level(at: tones.carol))
        }

        @Test("merged: bob hears alice and carol, carol hears alice and bob, neither itself (≥ 60 dB below); unmerged: each hears alice alone again")
        func mergeAndUnmerge() throws {
            let parties = try ThreeParties()
            defer { parties.removeFolders() }
            let (alice, bob, carol, focus) = (parties.alice, parties.bob, parties.carol, parties.focus)
            let (bobsCall, carolsCall, bobFolder, carolFolder) = (parties.bobsCall, parties.carolsCall, parties.folders[1], parties.folders[2])
            // Merged at once: the calls' first pipelines have barely started when the bridge's take their place.
            _ = try focus.result(.merge(MergeParams(conversation: bobsCall, with: carolsCall)))
            Thread.sleep(forTimeInterval: 5)
            _ = try focus.result(.unmerge(ConversationParams(conversation: carolsCall)))
            Thread.sleep(forTimeInterval: 3)
            for call in [bobsCall, carolsCall] { _ = try focus.result(.end(ConversationParams(conversation: call))) }
            try bob.waitForEnded(1)
            try carol.waitForEnded(1)
            let heard = (bob: try AudioInteropTests.recording(in: bobFolder, of: bob), carol: try AudioInteropTests.recording(in: carolFolder, of: carol))
            #expect(alice.process.lines.filter { $0.contains("conference bridge") }.count == 2, "\(alice.process.lines.suffix(20))")
            // Merged: the stretch 1.5–3.5 s before the unmerge (3 s before the end); unmerged: the last 2 s but 0.5.
            let duration = (bob: heard.bob.duration, carol: heard.carol.duration)
            let merged = (bob: Self.levels(heard.bob.part(from: duration.bob - 6.5, to: duration.bob - 4.5)),
                          carol: Self.levels(heard.carol.part(from: duration.carol - 6.5, to: duration.carol - 4.5)))
            let unmerged = (bob: Self.levels(heard.bob.part(from: duration.bob - 2.5, to: duration.bob - 0.5)),
                            carol: Self.levels(heard.carol.part(from: duration.carol - 2.5, to: duration.carol - 0.5)))
            print("conference: bob heard merged \(merged.bob), unmerged \(unmerged.bob); carol heard merged \(merged.carol), unmerged \(unmerged.carol)")
            // Each tone is sent at −6 dB; G.711 and the mix keep it within a few dB.
            #expect(merged.bob.alice > -15 && merged.bob.carol > -15, "bob hears alice and carol: \(merged.bob)")
            #expect(merged.carol.alice > -15 && merged.carol.bob > -15, "carol hears alice and bob: \(merged.carol)")
            #expect(merged.bob.carol - merged.bob.bob >= 60, "bob does not hear himself: \(merged.bob)")
            #expect(merged.carol.bob - merged.carol.carol >= 60, "carol does not hear herself: \(merged.carol)")
            #expect(unmerged.bob.alice > -15 && unmerged.bob.alice - unmerged.bob.carol >= 40, "bob hears alice alone: \(unmerged.bob)")
            #expect(unmerged.carol.alice > -15 && unmerged.carol.alice - unmerged.carol.bob >= 40, "carol hears alice alone: \(unmerged.carol)")
            // alice's own recording of the group is what she heard of it: bob and carol, not herself.
            let group = try Self.groupRecording(in: parties.folders[0], of: alice)
            let mix = Self.levels(group.part(from: 1.5, to: 4))
            print("conference: alice's recording of the group (\(group.duration) s) holds \(mix)")
            #expect(group.duration >= 4.5, "the group's recording lasts the merge: \(group.duration) s")
            #expect(mix.bob > -15 && mix.carol > -15, "alice's recording of the group holds bob and carol: \(mix)")
            // Nothing of alice is mixed in; the two tones' peaks (-6 dBFS each) sum to full scale, where the mix
            // saturates, and those products leak about -65 dB into the 1,000 Hz bin.
            #expect(min(mix.bob, mix.carol) - mix.alice >= 50, "and not alice's own voice: \(mix)")
        }

        @Test("LiveCommunicationKit's membership: a member alice holds drops out of the mix and comes back on resume; alice's mute silences her toward everyone while the members go on hearing each other")
        func holdAndMuteInTheMix() throws {
            let parties = try ThreeParties()
            defer { parties.removeFolders() }
            let (bob, focus) = (parties.bob, parties.focus)
            let (bobsCall, carolsCall, bobFolder) = (parties.bobsCall, parties.carolsCall, parties.folders[1])
            _ = try focus.result(.merge(MergeParams(conversation: bobsCall, with: carolsCall)))
            // Four stretches of 2.5 s: merged, carol held, carol resumed, alice muted.
            let steps: [ControlCommand] = [
                .hold(ConversationParams(conversation: carolsCall)), .resume(ConversationParams(conversation: carolsCall)),
                .mute(MuteParams(conversation: bobsCall, muted: true)),
            ]
            for step in steps {
                Thread.sleep(forTimeInterval: 2.5)
                _ = try focus.result(step)
            }
            Thread.sleep(forTimeInterval: 2.5)
            for call in [bobsCall, carolsCall] { _ = try focus.result(.end(ConversationParams(conversation: call))) }
            try bob.waitForEnded(1)
            let heard = try AudioInteropTests.recording(in: bobFolder, of: bob)
            // The middle 1.5 s of each stretch, counted back from the end.
            let stretches = (0..<4).map { back in
                Self.levels(heard.part(from: heard.duration - 2.5 * Double(back + 1) + 0.5, to: heard.duration - 2.5 * Double(back) - 0.5))
            }.reversed().map { $0 }
            print("conference: bob heard merged \(stretches[0]), carol held \(stretches[1]), resumed \(stretches[2]), alice muted \(stretches[3])")
            #expect(stretches[0].alice > -15 && stretches[0].carol > -15, "merged: \(stretches[0])")
            #expect(stretches[1].alice > -15 && stretches[1].alice - stretches[1].carol >= 40, "carol held: out of the mix: \(stretches[1])")
            #expect(stretches[2].alice > -15 && stretches[2].carol > -15, "carol resumed: back in the mix: \(stretches[2])")
            #expect(stretches[3].carol > -15 && stretches[3].carol - stretches[3].alice >= 40, "alice muted: carol alone: \(stretches[3])")
        }

        @Test("a member whose audio stops (carol's parleyd frozen with SIGSTOP): the bridge fills her place with silence and bob goes on hearing alice, unharmed")
        func memberStops() throws {
            let parties = try ThreeParties()
            defer { parties.removeFolders() }
            let (bob, carol, focus) = (parties.bob, parties.carol, parties.focus)
            _ = try focus.result(.merge(MergeParams(conversation: parties.bobsCall, with: parties.carolsCall)))
            Thread.sleep(forTimeInterval: 1.5)
            kill(carol.process.process.processIdentifier, SIGSTOP)
            Thread.sleep(forTimeInterval: 3)
            kill(carol.process.process.processIdentifier, SIGCONT)
            _ = try focus.result(.end(ConversationParams(conversation: parties.bobsCall)))
            try bob.waitForEnded(1)
            let heard = try AudioInteropTests.recording(in: parties.folders[1], of: bob)
            // The last 2.5 s before the end, carol frozen: alice still there, carol gone.
            let frozen = Self.levels(heard.part(from: heard.duration - 2.5, to: heard.duration - 0.3))
            print("conference, carol frozen: bob heard \(frozen)")
            #expect(frozen.alice > -15, "bob still hears alice: \(frozen)")
            #expect(frozen.alice - frozen.carol >= 40, "and no carol: \(frozen)")
        }

        @Test("a real peer in the group: alice (1,000 Hz) merges bob (parleyd, 2,500 Hz) and baresip (its ausine, 440 Hz): baresip's recording holds alice and bob and not itself, bob's holds alice and baresip and not himself")
        func baresipMember() throws {
            let (alice, aliceFolder) = try AudioInteropTests.parleyd(tone: 1_000, ["--user", "alice"])
            let (bob, bobFolder) = try AudioInteropTests.parleyd(tone: 2_500, ["--user", "bob", "--auto-answer", "0"])
            defer { for folder in [aliceFolder, bobFolder] { try? FileManager.default.removeItem(at: folder) } }
            let baresipFolder = try BaresipAudioTests.folder()
            defer { try? FileManager.default.removeItem(at: baresipFolder) }
            let baresip = try Baresip(recordTo: baresipFolder)
            try baresip.quotingTranscript {
                let focus = try GroupControl(alice)
                let bobsCall = try focus.call("sip:bob@127.0.0.1:\(bob.port)")
                try focus.waitForJoined([bobsCall])
                // baresip second: the call that goes on hold for it is bob's (baresip 1.0.0's recorder stops writing
                // what it receives at a call's first re-INVITE), and the merge resumes bob.
                let baresipsCall = try focus.call(baresip.uri(.udp))
                try focus.waitForJoined([baresipsCall])
                _ = try focus.result(.merge(MergeParams(conversation: bobsCall, with: baresipsCall)))
                Thread.sleep(forTimeInterval: 4.5)
                for call in [bobsCall, baresipsCall] { _ = try focus.result(.end(ConversationParams(conversation: call))) }
                try bob.waitForEnded(1)
                try baresip.waitFor("the end of its call") { $0.contains("terminated (duration") }
                let heardByBob = try AudioInteropTests.recording(in: bobFolder, of: bob)
                let heardByBaresip = try BaresipAudioTests.received(in: baresipFolder)
                #expect(heardByBaresip.duration >= 3, "baresip recorded \(heardByBaresip.duration) s")
                let merged = (bob: heardByBob.part(from: heardByBob.duration - 2.5, to: heardByBob.duration - 0.5),
                              baresip: heardByBaresip.part(from: heardByBaresip.duration - 2.5, to: heardByBaresip.duration - 0.5))
                let levels = (bob: Self.levels(merged.bob), baresip: Self.levels(merged.baresip))
                print("conference with baresip: baresip recorded \(heardByBaresip.duration) s at \(heardByBaresip.sampleRate) Hz; bob heard \(levels.bob) (bob's own tone is the 'carol' one, 2,500 Hz), baresip heard \(levels.baresip)")
                // Here `carol` is bob's tone (2,500 Hz) and `bob` baresip's (440 Hz).
                #expect(levels.bob.alice > -15 && levels.bob.bob > -15, "bob hears alice and baresip: \(levels.bob)")
                #expect(levels.bob.bob - levels.bob.carol >= 60, "bob does not hear himself: \(levels.bob)")
                #expect(levels.baresip.alice > -15 && levels.baresip.carol > -15, "baresip hears alice and bob: \(levels.baresip)")
                #expect(levels.baresip.carol - levels.baresip.bob >= 60, "baresip does not hear itself: \(levels.baresip)")
            }
        }
    }
}
