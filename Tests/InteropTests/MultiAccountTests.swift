import Foundation
import Testing

/// Several accounts in one parleyd: a config file with two `[account]` sections at Kamailio (example.test), each
/// registered on its own; calls go out through the account they name (else the first) and come in on the account
/// they were made to, and the conversation, the history and `status` say which.
@Suite("Interop: several accounts in one parleyd", .serialized, .timeLimit(.minutes(1)))
struct MultiAccountTests {
    static func parley(_ arguments: [String]) throws -> ControlCLIPolishTests.Run { try ControlCLIPolishTests.parley(arguments) }

    /// A config file holding `text`, private to us.
    static func config(_ text: String) throws -> URL {
        let file = FileManager.default.temporaryDirectory.appending(path: "parley-accounts-\(UUID().uuidString).conf")
        try Data(text.utf8).write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        return file
    }

    /// The newest history record's `field` (a top-level string, or `localHandle`/`remote` value) in `dataDirectory`.
    static func lastRecord(in dataDirectory: URL) throws -> [String: Any] {
        let history = try parley(["history", "--json", "--limit", "1", "--data-dir", dataDirectory.path])
        let object = try JSONSerialization.jsonObject(with: Data(history.stdout.joined().utf8)) as? [String: Any]
        return try #require((object?["records"] as? [[String: Any]])?.first, "\(history.stdout)")
    }

    /// The value of the first remote handle of a history record.
    static func remote(of record: [String: Any]) -> String? {
        ((record["remoteHandles"] as? [[String: Any]])?.first?["handle"] as? [String: Any])?["value"] as? String
    }

    @Test("two accounts register each on its own; calls go out through the named or the default account, and come in on the account called")
    func twoAccounts() throws {
        let kamailio = try Kamailio(.init(domain: "example.test"))
        let proxy = "sip:127.0.0.1:\(kamailio.port)"
        // The engine-wide outbound proxy serves the account without one of its own.
        let file = try Self.config("""
            outbound-proxy \(proxy)
            auto-answer 0
            script wait 300; end

            [account work]
            aor sip:alice@example.test
            display-name Alice at work

            [account home]
            aor sip:carol@example.test
            outbound-proxy \(proxy)
            """)
        let desk = try Parleyd(["--config", file.path, "--media", "off"])
        try desk.process.waitForLine("both registrations") { _ in
            desk.process.lines.filter { $0.contains("registration: registered") }.count >= 2
        }
        let peer = ["--outbound-proxy", proxy, "--auto-answer", "0", "--script", "wait 300; end", "--media", "off"]
        let bob = try AccountDialTests.account("bob", [], peer)
        let dave = try AccountDialTests.account("dave", [], peer)
        let d = ["--data-dir", desk.dataDirectory.path]

        let status = try Self.parley(["status", "--json"] + d)
        let accounts = try #require(
            ((try JSONSerialization.jsonObject(with: Data(status.stdout.joined().utf8)) as? [String: Any])?["result"]
                as? [String: Any])?["accounts"] as? [[String: Any]], "\(status.stdout)")
        #expect(accounts.map { $0["name"] as? String } == ["work", "home"])
        #expect(accounts.map { $0["account"] as? String } == ["sip:alice@example.test", "sip:carol@example.test"])
        #expect(accounts.allSatisfy { $0["state"] as? String == "registered" }, "\(accounts)")
        let shown = try Self.parley(["status"] + d)
        #expect(shown.stdout.contains("account home"), "\(shown.stdout)")
        #expect(shown.stdout.contains { $0.hasPrefix("  address of record") && $0.hasSuffix(" sip:carol@example.test") },
            "\(shown.stdout)")

        // Out through the default account (the first), then through the one named.
        let viaDefault = try Self.parley(["call", "bob", "--json"] + d)
        #expect(viaDefault.status == 0, "\(viaDefault.stderr)")
        #expect(viaDefault.stdout.first?.contains(#""account":"sip:alice@example.test""#) == true, "\(viaDefault.stdout)")
        try bob.waitForEnded(1)
        let viaHome = try Self.parley(["call", "dave", "--account", "home", "--json"] + d)
        #expect(viaHome.status == 0, "\(viaHome.stderr)")
        try dave.waitForEnded(1)
        try desk.waitForEnded(2)
        let bobs = try Self.lastRecord(in: bob.dataDirectory)
        #expect(Self.remote(of: bobs) == "sip:alice@example.test")
        let name = ((bobs["remoteHandles"] as? [[String: Any]])?.first?["handle"] as? [String: Any])?["displayName"] as? String
        #expect(name == "Alice at work", "the work account's display name in its From: \(bobs)")
        #expect(Self.remote(of: try Self.lastRecord(in: dave.dataDirectory)) == "sip:carol@example.test")
        let homeCall = try Self.lastRecord(in: desk.dataDirectory)
        #expect(homeCall["account"] as? String == "sip:carol@example.test")
        let unknown = try Self.parley(["call", "dave", "--account", "nosuch"] + d)
        #expect(unknown.status != 0)
        #expect(unknown.stderr.contains(#"No account is named "nosuch": its accounts are work, home."#), "\(unknown.stderr)")

        // In on the account called: each INVITE reaches the desk through its own binding (Contact ;line=).
        for (caller, called, count) in [(bob, "carol", 3), (dave, "alice", 4)] {
            let call = try Self.parley(["call", called, "--data-dir", caller.dataDirectory.path])
            #expect(call.status == 0, "\(call.stderr)")
            try desk.waitForEnded(count)
            let record = try Self.lastRecord(in: desk.dataDirectory)
            #expect(record["account"] as? String == "sip:\(called)@example.test", "\(record)")
            #expect(record["direction"] as? String == "incoming")
        }
        // A redial goes out through the account the call went through.
        let redial = try Self.parley(["redial", "\(try #require(homeCall["id"] as? Int))"] + d)
        #expect(redial.status == 0, "\(redial.stderr)")
        try dave.waitForEnded(3)
        #expect(Self.remote(of: try Self.lastRecord(in: dave.dataDirectory)) == "sip:carol@example.test")
    }

    @Test("account sections are checked: a missing aor, an unknown key, a second section of one name, a section beside --register, a password variable unset or given twice")
    func sectionMistakes() throws {
        for (text, extra, expected) in [
            ("[account a]\ndisplay-name A\n", [String](), "[account a]: aor is missing"),
            ("[account a]\naor sip:a@example.test\nlisten udp://127.0.0.1:1\n", [], "listen is not an account option"),
            ("[account a]\naor sip:a@example.test\n[account a]\naor sip:b@example.test\n", [], "a second [account a]"),
            ("[account a]\naor sip:a@example.test\n", ["--register", "sip:127.0.0.1"], "one or the other"),
            ("[acount a]\n", [], "a section is [account NAME]"),
            ("[account a]\naor sip:a@example.test\nauth-password-env PARLEY_TEST_NO_SUCH_VARIABLE\n", [],
             "auth-password-env PARLEY_TEST_NO_SUCH_VARIABLE: the environment has no such variable"),
            ("[account a]\naor sip:a@example.test\nauth-password-env HOME\nauth-password-file /nonexistent\n", [],
             "are one or the other"),
        ] {
            let file = try Self.config(text)
            let refused = try RunningProcess(
                try Interop.binary("parleyd"), ["--config", file.path] + extra + ["--no-control", "--no-history", "--media", "off"],
                name: "parleyd account sections")
            #expect(try refused.waitForExit() == 64, "\(text)")
            #expect(refused.standardError.contains(expected), "\(text): \(refused.standardError)")
        }
    }
}
