import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// dnsmasq on 127.0.0.1 at a free port, answering only from the records the test gives (`--srv-host=…`,
/// `--naptr-record=…`, `--host-record=…`), authoritative for `example.test` (other names there are NXDOMAIN), no
/// upstream, no /etc/hosts: what `parleyd --dns-server` is pointed at. Stopped by its PID.
final class Dnsmasq {
    let process: RunningProcess
    let port: UInt16
    /// dnsmasq's own PID (`process` is its python3 parent).
    private let pid: Int32

    init(_ records: [String]) throws {
        port = Interop.freePort()
        (process, pid) = try RunningProcess.shielded(
            [try Interop.tool("dnsmasq").path, "--keep-in-foreground", "--port=\(port)", "--listen-address=127.0.0.1", "--bind-interfaces", "--no-resolv",
             "--no-hosts", "--conf-file=/dev/null", "--pid-file", "--local=/example.test/", "--local-ttl=60",
             "--log-facility=-", "--log-queries"] + records,
            name: "dnsmasq")
        let deadline = ContinuousClock.now + .seconds(5)
        while !process.standardError.contains("started") && !process.lines.contains(where: { $0.contains("started") }) {
            guard ContinuousClock.now < deadline else { throw InteropError("dnsmasq did not start: \(process.standardError)") }
            usleep(20_000)
        }
    }

    /// `127.0.0.1:PORT`, as `--dns-server` takes it.
    var address: String { "127.0.0.1:\(port)" }

    /// The queries it logged (`query[SRV] _sip._udp.example.test from 127.0.0.1`).
    var queries: [String] {
        (process.standardError.split(separator: "\n").map(String.init) + process.lines).filter { $0.contains("query[") }
    }

    deinit {
        kill(pid, SIGKILL)
        _ = try? process.waitForExit(timeout: .seconds(5))
    }
}
