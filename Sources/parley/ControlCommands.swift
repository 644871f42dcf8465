import CommandLineSupport
import ControlChannel
import ControlProtocol
import Foundation

/// `parley call|answer|end|hold|resume|mute|unmute|dtmf|merge|unmerge|list|status|watch`: a terminal softphone that
/// drives a running parleyd through its control socket (`DATA_DIR/control.sock`, token in `DATA_DIR/control.token`).
enum ControlCommands {
    static let help = """
        usage: parley <command> [--data-dir DIR] [--json] …   (drives a running parleyd)

          call URI [--video]        place a call (a SIP URI or a phone number); answers when it rings
          answer CONV               answer a ringing conversation
          end CONV                  end or refuse a conversation
          hold CONV / resume CONV   pause or resume a joined conversation
          mute CONV / unmute CONV   mute or unmute yourself
          dtmf CONV DIGITS          send keypad tones (0-9 * # A-D)
          merge CONV OTHER          merge two joined conversations
          unmerge CONV              take a conversation out of its group
          list                      the live conversations (# is the CONV index for the commands above)
          status                    parleyd's versions, addresses, registration and counters
          watch                     print every conversation change as it happens (Ctrl-C to stop)

        CONV is a uuid, a unique uuid prefix, or the # from `parley list`. --data-dir is parleyd's data directory
        (default $PARLEY_DATA_DIR, else $XDG_DATA_HOME/parley, else ~/.local/share/parley). Exit codes: 0 ok,
        1 the daemon refused or failed the request (or is not running), 64 usage error.
        """

    /// The commands this file serves.
    static let names: Set<String> = [
        "call", "answer", "end", "hold", "resume", "mute", "unmute", "dtmf", "merge", "unmerge", "list", "status",
        "watch",
    ]

    static func run(_ command: String, _ commandLine: [String]) throws -> ExitCode {
        var arguments = Arguments(commandLine)
        if arguments.flag("--help", "-h") {
            print(help)
            return .ok
        }
        let json = arguments.flag("--json")
        let video = arguments.flag("--video")
        let directory = try arguments.option("--data-dir") ?? HistoryLocation.defaultDataDirectory().path
        let positionals = try arguments.positionals()
        let expected: Int
        switch command {
        case "list", "status", "watch": expected = 0
        case "call", "answer", "end", "hold", "resume", "mute", "unmute", "unmerge", "redial": expected = 1
        default: expected = 2
        }
        guard positionals.count == expected else {
            throw UsageError("parley \(command) takes \(expected) argument\(expected == 1 ? "" : "s"), got \(positionals.count)")
        }
        if video && command != "call" { throw UsageError("--video goes with parley call") }
        let client = try connect(directory)
        defer { client.close() }
        if command == "watch" { return try watch(client, json: json) }
        var counter = 0
        func request(_ method: String, _ params: [String: Any] = [:]) throws -> [String: Any] {
            counter += 1
            try client.send(ControlEncoding.request(method, params: params, id: .number(counter)))
            while true {
                let line = try client.readLine(timeout: 40)
                guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else { continue }
                if object["event"] != nil { continue }
                return object
            }
        }
        func conversation(_ text: String) throws -> String {
            guard let index = Int(text), index >= 1, index < 10_000 else { return text }
            let listed = (try request("list")["result"] as? [String: Any])?["conversations"] as? [[String: Any]] ?? []
            guard index <= listed.count, let uuid = listed[index - 1]["uuid"] as? String else {
                throw ControlCommandError("no conversation #\(index) (parley list shows \(listed.count))")
            }
            return uuid
        }
        let reply: [String: Any]
        switch command {
        case "list", "status": reply = try request(command)
        case "call": reply = try request("start", ["to": positionals[0], "video": video])
        case "redial":
            guard let id = Int(positionals[0]), id > 0 else { throw UsageError("redial takes a history record id") }
            reply = try request("redial", ["id": id])
        case "answer": reply = try request("join", ["conversation": try conversation(positionals[0])])
        case "end", "hold", "resume", "unmerge":
            reply = try request(command, ["conversation": try conversation(positionals[0])])
        case "mute", "unmute":
            reply = try request("mute", ["conversation": try conversation(positionals[0]), "muted": command == "mute"])
        case "dtmf":
            reply = try request("playTone", ["conversation": try conversation(positionals[0]), "digits": positionals[1]])
        default:
            reply = try request(
                "merge", ["conversation": try conversation(positionals[0]), "with": try conversation(positionals[1])])
        }
        return render(command, reply, json: json)
    }

