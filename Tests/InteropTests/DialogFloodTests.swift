import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 48, item 5: one established call flooding its own dialog with MESSAGEs must not cost the calls of others.
@Suite("parleyd: an in-dialog MESSAGE flood beside legitimate calls", .serialized, .timeLimit(.minutes(2)))
struct DialogFloodTests {
    /// A call set up by hand over TCP (INVITE, 200, ACK), whose connection then sends what the test writes; what
    /// comes back is read and counted on a thread of its own (so parleyd never waits for a full socket).
    final class FloodingCall: @unchecked Sendable {
        let fd: Int32
        let callID = "dialog-flood-\(UUID().uuidString)@127.0.0.1"
        let localPort: UInt16
        let target: UInt16
        private(set) var toTag = ""
        private let received = Locked<[String: Int]>([:])
        private let buffer = Locked(Data())

        init(to port: UInt16, from host: String) throws {
            guard let fd = DaemonRobustnessTests.connectTCP(port: port, from: host) else { throw InteropError("no TCP connection") }
            self.fd = fd
            target = port
            var address = sockaddr_in(), length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            localPort = UInt16(bigEndian: address.sin_port)
            Thread { [self] in read() }.start()
            write(request("INVITE", cseq: 1, branch: "z9hG4bK-inv", toTag: nil, body: ""))
            let deadline = Date().addingTimeInterval(10)
            while toTag.isEmpty && Date() < deadline {
                usleep(20_000)
                let text = String(decoding: buffer.withLock { $0 }, as: UTF8.self)
                if let ok = text.components(separatedBy: "SIP/2.0 200").dropFirst().first,
                    let tagged = ok.components(separatedBy: "\r\n").first(where: { $0.lowercased().hasPrefix("to:") }),
                    let tag = tagged.components(separatedBy: "tag=").dropFirst().first
                {
                    toTag = String(tag.prefix { $0 != ";" && $0 != ">" && !$0.isWhitespace })
                }
            }
            guard !toTag.isEmpty else { throw InteropError("the flooder's call was not answered") }
            write(request("ACK", cseq: 1, branch: "z9hG4bK-ack", toTag: toTag, body: ""))
        }

        deinit { close(fd) }

        func request(_ method: String, cseq: Int, branch: String, toTag: String?, body: String) -> [UInt8] {
            Array("""
            \(method) sip:parley@127.0.0.1:\(target);transport=tcp SIP/2.0\r
            Via: SIP/2.0/TCP 127.0.0.2:\(localPort);branch=\(branch)\r
            Max-Forwards: 70\r
            From: <sip:flood@127.0.0.1>;tag=flooder\r
            To: <sip:parley@127.0.0.1>\(toTag.map { ";tag=\($0)" } ?? "")\r
            Call-ID: \(callID)\r
            CSeq: \(cseq) \(method)\r
            Contact: <sip:flood@127.0.0.2:\(localPort);transport=tcp>\r
            \(body.isEmpty ? "" : "Content-Type: text/plain\r\n")Content-Length: \(body.utf8.count)\r
            \r
            \(body)
            """.utf8)
        }

        func message(_ number: Int, body: String) -> [UInt8] {
            request("MESSAGE", cseq: 2 + number, branch: "z9hG4bK-m\(number)", toTag: toTag, body: body)
        }

        func write(_ bytes: [UInt8]) {
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard count > 0 else { return }
                sent += count
            }
        }

        /// Final responses to the flood's MESSAGEs by status, so far.
        var statuses: [String: Int] { received.withLock { $0 } }

        private func read() {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = recv(fd, &chunk, chunk.count, 0)
                guard count > 0 else { return }
                let text = String(decoding: chunk[..<count], as: UTF8.self)
                if toTag.isEmpty { buffer.withLock { $0.append(contentsOf: chunk[..<count]) } }
                for part in text.components(separatedBy: "SIP/2.0 ").dropFirst() where part.contains(" MESSAGE\r\n") && !part.contains("Allow") {
                    received.withLock { $0[String(part.prefix(3)), default: 0] += 1 }
                }
            }
        }
    }

    /// Reads `parley status --json`'s counters.
    static func counters(_ parleyd: Parleyd) throws -> [String: Int] {
        let status = try ControlCLITests.parley(["status", "--json", "--data-dir", parleyd.dataDirectory.path])
        return try #require(
            ((try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any])?["result"]
                as? [String: Any])?["counters"] as? [String: Int], "\(status.output)")
    }

    /// 10 s of 60 KB MESSAGEs as fast as TCP takes them from a call on 127.0.0.2 (before this check, 30,538 of them
    /// in 10 s made sipp's run beside them fail), while sipp places 40 calls from 127.0.0.1. In-dialog requests are
    /// bounded per call, not per source (a proxy carries every call's): the call's budget alone holds the flood.
    @Test("a call floods its dialog with 60 KB MESSAGEs over TCP for 10 s: 40 legitimate calls beside it all connect")
    func largeMessages() throws {
        let parleyd = try Parleyd(["--auto-answer", "0", "--media", "off", "--log-level", "info"])
        let flood = try FloodingCall(to: parleyd.port, from: "127.0.0.2")
        let body = String(repeating: "x", count: 60_000)
        let legitimate = try SippRun.start(
            ["-sn", "uac", "127.0.0.1:\(parleyd.port)", "-i", "127.0.0.1", "-s", "parley", "-d", "500",
             "-p", String(Interop.freePort()), "-m", "40", "-r", "4"])
        let start = ContinuousClock.now
        var sent = 0
        while ContinuousClock.now - start < .seconds(10) {
            flood.write(flood.message(sent, body: body))
            sent += 1
        }
        let sipp = try legitimate.waitForExit(timeout: .seconds(40))
        #expect(sipp == 0, "every legitimate call connected and ended: \(legitimate.lines.suffix(20))")
        let statuses = flood.statuses, counters = try Self.counters(parleyd)
        print("in-dialog flood: \(sent) sent, answered \(statuses); counters \(counters)")
        #expect(statuses["200", default: 0] == 0, "no 60 KB MESSAGE was taken: \(statuses)")
        // The call's budget: four 60 KB bodies a second are read (413), the rest refused unread (503).
        #expect(statuses["503", default: 0] > 10 * statuses["413", default: 0], "\(statuses)")
        #expect(statuses["413", default: 0] <= 5 * 11, "\(statuses)")
        #expect(counters["inDialogRequestsRefused", default: 0] >= statuses["503", default: 0], "\(counters)")
        #expect(counters["sourcesBanned", default: 0] == 0, "\(counters)")
        #expect(parleyd.process.process.isRunning)
    }
}
