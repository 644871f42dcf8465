import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// parleyd under hostile input and on shutdown.
@Suite("parleyd: hostile input and shutdown", .serialized)
struct DaemonRobustnessTests {
    /// Sends `datagrams` to 127.0.0.1:`port` over UDP.
    static func sendUDP(_ datagrams: [[UInt8]], port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        for datagram in datagrams {
            _ = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, datagram, datagram.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// A TCP connection to 127.0.0.1:`port` (its descriptor: the caller closes it), from `source` when given
    /// (another loopback address is another host), or nil.
    static func connectTCP(port: UInt16, from source: String? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let ready = (source.map { host in withIPv4(host, port: 0) { bind(fd, $0, $1) } } ?? 0) == 0
            && withIPv4("127.0.0.1", port: port) { connect(fd, $0, $1) } == 0
        guard ready else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Calls `body` with the socket address of IPv4 `host`:`port`.
    static func withIPv4<Result>(_ host: String, port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// Writes `bytes` to a new TCP connection to 127.0.0.1:`port`, then closes it.
    static func sendTCP(_ bytes: [UInt8], port: UInt16) {
        guard let fd = connectTCP(port: port) else { return }
        defer { close(fd) }
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Mutations of a valid INVITE: flipped bytes, cut lines, huge and negative lengths, NULs, garbage.
    static func hostileMessages(count: Int) -> [[UInt8]] {
        let invite = Array("""
            INVITE sip:parley@127.0.0.1 SIP/2.0\r
            Via: SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bK-h\r
            Max-Forwards: 70\r
            From: <sip:x@127.0.0.1>;tag=1\r
            To: <sip:parley@127.0.0.1>\r
            Call-ID: hostile@x\r
            CSeq: 1 INVITE\r
            Content-Type: application/sdp\r
            Content-Length: 4\r
            \r
            v=0\n
            """.utf8)
        var generator = SystemRandomNumberGenerator()
        var messages: [[UInt8]] = [
            [], [0], Array("SIP/2.0 200 OK\r\n\r\n".utf8), Array(repeating: 0x41, count: 70_000),
            Array(String(decoding: invite, as: UTF8.self).replacingOccurrences(of: "Content-Length: 4", with: "Content-Length: -7").utf8),
            Array(String(decoding: invite, as: UTF8.self).replacingOccurrences(of: "SIP/2.0\r", with: "SIP/7.0\r").utf8),
        ]
        while messages.count < count {
            var bytes = invite
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.remove(at: index)
                case 2: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: index)
                default: bytes = Array(bytes[..<index])
                }
                if bytes.isEmpty { break }
            }
            messages.append(bytes)
        }
        return messages
    }

    @Test("parleyd's malloc is jemalloc (it links it): asked for its statistics, jemalloc prints them at exit")
    func allocatorIsJemalloc() throws {
        let parleyd = try Interop.binary("parleyd")
        let process = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["MALLOC_CONF=stats_print:true", parleyd.path, "--help"],
            name: "parleyd --help")
        #expect(try process.waitForExit(timeout: .seconds(30)) == 0)
        #expect(process.standardError.contains("Begin jemalloc statistics"), "\(process.standardError.prefix(500))")
    }

    @Test("2,000 mangled datagrams and stream garbage: parleyd keeps running and then completes a normal call")
    func hostileInput() throws {
        let parleyd = try Parleyd(["--auto-answer", "0"])
        let messages = Self.hostileMessages(count: 2000)
        Self.sendUDP(messages, port: parleyd.port)
        for message in messages.prefix(50) { Self.sendTCP(message, port: parleyd.port) }
        Self.sendTCP(Array(repeating: 0x7A, count: 200_000), port: parleyd.port)
        usleep(300_000)
        #expect(parleyd.process.process.isRunning)
        let run = try SippInteropTests.sippCalls(parleyd, scenario: "uac")
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions.last == ["ringing", "joining", "joined", "left (remoteEnded)"])
    }

