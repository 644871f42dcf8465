import CommandLineSupport
import Dispatch
import Foundation
import Synchronization
import VoIPPush

/// `parley push-gateway --evapi A:P --push-service A:P`: turns a SIP proxy's push events (Kamailio's evapi, as
/// Examples/kamailio/kamailio.cfg emits them) into VoIP pushes through the push simulator, carrying the held
/// INVITE's Call-ID, so the woken parleyd joins that INVITE to the pushed conversation.
enum PushGatewayCommand {
    static let help = """
        usage: parley push-gateway --evapi ADDRESS:PORT --push-service ADDRESS:PORT [--provider NAME]
                                   [--expires S] [--timeout S] [--max-pending N]

        Connects to a SIP proxy's event socket (Kamailio's evapi module, netstring_format 1) and reads the JSON
        events the proxy emits for calls to RFC 8599 push bindings:
          {"event":"push"|"cancel", "aor", "callId", "from", "fromName", "provider", "prid", "param"}
        Each push event becomes a VoIP push to the device token prid (the same push 'parley push send' sends:
        the caller, the INVITE's Call-ID); each cancel event a cancel push for that Call-ID. Pushes go out one
        at a time, in the order the events came. Reconnects with back-off (0.2 s doubling to 5 s) whenever the
        proxy is unreachable or goes away; an event it cannot use is logged and skipped. One line per event.
        Runs until SIGINT or SIGTERM.

        options:
          --evapi A:P          the proxy's evapi socket (modparam("evapi", "bind_addr", …)): 127.0.0.1:8448
          --push-service A:P   the push simulator ('parley push-sim'): 127.0.0.1:5070
          --provider NAME      the pn-provider served here (default parley-sim); events for others are skipped
          --expires S          seconds a push stays meaningful (default 30: Kamailio's hold time, HOLD_MS)
          --timeout S          how long to wait for each push's outcome (default 10)
          --max-pending N      pushes waiting to be sent at most (default 1000); events beyond are dropped

        example:
          parley push-gateway --evapi 127.0.0.1:8448 --push-service 127.0.0.1:5070
        """

    static func run(_ raw: [String]) throws -> ExitCode {
        var arguments = Arguments(raw)
        let address = "ADDRESS:PORT (127.0.0.1:8448, [::1]:8448)"
        guard let evapi = try arguments.option("--evapi", as: address, PushEndpoint.init), evapi.port != 0 else {
            throw UsageError("say where the proxy's evapi socket is: --evapi ADDRESS:PORT")
        }
        guard let service = try arguments.option("--push-service", as: address, PushEndpoint.init), service.port != 0 else {
            throw UsageError("say where the push service is: --push-service ADDRESS:PORT")
        }
        let provider = try arguments.option("--provider") ?? "parley-sim"
        let seconds = "seconds, more than 0"
        let expires = try arguments.option("--expires", as: seconds, positiveSeconds) ?? 30
        let timeout = try arguments.option("--timeout", as: seconds, positiveSeconds) ?? 10
        let maxPending = try arguments.option("--max-pending", as: "a number from 1", { Int($0).flatMap { $0 >= 1 ? $0 : nil } }) ?? 1000
        try arguments.finish()

        let gateway = Gateway(
            service: service, provider: provider, expires: expires, timeout: timeout, maxPending: maxPending)
        let client = ProxyEventClient(endpoint: evapi) { gateway.take($0) }
        PushSimCommand.printLine("push-gateway: from evapi \(evapi) to push service \(service) (provider \(provider))")
        client.start()
        let signal = PushSimCommand.waitForTerminationSignal()
        client.stop()
        PushSimCommand.printLine("push-gateway stopped (\(signal))")
        return .ok
    }

    private static func positiveSeconds(_ text: String) -> TimeInterval? {
        guard let seconds = TimeInterval(text), seconds > 0, seconds.isFinite, seconds <= 86_400 else { return nil }
        return seconds
    }
}

/// What the gateway does with each event: pushes are sent one at a time on a queue of their own, so reading the
/// proxy's socket never waits for a device's ack, and a cancel never overtakes its push.
private final class Gateway: Sendable {
    let service: PushEndpoint
    let provider: String
    let expires: TimeInterval
    let timeout: TimeInterval
    let maxPending: Int
    private let queue = DispatchQueue(label: "parley.push-gateway.send")
    private let pending = Mutex(0)

    init(service: PushEndpoint, provider: String, expires: TimeInterval, timeout: TimeInterval, maxPending: Int) {
        self.service = service
        self.provider = provider
        self.expires = expires
        self.timeout = timeout
        self.maxPending = maxPending
    }

    func take(_ event: ProxyEventClient.Event) {
        switch event {
        case .connected(let endpoint): log("connected to evapi \(endpoint)")
        case .disconnected(let reason, let retry):
            log("evapi: \(reason); retrying in \(retry.formatted(.number.precision(.fractionLength(0...1)))) s")
        case .rejected(let error): log("skipped an event: \(error)")
        case .outOfStep(let error): log("evapi stream out of step (\(error)); reconnecting")
        case .event(let event): send(event)
        }
    }

    private func send(_ event: ProxyPushEvent) {
        let what = "\(event.kind.rawValue) call-id=\(event.callID) token=\(event.token)"
        guard event.provider == provider else {
            log("skipped \(what): provider \(event.provider) is not served here (\(provider))")
            return
        }
        let admitted = pending.withLock { count in
            guard count < maxPending else { return false }
            count += 1
            return true
        }
        guard admitted else {
            log("dropped \(what): \(maxPending) pushes already wait to be sent")
            return
        }
        let caller = PushCommand.handle(caller: event.caller, name: event.callerName, kind: nil)
        let request = PushCommand.request(
            token: event.token, caller: caller, callID: event.callID, expires: expires, cancel: event.kind == .cancel)
        queue.async { [self] in
            defer { pending.withLock { $0 -= 1 } }
            switch PushCommand.deliver(request, to: service, timeout: timeout) {
            case .success(let outcome): log("\(what) for \(event.addressOfRecord) → \(PushCommand.line(outcome))")
            case .failure(let error): log("\(what) for \(event.addressOfRecord) failed: \(error)")
            }
        }
    }

    private func log(_ line: String) {
        PushSimCommand.printLine(HistoryRendering.printable("push-gateway: " + line))
    }
}
