import ControlProtocol
import Foundation
import ParleyTestSupport
import Testing

/// The conference bridge under churn (docs/media.md, "The conference bridge", and "What it costs, and what leaks"):
/// a focus parleyd with six calls (two to each of three member parleyd, `--on-new-call none` everywhere, real
/// pipelines) takes 1,000 random merge / unmerge / hold / resume requests through its control socket, then ends every
/// call; afterwards it has the threads and descriptors it had before the calls, no RTP port bound, and answers.
extension AudioInterop {
    @Suite("Interop: the conference bridge under churn", .serialized, .timeLimit(.minutes(3)))
    struct ConferenceChurnTests {
        /// The focus's threads (/proc/PID/task) and open descriptors (/proc/PID/fd).
        static func threadsAndDescriptors(_ pid: Int32) -> (threads: Int, descriptors: Int) {
            let count = { (path: String) in (try? FileManager.default.contentsOfDirectory(atPath: path).count) ?? -1 }
            return (count("/proc/\(pid)/task"), count("/proc/\(pid)/fd"))
        }

        /// The names of the focus's threads (/proc/PID/task/*/comm).
        static func threadNames(_ pid: Int32) -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []).map {
                ((try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8)) ?? "?").trimmingCharacters(in: .whitespacesAndNewlines)
            }.sorted()
        }

        /// Threads of a pool that keeps idle workers a while (libdispatch's `…-qos.overcommit`, GLib's `pool-…`, gone
        /// after 15 s idle): not owned by a call.
        static func isPooled(_ name: String) -> Bool { name.hasSuffix("overcommit") || name.hasPrefix("pool-") }

        /// The local UDP ports of the sockets `pid` holds (its descriptors' socket inodes, found in its view of
        /// /proc/net/udp).
        static func udpPorts(_ pid: Int32) -> [Int] {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            let inodes = Set(fds.compactMap { fd -> String? in
                guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                    link.hasPrefix("socket:[")
                else { return nil }
                return String(link.dropFirst("socket:[".count).dropLast())
            })
            // Read to the end (a procfs file says it is empty; the table is long on a busy machine).
            let table = FileHandle(forReadingAtPath: "/proc/\(pid)/net/udp").map { String(decoding: $0.readDataToEndOfFile(), as: UTF8.self) } ?? ""
            return table.split(separator: "\n").dropFirst().compactMap { line in
                let fields = line.split(separator: " ")
                guard fields.count > 9, inodes.contains(String(fields[9])),
                    let port = fields[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
                else { return nil }
                return port
            }
        }

        /// The focus's threads and descriptors once they have stayed the same for a second (5 s at most).
        static func steady(_ pid: Int32) throws -> (threads: Int, descriptors: Int) {
            var last = threadsAndDescriptors(pid)
            var since = ContinuousClock.now
            let deadline = since + .seconds(5)
            while ContinuousClock.now - since < .seconds(1) && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.1)
                let now = threadsAndDescriptors(pid)
                if now != last { (last, since) = (now, ContinuousClock.now) }
            }
            return last
        }

        /// SplitMix64: a small seeded generator, so a failing run can be replayed (`PARLEY_CHURN_SEED`).
        struct SeededGenerator: RandomNumberGenerator {
            var state: UInt64
            mutating func next() -> UInt64 {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                return z ^ (z >> 31)
            }
        }

        @Test("1,000 random merge / unmerge / hold / resume requests on 6 calls, then every call ended: each request answered (a result or an error value), no crash; threads and descriptors back to their baseline, no RTP port bound, status answers")
        func randomOperations() throws {
            let folder = FileManager.default.temporaryDirectory.appending(path: "parley-audio-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let rtpBase = 20_000 + Int.random(in: 0..<400) * 100
            let alice = try Parleyd(
                ["--media", "gstreamer", "--audio-source", "tone:1000", "--audio-sink", "file:\(folder.path)",
                 "--rtp-ports", "\(rtpBase)-\(rtpBase + 99)", "--user", "alice", "--on-new-call", "none"])
            var members: [(Parleyd, URL)] = []
            for tone in [440, 2_500, 1_700] {
                members.append(try AudioInteropTests.parleyd(tone: tone, ["--auto-answer", "0", "--on-new-call", "none"]))
            }
            defer { for (_, memberFolder) in members { try? FileManager.default.removeItem(at: memberFolder) } }
            let pid = alice.process.process.processIdentifier
            let focus = try GroupControl(alice)
            let rtpPorts = { Set(Self.udpPorts(pid).filter { $0 >= rtpBase && $0 <= rtpBase + 99 }) }
            // A warm-up call first: what the first call creates once for the process (GStreamer's clock thread,
            // libdispatch's timer descriptors) belongs to the baseline; its RTP pair stays bound in quarantine.
            let warmUp = try focus.call("sip:member@127.0.0.1:\(members[0].0.port)")
            try focus.waitForJoined([warmUp])
            let heard = ContinuousClock.now + .seconds(10)
            while (try focus.result(.mediaStats(ConversationParams(conversation: warmUp)))["stats"] as? [String: Any])?["packetsReceived"] as? Int ?? 0 == 0 {
                guard ContinuousClock.now < heard else { throw InteropError("the warm-up call received no RTP") }
                Thread.sleep(forTimeInterval: 0.1)
            }
            _ = try focus.result(.end(ConversationParams(conversation: warmUp)))
            try members[0].0.waitForEnded(1)
            let baseline = try Self.steady(pid)
            let baselinePorts = rtpPorts()
            let baselineNames = Self.threadNames(pid)
            let calls = try members.flatMap { member in try (0..<2).map { _ in try focus.call("sip:member@127.0.0.1:\(member.0.port)") } }
            try focus.waitForJoined(calls, timeout: 20)
            let callPorts = try calls.map { try ConferenceFloodTests.media(of: $0, at: focus)["localPort"] as? Int ?? -1 }
            let up = Self.threadsAndDescriptors(pid)

            let seed = ProcessInfo.processInfo.environment["PARLEY_CHURN_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
            print("conference churn: seed \(seed) (PARLEY_CHURN_SEED replays it)")
            var random = SeededGenerator(state: seed)
            let kinds = ["merge", "unmerge", "hold", "resume"]
            var outcomes: [String: Int] = [:]
            var done = 0
            let started = ContinuousClock.now
            let deadline = started + .seconds(90)
            while done < 1_000 && ContinuousClock.now < deadline {
                let kind = kinds[Int(random.next() % 4)]
                let call = calls[Int(random.next() % 6)]
                var other = calls[Int(random.next() % 5)]
                if other == call { other = calls[5] }
                let command: ControlCommand = switch kind {
                case "merge": .merge(MergeParams(conversation: call, with: other))
                case "unmerge": .unmerge(ConversationParams(conversation: call))
                case "hold": .hold(ConversationParams(conversation: call))
                default: .resume(ConversationParams(conversation: call))
                }
                let answer = try focus.answer(try focus.send(command))
                let outcome = answer["result"] != nil ? "ok"
                    : ((answer["error"] as? [String: Any])?["code"] as? String).map { "error \($0)" } ?? "neither: \(answer)"
                outcomes["\(kind) \(outcome)", default: 0] += 1
                done += 1
            }
            let took = ContinuousClock.now - started
            let during = Self.threadsAndDescriptors(pid)
            print("conference churn: \(done) requests in \(took) (\(took / max(done, 1)) each); outcomes \(outcomes.sorted { $0.key < $1.key })")
            #expect(done == 1_000, "\(done) requests within 90 s")
            #expect(!outcomes.keys.contains { $0.contains("neither") }, "every answer is a result or an error: \(outcomes)")
            #expect(alice.process.process.isRunning, "alice still runs: \(alice.process.lines.suffix(20))")

            // The six calls are all still up (joined, or paused by a hold), whatever the requests did.
            let states = ((try focus.result(.list(ListParams())))["conversations"] as? [[String: Any]] ?? []).compactMap { $0["state"] as? String }
            #expect(states.count == 6 && states.allSatisfy { $0 == "joined" || $0 == "paused" }, "the calls after the requests: \(states)")
            for call in calls { _ = try focus.result(.end(ConversationParams(conversation: call))) }
            for (member, _) in members { try member.waitForEnded(2, timeout: .seconds(30)) }
            // The pipelines are torn down on their sessions' queues after the calls left: wait (bounded) until the
            // figures are back, then judge them. A released RTP pair stays bound for its quarantine (RTPPortPool: a
            // minute of quiet, ended when a later call reserves), two descriptors each: after the end, exactly the
            // six calls' pairs are added to the baseline's.
            let quarantined = Set(callPorts.flatMap { [$0, $0 + 1] })
            let expected = baseline.descriptors + quarantined.count
            var after = Self.threadsAndDescriptors(pid)
            var bound = rtpPorts()
            let settle = ContinuousClock.now + .seconds(15)
            let baselineOwned = baselineNames.filter { !Self.isPooled($0) }.count
            while (Self.threadNames(pid).filter { !Self.isPooled($0) }.count > baselineOwned || after.threads > baseline.threads + 4 || after.descriptors > expected || bound != baselinePorts.union(quarantined))
                && ContinuousClock.now < settle
            {
                Thread.sleep(forTimeInterval: 0.2)
                after = Self.threadsAndDescriptors(pid)
                bound = rtpPorts()
            }
            let leftover = bound.subtracting(baselinePorts).subtracting(quarantined).sorted()
            print("conference churn: threads/descriptors baseline \(baseline) (RTP ports bound \(baselinePorts.sorted())), 6 calls up \(up), after the requests \(during), after the end \(after); the calls' pairs (quarantined) \(quarantined.sorted()), other RTP ports bound \(leftover)")
            let status = try focus.result(.status)
            let names = Self.threadNames(pid)
            print("conference churn: threads now \(names), at the baseline \(baselineNames)")
            // Every thread a call owned is gone (the baseline's own, pools aside: a streaming thread of the warm-up's
            // teardown may still be there); the pools' idle workers stay bounded.
            let owned = names.filter { !Self.isPooled($0) }.count
            #expect(owned <= baselineNames.filter { !Self.isPooled($0) }.count, "threads back to the baseline: \(names) vs \(baselineNames)")
            #expect(after.threads <= baseline.threads + 4, "pooled threads near the baseline: \(names) vs \(baselineNames)")
            #expect(after.descriptors <= expected, "descriptors back to the baseline and the six quarantined pairs: \(after) vs \(baseline) + \(quarantined.count)")
            #expect(leftover.isEmpty && bound.isSuperset(of: quarantined), "no RTP port bound but the quarantined pairs: \(bound.sorted())")
            #expect(status["counters"] != nil && alice.process.process.isRunning, "status answers: \(status)")
            let list = try focus.result(.list(ListParams()))
            #expect((list["conversations"] as? [Any])?.isEmpty == true, "no conversation left: \(list)")
        }
    }
}
