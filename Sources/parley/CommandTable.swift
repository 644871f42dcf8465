import CommandLineSupport
import Foundation

/// A command `parley` knows: its name, its line in `parley --help`, its own help, its subcommands and how it runs.
/// `parley NAME [SUB] … --help` and `parley help NAME [SUB]` print the help found here, so a command cannot be added
/// without one.
struct CLICommand: Sendable {
    /// The word after `parley`.
    let name: String
    /// Its line in `parley --help`.
    let summary: String
    /// What `parley NAME --help` prints.
    let help: String
    /// The words that may follow the name (`parley history count`), each with its own help.
    let subcommands: [CLISubcommand]
    /// Runs the command with the arguments after its name.
    let run: @Sendable ([String]) throws -> ExitCode

    /// A command.
    init(
        _ name: String, _ summary: String, help: String, subcommands: [CLISubcommand] = [],
        run: @escaping @Sendable ([String]) throws -> ExitCode
    ) {
        self.name = name
        self.summary = summary
        self.help = help
        self.subcommands = subcommands
        self.run = run
    }

    /// The help for `parley NAME ARGUMENTS… --help`: the subcommand's when the first argument names one.
    func help(for arguments: [String]) -> String {
        guard let first = arguments.first, let subcommand = subcommands.first(where: { $0.name == first }) else { return help }
        return subcommand.help
    }
}

/// A subcommand (`parley group start`) and its help.
struct CLISubcommand: Sendable {
    /// The word after the command's name.
    let name: String
    /// What `parley COMMAND NAME --help` prints.
    let help: String
}

/// Every command of `parley`, in the order `parley --help` lists them.
enum CommandTable {
    /// The commands.
    static let all: [CLICommand] = [
        CLICommand("demo", "drive conversations through the engine and print every transition", help: DemoCommand.help, run: DemoCommand.run),
        CLICommand(
            "conformance", "run conformance scenario files, or print the lifecycle transition table", help: ConformanceCommand.help,
            run: ConformanceCommand.run),
        CLICommand(
            "contacts", "load a contacts file (JSON or vCard) and match handles against it", help: ContactsCommand.help,
            run: ContactsCommand.run),
        CLICommand(
            "history", "list, count, show, mark read and delete recorded conversations", help: HistoryHelp.overview,
            subcommands: HistoryCommand.Action.allCases.map { CLISubcommand(name: $0.rawValue, help: $0.help) }, run: HistoryCommand.run),
        CLICommand(
            "redial", "call a history record's party again through a running parleyd (--dry-run: only show the action)",
            help: HistoryHelp.redial(as: "redial"), run: HistoryCommand.redial),
        CLICommand(
            "push-sim", "run the VoIP push simulator (the \"Apple\" side of VoIP pushes) on a TCP port", help: PushSimCommand.help,
            run: PushSimCommand.run),
        CLICommand(
            "push", "send a VoIP push through the simulator, or show its status", help: PushCommand.overview,
            subcommands: PushCommand.Action.allCases.map { CLISubcommand(name: $0.rawValue, help: $0.help) }, run: PushCommand.run),
        CLICommand(
            "push-gateway", "turn a SIP proxy's push events (Kamailio evapi) into VoIP pushes through the simulator",
            help: PushGatewayCommand.help, run: PushGatewayCommand.run),
    ] + ControlCommands.Command.allCases.map { command in
        CLICommand(command.rawValue, command.summary, help: command.help) { try ControlCommands.run(command, $0) }
    } + [
        CLICommand(
            "group", "group sessions in a running parleyd's calls: start, join, send, leave, watch", help: GroupHelp.overview,
            subcommands: GroupCommand.Action.allCases.map { CLISubcommand(name: $0.rawValue, help: $0.help) }, run: GroupCommand.run),
        CLICommand(
            "collab", "collaborations in a running parleyd's calls: start, open, notice, challenge, verify, watch",
            help: CollabHelp.overview,
            subcommands: CollabCommand.Action.allCases.map { CLISubcommand(name: $0.rawValue, help: $0.help) }, run: CollabCommand.run),
        CLICommand(
            "identity", "this device's collaboration identity (show), or check a signed proof offline (verify FILE)",
            help: IdentityCommand.help,
            subcommands: IdentityCommand.Action.allCases.map { CLISubcommand(name: $0.rawValue, help: $0.help) },
            run: IdentityCommand.run),
        CLICommand(
            "install-desktop", "make sip:, sips:, tel: and callto: links open parley call (a desktop entry, default handler)",
            help: DesktopCommand.help, run: DesktopCommand.run),
        CLICommand(
            "install-service", "make parleyd a systemd user service started with your session (--socket, --dbus: activation)",
            help: ServiceCommand.help, run: ServiceCommand.run),
        CLICommand(
            "reference", "print a generated reference document (control-api: docs/control-api.md)", help: ReferenceCommand.help,
            run: ReferenceCommand.run),
        CLICommand("help", "a command's help (parley help COMMAND [SUBCOMMAND]), or every command (--list)", help: HelpCommand.help,
            run: HelpCommand.run),
    ]

