import CommandLineSupport
import ControlChannel
import ControlProtocol
import Foundation
import ParleyNode

/// `parley call|answer|end|hold|resume|mute|unmute|dtmf|video|video-source|audio|merge|unmerge|list|status|watch|reload-contacts|web`
/// and `parley redial` with a parleyd running: a terminal softphone that drives a running parleyd through its control
/// socket (`DATA_DIR/control.sock`, token in `DATA_DIR/control.token`), speaking the typed control protocol. Each
/// command's help is in ControlHelp.swift.
enum ControlCommands {
    /// Runs `command` with the arguments after its name.
    static func run(_ command: Command, _ commandLine: [String]) throws -> ExitCode {
        var arguments = Arguments(commandLine)
        let json = arguments.flag("--json")
        let video = arguments.flag("--video")
        let open = arguments.flag("--open")
        let endOthers = arguments.flag("--end-others")
        let levels = arguments.flag("--levels")
        let account = try arguments.option("--account")
        let encryption = try arguments.option("--encryption")?.lowercased()
        let toCall = try arguments.option("--to-call")
        let directory = try dataDirectory(&arguments)
        let positionals = try arguments.positionals()
        let expected = command.arguments
        guard expected.contains(positionals.count) else {
            let count = expected.lowerBound == expected.upperBound ? "\(expected.lowerBound)" : "\(expected.lowerBound) or \(expected.upperBound)"
            throw UsageError("takes \(count) argument\(expected.upperBound == 1 ? "" : "s"), got \(positionals.count)")
        }
        if video && command != .call { throw UsageError("--video goes with parley call") }
        if open && command != .web { throw UsageError("--open goes with parley web") }
        if endOthers && command != .answer { throw UsageError("--end-others goes with parley answer") }
        if levels && command != .watch { throw UsageError("--levels goes with parley watch") }
        if account != nil && command != .call && command != .forward { throw UsageError("--account goes with parley call or forward") }
        if command == .transfer, (toCall == nil) == (positionals.count == 1) {
            throw UsageError("parley transfer takes CONV TARGET (blind) or CONV --to-call CONV2 (attended)")
        }
        if toCall != nil && command != .transfer { throw UsageError("--to-call goes with parley transfer") }
        if let encryption {
            guard command == .call else { throw UsageError("--encryption goes with parley call") }
            guard StartParams.encryptionMethods.contains(encryption) else {
                throw UsageError("--encryption takes none, auto, sdes or dtls, got '\(encryption)'")
            }
        }
        var wantsMuted: Bool?
        if command == .mute, positionals.count == 2 {
            guard ["on", "off"].contains(positionals[1]) else { throw UsageError("on or off goes after CONV, got '\(positionals[1])'") }
            wantsMuted = positionals[1] == "on"
        }
        if command == .video, !["on", "off"].contains(positionals[1]) { throw UsageError("on or off goes after CONV, got '\(positionals[1])'") }
        let session = try ControlSession(directory: directory)
        defer { session.close() }
        let name = command.rawValue
        switch command {
        case .watch: return try ControlRendering.watch(session, json: json, levels: levels)
        case .web: return try WebCommand.run(session, directory: directory.path, json: json, open: open)
        case .list: return try list(session, json: json)
        case .dnd:
            guard positionals.isEmpty || ["on", "off"].contains(positionals[0]) else {
                throw UsageError("parley dnd takes on or off (or nothing, to say how it is), got '\(positionals[0])'")
            }
            let params = DoNotDisturbParams(enabled: positionals.first.map { $0 == "on" })
            return try show(session.request(.doNotDisturb(params), as: DoNotDisturbState.self), json: json, name) {
                $0.enabled ? "do-not-disturb on: calls are refused without ringing" : "do-not-disturb off"
            }
        case .forward:
            var params = try Self.forwarding(positionals)
            params.account = account
            let state = try session.request(.forwarding(params), as: ForwardingState.self)
            return try show(state, json: json, name) { ControlRendering.forwarding($0) }
        case .status:
            return try show(session.request(.status, as: StatusResult.self), json: json, name) { ControlRendering.status($0) }
        case .reloadContacts:
            return try show(session.request(.reloadContacts, as: ReloadContactsResult.self), json: json, name) {
                "\($0.contacts) contacts loaded" + ($0.conflicts > 0 ? " (\($0.conflicts) handles claimed twice; the first kept)" : "")
            }
        case .call:
            let params = StartParams(to: positionals[0], video: video ? true : nil, account: account, encryption: encryption)
            return started(try session.startAndFollow(.start(params)), json: json, name)
        case .audio:
            let conversation = try session.conversation(positionals[0])
            let figures = try session.request(.mediaStats(ConversationParams(conversation: conversation)), as: MediaStatsResult.self)
            return show(figures, json: json, name) { ControlRendering.audio($0) }
        case .mute, .unmute:
            var conversation = try session.conversation(positionals[0])
            let muted: Bool
            if command == .unmute {
                muted = false
            } else if let wantsMuted {
                muted = wantsMuted
            } else {
                // A toggle: the other of what the conversation says now.
                let now = try session.info(of: conversation)
                conversation = now.uuid
                muted = !now.isMuted
            }
            return try show(session.request(.mute(MuteParams(conversation: conversation, muted: muted)), as: ActionResult.self), json: json, name) {
                ($0.conversation.isMuted ? "muted    " : "unmuted  ") + ControlRendering.line($0.conversation)
            }
        case .answer:
            return try act(.join(JoinParams(conversation: try session.conversation(positionals[0]), endOthers: endOthers ? true : nil)))
        case .end: return try act(.end(ConversationParams(conversation: try session.conversation(positionals[0]))))
        case .hold: return try act(.hold(ConversationParams(conversation: try session.conversation(positionals[0]))))
        case .resume: return try act(.resume(ConversationParams(conversation: try session.conversation(positionals[0]))))
        case .unmerge: return try act(.unmerge(ConversationParams(conversation: try session.conversation(positionals[0]))))
        case .dtmf: return try act(.playTone(ToneParams(conversation: try session.conversation(positionals[0]), digits: positionals[1])))
        case .videoSource:
            guard positionals.count != 1 else { throw UsageError("parley video-source takes nothing (the cameras) or CONV SOURCE") }
            guard positionals.count == 2 else {
                let cameras = try session.request(.videoDevices, as: VideoDevicesResult.self)
                return show(cameras, json: json, name) { ControlRendering.cameras($0) }
            }
            let params = SetVideoSourceParams(
                conversation: try session.conversation(positionals[0]), source: positionals[1] == "default" ? nil : positionals[1])
            return try show(session.request(.setVideoSource(params), as: VideoSourceChoice.self), json: json, name) {
                "video sends \($0.source)" + ($0.chosen ? "" : " (parleyd's --video-source)")
            }
        case .video:
            return try act(.video(VideoParams(conversation: try session.conversation(positionals[0]), enabled: positionals[1] == "on")))
        case .merge:
            let conversation = try session.conversation(positionals[0])
            return try act(.merge(MergeParams(conversation: conversation, with: try session.conversation(positionals[1]))))
        case .transfer:
            let conversation = try session.conversation(positionals[0])
            if let toCall {
                return try act(.transfer(TransferParams(conversation: conversation, toConversation: try session.conversation(toCall))))
            }
            return try act(.transfer(TransferParams(conversation: conversation, to: positionals[1])))
        }

        /// Performs an action on a conversation: "COMMAND: done" and the conversation, or why it failed.
        func act(_ action: ControlCommand) throws -> ExitCode {
            try show(session.request(action, as: ActionResult.self), json: json, name) { result in
                "\(name): done  " + ControlRendering.line(result.conversation)
            }
        }
    }

