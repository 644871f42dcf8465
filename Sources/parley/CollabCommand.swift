import Collaboration
import ConversationKit
import CommandLineSupport
import ControlProtocol
import Foundation

/// `parley collab`: collaborations in a running parleyd's calls (docs/collaboration.md).
enum CollabCommand {
    static let help = """
        usage: parley collab <command> [--data-dir DIR] [--json] …

          list                               the collaborations: owned ones with their people, shared ones with access
          start CONV TITLE [--url URL] [--confirm]
                                             share a collaboration in a joined call (and its merged group)
          open COLLAB                        ask the owner for access with this device's proof
          challenge COLLAB                   (owner) a fresh challenge, as JSON, for `prove`
          prove CHALLENGE.json               sign a challenge with this device's key; prints the proof as JSON
          verify COLLAB NONCE PROOF.json     (owner) check a proof for one of its challenges
          confirm ACTION [--refuse]          accept (or refuse) a participants update that waits for confirmation
          notice COLLAB edit|comment|created|deleted|renamed|moved|addedCollaborator|removedCollaborator
          notice COLLAB mention ROOT         post a notice (a mention reaches the mentioned person alone)
          end COLLAB                         (owner) end it
          watch                              print every change as it happens

        COLLAB is a collaboration identifier or a unique prefix of it.
        """

    static func run(_ commandLine: [String]) throws -> ExitCode {
        var arguments = Arguments(commandLine)
        if let answer = helpAnswer(commandLine, &arguments, help: help) { return answer }
        let json = arguments.flag("--json")
        let confirm = arguments.flag("--confirm")
        let refuse = arguments.flag("--refuse")
        let url = try arguments.option("--url")
        let directory = try arguments.option("--data-dir") ?? HistoryLocation.defaultDataDirectory().path
        var positionals = try arguments.positionals()
        let command = positionals.isEmpty ? "" : positionals.removeFirst()
        let counts: [String: ClosedRange<Int>] = [
            "list": 0...0, "watch": 0...0, "open": 1...1, "challenge": 1...1, "prove": 1...1, "end": 1...1, "confirm": 1...1,
            "start": 2...2, "verify": 3...3, "notice": 2...3,
        ]
        guard let expected = counts[command] else {
            throw UsageError("parley collab: unknown command \(command.isEmpty ? "(none)" : command); see parley collab --help")
        }
        guard expected.contains(positionals.count) else {
            throw UsageError("parley collab \(command): wrong number of arguments; see parley collab --help")
        }
        let session = try ControlSession(directory: directory)
        defer { session.close() }
        let name = "collab \(command)"
        switch command {
        case "watch": return try ControlRendering.watch(session, json: json)
        case "list":
            return try ControlCommands.show(session.request(.collaborations, as: CollaborationsResult.self), json: json, name) { result in
                result.collaborations.isEmpty ? "no collaborations" : result.collaborations.map(ControlRendering.collaborationLine).joined(separator: "\n")
            }
        case "start":
            let params = CollaborationStartParams(
                conversation: try session.conversation(positionals[0]), title: positionals[1], url: url, confirmUpdates: confirm ? true : nil)
            return try ControlCommands.show(session.request(.collaborationStart(params), as: CollaborationData.self), json: json, name) {
                ControlRendering.collaborationLine($0)
            }
        case "open":
            let params = CollaborationParams(collaboration: try resolve(positionals[0], in: session))
            return try ControlCommands.show(session.request(.collaborationOpen(params), as: CollaborationData.self), json: json, name) {
                ControlRendering.collaborationLine($0)
            }
        case "challenge":
            let params = CollaborationParams(collaboration: try resolve(positionals[0], in: session))
            return try ControlCommands.show(session.request(.collaborationChallenge(params), as: CollaborationChallenge.self), json: true, name) { _ in "" }
        case "prove":
            let challenge: CollaborationChallenge = try readJSON(positionals[0])
            return try ControlCommands.show(session.request(.collaborationProve(challenge), as: SignedProofJSON.self), json: true, name) { _ in "" }
        case "verify":
            let proof: SignedProofJSON = try readJSON(positionals[2])
            let params = CollaborationVerifyParams(collaboration: try resolve(positionals[0], in: session), nonce: positionals[1], proof: proof)
            return try ControlCommands.show(session.request(.collaborationVerify(params), as: CollaborationGranted.self), json: json, name) {
                "granted: \($0.root)"
            }
        case "confirm":
            let params = CollaborationConfirmParams(action: positionals[0], accept: !refuse)
            return try ControlCommands.show(session.request(.collaborationConfirm(params), as: CollaborationConfirmed.self), json: json, name) {
                "\($0.action) \($0.accepted ? "accepted" : "refused")"
            }
        case "notice":
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
        default:
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
