import CommandLineSupport
import ControlProtocol
import ConversationKit
import Foundation
import GroupActivities

/// `parley group`: group sessions (shared activities) in a running parleyd's calls. The help texts are GroupHelp's.
enum GroupCommand {
    /// The subcommands, by the word typed after `parley group`.
    enum Action: String, CaseIterable, Sendable {
        case list, start, join, send, leave, end, watch

        /// What `parley group ACTION --help` prints.
        var help: String {
            switch self {
            case .list: GroupHelp.list
            case .start: GroupHelp.start
            case .join: GroupHelp.join
            case .send: GroupHelp.send
            case .leave: GroupHelp.leave
            case .end: GroupHelp.end
            case .watch: GroupHelp.watch
            }
        }
    }

    static func run(_ commandLine: [String]) throws -> ExitCode {
        guard !commandLine.isEmpty else {
            print(GroupHelp.overview)
            return .usage
        }
        var arguments = Arguments(commandLine)
        let json = arguments.flag("--json")
        let unreliable = arguments.flag("--unreliable")
        let keep = arguments.flag("--keep")
        let directory = try ControlCommands.dataDirectory(&arguments)
        let identifier = try arguments.option("--id")
        let type = try arguments.option("--type")
        let dataText = try arguments.option("--data")
        let to = try arguments.option("--to")
        var positionals = try arguments.positionals()
        let word = positionals.isEmpty ? "" : positionals.removeFirst()
        guard let command = Action(rawValue: word) else {
            throw UsageError("parley group: unknown command \(word.isEmpty ? "(none)" : word); see parley group --help")
        }
        let expected: Int
        switch command {
        case .list, .watch: expected = 0
        case .join, .leave, .end: expected = 1
        case .start: expected = 2
        case .send: expected = type == nil ? 2 : 1
        }
        guard positionals.count == expected else {
            throw UsageError("parley group \(word) takes \(expected) argument\(expected == 1 ? "" : "s"), got \(positionals.count)")
        }
        let session = try ControlSession(directory: directory)
        defer { session.close() }
        switch command {
        case .watch: return try ControlRendering.watch(session, json: json)
        case .list:
            return try ControlCommands.show(session.request(.groupSessions, as: GroupSessionsResult.self), json: json, "group \(word)") { result in
                result.sessions.isEmpty ? "no group sessions" : result.sessions.map(line).joined(separator: "\n")
            }
        case .start:
            let conversation = try session.conversation(positionals[0])
            let title = positionals[1]
            let params = GroupActivateParams(
                conversation: conversation, identifier: identifier ?? "org.parley.\(title.lowercased().filter(\.isLetter))", title: title)
            return try ControlCommands.show(session.request(.groupActivate(params), as: GroupSessionData.self), json: json, "group \(word)") { line($0) }
        case .join:
            let id = try resolve(positionals[0], in: session)
            return try ControlCommands.show(session.request(.groupJoin(GroupSessionParams(session: id)), as: GroupSessionData.self), json: json, "group \(word)") { line($0) }
        case .leave, .end:
            let id = try resolve(positionals[0], in: session)
            let params = GroupSessionParams(session: id)
            let request: ControlCommand = command == .end ? .groupEnd(params) : .groupLeave(params)
            return try ControlCommands.show(session.request(request, as: GroupLeft.self), json: json, "group \(word)") { "\($0.session.prefix(8)) \($0.state)" }
        case .send:
            let id = try resolve(positionals[0], in: session)
            let data: JSONValue
            if let type, type != "text" {
                guard let dataText else { throw UsageError("parley group send --type \(type) needs --data JSON") }
                do {
                    data = try JSONDecoder().decode(JSONValue.self, from: Data(dataText.utf8))
                } catch {
                    throw UsageError("--data is not JSON: \(JSONSyntax.problem(in: Data(dataText.utf8)) ?? "it does not parse")")
                }
            } else {
                data = .string(type == nil ? positionals[1] : dataText ?? "")
            }
            let targets = to.map { GroupTargets.only($0.split(separator: ",").map(String.init)) }
            let params = GroupSendParams(
                session: id, type: type ?? "text", data: data, to: targets, mode: unreliable ? "unreliable" : nil,
                keep: keep ? true : nil)
            return try ControlCommands.show(session.request(.groupSend(params), as: GroupSendResult.self), json: json, "group \(word)") { result in
                "sent #\(result.seq.map(String.init) ?? "-"): delivered to \(result.deliveredTo.count)"
                    + (result.failed.isEmpty ? "" : ", failed for \(result.failed.joined(separator: ", "))")
                    + (result.unsupported.isEmpty ? "" : ", not readable by \(result.unsupported.joined(separator: ", "))")
            }
        }
    }

    /// One session, one line.
    static func line(_ session: GroupSessionData) -> String {
        "\(session.session) \(session.state) \"\(session.activity.title)\" \(session.isHost ? "host" : "member") on "
            + "\(session.conversation.prefix(8).lowercased()): "
            + session.activeParticipants.map { $0.id == session.localParticipant.id ? "\($0.name) (you)" : $0.name }.joined(separator: ", ")
            + " — messages up to \(session.maxMessageBytes) bytes"
    }

    /// A session id from a unique prefix.
    private static func resolve(_ prefix: String, in session: ControlSession) throws -> String {
        let reply = try session.request(.groupSessions, as: GroupSessionsResult.self)
        guard case .result(let result) = reply.response else { return prefix }
        let matches = result.sessions.map(\.session).filter { $0.hasPrefix(prefix.lowercased()) }
        return matches.count == 1 ? matches[0] : prefix
    }
}
