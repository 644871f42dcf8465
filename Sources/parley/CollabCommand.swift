import Collaboration
import ConversationKit
import CommandLineSupport
import ControlProtocol
import Foundation

/// `parley collab`: collaborations in a running parleyd's calls (docs/collaboration.md). The help texts are
/// CollabHelp's.
enum CollabCommand {
    /// The subcommands, by the word typed after `parley collab`.
    enum Action: String, CaseIterable, Sendable {
        case list, start, open, challenge, prove, verify, confirm, notice, end, watch

        /// How many arguments it takes after its name.
        var arguments: ClosedRange<Int> {
            switch self {
            case .list, .watch: 0...0
            case .open, .challenge, .prove, .end, .confirm: 1...1
            case .start: 2...2
            case .verify: 3...3
            case .notice: 2...3
            }
        }

        /// What `parley collab ACTION --help` prints.
        var help: String {
            switch self {
            case .list: CollabHelp.list
            case .start: CollabHelp.start
            case .open: CollabHelp.open
            case .challenge: CollabHelp.challenge
            case .prove: CollabHelp.prove
            case .verify: CollabHelp.verify
            case .confirm: CollabHelp.confirm
            case .notice: CollabHelp.notice
            case .end: CollabHelp.end
            case .watch: CollabHelp.watch
            }
        }
    }

    static func run(_ commandLine: [String]) throws -> ExitCode {
        guard !commandLine.isEmpty else {
            print(CollabHelp.overview)
            return .usage
        }
        var arguments = Arguments(commandLine)
        let json = arguments.flag("--json")
        let confirm = arguments.flag("--confirm")
        let refuse = arguments.flag("--refuse")
        let url = try arguments.option("--url")
        let directory = try ControlCommands.dataDirectory(&arguments)
        var positionals = try arguments.positionals()
        let word = positionals.isEmpty ? "" : positionals.removeFirst()
        guard let command = Action(rawValue: word) else {
            throw UsageError("parley collab: unknown command \(word.isEmpty ? "(none)" : word); see parley collab --help")
        }
        guard command.arguments.contains(positionals.count) else {
            throw UsageError("parley collab \(word): wrong number of arguments; see parley collab \(word) --help")
        }
        let session = try ControlSession(directory: directory)
        defer { session.close() }
        let name = "collab \(word)"
        switch command {
        case .watch: return try ControlRendering.watch(session, json: json)
        case .list:
            return try ControlCommands.show(session.request(.collaborations, as: CollaborationsResult.self), json: json, name) { result in
                result.collaborations.isEmpty ? "no collaborations" : result.collaborations.map(ControlRendering.collaborationLine).joined(separator: "\n")
            }
        case .start:
            let params = CollaborationStartParams(
                conversation: try session.conversation(positionals[0]), title: positionals[1], url: url, confirmUpdates: confirm ? true : nil)
            return try ControlCommands.show(session.request(.collaborationStart(params), as: CollaborationData.self), json: json, name) {
                ControlRendering.collaborationLine($0)
            }
        case .open:
            let params = CollaborationParams(collaboration: try resolve(positionals[0], in: session))
            return try ControlCommands.show(session.request(.collaborationOpen(params), as: CollaborationData.self), json: json, name) {
                ControlRendering.collaborationLine($0)
            }
        case .challenge:
            let params = CollaborationParams(collaboration: try resolve(positionals[0], in: session))
            return try ControlCommands.show(session.request(.collaborationChallenge(params), as: CollaborationChallenge.self), json: true, name) { _ in "" }
        case .prove:
            let challenge: CollaborationChallenge = try readJSON(positionals[0])
            return try ControlCommands.show(session.request(.collaborationProve(challenge), as: SignedProofJSON.self), json: true, name) { _ in "" }
        case .verify:
            let proof: SignedProofJSON = try readJSON(positionals[2])
            let params = CollaborationVerifyParams(collaboration: try resolve(positionals[0], in: session), nonce: positionals[1], proof: proof)
            return try ControlCommands.show(session.request(.collaborationVerify(params), as: CollaborationGranted.self), json: json, name) {
                "granted: \($0.root)"
            }
        case .confirm:
            let params = CollaborationConfirmParams(action: positionals[0], accept: !refuse)
            return try ControlCommands.show(session.request(.collaborationConfirm(params), as: CollaborationConfirmed.self), json: json, name) {
                "\($0.action) \($0.accepted ? "accepted" : "refused")"
            }
        case .notice:
            let collaboration = try resolve(positionals[0], in: session)
            let word = positionals[1]
            let kind = ["edit", "comment"].contains(word) ? "change"
                : ["created", "deleted", "renamed", "moved"].contains(word) ? "persistence"
                : ["addedCollaborator", "removedCollaborator"].contains(word) ? "membership" : word
            guard kind != "mention" || positionals.count == 3 else { throw UsageError("parley collab notice COLLAB mention ROOT") }
            let params = CollaborationNoticeParams(
                collaboration: collaboration, kind: kind, trigger: kind == "mention" ? nil : word,
                person: kind == "mention" ? positionals[2] : nil)
            return try ControlCommands.show(session.request(.collaborationNotice(params), as: CollaborationPosted.self), json: json, name) { _ in
                "posted"
            }
        case .end:
            let params = CollaborationParams(collaboration: try resolve(positionals[0], in: session))
            return try ControlCommands.show(session.request(.collaborationEnd(params), as: CollaborationEnded.self), json: json, name) {
                "\($0.collaboration) \($0.state)"
            }
        }
    }

    private static func readJSON<Value: Decodable>(_ path: String) throws -> Value {
        guard let data = FileManager.default.contents(atPath: path) else { throw UsageError("cannot read \(path)") }
        do { return try JSONDecoder().decode(Value.self, from: data) } catch {
            throw UsageError("\(path) is not the JSON expected: \(JSONSyntax.problem(in: data) ?? "a member is missing or of the wrong type")")
        }
    }

    /// A collaboration identifier from a unique prefix.
    private static func resolve(_ prefix: String, in session: ControlSession) throws -> String {
        let reply = try session.request(.collaborations, as: CollaborationsResult.self)
        guard case .result(let result) = reply.response else { return prefix }
        let matches = result.collaborations.map(\.collaboration).filter { $0.hasPrefix(prefix.lowercased()) }
        return matches.count == 1 ? matches[0] : prefix
    }
}
