import Foundation
import Testing

/// A running parleyd on loopback with a temporary data directory.
final class Parleyd {
    let process: RunningProcess
    let port: UInt16
    let tlsPort: UInt16?
    let dataDirectory: URL

    /// Starts parleyd listening on UDP and TCP (and TLS when `tls` names a cert and key) at a free port, with extra
    /// `arguments`; returns once it says it is listening. The TLS peers it calls are verified (parleyd's default)
    /// against `tls.cert` as the CA — the tests' peers use the same self-signed certificate — unless `arguments`
    /// say otherwise (`--tls-ca`, `--tls-insecure`) or `trustingOwnCertificate` is false (the system's CAs only).
    /// `environment` (`NAME=value`, or `-u NAME` pairs as env(1) takes them) is set for it on top of the test's.
    init(
        _ arguments: [String] = [], tls: (cert: String, key: String)? = nil, trustingOwnCertificate: Bool = true,
        environment: [String] = []
    ) throws {
        port = Interop.freePort()
        dataDirectory = FileManager.default.temporaryDirectory.appending(path: "parleyd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        var all = ["--listen", "udp://127.0.0.1:\(port)", "--listen", "tcp://127.0.0.1:\(port)",
                   "--data-dir", dataDirectory.path, "--log-level", "debug"]
        if let tls {
            let tlsPort = Interop.freePort()
            self.tlsPort = tlsPort
            all += ["--listen", "tls://127.0.0.1:\(tlsPort)", "--tls-cert", tls.cert, "--tls-key", tls.key]
            if trustingOwnCertificate && !arguments.contains("--tls-ca") && !arguments.contains("--tls-insecure") {
                all += ["--tls-ca", tls.cert]
            }
        } else {
            tlsPort = nil
        }
        if environment.isEmpty {
            process = try RunningProcess(try Interop.binary("parleyd"), all + arguments, name: "parleyd")
        } else {
            process = try RunningProcess(
                URL(fileURLWithPath: "/usr/bin/env"), environment + [try Interop.binary("parleyd").path] + all + arguments,
                name: "parleyd")
        }
        try process.waitForLine("its listening line") { $0.contains("listening on") }
    }

    /// The states each conversation entered, in order of first appearance: `[["ringing", "joining", …]]`.
    var transitions: [[String]] { process.conversationTransitions }

    /// Waits until `count` conversations have reached `left`.
    func waitForEnded(_ count: Int, timeout: Duration = .seconds(20)) throws {
        try process.waitForLine(timeout: timeout, "\(count) ended conversation(s)") { _ in
            transitions.filter { $0.last?.hasPrefix("left") == true }.count >= count
        }
    }

    deinit {
        _ = try? process.stop()
        try? FileManager.default.removeItem(at: dataDirectory)
    }
}

/// One sipp run, judged by its exit code and its failed-call count.
struct SippRun {
    let status: Int32
    let output: String

    /// Runs sipp with `arguments` (scenario, addresses…) to completion; -nostdin and a 30 s global timeout are added.
    static func run(_ arguments: [String], timeout: Duration = .seconds(40)) throws -> SippRun {
        let process = try RunningProcess(
            try Interop.tool("sipp"), arguments + ["-nostdin", "-timeout", "30s", "-timeout_error", "-trace_err"],
            name: "sipp", directory: FileManager.default.temporaryDirectory)
        let status = try process.waitForExit(timeout: timeout)
        return SippRun(status: status, output: (process.lines + [process.standardError]).joined(separator: "\n"))
    }

    /// Starts sipp in the background (a UAS waiting for parleyd's call).
    static func start(_ arguments: [String]) throws -> RunningProcess {
        try RunningProcess(
            try Interop.tool("sipp"), arguments + ["-nostdin", "-timeout", "30s", "-timeout_error", "-trace_err"],
            name: "sipp", directory: FileManager.default.temporaryDirectory)
    }
}

extension RunningProcess {
    /// The states each conversation of this parleyd entered, as it logs them, in order of first appearance.
    var conversationTransitions: [[String]] {
        var order: [String] = []
        var states: [String: [String]] = [:]
        for line in lines {
            guard let range = line.range(of: "conversation "), let arrow = line.range(of: " → ") else { continue }
            let uuid = String(line[range.upperBound...].prefix(36))
            if states[uuid] == nil { order.append(uuid) }
            states[uuid, default: []].append(String(line[arrow.upperBound...]))
        }
        return order.map { states[$0]! }
    }
}
