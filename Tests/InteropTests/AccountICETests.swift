import Foundation
import Testing

/// ICE settings per account (docs/nat.md): a config file's `[account]` section with `ice`, `stun-server`,
/// `turn-server`, `turn-user`, `turn-password-file`, over the node's; its mistakes name the file, the line and the
/// section, and no password is ever printed.
@Suite("parleyd: ICE options per account", .serialized, .timeLimit(.minutes(2)))
struct AccountICEOptionTests {
    /// A config file: the node's `options`, then a section per account (`sip:NAME@127.0.0.1`, registered at a port
    /// nobody listens on: nothing leaves the machine) with its `lines`.
    static func config(_ options: [String] = [], accounts: [(name: String, user: String, lines: [String])]) throws -> URL {
        let registrar = "sip:127.0.0.1:\(Interop.freePort())"
        let sections = accounts.map { account in
            (["[account \(account.name)]", "aor sip:\(account.user)@127.0.0.1", "register \(registrar)"] + account.lines)
                .joined(separator: "\n")
        }
        return try MultiAccountTests.config((options + sections).joined(separator: "\n") + "\n")
    }

    @Test("refused with a usage error (64) naming the file, the section's line and the section, and saying why")
    func refused() throws {
        let open = try ICEOptionTests.passwordFile(mode: 0o644, text: "hunter2-open\n")
        let closed = try ICEOptionTests.passwordFile(mode: 0o600, text: "hunter2-closed\n")
        defer { [open, closed].forEach { try? FileManager.default.removeItem(at: $0) } }
        let cases: [(lines: [String], options: [String], says: String)] = [
            (["ice maybe"], [], "ice expects on or off, got 'maybe'"),
            (["ice off", "stun-server 127.0.0.1"], [], "ice off takes no stun-server, turn-server or TURN credentials: drop ice off, or them"),
            (["ice off", "turn-user alice"], [], "ice off takes no stun-server, turn-server or TURN credentials"),
            (["stun-server 127.0.0.1:0"], [], "stun-server expects a port of 1–65535"),
            (["stun-server stun.invalid"], [], "stun-server: cannot resolve stun.invalid"),
            (["turn-server stun:127.0.0.1"], [], "turn-server expects turn:HOST[:PORT]"),
            (["turn-server turn:127.0.0.1"], [], "turn-server needs turn-user and turn-password-file"),
            (["turn-user alice"], [], "turn-user and turn-password-file go together"),
            (["turn-user alice", "turn-password-file \(closed.path)"], [],
             "turn-user and turn-password-file go with a TURN server: the account's turn-server, or the node's"),
            (["stun-server 127.0.0.1"], ["--media", "off"], "ICE needs parleyd's own media"),
            (["turn-server turn:127.0.0.1", "turn-user alice", "turn-password-file \(open.path)"], [],
             "turn-password-file \(open.path) holds a secret and is readable by others (mode 644): chmod 600 it"),
        ]
        for (lines, options, says) in cases {
            // The section starts on line 2, after a node option.
            let file = try Self.config(["auto-answer 0"], accounts: [("a", "a", lines)])
            defer { try? FileManager.default.removeItem(at: file) }
            let run = try RunningProcess(
                try Interop.binary("parleyd"), ["--config", file.path, "--no-control", "--no-history"] + options,
                name: "parleyd account ICE")
            #expect(try run.waitForExit() == 64, "\(lines): \(run.standardError)")
            #expect(run.standardError.contains("\(file.path):2 [account a]: \(says)"), "\(lines): \(run.standardError)")
            #expect(!run.standardError.contains("hunter2"), "a password is never printed")
        }
    }

    @Test("taken: each account's ICE as the log says it at start — on with its own STUN server or alone where the node has none; off, or with its own TURN user at the node's TURN server, or with servers of its own, where the node has them; an account saying nothing has the node's; never a password")
    func taken() throws {
        let bare = try Self.config(accounts: [
            ("work", "alice", ["stun-server 127.0.0.1:3479"]), ("home", "carol", ["ice on"]), ("lab", "dave", []),
        ])
        defer { try? FileManager.default.removeItem(at: bare) }
        let withoutNodeICE = try Parleyd(["--config", bare.path, "--media", "gstreamer", "--audio-sink", "null"])
        try withoutNodeICE.process.waitForLine("the accounts' ICE") { $0.contains("ICE for calls through sip:carol@") }
        let lines = withoutNodeICE.process.lines.filter { $0.contains("ICE for calls") }
        #expect(lines.count == 2, "the node has none, lab says nothing: \(lines)")
        #expect(lines.contains { $0.hasSuffix("ICE for calls through sip:alice@127.0.0.1: STUN 127.0.0.1:3479") }, "\(lines)")
        #expect(lines.contains { $0.hasSuffix("ICE for calls through sip:carol@127.0.0.1: host candidates only") }, "\(lines)")

        let nodePassword = try ICEOptionTests.passwordFile(mode: 0o600, text: "hunter2-node\n")
        let accountPassword = try ICEOptionTests.passwordFile(mode: 0o600, text: "hunter2-account\n")
        defer { [nodePassword, accountPassword].forEach { try? FileManager.default.removeItem(at: $0) } }
        let node = [
            "stun-server 127.0.0.1:3479", "turn-server turn:127.0.0.1:3478", "turn-user node",
            "turn-password-file \(nodePassword.path)",
        ]
        let full = try Self.config(node, accounts: [
            ("work", "alice", ["turn-user alice", "turn-password-file \(accountPassword.path)"]), ("home", "carol", ["ice off"]),
            ("lab", "dave", [
                "stun-server 127.0.0.2:3480", "turn-server turn:127.0.0.3:3481?transport=tcp", "turn-user dave",
                "turn-password-file \(accountPassword.path)",
            ]),
            ("spare", "erin", []),
        ])
        defer { try? FileManager.default.removeItem(at: full) }
        let withNodeICE = try Parleyd(["--config", full.path, "--media", "gstreamer", "--audio-sink", "null"])
        try withNodeICE.process.waitForLine("the accounts' ICE") { $0.contains("ICE for calls through sip:dave@") }
        let said = withNodeICE.process.lines.filter { $0.contains("ICE for calls") }
        let leftOut = " left out beside TURN: the allocation gives the server-reflexive candidate)"
        for expected in [
            "ICE for calls: TURN turn:127.0.0.1:3478?transport=udp as user node (STUN 127.0.0.1:3479" + leftOut,
            "ICE for calls through sip:alice@127.0.0.1: TURN turn:127.0.0.1:3478?transport=udp as user alice (STUN 127.0.0.1:3479"
                + leftOut,
            "no ICE for calls through sip:carol@127.0.0.1 (its section says ice off)",
            "ICE for calls through sip:dave@127.0.0.1: TURN turn:127.0.0.3:3481?transport=tcp as user dave (STUN 127.0.0.2:3480"
                + leftOut,
        ] {
            #expect(said.contains { $0.hasSuffix(expected) }, "\(expected): \(said)")
        }
        #expect(!said.contains { $0.contains("sip:erin@") }, "spare says nothing: the node's apply")
        for daemon in [withoutNodeICE, withNodeICE] {
            #expect(try daemon.process.stop() == 0)
            #expect(!(daemon.process.lines + [daemon.process.standardError]).contains { $0.contains("hunter2") })
        }
    }
}
