import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The conference bridge with members that are not parleyd (docs/media.md, "The conference bridge"): linphonec 5.1
/// beside a parleyd, and a sipp caller (its audio sent by gst-launch) that changes its codec from PCMU to opus by a
/// re-INVITE while merged. What each side hears is read tone by tone (`Recording.level(at:)`).
extension AudioInterop {
    @Suite("Interop: conference members that are not parleyd", .serialized, .timeLimit(.minutes(2)))
    struct ConferenceMemberTests {
        /// The levels (dB) of `tones` in a stretch of a recording, in order.
        static func levels(_ recording: Recording, _ tones: [Double]) -> [Double] {
            tones.map { recording.level(at: $0) }
        }

        @Test("linphonec as a member: alice (1,000 Hz) merges bob (parleyd, 2,500 Hz) and linphonec (440 Hz): linphonec's recording holds alice and bob and not itself, bob's holds alice and linphonec and not himself")
        func linphoneMember() throws {
            let namespace = try LoopbackNamespace()
            // alice, the focus, is the parleyd beside linphonec; bob a parleyd in the same network namespace.
            let peers = try LinphoneAndParleyd(tone: 440, namespace: namespace.name) { _ in
                ["--user", "alice", "--on-new-call", "none"]
            }
            let bob = try NamespacedParleyd(namespace: namespace.name, tone: 2_500, ["--user", "bob", "--auto-answer", "0"])
            defer { withExtendedLifetime((namespace, peers, bob)) {} }
            let focus = try GroupControl(dataDirectory: peers.parleydData)
            let bobsCall = try focus.call("sip:bob@127.0.0.1:\(bob.port)")
            let linphonesCall = try focus.call("sip:linphone@127.0.0.1:\(peers.linphonePort)")
            try focus.waitForJoined([bobsCall, linphonesCall])
            _ = try focus.result(.merge(MergeParams(conversation: bobsCall, with: linphonesCall)))
            Thread.sleep(forTimeInterval: 4.5)
            for call in [bobsCall, linphonesCall] { _ = try focus.result(.end(ConversationParams(conversation: call))) }
            try peers.waitForLinphone("ended")
            let heardByBob = try bob.recording()
            Thread.sleep(forTimeInterval: 0.5)  // linphonec's recording complete
            let heardByLinphone = try peers.linphoneHeard()
            let tones = [1_000.0, 2_500, 440]  // alice, bob, linphonec
            let merged = (bob: Self.levels(heardByBob.part(from: heardByBob.duration - 2.5, to: heardByBob.duration - 0.5), tones),
                          linphone: Self.levels(heardByLinphone.part(from: heardByLinphone.duration - 2.5, to: heardByLinphone.duration - 0.5), tones))
            print("conference with linphonec: linphonec recorded \(heardByLinphone.duration) s at \(heardByLinphone.sampleRate) Hz, bob \(heardByBob.duration) s; [alice, bob, linphonec] levels: bob heard \(merged.bob), linphonec heard \(merged.linphone)")
            let log = peers.linphoneOutput.suffix(1_500)
            #expect(heardByLinphone.duration >= 3, "linphonec recorded \(heardByLinphone.duration) s: \(log)")
            #expect(merged.bob[0] > -15 && merged.bob[2] > -15, "bob hears alice and linphonec: \(merged.bob)")
            #expect(merged.bob[2] - merged.bob[1] >= 60, "bob does not hear himself: \(merged.bob)")
            #expect(merged.linphone[0] > -15 && merged.linphone[1] > -15, "linphonec hears alice and bob: \(merged.linphone); \(log)")
            #expect(merged.linphone[1] - merged.linphone[2] >= 60, "linphonec does not hear itself: \(merged.linphone)")
        }

