import CommandLineSupport
import Foundation

/// `parley`: the command-line front of the Parley conversation engine.
let commands: [(name: String, summary: String, run: @Sendable ([String]) throws -> ExitCode)] = [
    ("demo", "drive conversations through the engine and print every transition", DemoCommand.run),
    ("conformance", "run conformance scenario files, or print the lifecycle transition table", ConformanceCommand.run),
    ("contacts", "load a contacts file (JSON or vCard) and match handles against it", ContactsCommand.run),
    ("history", "list, count, show, mark read and delete recorded conversations", HistoryCommand.run),
    ("redial", "call a history record's party again through a running parleyd (--dry-run: only show the action)",
        HistoryCommand.redial),
    ("push-sim", "run the VoIP push simulator (the \"Apple\" side of VoIP pushes) on a TCP port", PushSimCommand.run),
    ("push", "send a VoIP push through the simulator, or show its status", PushCommand.run),
    ("push-gateway", "turn a SIP proxy's push events (Kamailio evapi) into VoIP pushes through the simulator",
        PushGatewayCommand.run),
    ("call", "place a call through a running parleyd (see 'parley call --help' for the softphone commands)",
        { try ControlCommands.run("call", $0) }),
    ("answer", "answer a ringing conversation", { try ControlCommands.run("answer", $0) }),
    ("end", "end or refuse a conversation", { try ControlCommands.run("end", $0) }),
    ("hold", "hold a joined conversation", { try ControlCommands.run("hold", $0) }),
    ("resume", "resume a held conversation", { try ControlCommands.run("resume", $0) }),
    ("mute", "mute yourself in a conversation", { try ControlCommands.run("mute", $0) }),
    ("unmute", "unmute yourself", { try ControlCommands.run("unmute", $0) }),
    ("dtmf", "send keypad tones", { try ControlCommands.run("dtmf", $0) }),
    ("video", "turn video on or off in a joined conversation", { try ControlCommands.run("video", $0) }),
    ("audio", "a call's negotiated audio and its RTCP figures", { try ControlCommands.run("audio", $0) }),
    ("merge", "merge two joined conversations", { try ControlCommands.run("merge", $0) }),
    ("unmerge", "take a conversation out of its group", { try ControlCommands.run("unmerge", $0) }),
    ("list", "the live conversations of a running parleyd", { try ControlCommands.run("list", $0) }),
    ("status", "a running parleyd's versions, addresses and counters", { try ControlCommands.run("status", $0) }),
    ("watch", "print a running parleyd's conversation changes as they happen", { try ControlCommands.run("watch", $0) }),
    ("reload-contacts", "make a running parleyd read its contacts file again", { try ControlCommands.run("reload-contacts", $0) }),
    ("web", "the web softphone's address with the token (--open opens it in a browser)", { try ControlCommands.run("web", $0) }),
    ("group", "group sessions in a running parleyd's calls: start, join, send, leave, watch", GroupCommand.run),
    ("collab", "collaborations in a running parleyd's calls: start, open, notice, challenge, verify, watch", CollabCommand.run),
    ("identity", "this device's collaboration identity (show), or check a signed proof offline (verify FILE)", IdentityCommand.run),
    ("reference", "print a generated reference document (control-api: docs/control-api.md)", ReferenceCommand.run),
]

@MainActor func usage() -> String {
    var lines = [
        "usage: parley <command> [options]",
        "",
        "commands:",
    ]
    for command in commands {
        lines.append("  " + command.name.padding(toLength: 16, withPad: " ", startingAt: 0) + command.summary)
    }
    lines += [
        "",
        "Run 'parley <command> --help' for a command's options.",
        "Exit codes: 0 ok, 1 failure, 64 usage error.",
    ]
    return lines.joined(separator: "\n")
}

var arguments = Array(CommandLine.arguments.dropFirst())
let exitCode: ExitCode
if arguments.isEmpty || ["-h", "--help", "help"].contains(arguments[0]) {
    print(usage())
    exitCode = arguments.isEmpty ? .usage : .ok
} else if arguments[0] == "--version" {
    print("parley \(ParleyVersion.current)")
    exitCode = .ok
} else if let command = commands.first(where: { $0.name == arguments[0] }) {
    do {
        exitCode = try command.run(Array(arguments.dropFirst()))
    } catch let error as UsageError {
        printError("parley \(command.name): \(error)\nRun 'parley \(command.name) --help' for usage.")
        exitCode = .usage
    } catch {
        printError("parley \(command.name): \(error)")
        exitCode = .failure
    }
} else {
    printError("parley: unknown command '\(arguments[0])'\n\n\(usage())")
    exitCode = .usage
}
exit(exitCode.rawValue)