    /// `parley redial ID` with a parleyd whose control socket is in `directory`: it calls the record's parties (its
    /// control API's `redial`), and the answer comes once the call rings, connects or fails.
    static func redial(_ id: Int64, directory: ControlDirectory, json: Bool) throws -> ExitCode {
        let session = try ControlSession(
            directory: directory,
            notRunning: .notRunning(on: directory, ", so nothing was dialled", otherwise: "add --dry-run to only show the call"))
        defer { session.close() }
        return started(try session.startAndFollow(.redial(RecordParams(id: id))), json: json, "redial")
    }

    /// Where the parleyd to drive has its control socket and token: `--data-dir DIR`, else as the default data
    /// directory says (``DataDirectory/controlForClients``: `$XDG_RUNTIME_DIR/parley`, or the data directory).
    static func dataDirectory(_ arguments: inout Arguments) throws(UsageError) -> ControlDirectory {
        guard let directory = try arguments.option("--data-dir") else { return DataDirectory.resolve().controlForClients }
        guard !directory.isEmpty else { throw UsageError("--data-dir needs a directory") }
        return DataDirectory.resolve(directory).control
    }

    /// A settled Start (call or redial): the conversation as it is then, or why it failed.
    private static func started(_ reply: (line: Data, response: ControlResponse<ActionResult>), json: Bool, _ command: String) -> ExitCode {
        show(reply, json: json, command) { result in "start: done  " + ControlRendering.line(result.conversation) }
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

    /// Connects to the parleyd running on `directory` and says hello with its token. Throws `notRunning` (by
    /// default one sentence naming the directory) when no parleyd runs there.
    init(directory: ControlDirectory, notRunning: ControlCommandError? = nil) throws {
        let socket = directory.socketPath
        let absent = notRunning ?? .notRunning(on: directory)
        let token: String
        do {
            token = try Self.token(in: directory)
        } catch {
            if case .missing = error { throw absent }
            throw ControlCommandError("cannot read parleyd's control token in \(directory.path): \(error)")
        }
        do {
            client = try ControlClient(socketPath: socket, token: token)
        } catch {
            if case .notListening = error { throw absent }
            throw error
        }
        self.token = token
    }

    func close() { client.close() }

    /// The token in `directory`; when there is none yet but the socket takes connections (a service manager holds it
    /// for a parleyd it starts on the first one: socket activation), the token parleyd writes as it starts, waited for
    /// up to 10 s after that first connection.
    private static func token(in directory: ControlDirectory) throws(ControlTokenError) -> String {
        do {
            return try ControlToken.read(from: directory.path)
        } catch {
            guard case .missing = error, directory.isLive else { throw error }
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                usleep(50_000)
                if let token = try? ControlToken.read(from: directory.path) { return token }
            }
            throw error
        }
    }

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

