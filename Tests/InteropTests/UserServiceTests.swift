import Foundation
import Glibc
import Testing

/// parleyd as a per-user service (issue 49): the control socket and token in `$XDG_RUNTIME_DIR/parley`, the default
/// config file, socket activation (`systemd-socket-activate`), `parley install-service` in a throwaway HOME (its units
/// judged by `systemd-analyze verify`), and D-Bus activation by a private session bus. Every parleyd is stopped by
/// its PID; ports are picked at run time.
@Suite("Interop: parleyd as a per-user service", .serialized, .timeLimit(.minutes(2)))
struct UserServiceTests {
    /// A HOME of its own, with XDG_DATA_HOME, XDG_CONFIG_HOME and XDG_RUNTIME_DIR (0700) inside it, and a config file
    /// that makes parleyd listen on a free port without audio or D-Bus.
    struct Home {
        let root = FileManager.default.temporaryDirectory.appending(path: "pu-\(UUID().uuidString.prefix(8))")
        let port = Interop.freePort()
        var data: URL { root.appending(path: "data") }
        var config: URL { root.appending(path: "config") }
        var runtime: URL { root.appending(path: "run") }
        var configFile: URL { config.appending(path: "parley/parleyd.conf") }
        /// `$XDG_RUNTIME_DIR/parley`.
        var control: URL { runtime.appending(path: "parley") }

        init(config lines: [String]? = nil) throws {
            try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.createDirectory(at: configFile.deletingLastPathComponent(), withIntermediateDirectories: true)
            let text = (lines ?? ["listen udp://127.0.0.1:\(port)", "media off", "dbus off", "user alice"]).joined(separator: "\n") + "\n"
            try text.write(to: configFile, atomically: true, encoding: .utf8)
        }

        /// The environment of a desktop session in it (`runtime: false`: one without a runtime directory).
        func environment(runtime withRuntime: Bool = true) -> [String] {
            ["PATH=/usr/bin:/bin", "HOME=\(root.path)", "XDG_DATA_HOME=\(data.path)", "XDG_CONFIG_HOME=\(config.path)"]
                + (withRuntime ? ["XDG_RUNTIME_DIR=\(runtime.path)"] : [])
        }

        /// Runs `command` in it to completion: its exit status and what it printed.
        func run(_ command: [String], runtime withRuntime: Bool = true) throws -> (status: Int32, output: String) {
            let process = try RunningProcess(
                URL(fileURLWithPath: "/usr/bin/env"), ["-i"] + environment(runtime: withRuntime) + command, name: command.first ?? "env")
            let status = try process.waitForExit(timeout: .seconds(30))
            return (status, (process.lines + [process.standardError]).joined(separator: "\n"))
        }

        /// `parley ARGUMENTS` in it.
        func parley(_ arguments: [String], runtime withRuntime: Bool = true) throws -> (status: Int32, output: String) {
            try run([try Interop.binary("parley").path] + arguments, runtime: withRuntime)
        }