        @Test("a member whose codec changes mid-merge: sipp calls alice with PCMU and re-INVITEs to opus while merged with bob; bob goes on hearing alice and the member, alice the member, at each codec")
        func codecChangeMidMerge() throws {
            let (alice, aliceFolder) = try AudioInteropTests.parleyd(tone: 1_000, ["--user", "alice", "--auto-answer", "0", "--on-new-call", "none"])
            let (bob, bobFolder) = try AudioInteropTests.parleyd(tone: 2_500, ["--user", "bob", "--auto-answer", "0"])
            defer { for folder in [aliceFolder, bobFolder] { try? FileManager.default.removeItem(at: folder) } }
            let focus = try GroupControl(alice)
            let bobsCall = try focus.call("sip:bob@127.0.0.1:\(bob.port)")
            try focus.waitForJoined([bobsCall])
            // The member: sipp's signalling (PCMU, 4 s, a re-INVITE offering opus alone, 4 s, BYE) and its audio from
            // gst-launch, 800 Hz (its G.711 distortion, at multiples of 800 Hz, misses bob's 2,500), sent from the port its SDP names.
            let memberPort = Interop.freePort()
            let sipp = try SippRun.start([
                "-sf", Interop.scenarios.appending(path: "uac-reinvite-opus.xml").path, "127.0.0.1:\(alice.port)",
                "-i", "127.0.0.1", "-p", String(Interop.freePort()), "-mp", String(Interop.freePort()), "-s", "alice",
                "-set", "mport", String(memberPort), "-d", "4000", "-m", "1",
            ])
            defer { if sipp.process.isRunning { kill(sipp.process.processIdentifier, SIGKILL) } }
            let membersCall = try focus.nextEvent("conversationChanged") {
                (($0["conversation"] as? [String: Any])?["state"] as? String) == "joined"
                    && (($0["conversation"] as? [String: Any])?["uuid"] as? String)?.lowercased() != bobsCall.lowercased()
            }
            let memberUUID = try #require((membersCall["conversation"] as? [String: Any])?["uuid"] as? String)
            let media = try ConferenceFloodTests.media(of: memberUUID, at: focus)
            let alicesPort = try #require(media["localPort"] as? Int)
            var sender = try GstSender(codec: .pcmu, tone: 800, from: memberPort, to: alicesPort)
            _ = try focus.result(.merge(MergeParams(conversation: bobsCall, with: memberUUID)))
            let merged = ContinuousClock.now
            // The re-INVITE comes after sipp's 4 s: alice's mediaStats then name opus.
            let changeBy = ContinuousClock.now + .seconds(10)
            while try focus.result(.mediaStats(ConversationParams(conversation: memberUUID)))["media"]
                .flatMap({ ($0 as? [String: Any])?["codec"] as? String }) != "opus"
            {
                guard ContinuousClock.now < changeBy else { throw InteropError("no change to opus: \(sipp.lines.suffix(20))") }
                Thread.sleep(forTimeInterval: 0.05)
            }
            let switched = ContinuousClock.now
            sender.stop()
            sender = try GstSender(codec: .opus, tone: 800, from: memberPort, to: alicesPort)
            defer { sender.stop() }
            #expect(try sipp.waitForExit(timeout: .seconds(20)) == 0, "sipp: \(sipp.lines.suffix(30))")
            let ended = ContinuousClock.now
            sender.stop()
            _ = try focus.result(.end(ConversationParams(conversation: bobsCall)))
            try bob.waitForEnded(1)
            let heard = try AudioInteropTests.recording(in: bobFolder, of: bob)
            // Seconds before the end of bob's recording (bob's call ended a moment after the member's).
            func ago(_ instant: ContinuousClock.Instant) -> Double {
                heard.duration - Double((ended - instant).components.seconds) - Double((ended - instant).components.attoseconds) / 1e18
            }
            let tones = [1_000.0, 2_500, 800]  // alice, bob, the member
            let before = Self.levels(heard.part(from: ago(merged) + 1.0, to: ago(switched) - 0.3), tones)
            let after = Self.levels(heard.part(from: ago(switched) + 1.0, to: ago(ended) - 0.3), tones)
            let log = alice.process.lines.filter { $0.contains("audio") || $0.contains("conference") || $0.contains("media") }.suffix(20)
            print("codec change mid-merge: merged \(ago(switched) - ago(merged)) s on PCMU, \(ago(ended) - ago(switched)) s on opus; [alice, bob, member] levels bob heard: PCMU \(before), opus \(after)")
            #expect(before[0] > -15 && before[2] > -15, "on PCMU bob hears alice and the member: \(before); \(log)")
            #expect(after[0] > -15 && after[2] > -15, "on opus bob hears alice and the member: \(after); \(log)")
            #expect(before[2] - before[1] >= 60 && after[2] - after[1] >= 60, "bob never hears himself: \(before), \(after)")
            #expect(alice.process.lines.contains { $0.contains("audio PCMU to 127.0.0.1:\(memberPort)") }, "\(log)")
            // alice (the local user) heard the member through both codecs: her recording of its call.
            try alice.process.waitForLine("the member's recording") {
                $0.lowercased().contains("\(memberUUID.lowercased()): recording complete")
            }
            // One file a pipeline (the merge's and the re-INVITE's rebuilds start new ones); the first pipeline,
            // stopped by the merge a moment after it started, may have left an empty file: only WAV files are read.
            let files = try FileManager.default.contentsOfDirectory(atPath: aliceFolder.path).filter {
                $0.lowercased().contains(memberUUID.lowercased()) && $0.hasSuffix(".wav")
            }.sorted()
            let byAlice = files.compactMap { try? Recording(wavAt: aliceFolder.appending(path: $0).path) }
            let aliceHeard = byAlice.reduce(0) { $0 + $1.seconds(at: 800) }
            print("codec change mid-merge: alice's recordings of the member \(files): \(byAlice.map(\.duration)) s, 800 Hz for \(aliceHeard) s")
            #expect(aliceHeard >= 0.8 * (ago(ended) - ago(merged)), "alice heard the member: \(files), \(byAlice.map { $0.dominantFrequencies() })")
        }
    }
}