    @Test("SIGTERM with a call up: parleyd sends BYE, records the call, and exits 0")
    func shutdownSendsBye() throws {
        let parleyd = try Parleyd(["--auto-answer", "0"])
        let port = Interop.freePort()
        let sipp = try SippRun.start([
            "-sf", SippInteropTests.scenario("uac-callee-hangs-up.xml"), "127.0.0.1:\(parleyd.port)",
            "-i", "127.0.0.1", "-p", String(port), "-s", "parley", "-m", "1",
        ])
        try parleyd.process.waitForLine("the call joined") { $0.contains("→ joined") }
        #expect(try parleyd.process.stop() == 0)
        #expect(try sipp.waitForExit() == 0, "sipp received the BYE it waits for")
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "leaving", "left (localEnded)"]], "\(parleyd.process.lines)")
    }
}

/// parleyd killed with SIGKILL while calls come and go: nothing it said had ended is lost.
@Suite("parleyd: crash safety", .serialized)
struct CrashSafetyTests {
    @Test("SIGKILL three times under 100 calls/s: every call parleyd logged as ended is in the history, and it restarts cleanly")
    func killedUnderLoad() throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "parley-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = Interop.freePort()
        var ended: Set<String> = []
        var rounds: [Set<String>] = []
        var logs: [String] = []
        for round in 1...3 {
            let parleyd = try RunningProcess(
                try Interop.binary("parleyd"),
                // Signalling only: a pipeline per call at 100 calls/s would measure GStreamer, not the history.
                ["--listen", "udp://127.0.0.1:\(port)", "--data-dir", directory.path, "--auto-answer", "0", "--no-control",
                 "--media", "off"],
                name: "parleyd (round \(round))")
            try parleyd.waitForLine("its listening line (it restarted cleanly)") { $0.contains("listening on") }
            let sipp = try SippRun.start([
                "-sn", "uac", "127.0.0.1:\(port)", "-i", "127.0.0.1", "-p", String(Interop.freePort()), "-s", "parley",
                "-r", "100", "-d", "100", "-m", "100000",
            ])
            defer { sipp.process.terminate() }
            let deadline = ContinuousClock.now + .seconds(15)
            func endedNow() -> [String] {
                parleyd.lines.filter { $0.contains("→ left") }.compactMap { line in
                    line.range(of: "conversation ").map { String(line[$0.upperBound...].prefix(36)).lowercased() }
                }
            }
            while endedNow().count < 50 && ContinuousClock.now < deadline { usleep(20_000) }
            kill(parleyd.process.processIdentifier, SIGKILL)
            parleyd.process.waitUntilExit()
            #expect(parleyd.process.terminationReason == .uncaughtSignal)
            let logged = endedNow()
            #expect(logged.count >= 50, "round \(round): only \(logged.count) calls ended before the kill")
            ended.formUnion(logged)
            rounds.append(Set(logged))
            logs.append(contentsOf: parleyd.lines)
        }
        // The records go to a file: a pipe's last few hundred kilobytes may not be read by the time the CLI exits.
        let file = directory.appending(path: "history.json")
        let history = try RunningProcess(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "\"$0\" history --json --limit 1000 --data-dir \"$1\" > \"$2\"", try Interop.binary("parley").path,
             directory.path, file.path],
            name: "parley history --json")
        #expect(try history.waitForExit() == 0, "\(history.standardError)")
        let recorded = try String(contentsOf: file, encoding: .utf8).lowercased()
        let missing = ended.filter { !recorded.contains($0) }
        let count = try ControlCLITests.parley(["history", "count", "--data-dir", directory.path]).output
        let perRound = rounds.map { $0.intersection(missing).count }
        let example = missing.first.map { uuid in logs.filter { $0.lowercased().contains(uuid) } } ?? []
        #expect(missing.isEmpty, "\(missing.count) of \(ended.count) ended calls are not in the history (it counts \(count)); by round \(perRound); e.g. \(example)")
    }
}