    private static func connect(_ directory: String) throws -> ControlClient {
        let socket = (directory as NSString).appendingPathComponent("control.sock")
        let token: String
        do {
            token = try ControlToken.read(from: directory)
        } catch {
            throw ControlCommandError("cannot read parleyd's control token in \(directory): \(error) (is parleyd running with --data-dir \(directory)?)")
        }
        return try ControlClient(socketPath: socket, token: token)
    }

    private static func render(_ command: String, _ reply: [String: Any], json: Bool) -> ExitCode {
        if json {
            printJSON(reply)
            return reply["error"] == nil ? .ok : .failure
        }
        if let error = reply["error"] as? [String: Any] {
            printError("parley \(command): \(error["message"] as? String ?? "failed") (\(error["code"] as? String ?? "error"))")
            return .failure
        }
        let result = reply["result"] as? [String: Any] ?? [:]
        switch command {
        case "list":
            let conversations = result["conversations"] as? [[String: Any]] ?? []
            if conversations.isEmpty {
                print("no live conversations")
                return .ok
            }
            print("  #  conversation  state     direction  group     who")
            for (index, conversation) in conversations.enumerated() {
                print("  \(index + 1)  " + line(conversation))
            }
        case "status":
            for key in result.keys.sorted() { print("\(key): \(describe(result[key] as Any))") }
        default:
            let state = (result["conversation"] as? [String: Any]).map(line) ?? ""
            print("\(result["action"] as? String ?? command): done  \(state)")
        }
        return .ok
    }

    /// `1b4e28ba  joined    incoming   Alice <sip:alice@127.0.0.1:5062>`.
    static func line(_ conversation: [String: Any]) -> String {
        let uuid = (conversation["uuid"] as? String ?? "").prefix(8).lowercased()
        let state = (conversation["state"] as? String ?? "?").padding(toLength: 9, withPad: " ", startingAt: 0)
        let direction = (conversation["direction"] as? String ?? "").padding(toLength: 10, withPad: " ", startingAt: 0)
        let members = (conversation["members"] as? [[String: Any]] ?? []).map { member -> String in
            let value = member["value"] as? String ?? ""
            let name = member["displayName"] as? String ?? value
            return name == value ? value : "\(name) <\(value)>"
        }
        let reason = (conversation["endedReason"] as? String).map { " (\($0))" } ?? ""
        let group = ((conversation["group"] as? String).map { String($0.prefix(8)).lowercased() } ?? "-")
            .padding(toLength: 9, withPad: " ", startingAt: 0)
        return "\(uuid)      \(state) \(direction) \(group) \(members.joined(separator: ", "))\(reason)"
    }

    private static func watch(_ client: ControlClient, json: Bool) throws -> ExitCode {
        try client.send(ControlEncoding.request("subscribe", id: .number(1)))
        print(json ? "" : "watching parleyd (Ctrl-C to stop)", terminator: json ? "" : "\n")
        flushOutput()
        while true {
            let received: Data
            do {
                received = try client.readLine(timeout: 3600)
            } catch {
                if case .timedOut = error { continue }
                throw error
            }
            guard let object = try? JSONSerialization.jsonObject(with: received) as? [String: Any],
                object["event"] as? String == "conversationChanged", let data = object["data"] as? [String: Any],
                let conversation = data["conversation"] as? [String: Any]
            else { continue }
            if json {
                printJSON(object)
            } else {
                let from = data["from"] as? String ?? "new"
                print("\(from.padding(toLength: 8, withPad: " ", startingAt: 0)) → \(line(conversation))")
            }
            flushOutput()
        }
    }

    private static func describe(_ value: Any) -> String {
        if let data = try? JSONSerialization.data(
            withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
        {
            return String(decoding: data, as: UTF8.self)
        }
        return "\(value)"
    }

    private static func printJSON(_ object: [String: Any]) {
        print(describe(object))
    }
}

/// A control command failure with its reason (exit 1).
struct ControlCommandError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
