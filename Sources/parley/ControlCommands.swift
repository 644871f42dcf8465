import CommandLineSupport
import ControlChannel
import ControlProtocol
import Foundation

/// `parley call|answer|end|hold|resume|mute|unmute|dtmf|merge|unmerge|redial|list|status|watch|reload-contacts|web`: a
/// terminal softphone that drives a running parleyd through its control socket (`DATA_DIR/control.sock`, token in
/// `DATA_DIR/control.token`), speaking the typed control protocol.
enum ControlCommands {
    static let help = """
        usage: parley <command> [--data-dir DIR] [--json] …   (drives a running parleyd)

          call URI [--video]        place a call (a SIP URI or a phone number); returns once it rings, connects or fails
          answer CONV               answer a ringing conversation
          end CONV                  end or refuse a conversation
          hold CONV / resume CONV   put a joined conversation on hold, or take it off
          mute CONV / unmute CONV   mute or unmute yourself
          dtmf CONV DIGITS          send keypad tones (0-9 * # A-D)
          video CONV on|off         turn video on or off in a joined conversation (parleyd --video; re-INVITE)
          audio CONV                a call's negotiated audio and its RTCP figures (packets, loss, jitter, round trip)
          merge CONV OTHER          merge two joined conversations
          unmerge CONV              take a conversation out of its group
          list                      the live conversations: who, state, direction, duration, flags, group
          status                    parleyd's version, addresses, registration, counters and limits
          watch                     print every change as it happens (Ctrl-C to stop)
          reload-contacts           read parleyd's --contacts file again (as SIGHUP does)
          web [--open]              the web softphone's address with the token (parleyd --websocket); --open opens it

        CONV is a uuid, a unique uuid prefix, or the # from `parley list`. --data-dir is parleyd's data directory
        (default $PARLEY_DATA_DIR, else $XDG_DATA_HOME/parley, else ~/.local/share/parley). --json prints the
        protocol's own messages. Exit codes: 0 ok, 1 the daemon refused or failed the request (or is not running),
        64 usage error.
        """

    /// The commands this file serves.
    static let names: Set<String> = [
        "call", "answer", "end", "hold", "resume", "mute", "unmute", "dtmf", "merge", "unmerge", "list", "status",
        "watch", "redial", "reload-contacts", "video", "web", "audio",
    ]

    static func run(_ command: String, _ commandLine: [String]) throws -> ExitCode {
        var arguments = Arguments(commandLine)
        if arguments.flag("--help", "-h") {
            print(help)
            return .ok
        }
        let json = arguments.flag("--json")
        let video = arguments.flag("--video")
        let open = arguments.flag("--open")
        let directory = try arguments.option("--data-dir") ?? HistoryLocation.defaultDataDirectory().path
        let positionals = try arguments.positionals()
        let expected: Int
        switch command {
        case "list", "status", "watch", "reload-contacts", "web": expected = 0
        case "call", "answer", "end", "hold", "resume", "mute", "unmute", "unmerge", "redial", "audio": expected = 1
        default: expected = 2
        }
        guard positionals.count == expected else {
            throw UsageError("parley \(command) takes \(expected) argument\(expected == 1 ? "" : "s"), got \(positionals.count)")
        }
        if video && command != "call" { throw UsageError("--video goes with parley call") }
        if open && command != "web" { throw UsageError("--open goes with parley web") }
        let session = try ControlSession(directory: directory)
        defer { session.close() }
        switch command {
        case "watch": return try ControlRendering.watch(session, json: json)
        case "web": return try WebCommand.run(session, directory: directory, json: json, open: open)
        case "list": return try list(session, json: json)
        case "status":
            return try show(session.request(.status, as: StatusResult.self), json: json, command) { ControlRendering.status($0) }
        case "reload-contacts":
            return try show(session.request(.reloadContacts, as: ReloadContactsResult.self), json: json, command) {
                "\($0.contacts) contacts loaded" + ($0.conflicts > 0 ? " (\($0.conflicts) handles claimed twice; the first kept)" : "")
            }
        case "call", "redial":
            let start: ControlCommand
            if command == "call" {
                start = .start(StartParams(to: positionals[0], video: video ? true : nil))
            } else {
                guard let id = Int64(positionals[0]), id > 0 else { throw UsageError("redial takes a history record id") }
                start = .redial(RecordParams(id: id))
            }
            return show(try session.startAndFollow(start), json: json, command) { result in
                "start: done  " + ControlRendering.line(result.conversation)
            }
        case "audio":
            let conversation = try session.conversation(positionals[0])
            let figures = try session.request(.mediaStats(ConversationParams(conversation: conversation)), as: MediaStatsResult.self)
            return show(figures, json: json, command) { ControlRendering.audio($0) }
        default:
            let conversation = try session.conversation(positionals[0])
            let action: ControlCommand
            switch command {
            case "answer": action = .join(JoinParams(conversation: conversation))
            case "end": action = .end(ConversationParams(conversation: conversation))
            case "hold": action = .hold(ConversationParams(conversation: conversation))
            case "resume": action = .resume(ConversationParams(conversation: conversation))
            case "unmerge": action = .unmerge(ConversationParams(conversation: conversation))
            case "mute", "unmute": action = .mute(MuteParams(conversation: conversation, muted: command == "mute"))
            case "dtmf": action = .playTone(ToneParams(conversation: conversation, digits: positionals[1]))
            case "video":
                guard ["on", "off"].contains(positionals[1]) else { throw UsageError("parley video takes on or off") }
                action = .video(VideoParams(conversation: conversation, enabled: positionals[1] == "on"))
            default: action = .merge(MergeParams(conversation: conversation, with: try session.conversation(positionals[1])))
            }
            return try show(session.request(action, as: ActionResult.self), json: json, command) { result in
                "\(command): done  " + ControlRendering.line(result.conversation)
            }
        }
    }

