import Foundation
import Testing

/// End-to-end tests of the `parley` binary: output and exit codes.
@Suite("parley CLI")
struct ParleyCLITests {
    @Test("help, version, unknown commands and usage errors")
    func usage() throws {
        let help = try CLI.run("--help")
        #expect(help.status == 0)
        for command in ["demo", "conformance", "contacts", "history", "redial"] { #expect(help.stdout.contains(command)) }
        #expect(try CLI.run().status == 64)
        let unknown = try CLI.run("dial")
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("unknown command 'dial'"))
        let badOption = try CLI.run("conformance", "--tabel")
        #expect(badOption.status == 64)
        #expect(badOption.stderr.contains("unknown option --tabel"))
        #expect(try CLI.run("conformance").status == 64)
        #expect(try CLI.run("demo", "--help").stdout.contains("usage: parley demo"))
        #expect(try CLI.run("--version").stdout.hasPrefix("parley "))
    }

    @Test("docs/lifecycle.md is the table the engine generates")
    func lifecycleDocIsCurrent() throws {
        let table = try CLI.run("conformance", "--table")
        #expect(table.status == 0)
        let document = try String(contentsOf: CLI.packageRoot.appending(path: "docs/lifecycle.md"), encoding: .utf8)
        #expect(table.stdout == document, "regenerate with: parley conformance --table > docs/lifecycle.md")
        let callLeg = try CLI.run("conformance", "--table", "--call-leg")
        #expect(callLeg.status == 0)
        let callLegDocument = try String(contentsOf: CLI.packageRoot.appending(path: "docs/call-leg.md"), encoding: .utf8)
        #expect(callLeg.stdout == callLegDocument, "regenerate with: parley conformance --table --call-leg > docs/call-leg.md")
        let effects = try CLI.run("conformance", "--table", "--effects")
        #expect(effects.stdout.contains("incoming ringing perform(join) → ringing → ringing [deliverAction]"))
    }

    @Test("the example scenarios pass through the CLI")
    func examplesPass() throws {
        let examples = try FileManager.default.contentsOfDirectory(
            atPath: CLI.packageRoot.appending(path: "Examples/conformance").path
        ).filter { $0.hasSuffix(".json") }.sorted().map { "Examples/conformance/" + $0 }
        #expect(examples.count >= 15)
        let process = Process()
        process.executableURL = try CLI.binary
        process.arguments = ["conformance"] + examples
        process.currentDirectoryURL = CLI.packageRoot
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(output.contains("scenarios: \(examples.count) passed, 0 failed"))
        #expect(!output.contains("✗"))
    }

    @Test("a failing scenario prints the diff and exits 1; a malformed one names the problem")
    func failingScenario() throws {
        let wrong = try CLI.temporaryFile(
            """
            {"name": "wrong expectation", "steps": [
              {"reportIncoming": {"conversation": "A"}, "expect": {"states": {"A": "joined"}}}
            ]}
            """, suffix: ".json")
        let malformed = try CLI.temporaryFile(#"{"name": "typo", "steps": [{"fulfil": "x"}]}"#, suffix: ".json")
        defer {
            try? FileManager.default.removeItem(at: wrong)
            try? FileManager.default.removeItem(at: malformed)
        }
        let run = try CLI.run("conformance", wrong.path, malformed.path)
        #expect(run.status == 1)
        #expect(run.stdout.contains("✗ 1"))
        #expect(run.stdout.contains("state of A: expected joined, got ringing"))
        #expect(run.stdout.contains("steps[0]"))
        #expect(run.stdout.contains("fulfil"))
        #expect(run.stdout.contains("scenarios: 0 passed, 2 failed"))
        let json = try CLI.run("conformance", "--json", wrong.path, malformed.path)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        #expect(json.status == 1 && object["failed"] as? Int == 2 && object["passed"] as? Int == 0)
        let failures = (object["scenarios"] as? [[String: Any]])?.flatMap { $0["failures"] as? [String] ?? [] } ?? []
        #expect(failures.contains { $0.contains("state of A: expected joined, got ringing") }, "\(failures)")
        let missing = try CLI.run("conformance", "/nonexistent/scenario.json")
        #expect(missing.status == 1)
        #expect(missing.stdout.contains("/nonexistent/scenario.json"))
    }

    @Test("the demo tells the whole story and every conversation ends")
    func demo() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try CLI.run("demo", "--data-dir", directory.path)
        #expect(run.status == 0, "\(run.stderr)")
        let expectedLines = [
            "A  incoming conversation with Alice Liddell: ringing",
            "A  ringing → joining", "A  joining → joined", "A  joined → paused", "A  paused → joined",
            "B  outgoing conversation with Bob Builder: idle", "B  idle → ringing",
            "A  in group", "C  ringing → leaving", "C  leaving → left (localEnded)",
            "D  ringing → left (unanswered)", "E  start(phoneNumber:+44 20 7946 0018) timed out",
            "E  idle → left (failed)", "B  joined → left (remoteEnded)", "A  leaving → left (localEnded)",
            "How each conversation ended:",
        ]
        for line in expectedLines { #expect(run.stdout.contains(line), "missing: \(line)") }
        #expect(!run.stdout.contains("still live"))
    }

    @Test("contacts: match by normalised value, clear errors")
    func contacts() throws {
        let vcard = try CLI.temporaryFile(
            """
            BEGIN:VCARD
            VERSION:3.0
            FN:Alice Liddell
            TEL;TYPE=cell:+1 (415) 555-0100
            EMAIL:Alice@Example.com
            END:VCARD
            """, suffix: ".vcf")
        defer { try? FileManager.default.removeItem(at: vcard) }
        let phone = try CLI.run("contacts", vcard.path, "--match", "415-555-0100")
        #expect(phone.status == 0)
        #expect(phone.stdout.contains("→ phoneNumber:+14155550100 → Alice Liddell"))
        #expect(phone.stdout.hasPrefix("1 contact loaded from"))
        let json = try CLI.run("contacts", vcard.path, "--match", "sip:+14155550100@example.com", "--kind", "generic", "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(json.status == 0 && (object["match"] as? [String: Any])?["contact"] as? String == "Alice Liddell", "\(json.stdout)")
        #expect((object["contacts"] as? [[String: Any]])?.count == 1)
        let email = try CLI.run("contacts", vcard.path, "--match", " alice@EXAMPLE.com", "--kind", "email")
        #expect(email.status == 0)
        #expect(email.stdout.contains("Alice Liddell"))
        let nobody = try CLI.run("contacts", vcard.path, "--match", "+44 20 7946 0018")
        #expect(nobody.status == 1)
        #expect(nobody.stdout.contains("no contact"))
        let badKind = try CLI.run("contacts", vcard.path, "--match", "x", "--kind", "fax")
        #expect(badKind.status == 64)
        #expect(badKind.stderr.contains("--kind expects"))
        let missing = try CLI.run("contacts", "/nonexistent.vcf")
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("/nonexistent.vcf"))
    }
}
