import ControlChannel
import ControlProtocol
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// parleyd under an INVITE flood from one source while another places real calls (issue 16's "done when").
@Suite("parleyd: an INVITE flood from one source", .serialized)
struct FloodTests {
    /// parleyd's resident set, in KiB (VmRSS).
    static func residentKiB(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return nil }
        return Int(line.split(whereSeparator: \.isWhitespace)[1])
    }

    /// Answers every ringing conversation whose Call-ID is not the flooder's, through the control socket (the user
    /// picking up the legitimate calls), until `stop` is set.
    static func answerLegitimateCalls(directory: String, stop: Locked<Bool>, answered: Locked<Set<String>>) throws {
        let client = try ControlClient(
            socketPath: directory + "/control.sock", token: try ControlToken.read(from: directory), timeout: 10)
        defer { client.close() }
        var id = 0
        func request(_ command: ControlCommand) throws -> [String: Any]? {
            id += 1
            try client.send(ControlRequest(id: .number(id), command: command).encoded())
            while true {
                let line = try client.readLine(timeout: 10)
                guard let reply = try JSONSerialization.jsonObject(with: line) as? [String: Any] else { continue }
                if reply["id"] as? Int == id { return reply }
            }
        }
        while !stop.withLock({ $0 }) {
            let list = try request(.list(ListParams()))
            let conversations = ((list?["result"] as? [String: Any])?["conversations"] as? [[String: Any]]) ?? []
            for conversation in conversations {
                guard conversation["state"] as? String == "ringing", let uuid = conversation["uuid"] as? String,
                    let callID = conversation["callID"] as? String, !callID.hasPrefix("limit-"),
                    !answered.withLock({ $0.contains(uuid) })
                else { continue }
                _ = try request(.join(JoinParams(conversation: uuid)))
                answered.withLock { _ = $0.insert(uuid) }
            }
            usleep(50_000)
        }
    }

    @Test("2,000 INVITEs/s from one source for 10 s: legitimate calls all connect, the flood is refused and bounded, RSS comes back")
    func flood() throws {
        let parleyd = try Parleyd(["--ring-timeout", "20"])
        let pid = parleyd.process.process.processIdentifier
        let directory = parleyd.dataDirectory.path
        let sippArguments = ["-sn", "uac", "127.0.0.1:\(parleyd.port)", "-i", "127.0.0.1", "-s", "parley", "-d", "300"]
        let stop = Locked(false)
        let answered = Locked<Set<String>>([])
        let answerer = Thread {
            do {
                try Self.answerLegitimateCalls(directory: directory, stop: stop, answered: answered)
            } catch {
                print("answerer: \(error)")
            }
        }
        answerer.start()
        defer { stop.withLock { $0 = true } }
        // Warm up (the first calls load the history and the code paths), then measure the baseline.
        let warmUp = try SippRun.run(sippArguments + ["-p", String(Interop.freePort()), "-m", "2", "-r", "2"])
        #expect(warmUp.status == 0, "\(warmUp.output)")
        sleep(1)
        let baseline = try #require(Self.residentKiB(pid))

        // The legitimate caller: 20 calls at 2 a second from 127.0.0.1, while 127.0.0.2 floods.
        let legitimate = try SippRun.start(sippArguments + ["-p", String(Interop.freePort()), "-m", "20", "-r", "2"])
        let flooder = try CallLimitTests.Peer(host: "127.0.0.2")
        let start = ContinuousClock.now
        var peak = baseline
        for tick in 0..<1000 {  // 20 INVITEs every 10 ms: 2,000 a second for 10 s
            for index in 0..<20 { flooder.send(flooder.invite(tick * 20 + index, to: parleyd.port), to: parleyd.port) }
            if tick % 50 == 0, let rss = Self.residentKiB(pid) { peak = max(peak, rss) }
            let next = start + .milliseconds(10 * (tick + 1))
            let wait = next - ContinuousClock.now
            if wait > .zero { usleep(UInt32(wait.components.attoseconds / 1_000_000_000_000)) }
        }
        let floodEnded = ContinuousClock.now
        let floodSeconds = Double((floodEnded - start).components.seconds)
        let sipp = try legitimate.waitForExit(timeout: .seconds(40))
        #expect(sipp == 0, "every legitimate call connected and ended: \(legitimate.lines.suffix(20))")
        let legitimateCalls = 2 + 20  // the warm-up's and the legitimate caller's
        #expect(answered.withLock { $0.count } == legitimateCalls)
        let flooderHeard = flooder.receiveAll(seconds: 1)
        #expect(flooderHeard.contains { $0.hasPrefix("SIP/2.0 503") }, "the flooder was told 503 before the silence")

        let status = try ControlCLITests.parley(["status", "--json", "--data-dir", directory])
        let counters = try #require(
            ((try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any])?["result"]
                as? [String: Any])?["counters"] as? [String: Int], "\(status.output)")
        #expect(counters["requestsRefusedPerSource", default: 0] >= 1, "\(counters)")
        // Of what reached parleyd (the kernel may drop some of a flood), all but the first second's were dropped.
        let received = counters["messagesReceived", default: 0]
        #expect(received > 10_000 && counters["requestsDropped", default: 0] * 10 >= received * 9, "\(counters)")
        #expect(counters["sourcesBanned"] == 1, "\(counters)")
        // Only the flood's first second got through the density check, and of that no more than 30 rang.
        let rang = parleyd.transitions.filter { $0.first == "ringing" }.count
        #expect(rang <= legitimateCalls + 30, "\(rang) conversations rang")

        // 30 s after the flood the flood's ringing calls have timed out (20 s) and RSS is back near its baseline.
        let settle = floodEnded + .seconds(30) - ContinuousClock.now
        if settle > .zero { usleep(UInt32(settle.components.seconds) * 1_000_000) }
        let after = try #require(Self.residentKiB(pid))
        print("flood: RSS \(baseline) KiB before, peak \(peak) KiB, \(after) KiB 30 s after; \(floodSeconds) s of flood; "
            + "\(rang) rang; counters \(counters)")
        #expect(Double(after) <= Double(baseline) * 1.2, "RSS \(after) KiB 30 s after the flood, \(baseline) KiB before")
        stop.withLock { $0 = true }
        #expect(try parleyd.process.stop() == 0)
        let history = try ControlCLITests.parley(["history", "--json", "--limit", "1000", "--data-dir", directory])
        let records = history.output.components(separatedBy: "\"callID\" : ").count - 1
        let floodRecords = history.output.components(separatedBy: "\"callID\" : \"limit-").count - 1
        let shown = "exit \(history.status), \(history.output.count) characters: \(history.output.prefix(300)) … \(history.output.suffix(300))"
        #expect(history.status == 0 && records == rang, "every call that rang is in the history (\(records) of \(rang)): \(shown)")
        #expect(floodRecords <= 30, "only calls that rang are in the history: \(floodRecords)")
        #expect(floodRecords == rang - legitimateCalls, "one record per flood call that rang, none for the refused")
    }
}