    /// Every live conversation, page after page (`--json`: each page's line as it came).
    private static func list(_ session: ControlSession, json: Bool) throws -> ExitCode {
        var all: [ConversationInfo] = []
        var cursor: String?
        repeat {
            let reply = try session.request(.list(ListParams(limit: 200, cursor: cursor)), as: ListResult.self)
            guard case .result(let page) = reply.response else { return show(reply, json: json, "list") { _ in "" } }
            if json { print(String(decoding: reply.line, as: UTF8.self)) }
            all += page.conversations
            cursor = page.nextCursor
        } while cursor != nil
        if !json { print(ControlRendering.list(ListResult(conversations: all))) }
        return .ok
    }

    /// Prints a reply: the protocol's own line with `--json`, else `render`'s text or the error's message.
    static func show<Result: Codable & Sendable>(
        _ reply: (line: Data, response: ControlResponse<Result>), json: Bool, _ command: String,
        render: (Result) -> String
    ) -> ExitCode {
        switch reply.response {
        case .result(let result):
            print(json ? String(decoding: reply.line, as: UTF8.self) : render(result))
            return .ok
        case .error(let error):
            if json {
                print(String(decoding: reply.line, as: UTF8.self))
            } else {
                printError("parley \(command): \(ControlRendering.describe(error))")
            }
            return .failure
        }
    }
}

/// One connection to parleyd's control socket, with typed requests.
final class ControlSession {
    private let client: ControlClient
    /// The token the session said hello with (`parley web` hands it to the page).
    let token: String
    private var counter = 0
    /// Events read while waiting for an answer, for whoever follows events next.
    private var pendingEvents: [Data] = []

    init(directory: String) throws {
        let socket = (directory as NSString).appendingPathComponent("control.sock")
        do {
            token = try ControlToken.read(from: directory)
        } catch {
            throw ControlCommandError(
                "cannot read parleyd's control token in \(directory): \(error) (is parleyd running with --data-dir \(directory)?)")
        }
        client = try ControlClient(socketPath: socket, token: token)
    }

    func close() { client.close() }

    /// Sends `command` and waits (up to 40 s) for its answer; events that arrive meanwhile are kept.
    func request<Result: Codable & Sendable>(
        _ command: ControlCommand, as type: Result.Type
    ) throws -> (line: Data, response: ControlResponse<Result>) {
        counter += 1
        let id = ControlRequestID.number(counter)
        try client.send(ControlRequest(id: id, command: command).encoded())
        while true {
            let line = try client.readLine(timeout: 40)
            let kind = ControlMessage.kind(of: line)
            if kind.event != nil {
                pendingEvents.append(line)
                continue
            }
            guard kind.id == id else { continue }
            return (line, try ControlMessage.response(line, as: type).response)
        }
    }

    /// The next event line (kept ones first).
    func nextEvent(timeout: TimeInterval) throws -> Data {
        if !pendingEvents.isEmpty { return pendingEvents.removeFirst() }
        return try client.readLine(timeout: timeout)
    }

    /// A `#` from `parley list` as the conversation's uuid; anything else as given.
    func conversation(_ text: String) throws -> String {
        guard let index = Int(text), index >= 1, index < 10_000 else { return text }
        let listed = try conversations { $0.count >= index }
        guard index <= listed.count else {
            throw ControlCommandError("no conversation #\(index) (parley list shows \(listed.count))")
        }
        return listed[index - 1].uuid
    }

    /// The live conversations oldest first, page after page until `enough` says so or the last page.
    func conversations(until enough: ([ConversationInfo]) -> Bool = { _ in false }) throws -> [ConversationInfo] {
        var all: [ConversationInfo] = []
        var cursor: String?
        repeat {
            guard case .result(let page) = try request(.list(ListParams(limit: 200, cursor: cursor)), as: ListResult.self).response
            else { throw ControlCommandError("parleyd did not list its conversations") }
            all += page.conversations
            cursor = page.nextCursor
        } while cursor != nil && !enough(all)
        return all
    }

    /// Starts a call and follows its events until the Start settles: the answer, with the conversation as it is then.
    func startAndFollow(_ start: ControlCommand) throws -> (line: Data, response: ControlResponse<ActionResult>) {
        _ = try request(.subscribe, as: SubscribeResult.self)
        let started = try request(start, as: ActionResult.self)
        guard case .result(var result) = started.response else { return started }
        while true {
            switch ControlEventMessage.decode(try nextEvent(timeout: 120)) {
            case .conversationChanged(let change)? where change.conversation.uuid == result.conversation.uuid:
                result.conversation = change.conversation
            case .actionSettled(let settled)? where settled.actionUUID == result.actionUUID:
                if let error = settled.error {
                    return (ControlMessage.error(error, id: .number(counter)), .error(error))
                }
                result.state = settled.state
                // The settlement and the conversation's own events travel apart: read the conversation as it is now.
                let uuid = result.conversation.uuid
                if let now = try conversations(until: { $0.contains { $0.uuid == uuid } }).first(where: { $0.uuid == uuid }) {
                    result.conversation = now
                }
                return (ControlMessage.result(result, id: .number(counter)), .result(result))
            default:
                continue
            }
        }
    }
}

/// A control command failure with its reason (exit 1).
struct ControlCommandError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
