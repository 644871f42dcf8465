import CommandLineSupport
import Foundation

/// `parley install-service`: parleyd as a systemd user service (issue 49). It writes `parleyd.service` (and
/// `parleyd.socket` with `--socket`) into `$XDG_CONFIG_HOME/systemd/user`, naming the parleyd next to this `parley`,
/// and the D-Bus activation file into `$XDG_DATA_HOME/dbus-1/services` with `--dbus`; then, when a user manager is
/// reachable, `systemctl --user daemon-reload` and `enable --now` (or only `enable`, `--no-start`). Without one it
/// says what to run and succeeds: the files are in place for the next session. `--print` changes nothing.
enum ServiceCommand {
    static let help = """
        usage: parley install-service [--socket] [--dbus] [--no-start] [--print [--exec PARLEYD]]

        Makes parleyd a systemd user service, started with your session: writes \(ServiceUnits.serviceName) into
        $XDG_CONFIG_HOME/systemd/user (~/.config/systemd/user), its ExecStart the parleyd next to this parley, then
        runs 'systemctl --user daemon-reload' and 'systemctl --user enable --now parleyd.service'. Without a
        reachable user manager it writes the files and prints what to run. parleyd reads
        ~/.config/parley/parleyd.conf when it exists; its control socket and token are in $XDG_RUNTIME_DIR/parley.

        options:
          --socket    also write \(ServiceUnits.socketName): systemd holds the control socket and starts parleyd
                      for the first parley command that connects (socket activation); enabled with the service
          --dbus      also write \(ServiceUnits.dbusName) into $XDG_DATA_HOME/dbus-1/services: a call to
                      org.parley.Parley on the session bus starts parleyd (D-Bus activation)
          --no-start  enable the units but start nothing now
          --print     print the files and change nothing (--exec: the parleyd they run, by default the one next to
                      this parley; packaging/ holds them printed with --exec /usr/bin/parleyd)

        example:
          parley install-service --socket && parley status
        """

    /// What to write: each file's path and text.
    struct Plan {
        var files: [(path: String, text: String)] = []
        var units: [String] = []
    }

    static func run(_ commandLine: [String]) throws -> ExitCode {
        var arguments = Arguments(commandLine)
        let socket = arguments.flag("--socket")
        let dbus = arguments.flag("--dbus")
        let noStart = arguments.flag("--no-start")
        let printOnly = arguments.flag("--print")
        let executable = try arguments.option("--exec")
        guard try arguments.positionals().isEmpty else { throw UsageError("parley install-service takes no arguments") }
        if executable != nil && !printOnly { throw UsageError("--exec goes with --print") }
        let parleyd = executable ?? siblingParleyd()
        let plan = plan(parleyd: parleyd, socket: socket, dbus: dbus, environment: ProcessInfo.processInfo.environment)
        if printOnly {
            for file in plan.files {
                print("==> \(file.path) <==")
                print(file.text, terminator: "")
            }
            return .ok
        }
        guard FileManager.default.isExecutableFile(atPath: parleyd) else {
            printError("parley install-service: no parleyd at \(parleyd) (it is looked for next to parley); nothing written")
            return .failure
        }
        for file in plan.files {
            do {
                let directory = (file.path as NSString).deletingLastPathComponent
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                try Data(file.text.utf8).write(to: URL(fileURLWithPath: file.path), options: .atomic)
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
            } catch {
                printError("parley install-service: cannot write \(file.path): \(error.localizedDescription)")
                return .failure
            }
            print("wrote \(file.path)")
        }
        let enable = ["enable"] + (noStart ? [] : ["--now"]) + plan.units
        guard systemctl(["show-environment"]) != nil else {
            print("no systemd user manager is reachable here ('systemctl --user' failed); in your session, run:")
            print("  systemctl --user daemon-reload && systemctl --user \(enable.joined(separator: " "))")
            return .ok
        }
        guard systemctl(["daemon-reload"]) != nil else {
            printError("parley install-service: 'systemctl --user daemon-reload' failed")
            return .failure
        }
        guard systemctl(enable) != nil else {
            printError("parley install-service: 'systemctl --user \(enable.joined(separator: " "))' failed (see 'journalctl --user -u parleyd')")
            return .failure
        }
        print(noStart ? "enabled \(plan.units.joined(separator: " ")): parleyd starts with your next session"
              : "enabled and started \(plan.units.joined(separator: " ")) ('systemctl --user status parleyd')")
        return .ok
    }

    /// The files for `parleyd`: the service, the socket with `socket`, the D-Bus file with `dbus`, where the
    /// environment's XDG directories put them.
    static func plan(parleyd: String, socket: Bool, dbus: Bool, environment: [String: String]) -> Plan {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        func base(_ variable: String, _ fallback: String) -> String {
            environment[variable].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? (home as NSString).appendingPathComponent(fallback)
        }
        let units = (base("XDG_CONFIG_HOME", ".config") as NSString).appendingPathComponent("systemd/user")
        var plan = Plan()
        plan.files.append(((units as NSString).appendingPathComponent(ServiceUnits.serviceName), ServiceUnits.service(parleyd: parleyd)))
        if socket {
            plan.files.append(((units as NSString).appendingPathComponent(ServiceUnits.socketName), ServiceUnits.socket))
            plan.units.append(ServiceUnits.socketName)
        }
        plan.units.append(ServiceUnits.serviceName)
        if dbus {
            let services = (base("XDG_DATA_HOME", ".local/share") as NSString).appendingPathComponent("dbus-1/services")
            plan.files.append(((services as NSString).appendingPathComponent(ServiceUnits.dbusName), ServiceUnits.dbus(parleyd: parleyd)))
        }
        return plan
    }

    /// The parleyd next to this `parley` (they are built and installed together).
    private static func siblingParleyd() -> String {
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
        return ((own as NSString).deletingLastPathComponent as NSString).appendingPathComponent("parleyd")
    }

    /// Runs `systemctl --user ARGUMENTS` (found on PATH): its output, or nil when it is not there or failed.
    private static func systemctl(_ arguments: [String]) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        guard let executable = paths.map({ "\($0)/systemctl" }).first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--user"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
