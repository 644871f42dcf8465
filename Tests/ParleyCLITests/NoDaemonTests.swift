import Foundation
import Glibc
import Testing

/// Every command that drives a parleyd, when none runs on the data directory: exit 1, one sentence on standard error
/// naming the directory, nothing on standard output, no crash.
@Suite("parley: commands that drive parleyd, without one")
struct NoDaemonTests {
    /// An invocation of each command that talks to a running parleyd (arguments that would be valid with one).
    static let daemonCommands: [[String]] = [
        ["call", "sip:bob@127.0.0.1:5062"], ["answer", "1"], ["end", "1"], ["hold", "1"], ["resume", "1"], ["mute", "1"],
        ["unmute", "1"], ["dtmf", "1", "5"], ["video", "1", "on"], ["video-source"], ["video-source", "1", "test:ball"], ["audio", "1"], ["merge", "1", "2"], ["unmerge", "1"], ["transfer", "1", "sip:carol@192.0.2.7"],
        ["list"], ["status"], ["watch"], ["dnd", "on"], ["forward", "busy", "off"], ["reload-contacts"], ["web"], ["redial", "1"], ["history", "redial", "1"],
        ["group", "list"], ["group", "start", "1", "Title"], ["group", "join", "5f0c"], ["group", "send", "5f0c", "hi"],
        ["group", "leave", "5f0c"], ["group", "end", "5f0c"], ["group", "watch"],
        ["collab", "list"], ["collab", "start", "1", "Title"], ["collab", "open", "3be9"], ["collab", "challenge", "3be9"],
        ["collab", "prove", "challenge.json"], ["collab", "verify", "3be9", "00", "proof.json"], ["collab", "confirm", "a1"],
        ["collab", "notice", "3be9", "edit"], ["collab", "end", "3be9"], ["collab", "watch"],
    ]

    /// The commands that need no parleyd (files, the history database, the push simulator, help).
    static let offlineCommands: Set<String> = [
        "demo", "conformance", "contacts", "history", "history list", "history count", "history recents", "history show",
        "history mark-read", "history delete", "history clear", "history check", "push-sim", "push", "push send",
        "push status", "push-gateway", "identity", "identity show", "identity verify", "reference", "help", "install-desktop", "install-service",
        // The commands with subcommands only: each subcommand is tried.
        "group", "collab",
    ]

    @Test("every command of the table is tried here or known not to need parleyd")
    func everyCommandClassified() throws {
        let tried = Set(Self.daemonCommands.map { invocation in
            invocation.prefix(["group", "collab", "history"].contains(invocation[0]) ? 2 : 1).joined(separator: " ")
        })
        for path in try CommandHelpTests.commandPaths().map({ $0.joined(separator: " ") }) {
            #expect(tried.contains(path) || Self.offlineCommands.contains(path), "'parley \(path)': add it to one of the lists")
        }
    }

    @Test("no parleyd has run there (no token), or one ran and is gone (its socket left behind): exit 1, one sentence")
    func notRunning() throws {
        let empty = try CLI.temporaryDirectory()
        let stale = try CLI.temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(at: empty)
            try? FileManager.default.removeItem(at: stale)
        }
        // What a parleyd killed with SIGKILL leaves: its token and a socket nobody listens on.
        let token = stale.appending(path: "control.token")
        try String(repeating: "ab", count: 32).write(to: token, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: token.path)
        try Self.deadSocket(at: stale.appending(path: "control.sock").path)

        for directory in [empty.path, stale.path] {
            for invocation in Self.daemonCommands {
                let run = try CLI.run(invocation + ["--data-dir", directory])
                let shown = "parley \(invocation.joined(separator: " "))"
                #expect(run.status == 1, "\(shown) exited \(run.status): \(run.stderr)")
                #expect(run.stdout.isEmpty, "\(shown): \(run.stdout)")
                let lines = run.stderr.split(separator: "\n")
                #expect(lines.count == 1, "\(shown): \(run.stderr)")
                #expect(run.stderr.hasPrefix("parley \(invocation[0]): no parleyd is running on the data directory \(directory)"),
                        "\(shown): \(run.stderr)")
                #expect(run.stderr.contains("'parleyd --data-dir \(directory)'"), "\(shown): \(run.stderr)")
            }
        }
        // --dry-run needs no parleyd: it only shows the action (here: there is no history to read it from).
        let dry = try CLI.run(["redial", "1", "--dry-run", "--data-dir", empty.path])
        #expect(dry.status == 1 && dry.stderr.contains("no call history at"), "\(dry.stderr)")
    }

    /// Binds a Unix socket at `path` and closes it: the file stays, and connecting to it is refused.
    static func deadSocket(at path: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        try #require(bytes.count < MemoryLayout.size(ofValue: address.sun_path), "socket path too long: \(path)")
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0, "bind \(path): errno \(errno)")
    }
}