        /// parleyd in it with `arguments`, once it listens.
        func parleyd(_ arguments: [String] = [], runtime withRuntime: Bool = true) throws -> RunningProcess {
            let process = try RunningProcess(
                URL(fileURLWithPath: "/usr/bin/env"),
                ["-i"] + environment(runtime: withRuntime) + [try Interop.binary("parleyd").path] + arguments, name: "parleyd")
            try process.waitForLine("its listening line") { $0.contains("listening on") }
            return process
        }

        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    /// The permission bits of `url`.
    static func mode(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions]) as? NSNumber)?.intValue ?? -1
    }

    @Test("the default config file is read; the control socket and token go to $XDG_RUNTIME_DIR/parley (0700, 0600), the history to $XDG_DATA_HOME/parley; parley finds them; --data-dir puts them back in the data directory")
    func runtimeDirectory() throws {
        let home = try Home()
        defer { home.remove() }
        let parleyd = try home.parleyd()
        #expect(parleyd.lines.contains { $0.contains("options from \(home.configFile.path)") }, "\(parleyd.lines)")
        #expect(parleyd.lines.contains { $0.contains("listening on udp://127.0.0.1:\(home.port)") })
        #expect(FileManager.default.fileExists(atPath: home.control.appending(path: "control.sock").path))
        #expect(Self.mode(home.control) == 0o700)
        #expect(Self.mode(home.control.appending(path: "control.token")) == 0o600)
        #expect(!FileManager.default.fileExists(atPath: home.data.appending(path: "parley/control.sock").path))
        #expect(FileManager.default.fileExists(atPath: home.data.appending(path: "parley/identity").path), "identity stays in the data directory")
        let status = try home.parley(["status"])
        #expect(status.status == 0 && status.output.contains("sip:alice@127.0.0.1:\(home.port)"), "\(status.output)")
        let web = try home.parley(["list"])
        #expect(web.status == 0, "\(web.output)")
        #expect(try parleyd.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: home.control.appending(path: "control.sock").path), "removed on stop")

        // A named data directory holds everything, as before.
        let named = home.root.appending(path: "named")
        let other = try home.parleyd(["--data-dir", named.path])
        defer { _ = try? other.stop() }
        #expect(FileManager.default.fileExists(atPath: named.appending(path: "control.sock").path))
        #expect(FileManager.default.fileExists(atPath: named.appending(path: "control.token").path))
        #expect(!FileManager.default.fileExists(atPath: home.control.appending(path: "control.sock").path))
        #expect(try home.parley(["status", "--data-dir", named.path]).status == 0)
        let none = try home.parley(["status"])
        #expect(none.status == 1 && none.output.contains("no parleyd is running for you (no control socket in \(home.control.path)"),
                "\(none.output)")
    }

    @Test("with a data directory too deep for a Unix socket's path, parleyd serves its control socket in the runtime directory")
    func deepDataDirectory() throws {
        let home = try Home()
        defer { home.remove() }
        let deep = home.root.appending(path: String(repeating: "d", count: 60)).appending(path: String(repeating: "e", count: 60))
        let process = try RunningProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["-i"] + home.environment().map { $0.hasPrefix("XDG_DATA_HOME=") ? "XDG_DATA_HOME=\(deep.path)" : $0 }
                + [try Interop.binary("parleyd").path],
            name: "parleyd")
        try process.waitForLine("its listening line") { $0.contains("listening on") }
        #expect(FileManager.default.fileExists(atPath: deep.appending(path: "parley/identity").path))
        let status = try home.parley(["status"])
        #expect(status.status == 0, "\(status.output)")
        #expect(try process.stop() == 0)
    }

    @Test("a parleyd started without a runtime directory (its socket in the data directory) is still found by parley in a session that has one")
    func migration() throws {
        let home = try Home()
        defer { home.remove() }
        let old = try home.parleyd(runtime: false)
        defer { _ = try? old.stop() }
        #expect(FileManager.default.fileExists(atPath: home.data.appending(path: "parley/control.sock").path))
        let status = try home.parley(["status"])
        #expect(status.status == 0 && status.output.contains("alice"), "\(status.output)")
    }

    @Test("a default config file holding a password must be 0600 (parleyd refuses it otherwise); --no-config skips it")
    func configFileRules() throws {
        let port = Interop.freePort()
        let home = try Home(config: ["listen udp://127.0.0.1:\(port)", "media off", "dbus off", "register sip:127.0.0.1:9",
                                     "auth-password not-for-others"])
        defer { home.remove() }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: home.configFile.path)
        let refused = try home.run([try Interop.binary("parleyd").path])
        #expect(refused.status == 64 && refused.output.contains("readable by others"), "\(refused.output)")
        #expect(!refused.output.contains("not-for-others"))
        let skipped = try home.parleyd(["--no-config", "--listen", "udp://127.0.0.1:\(port)", "--media", "off", "--dbus", "off"])
        #expect(!skipped.lines.contains { $0.contains("options from") })
        #expect(try skipped.stop() == 0)
        let both = try home.run([try Interop.binary("parleyd").path, "--no-config", "--config", home.configFile.path])
        #expect(both.status == 64, "\(both.output)")
    }

    @Test("socket activation: systemd-socket-activate holds $XDG_RUNTIME_DIR/parley/control.sock; parley status starts parleyd through it and is answered; the socket outlives parleyd")
    func socketActivation() throws {
        let home = try Home()
        defer { home.remove() }
        try FileManager.default.createDirectory(at: home.control, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let socket = home.control.appending(path: "control.sock")
        // Shielded: systemd-socket-activate closes every descriptor it inherits but the sockets it passes.
        let (activator, pid) = try RunningProcess.shielded(
            [try Interop.tool("systemd-socket-activate").path, "-l", socket.path, "--fdname=control"]
                + home.environment().map { "--setenv=\($0)" } + [try Interop.binary("parleyd").path],
            name: "systemd-socket-activate")
        var stopped = false
        defer {
            if !stopped { kill(pid, SIGKILL) }
            _ = try? activator.waitForExit(timeout: .seconds(5))
        }
        // It listens before it starts anything; parleyd runs only once a client connects.
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: socket.path) && ContinuousClock.now < deadline { usleep(20_000) }
        #expect(!activator.lines.contains { $0.contains("listening on") })
        let status = try home.parley(["status"])
        #expect(status.status == 0 && status.output.contains("sip:alice@127.0.0.1:\(home.port)"), "\(status.output)")
        try activator.waitForLine("the passed socket") { $0.contains("control socket \(socket.path), passed by the service manager") }
        #expect(try home.parley(["list"]).status == 0)
        // systemd-socket-activate execs parleyd: the same PID.
        #expect(kill(pid, SIGTERM) == 0)
        stopped = true
        #expect(try activator.waitForExit(timeout: .seconds(10)) == 0, "parleyd stops on SIGTERM with exit 0")
        #expect(FileManager.default.fileExists(atPath: socket.path), "the manager's socket file is left in place")
    }
}
