import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The two-NAT lab of issue 43 (Scripts/nat-lab --hold, whose header draws it): host1 (10.1.0.2) behind nat1
/// (203.0.113.11) and host2 (10.2.0.2) behind nat2 (203.0.113.12) on a public bridge (203.0.113.1) where coturn
/// (STUN/TURN on 3478, user test, password secret, realm parley.test) and Kamailio (registrar with nathelper, udp
/// 5060) listen; `symmetric` makes nat1, nat2 or both pick a random port per flow. Everything sits in the script's
/// private network and mount namespaces; programs run inside through `nsenter -t PID -n -m [ip netns exec SIDE]`.
/// Files are shared with the machine (the mount namespace is a copy), so a parleyd's control socket in its data
/// directory is reachable from here (`parley … --data-dir`). ``stop()`` ends what was started inside, then the script
/// (SIGTERM: it stops Kamailio and coturn by PID), and checks that no process of the lab is left.
final class NATLabScript {
    /// Where a program runs: a host behind a NAT, a NAT itself, or the public side (coturn's and Kamailio's).
    enum Side: String {
        case host1, host2, nat1, nat2
        case `public`
    }

    static let script = Interop.packageRoot.appending(path: "Scripts/nat-lab")
    static let publicAddress = "203.0.113.1"
    /// The NATs' public addresses and the hosts' addresses, nat1/host1 first.
    static let natAddresses = ["203.0.113.11", "203.0.113.12"], hostAddresses = ["10.1.0.2", "10.2.0.2"]
    /// Kamailio, as `--register` and `sip:USER@…` take it.
    static let registrar = "sip:203.0.113.1:5060"
    /// coturn, and its one long-term credential.
    static let turnServer = "203.0.113.1:3478", turnUser = "test", turnPassword = "secret"
    /// A STUN-only server at another address (libnice hears no STUN answer from its TURN server's address: docs/nat.md).
    static let stunServer = "203.0.113.2:3478"

    /// The script (its PID holds the lab's namespaces).
    let process: RunningProcess
    /// This lab's scratch directory: the script's work directory (`lab`: its configuration and logs, turnserver.log,
    /// kamailio.log), the ready file, and whatever a test puts there (data directories, recordings). Removed when the
    /// value goes.
    let directory: URL
    /// The ready file's KEY=VALUE lines (pid, addresses, turnserver_pid, kamailio_pid…).
    let ready: [String: String]
    private var started: [RunningProcess] = []
    private var stopped = false

    /// The PID that holds the lab's network and mount namespaces (the script's own).
    var holderPID: Int32 { process.process.processIdentifier }
    /// The script's work directory.
    var labDirectory: URL { directory.appending(path: "lab") }
    var readyFile: URL { directory.appending(path: "ready") }

