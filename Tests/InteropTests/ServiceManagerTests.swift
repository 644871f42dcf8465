import Foundation
import Glibc
import Testing

/// parleyd under a systemd unit of `Type=notify` (issue 49): what it says on `$NOTIFY_SOCKET`, read by the test from a
/// datagram socket of its own, as systemd would.
@Suite("Interop: parleyd tells systemd it is ready", .serialized, .timeLimit(.minutes(1)))
struct ServiceManagerTests {
    /// A Unix datagram socket standing in for systemd's notification socket.
    final class NotifySocket {
        let path = FileManager.default.temporaryDirectory.appending(path: "parley-notify-\(UUID().uuidString.prefix(8))").path
        private let fd: Int32

        init() throws {
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard fd >= 0, bound == 0 else { throw InteropError("cannot bind \(path): errno \(errno)") }
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit {
            close(fd)
            unlink(path)
        }

        /// The messages that arrive within `duration`.
        func messages(during duration: Duration) -> [String] {
            var found: [String] = []
            let deadline = ContinuousClock.now + duration
            var buffer = [UInt8](repeating: 0, count: 4096)
            while ContinuousClock.now < deadline {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count > 0 { found.append(String(decoding: buffer.prefix(count), as: UTF8.self)) }
            }
            return found
        }
    }

    @Test("READY=1 with the listening addresses as the status once it listens, WATCHDOG=1 at half of WATCHDOG_USEC, STOPPING=1 on SIGTERM")
    func readyWatchdogStopping() throws {
        let notify = try NotifySocket()
        let port = Interop.freePort()
        let directory = FileManager.default.temporaryDirectory.appending(path: "parleyd-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let parleyd = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["NOTIFY_SOCKET=\(notify.path)", "WATCHDOG_USEC=600000", try Interop.binary("parleyd").path,
             "--listen", "udp://127.0.0.1:\(port)", "--data-dir", directory.path, "--media", "off"],
            name: "parleyd")
        try parleyd.waitForLine("its listening line") { $0.contains("listening on") }
        let first = notify.messages(during: .milliseconds(1_500))
        let ready = first.first { $0.hasPrefix("READY=1") }
        #expect(ready?.contains("STATUS=listening on udp://127.0.0.1:\(port)") == true, "\(first)")
        let pings = first.filter { $0 == "WATCHDOG=1" }.count
        #expect((3...7).contains(pings), "a ping every 300 ms in 1.5 s: \(pings) in \(first)")
        kill(parleyd.process.processIdentifier, SIGTERM)
        #expect(try parleyd.waitForExit() == 0)
        let last = notify.messages(during: .milliseconds(300))
        #expect(last.contains { $0.hasPrefix("STOPPING=1") }, "\(last)")
    }

    @Test("packaging/parleyd.service passes systemd-analyze verify, as a user unit too (its ExecStart pointed at this build)")
    func unitVerifies() throws {
        let scratch = FileManager.default.temporaryDirectory.appending(path: "parley-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch.appending(path: "run"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let packaged = try String(contentsOf: Interop.packageRoot.appending(path: "packaging/parleyd.service"), encoding: .utf8)
        #expect(packaged.contains("Type=notify") && packaged.contains("WatchdogSec=") && packaged.contains("Restart=on-failure"))
        let unit = scratch.appending(path: "parleyd.service")
        try packaged.replacingOccurrences(of: "ExecStart=/usr/bin/parleyd", with: "ExecStart=\(try Interop.binary("parleyd").path)")
            .write(to: unit, atomically: true, encoding: .utf8)
        for user in [false, true] {
            let process = try RunningProcess(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["XDG_RUNTIME_DIR=\(scratch.appending(path: "run").path)", try Interop.tool("systemd-analyze").path]
                    + (user ? ["--user"] : []) + ["verify", unit.path],
                name: "systemd-analyze")
            #expect(try process.waitForExit() == 0, "\(user ? "--user " : "")verify: \(process.lines) \(process.standardError)")
        }
    }

    @Test("without NOTIFY_SOCKET nothing is said and nothing fails")
    func noManager() throws {
        let parleyd = try Parleyd(["--media", "off"])
        #expect(!parleyd.process.lines.contains { $0.contains("service manager") })
    }
}
