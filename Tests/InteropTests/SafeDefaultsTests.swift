import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What parleyd gives away and what it keeps private by default.
@Suite("parleyd: safe defaults", .serialized)
struct SafeDefaultsTests {
    /// Sends `request` on a new TCP connection to 127.0.0.1:`port` and returns what comes back within 5 s.
    static func exchangeTCP(_ request: String, port: UInt16) -> String {
        guard let fd = DaemonRobustnessTests.connectTCP(port: port) else { return "" }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).contains("\r\n\r\n") {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    static func options(port: UInt16) -> String {
        """
        OPTIONS sip:parley@127.0.0.1:\(port) SIP/2.0\r
        Via: SIP/2.0/TCP 127.0.0.1:9;branch=z9hG4bK-safe-\(UUID().uuidString.prefix(8))\r
        Max-Forwards: 70\r
        From: <sip:probe@127.0.0.1>;tag=p1\r
        To: <sip:parley@127.0.0.1>\r
        Call-ID: safe-\(UUID().uuidString)@probe\r
        CSeq: 1 OPTIONS\r
        Content-Length: 0\r
        \r

        """
    }

    @Test("the Server header says Parley without the version; --user-agent sets it; a header-breaking value is refused")
    func serverHeader() throws {
        let plain = try Parleyd()
        let answer = Self.exchangeTCP(Self.options(port: plain.port), port: plain.port)
        #expect(answer.hasPrefix("SIP/2.0 "), "\(answer)")
        #expect(answer.contains("\r\nServer: Parley\r\n"), "\(answer)")
        let named = try Parleyd(["--user-agent", "Parley/0.3.0 (lab)"])
        #expect(Self.exchangeTCP(Self.options(port: named.port), port: named.port).contains("\r\nServer: Parley/0.3.0 (lab)\r\n"))
        for bad in ["", "Parley\r\nX-Injected: yes", String(repeating: "p", count: 129)] {
            let refused = try RunningProcess(
                try Interop.binary("parleyd"), ["--user-agent", bad, "--no-control", "--no-history"], name: "parleyd --user-agent")
            #expect(try refused.waitForExit() == 64, "\(bad.debugDescription)")
        }
    }

    @Test("a data directory others can open is tightened to 0700 (and said so); the history and the token are 0600")
    func privateFiles() throws {
        let parleyd = try Parleyd(["--auto-answer", "0"])  // its directory was made with the test's umask: 0755
        let directory = parleyd.dataDirectory.path
        func mode(_ path: String) throws -> Int {
            try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        }
        #expect(try mode(directory) == 0o700)
        #expect(parleyd.process.lines.contains { $0.contains("the data directory \(directory) was 755") && $0.contains("now 700") },
                "\(parleyd.process.lines)")
        let run = try SippInteropTests.sippCalls(parleyd, scenario: "uac")  // a call: the history gets its -wal and -shm
        #expect(run.status == 0, "\(run.output)")
        try parleyd.waitForEnded(1)
        for name in ["history.sqlite", "history.sqlite-wal", "history.sqlite-shm", "control.token"] {
            let path = parleyd.dataDirectory.appending(path: name).path
            #expect(FileManager.default.fileExists(atPath: path), "\(name)")
            #expect(try mode(path) == 0o600, "\(name)")
        }
    }
}
