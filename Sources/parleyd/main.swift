import CommandLineSupport
import Foundation
import ParleyNode

/// `parleyd`: Parley's SIP daemon — options → configuration → `ParleyNode.run`. See `parleyd --help`.
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(DaemonOptions.help)
    exit(ExitCode.ok.rawValue)
}
if arguments.contains("--version") {
    print("parleyd \(DaemonVersion.current)")
    exit(ExitCode.ok.rawValue)
}
// Everything parleyd creates is its user's alone (recordings, history, keys, tokens), whatever the umask it was
// started with: 0600 files, 0700 directories.
umask(0o077)
MemoryReturn.configure()
let options: DaemonOptions
do {
    options = try DaemonOptions.parse(arguments)
} catch {
    DaemonOutput.error("parleyd: \(error)\nRun 'parleyd --help' for usage.")
    exit(ExitCode.usage.rawValue)
}
if let path = options.configPath { options.node.log.info("options from \(path)") }
let node: ParleyNode
do {
    node = try ParleyNode(configuration: options.node)
} catch {
    DaemonOutput.error("parleyd: \(error)")
    exit(ExitCode.failure.rawValue)
}
let automation = DaemonAutomation(options: options, node: node)
node.start(stoppingOnSignals: true)
automation.start()
node.run()
