import CommandLineSupport
import Foundation
import ParleyIO
import ParleyNode
import SIPMessages

extension DaemonOptions {
    /// `--outbound-proxy URI` and `--dns-server HOST[:PORT]` (repeatable): where out-of-dialog requests go first, and
    /// which DNS servers locate host names (RFC 3263).
    static func network(_ arguments: inout Arguments, into node: inout NodeConfiguration) throws(UsageError) {
        node.outboundProxy = try outboundProxy(&arguments)
        for server in try arguments.options("--dns-server") {
            guard dnsServerIsNumeric(server) else {
                throw UsageError("--dns-server expects a numeric address with an optional port (192.0.2.53, 127.0.0.1:5353, [::1]:53), got '\(server)'")
            }
            node.dnsServers.append(server)
        }
    }

    /// `--outbound-proxy URI`, nil when not given.
    static func outboundProxy(_ arguments: inout Arguments) throws(UsageError) -> SIPURI? {
        guard let text = try arguments.option("--outbound-proxy") else { return nil }
        guard let proxy = SIPURI(text), proxy.isSIP, proxy.scheme == "sip" || proxy.scheme == "sips", !proxy.host.isEmpty,
            proxy.user == nil
        else {
            throw UsageError("--outbound-proxy expects a SIP URI without a user, such as sip:proxy.example.com;transport=tcp, got '\(text)'")
        }
        return proxy
    }

    /// Whether `text` is `IPv4[:PORT]`, `IPv6` or `[IPv6][:PORT]` (the resolver asks servers by address, not name).
    static func dnsServerIsNumeric(_ text: String) -> Bool {
        if IPAddress(text) != nil { return true }
        let host: Substring, port: Substring?
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return false }
            port = rest.isEmpty ? nil : rest.dropFirst()
        } else {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2 else { return false }
            (host, port) = (parts[0], parts[1])
        }
        guard IPAddress(String(host)) != nil else { return false }
        return port.map { UInt16($0).map { $0 > 0 } ?? false } ?? true
    }

    /// The digest password: `--auth-password-file PATH` (a file only its owner may read: mode 0600 or stricter; one
    /// line, the newline dropped), else `--auth-password` (visible in `ps`: discouraged), else `$PARLEY_SIP_PASSWORD`.
    static func password(_ arguments: inout Arguments, environment: Bool = true) throws(UsageError) -> String? {
        let inline = try arguments.option("--auth-password")
        let variable = try arguments.option("--auth-password-env")
        let path = try arguments.option("--auth-password-file")
        guard [inline, variable, path].compactMap({ $0 }).count <= 1 else {
            throw UsageError("--auth-password-file, --auth-password-env and --auth-password are one or the other")
        }
        if let variable {
            // Named, so that each account of a config file can have its own.
            guard let password = ProcessInfo.processInfo.environment[variable], !password.isEmpty else {
                throw UsageError("--auth-password-env \(variable): the environment has no such variable (or it is empty)")
            }
            return password
        }
        guard let path else {
            return inline ?? (environment ? ProcessInfo.processInfo.environment["PARLEY_SIP_PASSWORD"] : nil)
        }
        try requirePrivate(path, what: "--auth-password-file")
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw UsageError("--auth-password-file \(path): cannot read the file")
        }
        let password = text.hasSuffix("\n") ? String(text.dropLast()).replacingOccurrences(of: "\r", with: "") : text
        guard !password.isEmpty, !password.contains("\n") else {
            throw UsageError("--auth-password-file \(path): the file must hold the password alone, on one line")
        }
        return password
    }

    /// Refuses a file holding a secret that its group or others may read (or that is not a regular file).
    static func requirePrivate(_ path: String, what: String) throws(UsageError) {
        var status = stat()
        guard stat(path, &status) == 0 else { throw UsageError("\(what) \(path): no such file") }
        guard status.st_mode & S_IFMT == S_IFREG else { throw UsageError("\(what) \(path): not a regular file") }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw UsageError("\(what) \(path) holds a secret and is readable by others (mode \(String(mode, radix: 8))): chmod 600 it")
        }
    }
}
