import CommandLineSupport
import ConversationKit
import Foundation
import VoIPPush

/// `parley push send …` sends one VoIP push through the simulator; `parley push status` shows its state.
enum PushCommand {
    static let overview = """
        usage: parley push send --to ADDRESS:PORT --token T --caller URI --call-id ID [options]
               parley push status --to ADDRESS:PORT [--json]

        Talks to a VoIP push simulator ('parley push-sim').

        actions:
          send     push an incoming call (or, with --cancel, its cancellation) to a device token and print the
                   outcome: delivered (and whether the device reported the call), stored, expired,
                   unknownToken, tokenDisabled or invalid. Exit 0 for delivered or stored, 1 otherwise.
          status   print every token the simulator knows and its counters

        options (the ones both actions take; each action's --help lists all of its own):
          --to A:P           the simulator: 127.0.0.1:5070, [::1]:5070
          --json             the outcome, or the status, as JSON

        Run 'parley push send --help' or 'parley push status --help' for the options.

        examples:
          parley push send --to 127.0.0.1:5070 --token device-1 --caller sip:alice@127.0.0.1:5062 --call-id 8f2a@127.0.0.1
          parley push status --to 127.0.0.1:5070
        """

    static let sendHelp = """
        usage: parley push send --to ADDRESS:PORT --token T --caller URI --call-id ID [--name NAME] [--kind KIND]
                                [--uuid U] [--video] [--expires S] [--collapse-id C] [--cancel] [--timeout S] [--json]

        Sends one VoIP push and prints its outcome. The outcome of a push to a connected device comes once the
        device acks it (or the simulator's ack timeout passes). Exit 0 for delivered or stored, 1 otherwise
        (and for connection failures), 64 for usage errors.

        options:
          --to A:P           the simulator: 127.0.0.1:5070, [::1]:5070
          --token T          the device token to push to
          --caller URI       who calls: sip:alice@127.0.0.1:5062 (a generic handle), tel:+14155550100 (a phone
                             number)
          --name NAME        the caller's display name (default: the caller's value)
          --kind KIND        the handle kind instead of the guess: generic, phoneNumber, emailAddress
          --call-id ID       the SIP Call-ID of the INVITE the device should expect
          --uuid U           the conversation UUID the device reports (default: a new one)
          --video            the caller offers video
          --expires S        seconds until the push means nothing (default 30)
          --collapse-id C    a newer stored push with the same id replaces this one (at most 64 bytes)
          --cancel           a cancel push: the caller gave up (never a strike)
          --timeout S        how long to wait for the outcome (default 10)
          --json             print the outcome as JSON: {"detail", "pushID", "reported", "result", "token"}

        examples:
          parley push send --to 127.0.0.1:5070 --token device-1 --caller sip:alice@127.0.0.1:5062 --name Alice \\
              --call-id 8f2a@127.0.0.1
          parley push send --to 127.0.0.1:5070 --token device-1 --caller sip:alice@127.0.0.1:5062 \\
              --call-id 8f2a@127.0.0.1 --cancel
        """

    static let statusHelp = """
        usage: parley push status --to ADDRESS:PORT [--timeout S] [--json]

        Prints every token the simulator knows (connected, strikes, disabled, pushes stored for it) and what it
        has counted since it started.

        options:
          --to A:P           the simulator: 127.0.0.1:5070, [::1]:5070
          --timeout S        how long to wait for the answer (default 5)
          --json             {"devices": [{"token", "connected", "strikes", "disabled", "queued"}], "counters": {...}}

        example:
          parley push status --to 127.0.0.1:5070
        """

    /// The actions, by the word typed after `parley push`.
    enum Action: String, CaseIterable, Sendable {
        case send, status

        /// What `parley push ACTION --help` prints.
        var help: String {
            switch self {
            case .send: PushCommand.sendHelp
            case .status: PushCommand.statusHelp
            }
        }
    }

    static func run(_ raw: [String]) throws -> ExitCode {
        guard let word = raw.first else { throw UsageError("name an action: send or status") }
        let rest = Array(raw.dropFirst())
        if word == "help" {
            print(overview)
            return .ok
        }
        switch Action(rawValue: word) {
        case .send?: return try send(rest)
        case .status?: return try status(rest)
        case nil: throw UsageError("unknown action '\(word)' (actions: send, status)")
        }
    }

    // MARK: send

    private static func send(_ raw: [String]) throws -> ExitCode {
        var arguments = Arguments(raw)
        let endpoint = try simulator(&arguments)
        guard let token = try arguments.option("--token") else { throw UsageError("say which device: --token T") }
        if let problem = PushService.tokenProblem(token) { throw UsageError("--token: \(problem)") }
        guard let caller = try arguments.option("--caller") else { throw UsageError("say who calls: --caller URI") }
        guard let callID = try arguments.option("--call-id"), !callID.isEmpty else {
            throw UsageError("give the call's SIP Call-ID: --call-id ID")
        }
        let name = try arguments.option("--name")
        let kind = try arguments.option("--kind", as: "generic, phoneNumber or emailAddress", Handle.Kind.init(name:))
        let uuid = try arguments.option("--uuid", as: "a UUID", UUID.init(uuidString:)) ?? UUID()
        let video = arguments.flag("--video")
        let expires = try arguments.option("--expires", as: "seconds, more than 0", positiveSeconds) ?? 30
        let collapseID = try arguments.option("--collapse-id")
        let cancel = arguments.flag("--cancel")
        let timeout = try arguments.option("--timeout", as: "seconds, more than 0", positiveSeconds) ?? 10
        let json = arguments.flag("--json")
        try arguments.finish()

        let request = Self.request(
            token: token, caller: handle(caller: caller, name: name, kind: kind), callID: callID, uuid: uuid, isVideo: video,
            expires: expires, collapseID: collapseID, cancel: cancel)
        let outcome: PushOutcome
        switch deliver(request, to: endpoint, timeout: timeout) {
        case .success(let received): outcome = received
        case .failure(let error):
            printError("parley push send: \(error)")
            return .failure
        }
        print(json ? try encodeJSON(outcome) : line(outcome))
        return outcome.result.isAccepted ? .ok : .failure
    }

