import CommandLineSupport
import Dispatch
import Foundation
import Synchronization
import VoIPPush

/// `parley push-sim --listen A:P`: runs the VoIP push simulator until SIGINT or SIGTERM, printing a line per event.
enum PushSimCommand {
    static let help = """
        usage: parley push-sim --listen ADDRESS:PORT [--max-failures N] [--ack-timeout MS] [--max-stored N]

        Runs the VoIP push simulator: the "Apple" side of VoIP pushes, on a TCP port (frames of a 4-byte length
        and a JSON object). Devices connect and register a token; senders ('parley push send') push to a token.
        A push to a connected device is delivered at once and its outcome waits for the device's ack; a push to
        a known but offline token is stored until it expires. A device that does not report the conversation
        before its push handler returns (or does not ack in time) earns a strike; after --max-failures strikes
        its token is disabled, as iOS stops waking an app that fails to report VoIP pushes. Cancel pushes are
        never strikes.

        The first line says where it listens (useful with port 0); then one line per event. Runs until SIGINT
        or SIGTERM.

        options:
          --listen A:P         where to listen: 127.0.0.1:5070, [::1]:5070; port 0 picks a free port
          --max-failures N     strikes before a token is disabled (default 3)
          --ack-timeout MS     how long a device has to ack a push, in milliseconds (default 5000)
          --max-stored N       pushes kept per offline device (default 100)

        example:
          parley push-sim --listen 127.0.0.1:5070 --max-failures 3 --ack-timeout 5000
        """

    static func run(_ raw: [String]) throws -> ExitCode {
        var arguments = Arguments(raw)
        guard let endpoint = try arguments.option("--listen", as: "ADDRESS:PORT (127.0.0.1:5070, [::1]:5070)", PushEndpoint.init)
        else { throw UsageError("say where to listen: --listen ADDRESS:PORT (e.g. 127.0.0.1:5070)") }
        let maxFailures = try arguments.option("--max-failures", as: "a whole number from 1", { Int($0).flatMap { $0 >= 1 ? $0 : nil } }) ?? 3
        let ackTimeout = try arguments.option("--ack-timeout", as: "milliseconds, 1 or more", { Int($0).flatMap { $0 >= 1 ? $0 : nil } }) ?? 5000
        let maxStored = try arguments.option("--max-stored", as: "a whole number from 1", { Int($0).flatMap { $0 >= 1 ? $0 : nil } }) ?? 100
        try arguments.finish()

        let rules = PushService.Configuration(
            maxFailures: maxFailures, ackTimeout: TimeInterval(ackTimeout) / 1000, maxStoredPerToken: maxStored)
        let simulator = try PushSimulator(listeningOn: endpoint, configuration: .init(service: rules)) { line in
            printLine(HistoryRendering.printable(line))
        }
        printLine("push-sim listening on \(simulator.endpoint) (max failures \(maxFailures), ack timeout \(ackTimeout) ms)")
        let signal = waitForTerminationSignal()
        simulator.stop()
        printLine("push-sim stopped (\(signal))")
        return .ok
    }

    /// Writes one line to standard output at once (the log is watched live through pipes).
    static func printLine(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Blocks until SIGINT or SIGTERM arrives; returns its name.
    static func waitForTerminationSignal() -> String {
        let received = DispatchSemaphore(value: 0)
        let name = SignalName()
        var sources: [any DispatchSourceSignal] = []
        for (number, label) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                name.set(label)
                received.signal()
            }
            source.resume()
            sources.append(source)
        }
        received.wait()
        for source in sources { source.cancel() }
        return name.value
    }
}

/// The name of the signal that arrived, set from a signal handler's queue.
private final class SignalName: Sendable {
    private let storage = Mutex("signal")
    func set(_ name: String) { storage.withLock { $0 = name } }
    var value: String { storage.withLock { $0 } }
}
