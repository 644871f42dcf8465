import CommandLineSupport
import Foundation
import ParleyEngine
import ParleyNode
import SIPMessages

/// A config file, read: its options as command-line arguments (`listen udp://…` becomes `--listen udp://…`, a bare
/// `no-history` becomes `--no-history`), and its `[account NAME]` sections, each an account's own options.
struct ConfigFile {
    /// The options before the first section.
    var arguments: [String] = []
    /// The account sections, in the file's order (the first is the default account).
    var accounts: [AccountSection] = []
}

/// One `[account NAME]` section: its name, where it starts, and its lines as arguments.
struct AccountSection {
    let name: String
    let path: String
    let line: Int
    var arguments: [String] = []
}

extension DaemonOptions {
    /// The options an account section may hold (without their `--`).
    static let accountKeys: Set<String> = [
        "aor", "register", "transport", "auth-user", "auth-password-file", "auth-password-env", "auth-password", "register-expires",
        "keep-alive", "keep-alive-method", "outbound-proxy", "display-name", "phone-domain",
        "ice", "stun-server", "turn-server", "turn-user", "turn-password-file",
        "forward-always", "forward-busy", "forward-no-answer", "forward-after",
    ]

    /// Reads the config file at `path`. A file that holds a password (`auth-password`) must be private (0600).
    static func configFile(_ path: String, label: String = "--config") throws(UsageError) -> ConfigFile {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw UsageError("\(label) \(path): cannot read the file")
        }
        if text.range(of: #"(?m)^\s*(--)?auth-password\s"#, options: .regularExpression) != nil {
            try requirePrivate(path, what: "\(label) (it holds auth-password)")
        }
        var file = ConfigFile()
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            // A comment is a line starting with # (values such as passwords may contain #); CRLF files work too.
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let place = "\(path):\(number + 1)"
            if line.hasPrefix("[") {
                file.accounts.append(try section(line, at: place, path: path, line: number + 1, after: file.accounts))
                continue
            }
            let parts = line.split(separator: " ", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let name = parts[0].hasPrefix("--") ? parts[0] : "--" + parts[0]
            guard name != "--config" else { throw UsageError("\(place): config files do not nest") }
            var arguments = [name]
            if parts.count == 2 { arguments.append(parts[1]) }
            if file.accounts.isEmpty {
                file.arguments += arguments
            } else {
                guard accountKeys.contains(String(name.dropFirst(2))) else {
                    throw UsageError("\(place): \(name.dropFirst(2)) is not an account option (an account takes \(accountKeys.sorted().joined(separator: ", ")))")
                }
                file.accounts[file.accounts.count - 1].arguments += arguments
            }
        }
        return file
    }

    /// A section header, `[account NAME]`, checked: a name of letters, digits, `-`, `_` and `.`, not used before.
    private static func section(
        _ header: String, at place: String, path: String, line: Int, after earlier: [AccountSection]
    ) throws(UsageError) -> AccountSection {
        let words = header.dropFirst().split(separator: " ", omittingEmptySubsequences: true)
        guard header.hasSuffix("]"), words.count == 2, words[0] == "account" else {
            throw UsageError("\(place): a section is [account NAME], got \(header)")
        }
        let name = String(words[1].dropLast())
        guard !name.isEmpty, name.count <= 64, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
        else { throw UsageError("\(place): an account's name is 1–64 letters, digits, -, _ or ., got '\(name)'") }
        guard !earlier.contains(where: { $0.name == name }) else {
            throw UsageError("\(place): a second [account \(name)]")
        }
        return AccountSection(name: name, path: path, line: line)
    }

    /// The account a section describes, and its own ICE (nil: the node's, `nodeICE`, applies; see
    /// ``accountICE(_:node:media:)``); its mistakes name the section.
    static func account(
        _ section: AccountSection, userName: String, nodeICE: ICEConfiguration?, media: MediaConfiguration?
    ) throws(UsageError) -> (account: Account, ice: AccountICE?) {
        let place = "\(section.path):\(section.line) [account \(section.name)]"
        do throws(UsageError) {
            guard section.arguments.contains("--aor") else {
                throw UsageError("aor is missing: the account's address of record, such as sip:alice@example.com")
            }
            var arguments = Arguments(section.arguments)
            let transport = try arguments.option("--transport", as: "udp, tcp or tls") { ["udp", "tcp", "tls"].contains($0) ? $0 : nil }
            guard var registration = try registration(&arguments, userName: userName, inSection: true) else {
                throw UsageError("aor is missing")
            }
            var proxy = try outboundProxy(&arguments)
            if let transport {
                // Everything this account sends out of dialog goes over it: its REGISTERs, and its calls through a proxy.
                registration.registrar.parameters.set("transport", transport)
                proxy?.parameters.set("transport", transport)
            }
            let displayName = try arguments.option("--display-name")
            if let displayName, displayName.isEmpty || displayName.count > 100 {
                throw UsageError("display-name must be 1–100 characters")
            }
            let phoneDomain = try arguments.option("--phone-domain")
            let ice = try accountICE(&arguments, node: nodeICE, media: media)
            // Forwarding of its own: the account's rules replace parleyd's for calls made to it.
            let forwarding = try forwarding(&arguments)
            try arguments.finish()
            let account = Account(
                name: section.name, registration: registration, outboundProxy: proxy, displayName: displayName,
                phoneDomain: phoneDomain, forwarding: forwarding.isOff ? nil : forwarding)
            return (account, ice)
        } catch {
            throw UsageError("\(place): \(error.message.replacingOccurrences(of: "--", with: ""))")
        }
    }

    /// RFC 8599's Contact parameters (the registrar learns how to wake us), when pushes are configured.
    static func pushContactParameters(_ node: NodeConfiguration) -> SIPParameters? {
        guard let service = node.pushService else { return nil }
        return [
            SIPParameter(name: "pn-provider", value: "parley-sim"),
            SIPParameter(name: "pn-prid", value: node.effectivePushToken),
            SIPParameter(name: "pn-param", value: service.description.replacingOccurrences(of: ":", with: ".")),
        ]
    }

    /// The accounts with the push Contact parameters, when pushes are configured.
    static func withPushContact(_ accounts: [Account], node: NodeConfiguration) -> [Account] {
        guard let parameters = pushContactParameters(node) else { return accounts }
        return accounts.map { account in
            var account = account
            account.registration.contactParameters = parameters
            return account
        }
    }
}
