import Foundation
import Testing

/// Links on the desktop (issue 49): `parley install-desktop` in a throwaway HOME registers Parley for `sip:`, `sips:`,
/// `tel:` and `callto:`; `xdg-open` (xdg-utils, as a desktop without its own opener runs it) then dials through the
/// running parleyd. `desktop-file-validate` judges the entry.
@Suite("Interop: sip:, tel: and callto: links on the desktop", .serialized, .timeLimit(.minutes(1)))
struct DesktopLinkTests {
    /// Runs the system tool `name` to completion: its exit status and what it printed.
    static func tool(_ name: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = try RunningProcess(try Interop.tool(name), arguments, name: name)
        let status = try process.waitForExit()
        return (status, (process.lines + [process.standardError]).joined(separator: "\n"))
    }

    /// A HOME of its own, with XDG_DATA_HOME and XDG_CONFIG_HOME inside it.
    struct ThrowawayHome {
        let root = FileManager.default.temporaryDirectory.appending(path: "parley-home-\(UUID().uuidString)")
        var data: URL { root.appending(path: "data") }

        /// The environment a desktop session would give `parley` and `xdg-open` in it (a display, so that xdg-open
        /// looks for a scheme handler).
        var environment: [String] {
            ["PATH=/usr/bin:/bin", "HOME=\(root.path)", "XDG_DATA_HOME=\(data.path)",
             "XDG_CONFIG_HOME=\(root.appending(path: "config").path)", "WAYLAND_DISPLAY=parley-test"]
        }

        /// Runs `command` in it to completion: its exit status and what it printed.
        func run(_ command: [String], timeout: Duration = .seconds(20)) throws -> (status: Int32, output: String) {
            let process = try RunningProcess(
                URL(fileURLWithPath: "/usr/bin/env"), ["-i"] + environment + command, name: command.first ?? "env")
            let status = try process.waitForExit(timeout: timeout)
            return (status, (process.lines + [process.standardError]).joined(separator: "\n"))
        }
    }

    @Test("the packaged entry is the one install-desktop writes (Exec=parley call %u) and desktop-file-validate finds nothing")
    func packagedEntry() throws {
        let packaged = Interop.packageRoot.appending(path: "packaging/org.parley.Parley.desktop")
        let printed = try ControlCLITests.parley(["install-desktop", "--print", "--exec", "parley"])
        #expect(printed.status == 0)
        #expect(printed.output.trimmingCharacters(in: .newlines) == (try String(contentsOf: packaged, encoding: .utf8)).trimmingCharacters(in: .newlines))
        let validated = try Self.tool("desktop-file-validate", [packaged.path])
        #expect(validated.status == 0 && validated.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(validated.output)")
        #expect(try ControlCLITests.parley(["install-desktop", "--exec", "parley"]).status == 64, "--exec without --print")
    }

    @Test("installed in a throwaway HOME: valid, the default for all four schemes, and xdg-open tel:%2B14155550100 and callto://bob@… call bob through the running parleyd; callto: alone places nothing")
    func linksDial() throws {
        let home = ThrowawayHome()
        defer { try? FileManager.default.removeItem(at: home.root) }
        let bob = try Parleyd(["--user", "bob", "--media", "off", "--auto-answer", "0"])
        let alice = try Parleyd(["--user", "alice", "--media", "off", "--phone-domain", "127.0.0.1:\(bob.port)"])
        // `parley call` finds the user's parleyd in $XDG_DATA_HOME/parley: alice's data directory.
        try FileManager.default.createDirectory(at: home.data, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: home.data.appending(path: "parley"), withDestinationURL: alice.dataDirectory)

        let installed = try home.run([try Interop.binary("parley").path, "install-desktop"])
        #expect(installed.status == 0, "\(installed.output)")
        let entry = home.data.appending(path: "applications/org.parley.Parley.desktop")
        let validated = try Self.tool("desktop-file-validate", [entry.path])
        #expect(validated.status == 0 && validated.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(validated.output)")
        #expect(try String(contentsOf: entry, encoding: .utf8).contains("Exec=\(try Interop.binary("parley").path) call %u"))
        for scheme in ["sip", "sips", "tel", "callto"] {
            let handler = try home.run(["xdg-mime", "query", "default", "x-scheme-handler/\(scheme)"])
            #expect(handler.output.trimmingCharacters(in: .whitespacesAndNewlines) == "org.parley.Parley.desktop", "\(scheme): \(handler.output)")
        }

        let tel = try home.run(["xdg-open", "tel:%2B14155550100"])
        #expect(tel.status == 0, "\(tel.output)")
        try bob.process.waitForLine("bob answering the tel: link's call") { _ in bob.transitions.first?.contains("joined") == true }
        let callto = try home.run(["xdg-open", "callto://bob@127.0.0.1:\(bob.port)"])
        #expect(callto.status == 0, "\(callto.output)")
        try bob.process.waitForLine("bob answering the callto: link's call") { _ in
            bob.transitions.count == 2 && bob.transitions[1].contains("joined")
        }
        #expect(try ControlCLITests.parley(["list", "--data-dir", alice.dataDirectory.path]).output.contains("+14155550100"),
                "the tel: link's call went to the number")
        let empty = try home.run([try Interop.binary("parley").path, "call", "callto:"])
        #expect(empty.status == 1 && empty.output.contains("Say whom to call."), "\(empty.output)")
        #expect(alice.transitions.count == 2, "only the two links placed calls: \(alice.transitions)")
    }
}
