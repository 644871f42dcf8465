import Foundation
import Glibc
import Testing

/// `parley install-service` (issue 49) in a throwaway HOME, where no systemd user manager is reachable: the units and
/// the D-Bus activation file it writes, judged by `systemd-analyze verify`, the packaged copies equal to what it
/// prints, and a private session bus (`dbus-daemon --session`, which reads `$XDG_DATA_HOME/dbus-1/services`)
/// starting parleyd for a `gdbus call`.
@Suite("Interop: parley install-service", .serialized, .timeLimit(.minutes(2)))
struct InstallServiceTests {
    /// The files `--print` shows: each `==> PATH <==` header's path and the text after it.
    static func printed(_ output: String) -> [String: String] {
        var files: [String: String] = [:]
        var current: String?
        for line in output.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("==> ") && line.hasSuffix(" <==") {
                current = String(line.dropFirst(4).dropLast(4))
                files[current!] = ""
            } else if let current {
                files[current]! += line + "\n"
            }
        }
        return files.mapValues { $0.trimmingCharacters(in: .newlines) }
    }

    /// `systemd-analyze [--user] verify FILES`: its status and output.
    static func verify(_ files: [String], user: Bool, runtime: URL) throws -> (status: Int32, output: String) {
        let process = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["XDG_RUNTIME_DIR=\(runtime.path)", try Interop.tool("systemd-analyze").path] + (user ? ["--user"] : []) + ["verify"] + files,
            name: "systemd-analyze")
        let status = try process.waitForExit()
        return (status, (process.lines + [process.standardError]).joined(separator: "\n"))
    }

    @Test("packaging/ holds what --print --exec /usr/bin/parleyd shows: parleyd.service, parleyd.socket, org.parley.Parley.service")
    func packagedFiles() throws {
        let home = try UserServiceTests.Home()
        defer { home.remove() }
        let run = try home.parley(["install-service", "--print", "--socket", "--dbus", "--exec", "/usr/bin/parleyd"])
        #expect(run.status == 0, "\(run.output)")
        let files = Self.printed(run.output)
        #expect(files.count == 3, "\(files.keys)")
        for (path, packaged) in [("systemd/user/parleyd.service", "packaging/parleyd.service"),
                                 ("systemd/user/parleyd.socket", "packaging/parleyd.socket"),
                                 ("dbus-1/services/org.parley.Parley.service", "packaging/dbus/org.parley.Parley.service")] {
            let text = files.first { $0.key.hasSuffix(path) }?.value
            let expected = try String(contentsOf: Interop.packageRoot.appending(path: packaged), encoding: .utf8)
            #expect(text == expected.trimmingCharacters(in: .newlines), "\(packaged) differs from --print")
        }
        #expect(!FileManager.default.fileExists(atPath: home.config.appending(path: "systemd").path), "--print writes nothing")
        #expect(!FileManager.default.fileExists(atPath: home.data.path), "--print writes nothing")
        #expect(try home.parley(["install-service", "--exec", "/usr/bin/parleyd"]).status == 64, "--exec without --print")
    }

    @Test("install-service --socket --dbus writes the units (ExecStart: this build's parleyd) and the D-Bus file, valid per systemd-analyze verify; without a user manager it says what to run and exits 0")
    func installsInThrowawayHome() throws {
        let home = try UserServiceTests.Home()
        defer { home.remove() }
        let parleyd = try Interop.binary("parleyd").path
        let run = try home.parley(["install-service", "--socket", "--dbus"])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("systemctl --user daemon-reload && systemctl --user enable --now parleyd.socket parleyd.service"),
                "\(run.output)")
        let units = home.config.appending(path: "systemd/user")
        let service = try String(contentsOf: units.appending(path: "parleyd.service"), encoding: .utf8)
        #expect(service.contains("\nExecStart=\(parleyd)\n"), "\(service)")
        let socket = try String(contentsOf: units.appending(path: "parleyd.socket"), encoding: .utf8)
        #expect(socket.contains("ListenStream=%t/parley/control.sock") && socket.contains("FileDescriptorName=control"))
        let dbus = try String(contentsOf: home.data.appending(path: "dbus-1/services/org.parley.Parley.service"), encoding: .utf8)
        #expect(dbus.contains("\nExec=\(parleyd)\n") && dbus.contains("SystemdService=parleyd.service"), "\(dbus)")
        for user in [false, true] {
            let verified = try Self.verify(
                [units.appending(path: "parleyd.service").path, units.appending(path: "parleyd.socket").path], user: user,
                runtime: home.runtime)
            #expect(verified.status == 0, "\(user ? "--user " : "")verify: \(verified.output)")
        }
        let again = try home.parley(["install-service", "--no-start"])
        #expect(again.status == 0 && again.output.contains("systemctl --user enable parleyd.service"), "\(again.output)")
    }

    @Test("D-Bus activation: a private session bus reading $XDG_DATA_HOME/dbus-1/services starts parleyd for a Recents call; it then answers parley on its runtime directory, and is stopped by the PID the bus gives")
    func dbusActivation() throws {
        let home = try UserServiceTests.Home(config: nil)
        defer { home.remove() }
        try ["listen udp://127.0.0.1:\(home.port)", "media off", "user alice"].joined(separator: "\n")
            .write(to: home.configFile, atomically: true, encoding: .utf8)
        #expect(try home.parley(["install-service", "--dbus", "--no-start"]).status == 0)
        let (bus, busPID) = try RunningProcess.shielded(
            ["/usr/bin/env", "-i"] + home.environment()
                + [try Interop.tool("dbus-daemon").path, "--session", "--print-address", "--nofork"],
            name: "dbus-daemon")
        defer {
            kill(busPID, SIGTERM)
            _ = try? bus.waitForExit(timeout: .seconds(5))
        }
        let address = try bus.waitForLine("its address") { $0.hasPrefix("unix:") }.trimmingCharacters(in: .whitespaces)
        func gdbus(_ arguments: [String]) throws -> (status: Int32, output: String) {
            let process = try RunningProcess(
                URL(fileURLWithPath: "/usr/bin/env"), ["DBUS_SESSION_BUS_ADDRESS=\(address)", try Interop.tool("gdbus").path] + arguments,
                name: "gdbus")
            let status = try process.waitForExit(timeout: .seconds(40))
            return (status, (process.lines + [process.standardError]).joined(separator: "\n"))
        }
        let recents = try gdbus(["call", "--session", "--dest", "org.parley.Parley", "--object-path", "/org/parley/Parley",
                                 "--method", "org.parley.Parley.Calls.Recents", "10"])
        #expect(recents.status == 0 && recents.output.contains("[]"), "no history yet: \(recents.output)")
        let owner = try gdbus(["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                               "--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", "org.parley.Parley"])
        let digits = owner.output.split(whereSeparator: { !$0.isNumber }).last.map(String.init) ?? ""
        let pid = try #require(Int32(digits), "\(owner.output)")
        let command = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
        #expect(command.contains("parleyd"), "\(command)")
        defer {
            // Only if it is still that parleyd (the test's SIGTERM below normally ended it).
            if (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8))?.contains("parleyd") == true { kill(pid, SIGKILL) }
        }
        let status = try home.parley(["status"])
        #expect(status.status == 0 && status.output.contains("sip:alice@127.0.0.1:\(home.port)"), "\(status.output)")
        #expect(kill(pid, SIGTERM) == 0)
        let deadline = ContinuousClock.now + .seconds(10)
        var gone = false
        while ContinuousClock.now < deadline {
            let has = try gdbus(["call", "--session", "--dest", "org.freedesktop.DBus", "--object-path", "/org/freedesktop/DBus",
                                 "--method", "org.freedesktop.DBus.NameHasOwner", "org.parley.Parley"])
            if has.output.contains("false") {
                gone = true
                break
            }
            usleep(100_000)
        }
        #expect(gone, "parleyd left the bus after SIGTERM")
    }
}
