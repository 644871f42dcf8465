import CommandLineSupport
import ControlProtocol
import ParleyControl

/// `parley reference control-api`: prints docs/control-api.md as the code generates it.
enum ReferenceCommand {
    static let help = """
        usage: parley reference control-api

        Prints the control API reference generated from the protocol's types (docs/control-api.md is this output;
        a test fails when the file drifts).

        example:
          parley reference control-api > docs/control-api.md
        """

    static func run(_ commandLine: [String]) throws -> ExitCode {
        var arguments = Arguments(commandLine)
        let positionals = try arguments.positionals()
        guard positionals == ["control-api"] else { throw UsageError("parley reference takes one document name: control-api") }
        print(ControlReference.markdown(limits: ControlEndpoint.documentedLimits()), terminator: "")
        return .ok
    }
}
