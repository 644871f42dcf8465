import CommandLineSupport
import Foundation

// `parley`: the command-line front of the Parley conversation engine. Its commands are CommandTable.all.
let arguments = Array(CommandLine.arguments.dropFirst())
let exitCode: ExitCode
if arguments.isEmpty || ["-h", "--help"].contains(arguments[0]) {
    print(CommandTable.usage)
    exitCode = arguments.isEmpty ? .usage : .ok
} else if arguments[0] == "--version" {
    print("parley \(ParleyVersion.current)")
    exitCode = .ok
} else if let command = CommandTable.command(arguments[0]) {
    let rest = Array(arguments.dropFirst())
    if CommandTable.asksForHelp(rest) {
        print(command.help(for: rest))
        exitCode = .ok
    } else {
        do {
            exitCode = try command.run(rest)
        } catch let error as UsageError {
            printError("parley \(command.name): \(error)\nRun 'parley \(command.name) --help' for usage.")
            exitCode = .usage
        } catch {
            printError("parley \(command.name): \(error)")
            exitCode = .failure
        }
    }
} else {
    printError("parley: unknown command '\(arguments[0])'\n\n\(CommandTable.usage)")
    exitCode = .usage
}
exit(exitCode.rawValue)