    /// Starts the lab (`symmetric`: "1", "2" or "both"); returns once the script wrote its ready file (15 s at most).
    init(symmetric: String? = nil, timeout: Duration = .seconds(15)) throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "parley-nat-lab-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let readyFile = directory.appending(path: "ready")
        process = try RunningProcess(
            Self.script,
            (symmetric.map { ["--symmetric", $0] } ?? []) + [
                "--work", directory.appending(path: "lab").path, "--hold", readyFile.path,
            ], name: "nat-lab", directory: directory)
        let deadline = ContinuousClock.now + timeout
        var found: String?
        while found == nil {
            found = try? String(contentsOf: readyFile, encoding: .utf8)
            if found != nil { break }
            guard process.process.isRunning, ContinuousClock.now < deadline else {
                _ = try? process.stop()
                try? FileManager.default.removeItem(at: directory)
                throw InteropError("Scripts/nat-lab did not get ready within \(timeout) (needs root, coturn, Kamailio): "
                    + (process.lines + [process.standardError]).joined(separator: "\n"))
            }
            usleep(20_000)
        }
        var values: [String: String] = [:]
        for line in found!.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        ready = values
        guard values["pid"] == String(process.process.processIdentifier) else {
            _ = try? process.stop()
            throw InteropError("the ready file names PID \(values["pid"] ?? "-"), the script is \(process.process.processIdentifier)")
        }
    }

    /// Runs `executable` with `arguments` on `side` of the lab (its working directory the temporary directory); it is
    /// stopped by ``stop()`` if still running then. `nsenter`, `ip netns exec` and `env` exec it: the process is the
    /// program. env gives it the signal mask and dispositions a shell would (this process's threads block SIGTERM,
    /// and a child inherits that: a program that relies on SIGTERM's default action would ignore stop()'s).
    func start(on side: Side, _ executable: URL, _ arguments: [String], name: String) throws -> RunningProcess {
        let enter = ["-t", String(holderPID), "-n", "-m", "--wd=\(FileManager.default.temporaryDirectory.path)", "--"]
        let into = side == .public ? [] : ["/usr/sbin/ip", "netns", "exec", side.rawValue]
        let started = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/nsenter"),
            enter + into + ["/usr/bin/env", "--default-signal", executable.path] + arguments, name: name)
        self.started.append(started)
        return started
    }

    /// Runs `executable` on `side` to completion (killed after `timeout`): its exit status and everything it printed.
    func run(on side: Side, _ executable: URL, _ arguments: [String], timeout: Duration = .seconds(20)) throws -> (status: Int32, output: String) {
        let process = try start(on: side, executable, arguments, name: executable.lastPathComponent)
        let status = try process.waitForExit(timeout: timeout)
        return (status, (process.lines + [process.standardError]).joined(separator: "\n"))
    }

    /// A log of the lab's (`turnserver.log`, `kamailio.log`).
    func log(_ name: String) -> String {
        (try? String(contentsOf: labDirectory.appending(path: name), encoding: .utf8)) ?? ""
    }

    /// Stops every process started in the lab (SIGTERM, then SIGKILL after 10 s), then the script by its PID
    /// (SIGTERM: it stops Kamailio and coturn by their PIDs; the namespaces go with it). Throws when the script did
    /// not end within 20 s (it is killed then), or when a process of the lab is still there afterwards (any whose
    /// command line names this lab's directory: coturn, Kamailio and its workers, the script, what was started
    /// inside), after killing it.
    func stop() throws {
        guard !stopped else { return }
        stopped = true
        for process in started where process.process.isRunning { _ = try? process.stop() }
        let status = try? process.stop(timeout: .seconds(20))
        // A script that had to be killed leaves its children to their parent-death signals: a moment to act on them.
        let deadline = ContinuousClock.now + .seconds(5)
        var left = Self.processes(mentioning: directory.path)
        while !left.isEmpty && ContinuousClock.now < deadline {
            usleep(50_000)
            left = Self.processes(mentioning: directory.path)
        }
        for process in left where Self.isRunning(process) { kill(process.pid, SIGKILL) }
        guard left.isEmpty else {
            throw InteropError("the lab left processes behind: \(left) (the script ended with \(status.map(String.init) ?? "no exit"))\n"
                + process.standardError)
        }
        guard status != nil else {
            throw InteropError("Scripts/nat-lab did not end within 20 s of SIGTERM (killed)\n" + process.standardError)
        }
    }

    /// A process: its PID and its start time (clock ticks after boot), so that a PID the kernel has handed to another
    /// process since (PIDs wrap at 32768 here, and builds beside the tests use them up fast) is not taken for it.
    struct ProcessID: Hashable, CustomStringConvertible {
        let pid: Int32
        let started: String
        var description: String { String(pid) }
    }

    /// `pid` now, nil when it is gone or a zombie.
    static func process(_ pid: Int32) -> ProcessID? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After the command's closing parenthesis: state (field 3) … starttime (field 22).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, fields[0] != "Z" else { return nil }
        return ProcessID(pid: pid, started: String(fields[19]))
    }

    /// Whether `process` still runs (the same process, not a zombie).
    static func isRunning(_ process: ProcessID) -> Bool { Self.process(process.pid) == process }

    /// The running processes whose command line contains `text`.
    static func processes(mentioning text: String) -> [ProcessID] {
        let own = getpid()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> ProcessID? in
            guard let pid = Int32(entry), pid != own,
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                String(decoding: data.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self).contains(text)
            else { return nil }
            return process(pid)
        }
    }

    deinit {
        try? stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
