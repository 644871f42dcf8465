import CommandLineSupport
import ParleyEngine
import SIPMessages

extension DaemonOptions {
    /// `--forward-always URI`, `--forward-busy URI`, `--forward-no-answer URI` and `--forward-after S`.
    static func forwarding(_ arguments: inout Arguments) throws(UsageError) -> CallForwarding {
        func target(_ option: String) throws(UsageError) -> SIPURI? {
            try arguments.option(option, as: "a SIP URI such as sip:carol@example.com (or carol@example.com)", CallForwarding.target)
        }
        var forwarding = CallForwarding(
            always: try target("--forward-always"), busy: try target("--forward-busy"), noAnswer: try target("--forward-no-answer"))
        if let seconds = try arguments.option("--forward-after", as: "seconds from 1 to 600", in: 1...600) {
            guard forwarding.noAnswer != nil else { throw UsageError("--forward-after goes with --forward-no-answer URI") }
            forwarding.noAnswerAfter = .seconds(seconds)
        }
        return forwarding
    }
}
