import Foundation
import Testing

/// The push simulator (`parley push-sim`), a parleyd woken by its pushes, and a second parleyd placing the SIP call
/// the push announced.
@Suite("Interop: VoIP push wake-up", .serialized)
struct PushInteropTests {
    /// A running simulator on a free port.
    static func simulator() throws -> (RunningProcess, UInt16) {
        let port = Interop.freePort()
        let sim = try RunningProcess(
            try Interop.binary("parley"), ["push-sim", "--listen", "127.0.0.1:\(port)"], name: "push-sim")
        try sim.waitForLine("its listening line") { $0.contains("listening on") }
        return (sim, port)
    }

    /// `parley push send …` to `token`; returns its output.
    static func send(port: UInt16, token: String, callID: String, caller: String, extra: [String] = []) throws -> String {
        let process = try RunningProcess(
            try Interop.binary("parley"),
            ["push", "send", "--to", "127.0.0.1:\(port)", "--token", token, "--caller", caller, "--name", "Alice",
             "--call-id", callID] + extra,
            name: "parley push send")
        _ = try process.waitForExit()
        return process.lines.joined(separator: "\n")
    }

    /// A parleyd that takes pushes for `token`.
    static func device(port: UInt16, token: String, _ extra: [String] = []) throws -> Parleyd {
        let device = try Parleyd(["--push-service", "127.0.0.1:\(port)", "--push-token", token] + extra)
        try device.process.waitForLine("its push registration") { $0.contains("push channel: registered") }
        return device
    }

    @Test("a push wakes parleyd: ringing before the INVITE, which joins the same conversation; answered; completed")
    func pushThenInvite() throws {
        let (sim, port) = try Self.simulator()
        defer { _ = try? sim.stop() }
        let device = try Self.device(port: port, token: "dev-b", ["--auto-answer", "200"])
        let outcome = try Self.send(port: port, token: "dev-b", callID: "wake-1@parley", caller: "sip:parley@127.0.0.1:9")
        #expect(outcome.contains("delivered") && outcome.contains("reported=true"), "\(outcome)")
        try device.process.waitForLine("ringing") { $0.contains("→ ringing") }
        let caller = try Parleyd([
            "--call", "sip:parley@127.0.0.1:\(device.port)", "--call-id", "wake-1@parley", "--script", "wait 200; end",
        ])
        try caller.waitForEnded(1)
        try device.waitForEnded(1)
        #expect(device.transitions == [["ringing", "joining", "joined", "left (remoteEnded)"]])
        #expect(device.process.lines.contains { $0.contains("the INVITE for a pushed call arrived") })
        #expect(caller.transitions == [["idle", "ringing", "joined", "leaving", "left (localEnded)"]])
    }

    @Test("INVITE first, then its push: still one conversation, and the push counts as reported")
    func inviteThenPush() throws {
        let (sim, port) = try Self.simulator()
        defer { _ = try? sim.stop() }
        let device = try Self.device(port: port, token: "dev-c", ["--ring-timeout", "3"])
        let caller = try Parleyd(["--call", "sip:parley@127.0.0.1:\(device.port)", "--call-id", "late-push@parley"])
        try device.process.waitForLine("ringing") { $0.contains("→ ringing") }
        let outcome = try Self.send(port: port, token: "dev-c", callID: "late-push@parley", caller: "sip:x@127.0.0.1:9")
        #expect(outcome.contains("reported=true"), "\(outcome)")
        try device.waitForEnded(1)
        #expect(device.transitions == [["ringing", "left (unanswered)"]])
        _ = caller
    }

    @Test("a push with no INVITE ends as failed after the wait; a cancel push ends one as unanswered")
    func noInviteAndCancel() throws {
        let (sim, port) = try Self.simulator()
        defer { _ = try? sim.stop() }
        let device = try Self.device(port: port, token: "dev-d", ["--push-invite-wait", "1"])
        _ = try Self.send(port: port, token: "dev-d", callID: "never@parley", caller: "sip:x@127.0.0.1:9")
        try device.waitForEnded(1)
        _ = try Self.send(port: port, token: "dev-d", callID: "withdrawn@parley", caller: "sip:x@127.0.0.1:9")
        let cancel = try Self.send(
            port: port, token: "dev-d", callID: "withdrawn@parley", caller: "sip:x@127.0.0.1:9", extra: ["--cancel"])
        #expect(cancel.contains("delivered"), "\(cancel)")
        try device.waitForEnded(2)
        #expect(device.transitions == [["ringing", "left (failed)"], ["ringing", "left (unanswered)"]])
    }

    @Test("the simulator restarts: parleyd reconnects, registers again and takes the next push")
    func reconnect() throws {
        var (sim, port) = try Self.simulator()
        let device = try Self.device(port: port, token: "dev-e", ["--push-invite-wait", "1"])
        _ = try sim.stop()
        sim = try RunningProcess(
            try Interop.binary("parley"), ["push-sim", "--listen", "127.0.0.1:\(port)"], name: "push-sim")
        defer { _ = try? sim.stop() }
        try sim.waitForLine(timeout: .seconds(15), "parleyd registering again") { $0.contains("registered token=dev-e") }
        let outcome = try Self.send(port: port, token: "dev-e", callID: "after-restart@parley", caller: "sip:x@127.0.0.1:9")
        #expect(outcome.contains("reported=true"), "\(outcome)")
        try device.waitForEnded(1)
        #expect(device.process.lines.filter { $0.contains("push channel: registered") }.count == 2)
    }
}
