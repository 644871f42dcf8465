import ConversationKit
import Dispatch
import Foundation
import Synchronization
import Testing
import VoIPPush

/// `parley push-sim` running in the background, its output collected line by line as it comes.
final class BackgroundParley: Sendable {
    private let process: Process
    private let output = Mutex("")
    private let changed = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(_ arguments: [String]) throws {
        process = Process()
        process.executableURL = try CLI.binary
        process.arguments = arguments
        process.currentDirectoryURL = CLI.packageRoot
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let reader = pipe.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                output.withLock { $0 += String(decoding: data, as: UTF8.self) }
                changed.signal()
            }
            finished.signal()
            changed.signal()
        }
    }

    /// Everything printed so far (standard output and error).
    var text: String { output.withLock { $0 } }

    /// Waits (at most 5 s) until the output contains `fragment`.
    func wait(for fragment: String, timeout: TimeInterval = 5) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while !text.contains(fragment) {
            guard changed.wait(timeout: deadline) == .success else { return text.contains(fragment) }
        }
        return true
    }

    /// The endpoint from the `push-sim listening on A:P` line.
    func listeningEndpoint() -> PushEndpoint? {
        guard wait(for: "push-sim listening on "), let line = text.split(separator: "\n").first(where: { $0.hasPrefix("push-sim listening on ") })
        else { return nil }
        return PushEndpoint(String(line.dropFirst("push-sim listening on ".count).prefix { $0 != " " }))
    }

    /// Sends SIGTERM and waits (at most 5 s) for the exit; the exit status, or nil if it did not exit.
    func terminate() -> Int32? {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        guard finished.wait(timeout: .now() + 5) == .success else {
            kill(process.processIdentifier, SIGKILL)
            return nil
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Pushes a device received, and whether it registered.
final class DeviceLog: Sendable {
    let received = Mutex<[PushDelivery]>([])
    let arrived = DispatchSemaphore(value: 0)
    let registered = DispatchSemaphore(value: 0)
}

/// A device client whose pushes go to a list.
final class CLIDevice: Sendable {
    let client: PushDeviceClient
    private let log = DeviceLog()

    init(_ endpoint: PushEndpoint, token: String) {
        let log = self.log
        client = PushDeviceClient(
            configuration: .init(endpoint: endpoint, token: token),
            onEvent: { event in
                if case .stateChanged(.registered) = event { log.registered.signal() }
            },
            handler: { delivery in
                log.received.withLock { $0.append(delivery) }
                log.arrived.signal()
                return delivery.payload.callID == "refuse" ? .notReported("busy") : .reported
            })
        client.start()
    }

    func waitRegistered() -> Bool { log.registered.wait(timeout: .now() + 5) == .success }

    /// The deliveries so far, after waiting (at most 5 s) for there to be `count`.
    func deliveries(count: Int) -> [PushDelivery] {
        let deadline = DispatchTime.now() + 5
        while log.received.withLock({ $0.count }) < count, log.arrived.wait(timeout: deadline) == .success {}
        return log.received.withLock { $0 }
    }
}

/// `parley push-sim` and `parley push` end to end, with a device client on loopback.
@Suite("parley push")
struct PushCLITests {
    @Test("push-sim serves a device client; push send and push status talk to it")
    func endToEnd() throws {
        let sim = try BackgroundParley(["push-sim", "--listen", "127.0.0.1:0", "--max-failures", "2", "--ack-timeout", "2000"])
        let endpoint = try #require(sim.listeningEndpoint(), "\(sim.text)")
        #expect(sim.text.contains("(max failures 2, ack timeout 2000 ms)"))
        let to = endpoint.description
        let device = CLIDevice(endpoint, token: "cli-device")
        #expect(device.waitRegistered())
        #expect(sim.wait(for: "registered token=cli-device connection=#1"))

        let sent = try CLI.run(
            "push", "send", "--to", to, "--token", "cli-device", "--caller", "sip:alice@127.0.0.1:5062", "--name", "Alice",
            "--call-id", "c1", "--video")
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout == "delivered push=p1 token=cli-device reported=true: the device reported the conversation\n")
        let first = try #require(device.deliveries(count: 1).first)
        #expect(first.payload.handle == Handle(kind: .generic, value: "sip:alice@127.0.0.1:5062", displayName: "Alice"))
        #expect(first.payload.isVideo)
        #expect(first.payload.callID == "c1")
        #expect(!first.payload.cancel)
        #expect(first.payload.expiresAt.timeIntervalSince(first.payload.sentAt) == 30)

        let uuid = UUID()
        let json = try CLI.run(
            "push", "send", "--to", to, "--token", "cli-device", "--caller", "tel:+14155550100", "--call-id", "c2",
            "--uuid", uuid.uuidString, "--expires", "12", "--json")
        #expect(json.status == 0, "\(json.stderr)")
        let outcome = try JSONDecoder().decode(PushOutcome.self, from: Data(json.stdout.utf8))
        #expect(outcome == PushOutcome(token: "cli-device", pushID: "p2", result: .delivered, reported: true, detail: "the device reported the conversation"))
        let second = try #require(device.deliveries(count: 2).last)
        #expect(second.payload.handle == Handle(kind: .phoneNumber, value: "+14155550100"))
        #expect(second.payload.uuid == uuid)
        #expect(second.payload.expiresAt.timeIntervalSince(second.payload.sentAt) == 12)

        let refused = try CLI.run("push", "send", "--to", to, "--token", "cli-device", "--caller", "sip:bob@x", "--call-id", "refuse")
        #expect(refused.status == 0)
        #expect(refused.stdout.hasPrefix("delivered push=p3 token=cli-device reported=false: the device did not report the conversation: busy; strike 1/2"))
        let unknown = try CLI.run("push", "send", "--to", to, "--token", "nobody", "--caller", "sip:bob@x", "--call-id", "c4")
        #expect(unknown.status == 1)
        #expect(unknown.stdout == "unknownToken token=nobody: no device ever registered token nobody\n")

        let status = try CLI.run("push", "status", "--to", to)
        #expect(status.status == 0)
        #expect(status.stdout.contains("  cli-device  yes        1        no        0"))
        #expect(status.stdout.contains("  strikes 1\n"))
        let statusJSON = try CLI.run("push", "status", "--to", to, "--json")
        let report = try JSONDecoder().decode(PushStatusReport.self, from: Data(statusJSON.stdout.utf8))
        #expect(report.devices == [.init(token: "cli-device", connected: true, strikes: 1, disabled: false, queued: 0)])
        #expect(report.counters.sendRequests == 4)

        // A second simulator cannot take the port.
        let clash = try CLI.run("push-sim", "--listen", to)
        #expect(clash.status == 1)
        #expect(clash.stderr.contains("bind \(to): Address already in use"))

        // Offline: a cancel push is stored, then delivered when the device comes back.
        device.client.stop()
        #expect(sim.wait(for: "offline token=cli-device"))
        let stored = try CLI.run(
            "push", "send", "--to", to, "--token", "cli-device", "--caller", "sip:alice@127.0.0.1:5062", "--call-id", "c1",
            "--cancel", "--collapse-id", "alice")
        #expect(stored.status == 0)
        #expect(stored.stdout.hasPrefix("stored push=p4 token=cli-device: device offline: stored until "))
        let back = CLIDevice(endpoint, token: "cli-device")
        defer { back.client.stop() }
        let cancel = try #require(back.deliveries(count: 1).first)
        #expect(cancel.payload.cancel)
        #expect(cancel.collapseID == "alice")

        #expect(sim.terminate() == 0)
        for line in [
            "delivered push=p1 token=cli-device reported=true", "strike 1/2 token=cli-device push=p3",
            "unknown token=nobody: push refused", "stored push=p4 token=cli-device", "pushed cancel push=p4",
            "push-sim stopped (SIGTERM)",
        ] {
            #expect(sim.text.contains(line), "missing: \(line)")
        }
    }

    @Test("help, usage errors and an absent simulator")
    func usage() throws {
        #expect(try CLI.run("--help").stdout.contains("push-sim"))
        #expect(try CLI.run("push-sim", "--help").stdout.hasPrefix("usage: parley push-sim --listen"))
        #expect(try CLI.run("push", "--help").stdout.hasPrefix("usage: parley push send"))
        #expect(try CLI.run("push", "send", "--help").stdout.contains("--collapse-id C"))
        #expect(try CLI.run("push", "status", "--help").stdout.hasPrefix("usage: parley push status"))
        let cases: [([String], String)] = [
            (["push"], "name an action: send or status"),
            (["push", "resend"], "unknown action 'resend'"),
            (["push", "send", "--token", "t", "--caller", "c", "--call-id", "i"], "--to ADDRESS:PORT"),
            (["push", "send", "--to", "example.com:5070", "--token", "t", "--caller", "c", "--call-id", "i"], "--to expects ADDRESS:PORT"),
            (["push", "send", "--to", "127.0.0.1:5070", "--caller", "c", "--call-id", "i"], "--token T"),
            (["push", "send", "--to", "127.0.0.1:5070", "--token", "t", "--call-id", "i"], "--caller URI"),
            (["push", "send", "--to", "127.0.0.1:5070", "--token", "t", "--caller", "c"], "--call-id ID"),
            (["push", "send", "--to", "127.0.0.1:5070", "--token", "t", "--caller", "c", "--call-id", "i", "--expires", "0"], "--expires expects"),
            (["push", "send", "--to", "127.0.0.1:5070", "--token", "t", "--caller", "c", "--call-id", "i", "--kind", "fax"], "--kind expects"),
            (["push", "send", "--to", "127.0.0.1:5070", "--token", "t", "--caller", "c", "--call-id", "i", "--later"], "unknown option --later"),
            (["push", "status", "--to", "127.0.0.1:0"], "port other than 0"),
            (["push-sim"], "--listen ADDRESS:PORT"),
            (["push-sim", "--listen", "127.0.0.1:0", "--max-failures", "0"], "--max-failures expects"),
            (["push-sim", "--listen", "127.0.0.1:0", "--ack-timeout", "soon"], "--ack-timeout expects"),
        ]
        for (arguments, message) in cases {
            let run = try CLI.run(arguments)
            #expect(run.status == 64, "\(arguments)")
            #expect(run.stderr.contains(message), "\(arguments): \(run.stderr)")
        }
        // Port 1 on loopback: nothing listens there.
        let absent = try CLI.run("push", "status", "--to", "127.0.0.1:1")
        #expect(absent.status == 1)
        #expect(absent.stderr.contains("connect 127.0.0.1:1: Connection refused"))
    }
}
