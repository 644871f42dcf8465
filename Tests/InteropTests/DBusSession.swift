import Foundation
import Glibc

/// A private session bus for one test: `dbus-daemon --session --print-address --nofork`, started by the test and
/// stopped by its PID; `gdbus` and parleyd reach it through `DBUS_SESSION_BUS_ADDRESS`.
final class DBusSession {
    let process: RunningProcess
    let pid: Int32
    /// The bus's address (`unix:path=/tmp/dbus-…,guid=…`).
    let address: String

    init() throws {
        (process, pid) = try RunningProcess.shielded(
            [try Interop.tool("dbus-daemon").path, "--session", "--print-address", "--nofork"], name: "dbus-daemon")
        address = try process.waitForLine("its address") { $0.hasPrefix("unix:") }.trimmingCharacters(in: .whitespaces)
    }

    /// The environment entry for programs on this bus.
    var environment: [String] { ["DBUS_SESSION_BUS_ADDRESS=\(address)"] }

    /// Runs `gdbus ARGUMENTS` on this bus to completion: its exit status and what it printed (errors included).
    func gdbus(_ arguments: [String], timeout: Duration = .seconds(10)) throws -> (status: Int32, output: String) {
        let process = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"), environment + [try Interop.tool("gdbus").path] + arguments, name: "gdbus")
        let status = try process.waitForExit(timeout: timeout)
        return (status, (process.lines + [process.standardError]).joined(separator: "\n"))
    }

    /// `gdbus call` of `method` (interface.member) on `path` of org.parley.Parley with GVariant-text arguments.
    func call(_ path: String, _ method: String, _ arguments: [String] = []) throws -> (status: Int32, output: String) {
        try gdbus(["call", "--session", "--dest", "org.parley.Parley", "--object-path", path, "--method", method] + arguments)
    }

    /// Starts `gdbus monitor` on org.parley.Parley, its output line-buffered (stdbuf) so each signal is read as it
    /// comes (stopped by the caller, or when it is dropped).
    func monitor() throws -> RunningProcess {
        try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            environment + ["stdbuf", "-oL", try Interop.tool("gdbus").path, "monitor", "--session", "--dest", "org.parley.Parley"],
            name: "gdbus monitor")
    }

    /// Stops a `gdbus monitor` by its PID. SIGKILL: it inherits the test's threads' signal mask, in which SIGTERM is
    /// blocked (see `RunningProcess.shielded`), and has no handler of its own to unblock it.
    static func stop(_ monitor: RunningProcess) {
        if monitor.process.isRunning { kill(monitor.process.processIdentifier, SIGKILL) }
        _ = try? monitor.waitForExit(timeout: .seconds(5))
    }

    private var stopped = false

    /// Stops the bus (SIGTERM to the daemon by its PID; its shielding parent then exits).
    func stop() {
        guard !stopped else { return }
        stopped = true
        kill(pid, SIGTERM)
        _ = try? process.waitForExit(timeout: .seconds(5))
    }

    deinit {
        if !stopped { kill(pid, SIGKILL) }
        _ = try? process.stop()
    }
}