/// A parleyd run by `ip netns exec` in a network namespace the test made (beside linphonec): `tone` Hz out, what it
/// hears recorded into a folder of its own.
final class NamespacedParleyd {
    let process: RunningProcess
    let port: UInt16
    let dataDirectory: URL
    let folder: URL

    /// `port` nil: a free one (5060 is free in a namespace of the test's own: linphonec drops the port of some URIs).
    init(namespace: String, tone: Int, port: UInt16? = nil, _ arguments: [String]) throws {
        self.port = port ?? Interop.freePort()
        dataDirectory = FileManager.default.temporaryDirectory.appending(path: "parleyd-\(UUID().uuidString)")
        folder = FileManager.default.temporaryDirectory.appending(path: "parley-audio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let base = 30_000 + Int.random(in: 0..<200) * 100
        // `ip netns exec` execs the command itself: the PID is parleyd's.
        process = try RunningProcess(
            URL(fileURLWithPath: "/usr/sbin/ip"),
            ["netns", "exec", namespace, try Interop.binary("parleyd").path, "--listen", "udp://127.0.0.1:\(self.port)",
             "--data-dir", dataDirectory.path, "--log-level", "debug", "--media", "gstreamer",
             "--audio-source", "tone:\(tone)", "--audio-sink", "file:\(folder.path)", "--rtp-ports", "\(base)-\(base + 99)"]
                + arguments, name: "parleyd in \(namespace)")
        try process.waitForLine("its listening line") { $0.contains("listening on") }
    }

    /// The one recording it made, once it says it is complete.
    func recording() throws -> Recording {
        _ = try process.waitForLine("a complete recording") { $0.contains("recording complete:") }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".wav") }
        try #require(files.count == 1, "one recording in \(folder.path): \(files)")
        return try Recording(wavAt: folder.appending(path: files[0]).path)
    }

    deinit {
        _ = try? process.stop()
        for directory in [dataDirectory, folder] { try? FileManager.default.removeItem(at: directory) }
    }
}

/// gst-launch-1.0 sending a tone at −6 dB as RTP (PCMU at payload type 0, or opus at 111), 20 ms a packet, from
/// 127.0.0.1:`from` to `to`, until stopped.
struct GstSender {
    enum Codec { case pcmu, opus }
    let process: RunningProcess

    init(codec: Codec, tone: Int, from: UInt16, to: Int) throws {
        let encode = switch codec {
        case .pcmu: "audio/x-raw,rate=8000,channels=1 ! mulawenc ! rtppcmupay min-ptime=20000000 max-ptime=20000000"
        case .opus: "audio/x-raw,rate=48000,channels=1 ! opusenc ! rtpopuspay pt=111"
        }
        let pipeline = "audiotestsrc is-live=true samplesperbuffer=441 freq=\(tone) volume=0.5 ! audioconvert ! audioresample ! \(encode) ! "
            + "udpsink host=127.0.0.1 port=\(to) bind-address=127.0.0.1 bind-port=\(from) sync=false"
        process = try RunningProcess(
            try Interop.tool("gst-launch-1.0"), ["-q"] + pipeline.split(separator: " ").map(String.init), name: "gst-launch")
    }

    /// Stops it (by its PID) and waits for its exit.
    func stop() {
        guard process.process.isRunning else { return }
        kill(process.process.processIdentifier, SIGKILL)
        _ = try? process.waitForExit(timeout: .seconds(5))
    }
}
