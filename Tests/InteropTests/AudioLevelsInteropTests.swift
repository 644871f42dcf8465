import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// Audio levels for frontends (`subscribe` with `audioLevels`): alice merges bob, who sends a tone, and carol, who
/// sends silence; a subscriber that asked sees who is speaking, one that did not gets no level at all.
extension AudioInterop {
    @Suite("Interop: audio levels show who is speaking", .serialized, .timeLimit(.minutes(1)))
    struct AudioLevelsInteropTests {
        @Test("in a merged group, bob's call is heard at the tone's level (-9 dBov) and carol's silent one at 127, about four times a second, our own side at the tone's level; muted, ours is 127; a subscriber that did not ask gets no level")
        func whoIsSpeaking() throws {
            let (alice, aliceFolder) = try AudioInteropTests.parleyd(tone: 1_000, ["--user", "alice"])
            let (bob, bobFolder) = try AudioInteropTests.parleyd(tone: 440, ["--user", "bob", "--auto-answer", "0"])
            let base = 20_000 + Int.random(in: 0..<400) * 100
            let carol = try Parleyd(
                ["--media", "gstreamer", "--audio-source", "silence", "--audio-sink", "null", "--rtp-ports", "\(base)-\(base + 99)",
                 "--user", "carol", "--auto-answer", "0"])
            defer { for folder in [aliceFolder, bobFolder] { try? FileManager.default.removeItem(at: folder) } }
            let meters = try GroupControl(alice, audioLevels: true)
            let plain = try GroupControl(alice)
            let bobsCall = try meters.call("sip:bob@127.0.0.1:\(bob.port)")
            let carolsCall = try meters.call("sip:carol@127.0.0.1:\(carol.port)")
            try meters.waitForJoined([bobsCall, carolsCall])
            _ = try meters.result(.merge(MergeParams(conversation: bobsCall, with: carolsCall)))
            _ = try meters.events("audioLevels", during: 1.5)  // the bridge's pipelines settle
            let readings = try meters.events("audioLevels", during: 2)
            let bobs = readings.filter { $0["conversation"] as? String == bobsCall }
            let carols = readings.filter { $0["conversation"] as? String == carolsCall }
            print("audio levels: \(bobs.count) readings of bob's call in 2 s, \(carols.count) of carol's; bob's last \(bobs.last ?? [:]), carol's last \(carols.last ?? [:])")
            #expect((5...12).contains(bobs.count), "about four readings a second of bob's call: \(bobs.count)")
            #expect((5...12).contains(carols.count), "about four readings a second of carol's call: \(carols.count)")
            let heardBob = bobs.compactMap { $0["heard"] as? Int }, heardCarol = carols.compactMap { $0["heard"] as? Int }
            #expect(!heardBob.isEmpty && heardBob.allSatisfy { (7...12).contains($0) }, "bob's tone (sent at -9 dBov): \(heardBob)")
            #expect(heardCarol.allSatisfy { $0 >= 70 }, "carol is silent: \(heardCarol)")
            let saidToBob = bobs.compactMap { $0["said"] as? Int }
            #expect(!saidToBob.isEmpty && saidToBob.allSatisfy { (7...12).contains($0) }, "alice's own tone: \(saidToBob)")

            _ = try meters.result(.mute(MuteParams(conversation: bobsCall, muted: true)))
            _ = try meters.events("audioLevels", during: 1)
            let muted = try meters.events("audioLevels", during: 1).filter { $0["conversation"] as? String == bobsCall }
            let saidMuted = muted.compactMap { $0["said"] as? Int }
            #expect(!saidMuted.isEmpty && saidMuted.allSatisfy { $0 == 127 }, "muted, alice says nothing: \(saidMuted)")
            #expect(muted.compactMap { $0["heard"] as? Int }.allSatisfy { (7...12).contains($0) }, "and still hears bob: \(muted)")

            #expect(try plain.events("audioLevels", during: 0.3).isEmpty, "a subscriber that did not ask got levels")
            for call in [bobsCall, carolsCall] { _ = try meters.result(.end(ConversationParams(conversation: call))) }
        }
    }
}