    /// The live conversation `text` names (a uuid or a unique prefix of one), as parleyd shows it now.
    func info(of text: String) throws -> ConversationInfo {
        let lowered = text.lowercased()
        let matches = try conversations().filter { $0.uuid.lowercased().hasPrefix(lowered) }
        guard matches.count == 1 else {
            throw ControlCommandError(matches.isEmpty
                ? "No live call matches \(text.debugDescription)."
                : "\(text.debugDescription) matches \(matches.count) calls; give more of the uuid.")
        }
        return matches[0]
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
        _ = try request(.subscribe(SubscribeParams()), as: SubscribeResult.self)
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

    /// No parleyd runs on `directory` (no control token, or nothing listens on its control socket): one sentence,
    /// with what did not happen (", so nothing was dialled") and the other way out.
    static func notRunning(
        on directory: ControlDirectory, _ consequence: String = "", otherwise: String = "name another with --data-dir DIR"
    ) -> ControlCommandError {
        guard directory.isRuntime else {
            return ControlCommandError(
                "no parleyd is running on the data directory \(directory.path)\(consequence): start one with "
                    + "'parleyd --data-dir \(directory.path)', or \(otherwise).")
        }
        return ControlCommandError(
            "no parleyd is running for you (no control socket in \(directory.path), from \(directory.source))\(consequence): "
                + "start one with 'parleyd' or 'systemctl --user start parleyd', or \(otherwise).")
    }
}
