import CallHistory
import CommandLineSupport
import ConversationKit
import Foundation
import ParleyEngine
import ParleyIO
import SIPTransport

/// `parleyd`: Parley's SIP daemon. See `parleyd --help`.
let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(DaemonOptions.help)
    exit(ExitCode.ok.rawValue)
}
if arguments.contains("--version") {
    print("parleyd \(DaemonVersion.current)")
    exit(ExitCode.ok.rawValue)
}
let options: DaemonOptions
do {
    options = try DaemonOptions.parse(arguments)
} catch {
    DaemonOutput.error("parleyd: \(error)\nRun 'parleyd --help' for usage.")
    exit(ExitCode.usage.rawValue)
}
let daemon: Daemon
let signalSources: [DispatchSourceSignal]
do {
    daemon = try Daemon(options: options)
    signalSources = try daemon.start()
} catch {
    DaemonOutput.error("parleyd: \(error)")
    exit(ExitCode.failure.rawValue)
}
dispatchMain()