    /// `parley --help`: every command with its line.
    static var usage: String {
        var lines = ["usage: parley <command> [options]", "", "commands:"]
        let width = (all.map(\.name.count).max() ?? 0) + 2
        for command in all {
            lines.append("  " + command.name.padding(toLength: width, withPad: " ", startingAt: 0) + command.summary)
        }
        lines += [
            "",
            "Run 'parley <command> --help' (or 'parley help <command>') for a command's usage, options and examples.",
            "Exit codes: 0 ok, 1 failure (or no parleyd running, for the commands that drive one), 64 usage error.",
        ]
        return lines.joined(separator: "\n")
    }

    /// The command named `name`.
    static func command(_ name: String) -> CLICommand? { all.first { $0.name == name } }

    /// Whether `arguments` (after the command's name) ask for help: `--help` or `-h` before any `--`.
    static func asksForHelp(_ arguments: [String]) -> Bool {
        arguments.prefix { $0 != "--" }.contains { $0 == "--help" || $0 == "-h" }
    }
}

/// `parley help [COMMAND [SUBCOMMAND]]`, and `parley help --list`: every command and subcommand, one a line.
enum HelpCommand {
    static let help = """
        usage: parley help [COMMAND [SUBCOMMAND]]
               parley help --list

        Prints a command's help (the same as 'parley COMMAND [SUBCOMMAND] --help': its usage, what it does, its
        options and examples); without a command, the list of commands ('parley --help').

        options:
          --list           every command and subcommand parley knows, one a line ("history count"), for scripts
                           and shell completion

        examples:
          parley help mute
          parley help history count
          parley help --list
        """

    static func run(_ raw: [String]) throws -> ExitCode {
        var arguments = Arguments(raw)
        let list = arguments.flag("--list")
        let words = try arguments.positionals()
        if list {
            guard words.isEmpty else { throw UsageError("--list takes no command") }
            for command in CommandTable.all {
                print(command.name)
                for subcommand in command.subcommands { print("\(command.name) \(subcommand.name)") }
            }
            return .ok
        }
        guard let name = words.first else {
            print(CommandTable.usage)
            return .ok
        }
        guard let command = CommandTable.command(name) else {
            throw UsageError("unknown command '\(name)' (run 'parley help' for the list)")
        }
        guard words.count <= 2 else { throw UsageError("parley help takes a command and at most one subcommand") }
        if words.count == 2, !command.subcommands.contains(where: { $0.name == words[1] }) {
            let names = command.subcommands.map(\.name)
            throw UsageError(
                "'\(name)' has no subcommand '\(words[1])'"
                    + (names.isEmpty ? "" : " (subcommands: \(names.joined(separator: ", ")))"))
        }
        print(command.help(for: Array(words.dropFirst())))
        return .ok
    }
}