    /// A push (or, with `cancel`, its withdrawal) of the call `callID` from `caller` to the device `token`, sent now
    /// and meaning nothing after `expires` seconds. `parley push send` and `parley push-gateway` build theirs here.
    static func request(
        token: String, caller: Handle, callID: String, uuid: UUID = UUID(), isVideo: Bool = false, expires: TimeInterval,
        collapseID: String? = nil, cancel: Bool, now: Date = Date()
    ) -> PushSendRequest {
        let payload = PushPayload(
            uuid: uuid, handle: caller, callID: callID, isVideo: isVideo, sentAt: now,
            expiresAt: now.addingTimeInterval(expires), cancel: cancel)
        return PushSendRequest(token: token, payload: payload, collapseID: collapseID)
    }

    /// Sends `request` to the simulator at `endpoint` on a connection of its own and waits (at most `timeout`
    /// seconds) for its outcome.
    static func deliver(_ request: PushSendRequest, to endpoint: PushEndpoint, timeout: TimeInterval) -> Result<PushOutcome, PushConnectionError> {
        do throws(PushConnectionError) {
            let connection = try PushConnection(to: endpoint, timeout: timeout)
            defer { connection.close() }
            return .success(try connection.send(request, timeout: timeout))
        } catch {
            return .failure(error)
        }
    }

    /// An outcome on one line: `delivered push=p1 token=device-1 reported=true: …`.
    static func line(_ outcome: PushOutcome) -> String {
        var line = "\(outcome.result.rawValue)"
        if let pushID = outcome.pushID { line += " push=\(pushID)" }
        line += " token=\(outcome.token)"
        if let reported = outcome.reported { line += " reported=\(reported)" }
        return HistoryRendering.printable(line + ": " + outcome.detail)
    }

    /// The caller's handle: `tel:` URIs are phone numbers (without the scheme), anything else a generic handle
    /// holding the value as typed, unless `--kind` says otherwise.
    static func handle(caller: String, name: String?, kind: Handle.Kind?) -> Handle {
        let isTel = caller.lowercased().hasPrefix("tel:")
        let value = isTel && kind != .generic ? String(caller.dropFirst(4)) : caller
        return Handle(kind: kind ?? (isTel ? .phoneNumber : .generic), value: value, displayName: name)
    }

    // MARK: status

    private static func status(_ raw: [String]) throws -> ExitCode {
        var arguments = Arguments(raw)
        let endpoint = try simulator(&arguments)
        let timeout = try arguments.option("--timeout", as: "seconds, more than 0", positiveSeconds) ?? 5
        let json = arguments.flag("--json")
        try arguments.finish()
        let report: PushStatusReport
        do {
            let connection = try PushConnection(to: endpoint, timeout: timeout)
            defer { connection.close() }
            report = try connection.status(timeout: timeout)
        } catch {
            printError("parley push status: \(error)")
            return .failure
        }
        print(json ? try encodeJSON(report) : table(report))
        return .ok
    }

    /// The devices, then the counters that are not zero.
    static func table(_ report: PushStatusReport) -> String {
        var lines = ["devices: \(report.devices.count)"]
        if !report.devices.isEmpty {
            let width = max(5, report.devices.map { HistoryRendering.printable($0.token).count }.max() ?? 0)
            func pad(_ text: String, _ count: Int) -> String { text.padding(toLength: count, withPad: " ", startingAt: 0) }
            lines.append("  " + pad("TOKEN", width) + "  CONNECTED  STRIKES  DISABLED  QUEUED")
            for device in report.devices {
                lines.append(
                    "  " + pad(HistoryRendering.printable(device.token), width) + "  " + pad(device.connected ? "yes" : "no", 9)
                        + "  " + pad(String(device.strikes), 7) + "  " + pad(device.disabled ? "yes" : "no", 8) + "  "
                        + String(device.queued))
            }
        }
        lines.append("counters:")
        let counters = (try? JSONSerialization.jsonObject(with: JSONEncoder().encode(report.counters))) as? [String: Int] ?? [:]
        for (name, value) in counters.sorted(by: { $0.key < $1.key }) where value != 0 {
            lines.append("  \(name) \(value)")
        }
        if counters.values.allSatisfy({ $0 == 0 }) { lines.append("  (nothing yet)") }
        return lines.joined(separator: "\n")
    }

    // MARK: Helpers

    private static func simulator(_ arguments: inout Arguments) throws(UsageError) -> PushEndpoint {
        guard let endpoint = try arguments.option("--to", as: "ADDRESS:PORT (127.0.0.1:5070, [::1]:5070)", PushEndpoint.init)
        else { throw UsageError("say where the simulator is: --to ADDRESS:PORT") }
        guard endpoint.port != 0 else { throw UsageError("--to needs a port other than 0") }
        return endpoint
    }

    private static func positiveSeconds(_ text: String) -> TimeInterval? {
        guard let seconds = TimeInterval(text), seconds > 0, seconds.isFinite, seconds <= 86_400 * 365 else { return nil }
        return seconds
    }

    private static func encodeJSON(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
