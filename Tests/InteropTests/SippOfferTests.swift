import Foundation
import Testing

/// sipp against parleyd driven through its control API (the parley CLI): re-INVITEs that must wait for the peer's
/// ACK (RFC 3261 §14.1), and refusals whose SIP status reaches the API as a value.
@Suite("Interop: sipp and parleyd's own offers", .serialized)
struct SippOfferTests {
    /// sipp calls parleyd (auto-answer) with `scenario`, in the background.
    static func sippCalls(_ parleyd: Parleyd, scenario: String) throws -> RunningProcess {
        try SippRun.start([
            "-sf", SippInteropTests.scenario(scenario), "127.0.0.1:\(parleyd.port)", "-i", "127.0.0.1",
            "-p", String(Interop.freePort()), "-t", "u1", "-s", "parley", "-m", "1",
        ])
    }

    /// The reply line `parley … --json` printed, parsed.
    static func reply(_ run: ControlCLITests.Run) -> [String: Any]? {
        guard let line = run.output.split(separator: "\n").first else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }

    @Test("sipp resumes parleyd and sends its ACK 3 s late; a hold meanwhile waits for that ACK, then goes and completes")
    func holdRightAfterThePeersResume() throws {
        let parleyd = try Parleyd(["--auto-answer", "0"])
        let sipp = try Self.sippCalls(parleyd, scenario: "uac-resumes-acks-late.xml")
        try parleyd.process.waitForLine("the peer's resume") { $0.contains("the remote side resumed") }
        // sipp holds back its ACK for 3 s from here: the hold comes while the peer's re-INVITE is open.
        let hold = try ControlCLITests.parley(["hold", "1", "--data-dir", parleyd.dataDirectory.path])
        #expect(hold.status == 0, "\(hold.output)")
        #expect(parleyd.process.lines.contains { $0.contains("hold waits for the ACK of our answer to the peer's re-INVITE") },
            "the hold did not come while the re-INVITE was open; the test proved nothing")
        let status = try sipp.waitForExit(timeout: .seconds(40))
        #expect(status == 0, "sipp took our re-INVITE after its ACK: \((sipp.lines + [sipp.standardError]).joined(separator: "\n"))")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "paused", "left (remoteEnded)"]])
    }

    @Test("sipp refuses parleyd's INFO tone with 415 and its hold with 488: the API's answers carry sipStatus and sipReason")
    func refusalsCarryTheStatus() throws {
        let parleyd = try Parleyd(["--auto-answer", "0"])
        let sipp = try Self.sippCalls(parleyd, scenario: "uac-refuses-info-and-hold.xml")
        try parleyd.waitForTransition(to: "joined", timeout: .seconds(10))
        let options = ["--data-dir", parleyd.dataDirectory.path, "--json"]
        for (command, status, reason) in [(["dtmf", "1", "5"], 415, "Unsupported Media Type"), (["hold", "1"], 488, "Not Acceptable Here")] {
            let run = try ControlCLITests.parley(command + options)
            #expect(run.status == 1, "\(command): \(run.output)")
            let error = Self.reply(run)?["error"] as? [String: Any]
            let details = error?["details"] as? [String: Any]
            #expect(error?["code"] as? String == "failed", "\(command): \(run.output)")
            #expect(details?["sipStatus"] as? Int == status, "\(command): \(run.output)")
            #expect(details?["sipReason"] as? String == reason, "\(command): \(run.output)")
        }
        let status = try sipp.waitForExit(timeout: .seconds(40))
        #expect(status == 0, "\((sipp.lines + [sipp.standardError]).joined(separator: "\n"))")
        try parleyd.waitForEnded(1)
        #expect(parleyd.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]], "the refusals did not end the call")
    }
}
